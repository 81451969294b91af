package tools_test

import (
	"context"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/stretchr/testify/require"
)

// A worker tool may not take a name of Kortyx's control tools: every prefix of the one list
// is refused, with the list in the message.
func TestNewSetRefusesEveryReservedPrefix(t *testing.T) {
	for _, p := range protocol.ReservedToolPrefixes() {
		t.Run(p, func(t *testing.T) {
			tool, err := tools.Func(p+"x", "A tool.", `{"type":"object"}`,
				func(context.Context, tools.Call, map[string]any) (map[string]any, error) { return nil, nil })
			require.NoError(t, err)
			_, err = tools.NewSet(tool)
			require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
			require.EqualError(t, err, `kortyx: invalid tools: tool "`+p+`x": names starting with kortyx_request_input__, kortyx_emit__, `+
				`kortyx_return__, kortyx_stream_emit__, kortyx_stream_return__ are reserved for Kortyx`)
		})
	}
}
