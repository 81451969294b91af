package contracts_test

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/stretchr/testify/require"
)

// RawJSON records what it is given, or panics: it never returns nothing for a value that
// exists (a journal entry recorded as nil reads as "not recorded" and re-runs paid work).
func TestRawJSONNeverDropsAValue(t *testing.T) {
	require.Equal(t, json.RawMessage(`{"a":1}`), protocol.RawJSON(map[string]int{"a": 1}))
	require.Nil(t, protocol.RawJSON(nil))
	require.Panics(t, func() { protocol.RawJSON(make(chan int)) })
}
