package protocol_test

import (
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestCheckPayload(t *testing.T) {
	// A JSON string of n bytes encodes to n+2 bytes (its quotes).
	require.NoError(t, protocol.CheckPayload("v", strings.Repeat("a", protocol.PayloadLimit-2), "fix it"))
	err := protocol.CheckPayload("the value", strings.Repeat("a", protocol.PayloadLimit-1), "send less")
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err))
	f := contracts.FailureOf(err)
	require.Equal(t, map[string]any{"what": "the value", "size": protocol.PayloadLimit + 1, "limit": protocol.PayloadLimit, "fix": "send less"}, f.Details)
	require.Equal(t, "the value is 2031617 bytes encoded, over the 2031616-byte limit of a Temporal payload: send less.", f.Message)
	require.NoError(t, protocol.CheckPayload("a channel", make(chan int), "-"), "what cannot be encoded is the encoder's to report")
}
