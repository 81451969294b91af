package execution

import (
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
)

// Clone never hands back the value it was given: what cannot round-trip through JSON panics.
func TestCloneOfWhatCannotBeEncodedPanics(t *testing.T) {
	require.PanicsWithValue(t, "kortyx: a map[string]interface {} that cannot be encoded as JSON reached Clone: json: unsupported type: chan int",
		func() { protocol.Clone(map[string]any{"ch": make(chan int)}) })
	in := map[string]any{"a": []any{"b"}}
	out := protocol.Clone(in)
	out["a"].([]any)[0] = "c"
	require.Equal(t, "b", in["a"].([]any)[0], "a deep copy")
}
