package toolargs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"":           `{}`,
		"  \n":       `{}`,
		` {"a":1} `:  `{"a":1}`,
		`[1,2]`:      `[1,2]`,
		`{"a":`:      `"{\"a\":"`,
		` not json `: `" not json "`,
	} {
		require.Equal(t, json.RawMessage(want), Parse(in), "%q", in)
	}
}
