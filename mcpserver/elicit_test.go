package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// A custom question is asked with its own schema when that is an elicitation form, else as one
// JSON text field whose description shows the schema.
func TestCustomElicitation(t *testing.T) {
	custom := contracts.InterruptInput{Kind: contracts.InterruptCustom, Question: "How?", SchemaID: "ship"}
	for _, tc := range []struct {
		name, schema, want string
		form               bool
	}{
		{"flat object", `{"type":"object","properties":{"q":{"type":"integer","minimum":1},"speed":{"enum":["standard","express"]}},"required":["q"]}`,
			`{"type":"object","properties":{"q":{"type":"integer","minimum":1},"speed":{"enum":["standard","express"],"type":"string"}},"required":["q"]}`, true},
		{"multi-select enums", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"sizes":{"type":"array","minItems":1,"items":{"anyOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}}}}`,
			`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"sizes":{"type":"array","minItems":1,"items":{"anyOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}}}}`, true},
		{"an array of numbers", `{"type":"object","properties":{"n":{"type":"array","items":{"type":"number"}}}}`,
			`{"type":"object","properties":{"answer":{"type":"string","title":"Answer","description":"A JSON value matching the schema {\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"array\",\"items\":{\"type\":\"number\"}}}}"}},"required":["answer"]}`, false},
		{"nested object", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
			`{"type":"object","properties":{"answer":{"type":"string","title":"Answer","description":"A JSON value matching the schema {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"string\"}}}}}"}},"required":["answer"]}`, false},
		{"an array", `{"type":"array"}`,
			`{"type":"object","properties":{"answer":{"type":"string","title":"Answer","description":"A JSON value matching the schema {\"type\":\"array\"}"}},"required":["answer"]}`, false},
		{"no schema known", ``,
			`{"type":"object","properties":{"answer":{"type":"string","title":"Answer","description":"A JSON value of schema ship"}},"required":["answer"]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, form := elicitation(custom, json.RawMessage(tc.schema))
			require.Equal(t, tc.form, form)
			require.Equal(t, "How?", p.Message)
			b, err := json.Marshal(p.RequestedSchema)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(b))
		})
	}
	r := responseOf(custom, contracts.Response{Token: "t"}, map[string]any{"q": 2.0}, true)
	require.JSONEq(t, `{"q":2}`, string(r.Value))
}
