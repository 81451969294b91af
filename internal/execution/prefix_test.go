package execution

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/stretchr/testify/require"
)

// byReference sends the longest learned prefix whose messages begin the pass's messages, and
// only the messages after it; a pass whose first messages differ from every prefix goes inline;
// learnStored ignores prefixes it cannot use and keeps the newest keptPrefixes.
func TestByReferencePicksLongestMatchingPrefix(t *testing.T) {
	m := func(s string) providers.Message {
		return providers.Message{Role: providers.RoleUser, Content: s}
	}
	l := &loop{}
	in := protocol.ModelPassInput{Messages: []providers.Message{m("a"), m("b"), m("c")}}
	require.Equal(t, in, l.byReference(in), "nothing learned: inline")

	l.learnStored([]providers.Message{m("a")}, &protocol.MessagePrefix{Count: 1, Hash: "h1"})
	l.learnStored([]providers.Message{m("a"), m("b")}, &protocol.MessagePrefix{Count: 2, Hash: "h2"})
	l.learnStored([]providers.Message{m("a"), m("x")}, &protocol.MessagePrefix{Count: 2, Hash: "hx"})
	l.learnStored([]providers.Message{m("a")}, &protocol.MessagePrefix{Count: 2, Hash: "bad"}) // more than it was sent
	l.learnStored([]providers.Message{m("a")}, nil)
	require.Len(t, l.prefixes, 3)

	got := l.byReference(in)
	require.Equal(t, &protocol.MessagePrefix{Count: 2, Hash: "h2"}, got.Prefix)
	require.Equal(t, []providers.Message{m("c")}, got.Messages)
	require.Len(t, in.Messages, 3, "the input itself is unchanged")

	got = l.byReference(protocol.ModelPassInput{Messages: []providers.Message{m("a"), m("x"), m("y")}})
	require.Equal(t, &protocol.MessagePrefix{Count: 2, Hash: "hx"}, got.Prefix)
	require.Equal(t, []providers.Message{m("y")}, got.Messages)

	got = l.byReference(protocol.ModelPassInput{Messages: []providers.Message{m("a"), m("z")}})
	require.Equal(t, &protocol.MessagePrefix{Count: 1, Hash: "h1"}, got.Prefix, "the longest that matches")
	require.Equal(t, []providers.Message{m("z")}, got.Messages)

	got = l.byReference(protocol.ModelPassInput{Messages: []providers.Message{m("b"), m("a")}})
	require.Nil(t, got.Prefix, "no prefix matches: inline")
	require.Len(t, got.Messages, 2)

	got = l.byReference(protocol.ModelPassInput{Messages: []providers.Message{m("a"), m("b")}})
	require.Equal(t, &protocol.MessagePrefix{Count: 2, Hash: "h2"}, got.Prefix)
	require.Equal(t, []providers.Message{}, got.Messages, "everything by reference")

	for i := range keptPrefixes + 2 {
		l.learnStored([]providers.Message{m("q")}, &protocol.MessagePrefix{Count: 1, Hash: "q" + string(rune('0'+i))})
	}
	require.Len(t, l.prefixes, keptPrefixes)
	require.Equal(t, "q5", l.prefixes[keptPrefixes-1].ref.Hash)
	require.Nil(t, l.byReference(protocol.ModelPassInput{Messages: []providers.Message{m("a"), m("b")}}).Prefix, "older prefixes are forgotten")
}

// A message that differs from a stored one only in a tool call's arguments, an error flag or
// its continuation is not the stored message: a prefix is sent only for identical messages.
func TestSameMessageComparesEveryField(t *testing.T) {
	call := providers.Message{Role: providers.RoleAssistant,
		ToolCalls: []providers.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"id":1}`)}}}
	require.True(t, sameMessage(call, call))
	other := call
	other.ToolCalls = []providers.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"id":2}`)}}
	require.False(t, sameMessage(call, other), "arguments")
	result := providers.Message{Role: providers.RoleTool, ToolCallID: "c1", Content: "no"}
	failed := result
	failed.IsError = true
	require.False(t, sameMessage(result, failed), "error flag")
	cont := call
	cont.Continuation = json.RawMessage(`{"provider":"anthropic"}`)
	require.False(t, sameMessage(call, cont), "continuation")
}
