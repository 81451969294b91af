package kortyx

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestAnswerDigest(t *testing.T) {
	base := contracts.Response{Token: "t", RequestID: "r", Value: json.RawMessage(`{"a":1,"b":[2,3]}`)}
	same := base
	same.Value = json.RawMessage(` { "b": [2, 3], "a": 1 } `)
	require.Equal(t, answerDigest(base), answerDigest(same), "key order and spacing do not count")
	for name, other := range map[string]contracts.Response{
		"value":    {Token: "t", RequestID: "r", Value: json.RawMessage(`{"a":2,"b":[2,3]}`)},
		"text":     {Token: "t", RequestID: "r", Value: base.Value, Text: "x"},
		"selected": {Token: "t", RequestID: "r", Value: base.Value, Selected: []string{"x"}},
		"cancel":   {Token: "t", RequestID: "r", Value: base.Value, Cancel: true},
		"token":    {Token: "u", RequestID: "r", Value: base.Value},
		"request":  {Token: "t", RequestID: "s", Value: base.Value},
		"not json": {Token: "t", RequestID: "r", Value: json.RawMessage(`{a`)},
	} {
		require.NotEqual(t, answerDigest(base), answerDigest(other), name)
	}
	require.NotEqual(t, answerDigest(contracts.Response{Value: json.RawMessage(`{a`)}), answerDigest(contracts.Response{Value: json.RawMessage(`{b`)}),
		"invalid values differ by their text")
}
