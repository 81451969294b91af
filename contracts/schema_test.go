package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// The validator walks the value's maps in Go's random order; the issues, and the text of each,
// must not depend on it: workflow code puts them in tool results, repair prompts and state.
func TestSchemaIssuesAreDeterministic(t *testing.T) {
	s := contracts.MustCompileSchema(`{"type":"object","additionalProperties":false,
		"properties":{"card":{"type":"object","additionalProperties":false,"properties":{"title":{"type":"string"}}}}}`)
	doc := []byte(`{"zeta":1,"alpha":2,"mid":3,"beta":4,"omega":5,"card":{"x":1,"b":2,"a":3,"title":7}}`)
	want := []contracts.Issue{
		{Path: []any{}, Code: "additionalProperties", Message: "additional properties 'alpha', 'beta', 'mid', 'omega', 'zeta' not allowed"},
		{Path: []any{"card"}, Code: "additionalProperties", Message: "additional properties 'a', 'b', 'x' not allowed"},
		{Path: []any{"card", "title"}, Code: "type", Message: "got number, want string"},
	}
	for range 200 {
		require.Equal(t, want, s.ValidateJSON(doc))
	}
}
