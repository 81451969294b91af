package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// A run started from a snapshot of another session (a fork copies its source's state, whose
// config names the source session) belongs to the session it was started in: its state, its
// done chunk and its result say the fork's session id.
func TestRunFromAnotherSessionsSnapshotTakesItsOwnSession(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			name, err := hooks.AskText(ctx, "name", "Name?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"name": name}}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	answered := contracts.Answer{RequestID: "human-1", Kind: contracts.InterruptText, Text: "Ada", Value: json.RawMessage(`"Ada"`)}
	snap := &protocol.RunSnapshot{
		State: contracts.GraphState{Input: "hi", CurrentWorkflow: "w", LastNode: "__start__", Data: map[string]any{},
			Config: contracts.RunConfig{SessionID: "parent", Context: map[string]any{"user": "u1"}}},
		NextNode: "ask",
		Hooks:    protocol.HookState{NodeID: "ask", Journal: map[string]protocol.JournalEntry{"interrupt:name": {Kind: "interrupt", Answer: &answered}}},
	}
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, protocol.RunStart{RunInput: contracts.RunInput{SessionID: "fork"}, Snapshot: snap})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, contracts.RunConfig{SessionID: "fork", Context: map[string]any{"user": "u1"}}, res.State.Config)
	chunks := h.chunks()
	require.Equal(t, []string{"done"}, h.types())
	var done contracts.GraphState
	require.NoError(t, json.Unmarshal(chunks[0].Data, &done))
	require.Equal(t, "fork", done.Config.SessionID, "the done chunk's data.config.sessionId")
	require.Equal(t, "Ada", done.Data["name"])
}
