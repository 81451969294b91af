package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func oneNode(id string) *Definition {
	return &Definition{ID: id, Version: "1",
		Nodes: map[string]Node{"n": {Run: func(workflow.Context, NodeInput) (NodeResult, error) { return NodeResult{}, nil }}},
		Edges: []Edge{{From: Start, To: "n"}}}
}

// Ids that cannot be workflow types of their own are refused when the definition is added.
func TestAgentTypeNamesRefused(t *testing.T) {
	for id, want := range map[string]string{
		"kortyx.Run":              `"kortyx.Run" is in the namespace of Kortyx's own types (kortyx.Run, kortyx.Session): choose an id that does not start with "kortyx."`,
		"Kortyx.mine":             `choose an id that does not start with "kortyx."`,
		"a\tb":                    "it must not contain control characters",
		"bad\xff":                 "it must be valid UTF-8",
		strings.Repeat("x", 1001): "it must have at most 1000 bytes",
	} {
		err := NewRegistry().Add(oneNode(id))
		require.Error(t, err, id)
		require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err), id)
		require.ErrorContains(t, err, want, id)
	}
	require.NoError(t, NewRegistry().Add(oneNode("support"), oneNode("kortyx-support"), oneNode("team/support.v2")))
}

func TestAgentInput(t *testing.T) {
	in, err := agentInput("support", json.RawMessage(`{"input":"hi","sessionId":"s1"}`))
	require.NoError(t, err)
	require.Equal(t, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`"hi"`), SessionID: "s1"}, in.RunInput)
	require.Nil(t, in.Snapshot)

	in, err = agentInput("support", json.RawMessage(`{"workflow":"support","input":"hi"}`))
	require.NoError(t, err)
	require.Equal(t, "support", in.Workflow)

	in, err = agentInput("support", json.RawMessage(` "hi" `))
	require.NoError(t, err)
	require.Equal(t, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`"hi"`)}, in.RunInput)
	require.Nil(t, in.Snapshot)

	in, err = agentInput("support", nil)
	require.NoError(t, err)
	require.Equal(t, contracts.RunInput{Workflow: "support"}, in.RunInput)
	require.Nil(t, in.Snapshot)

	for raw, want := range map[string]string{
		`{"workflow":"billing"}`: `its input names workflow "billing": leave RunInput.Workflow empty`,
		`{"message":"hi"}`:       `must be a contracts.RunInput`,
		`42`:                     `must be a contracts.RunInput object or a JSON string`,
		`["hi"]`:                 `must be a contracts.RunInput object or a JSON string`,
	} {
		_, err := agentInput("support", json.RawMessage(raw))
		require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err), raw)
		require.ErrorContains(t, err, want, raw)
	}
}
