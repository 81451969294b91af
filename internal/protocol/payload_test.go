package protocol_test

import (
	"encoding/json"
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

// A run's starter records its start in the run's input when the input stays within the limit
// with it; the size error depends on the input alone.
func TestAddStart(t *testing.T) {
	rec := &protocol.StartRecord{Version: 3, Seed: []byte("0123456789abcdef0123456789abcdef")}
	in := protocol.RunStart{RunInput: contracts.RunInput{Workflow: "hello", Input: json.RawMessage(`"hi"`)}}
	require.NoError(t, protocol.AddStart(&in, rec, "the input", "send less"))
	require.Same(t, rec, in.Start)

	// Within the limit without the record, over it with: the run records its own start.
	recBytes, err := json.Marshal(rec)
	require.NoError(t, err)
	fill := func(size int) protocol.RunStart {
		in := protocol.RunStart{RunInput: contracts.RunInput{Workflow: "hello"}}
		b, _ := json.Marshal(in)
		in.Input = json.RawMessage(`"` + strings.Repeat("x", size-len(b)-len(`,"input":""`)) + `"`)
		b, _ = json.Marshal(in)
		require.Equal(t, size, len(b))
		return in
	}
	near := fill(protocol.PayloadLimit - len(recBytes)/2)
	require.NoError(t, protocol.AddStart(&near, rec, "the input", "send less"))
	require.Nil(t, near.Start)

	over := fill(protocol.PayloadLimit + 1)
	err = protocol.AddStart(&over, rec, "the input", "send less")
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err))
	require.Nil(t, over.Start)

	require.NoError(t, protocol.AddStart(&in, nil, "the input", "send less"))
}

// Derive gives a started run's seed without moving the starter's id sequence.
func TestIDSourceDerive(t *testing.T) {
	s := &protocol.IDSource{Seed: []byte("seed")}
	a, b := s.Derive("run:a"), s.Derive("run:b")
	require.Len(t, a, 32)
	require.NotEqual(t, a, b)
	require.Equal(t, a, s.Derive("run:a"))
	require.Zero(t, s.Seq)
	require.NotEqual(t, a, s.Next("run:a"))
}
