package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/stretchr/testify/require"
)

func TestReservedToolPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, tool, want string
	}{
		{"emit", "kortyx_emit__plan", protocol.PrefixEmit},
		{"return", "kortyx_return__result", protocol.PrefixReturn},
		{"stream emit", "kortyx_stream_emit__plan", protocol.PrefixStreamEmit},
		{"stream return", "kortyx_stream_return__result", protocol.PrefixStreamReturn},
		{"request input", "kortyx_request_input__confirm", protocol.PrefixRequestInput},
		{"bare prefix", "kortyx_emit__", protocol.PrefixEmit},
		{"worker tool", "record_step", ""},
		{"kortyx but not a control prefix", "kortyx_search", ""},
		{"single underscore", "kortyx_emit_plan", ""},
		{"prefix inside the name", "my_kortyx_emit__plan", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, protocol.ReservedToolPrefix(tc.tool))
		})
	}
	require.Equal(t, []string{"kortyx_request_input__", "kortyx_emit__", "kortyx_return__", "kortyx_stream_emit__", "kortyx_stream_return__"},
		protocol.ReservedToolPrefixes())
}
