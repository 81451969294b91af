package digest

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestAnswerDigest(t *testing.T) {
	base := contracts.Response{Token: "t", RequestID: "r", Value: json.RawMessage(`{"a":1,"b":[2,3]}`)}
	same := base
	same.Value = json.RawMessage(` { "b": [2, 3], "a": 1 } `)
	require.Equal(t, Answer(base), Answer(same), "key order and spacing do not count")
	for name, other := range map[string]contracts.Response{
		"value":    {Token: "t", RequestID: "r", Value: json.RawMessage(`{"a":2,"b":[2,3]}`)},
		"text":     {Token: "t", RequestID: "r", Value: base.Value, Text: "x"},
		"selected": {Token: "t", RequestID: "r", Value: base.Value, Selected: []string{"x"}},
		"cancel":   {Token: "t", RequestID: "r", Value: base.Value, Cancel: true},
		"token":    {Token: "u", RequestID: "r", Value: base.Value},
		"request":  {Token: "t", RequestID: "s", Value: base.Value},
		"not json": {Token: "t", RequestID: "r", Value: json.RawMessage(`{a`)},
	} {
		require.NotEqual(t, Answer(base), Answer(other), name)
	}
	require.NotEqual(t, Answer(contracts.Response{Value: json.RawMessage(`{a`)}), Answer(contracts.Response{Value: json.RawMessage(`{b`)}),
		"invalid values differ by their text")
}

func TestPromptDigest(t *testing.T) {
	base := sessionapi.TurnRequest{ClientTurnID: "c1", Input: json.RawMessage(`{"a":1,"b":"x"}`)}
	same := sessionapi.TurnRequest{ClientTurnID: "c2", Workflow: "support", Input: json.RawMessage(` { "b": "x", "a": 1 } `),
		Context: json.RawMessage(`{"u":1}`), Messages: []contracts.Message{{Role: "user", Content: "earlier"}}, Reconnect: true}
	require.Equal(t, Prompt(base), Prompt(same), "only the input counts, as canonical JSON")
	require.NotEqual(t, Prompt(base), Prompt(sessionapi.TurnRequest{Input: json.RawMessage(`{"a":2,"b":"x"}`)}))
	require.NotEqual(t, Prompt(sessionapi.TurnRequest{Input: json.RawMessage(`"approve"`)}), Prompt(sessionapi.TurnRequest{Input: json.RawMessage(`"deny"`)}))
	require.NotEqual(t, Prompt(sessionapi.TurnRequest{Input: json.RawMessage(`{a`)}), Prompt(sessionapi.TurnRequest{Input: json.RawMessage(`{b`)}),
		"invalid inputs differ by their text")
	require.NotEqual(t, Prompt(sessionapi.TurnRequest{Input: json.RawMessage(`"x"`)}), Answer(contracts.Response{Text: "x"}))
}
