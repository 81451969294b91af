package kortyx

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestPromptDigest(t *testing.T) {
	base := contracts.TurnRequest{ClientTurnID: "c1", Input: json.RawMessage(`{"a":1,"b":"x"}`)}
	same := contracts.TurnRequest{ClientTurnID: "c2", Workflow: "support", Input: json.RawMessage(` { "b": "x", "a": 1 } `),
		Context: json.RawMessage(`{"u":1}`), Messages: []contracts.Message{{Role: "user", Content: "earlier"}}, Reconnect: true}
	require.Equal(t, promptDigest(base), promptDigest(same), "only the input counts, as canonical JSON")
	require.NotEqual(t, promptDigest(base), promptDigest(contracts.TurnRequest{Input: json.RawMessage(`{"a":2,"b":"x"}`)}))
	require.NotEqual(t, promptDigest(contracts.TurnRequest{Input: json.RawMessage(`"approve"`)}), promptDigest(contracts.TurnRequest{Input: json.RawMessage(`"deny"`)}))
	require.NotEqual(t, promptDigest(contracts.TurnRequest{Input: json.RawMessage(`{a`)}), promptDigest(contracts.TurnRequest{Input: json.RawMessage(`{b`)}),
		"invalid inputs differ by their text")
	require.NotEqual(t, promptDigest(contracts.TurnRequest{Input: json.RawMessage(`"x"`)}), answerDigest(contracts.Response{Text: "x"}))
}
