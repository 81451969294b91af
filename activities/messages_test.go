package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// The model activity with a message store: it stores the conversation as a chain of prefix
// nodes (the first with every message, then one with the messages received inline) and
// reports the prefix {count, hash}; it resolves a prefix into the provider's full list; a
// prefix the store does not have fails for good with PAYLOAD_MISSING naming the hash.
func TestModelMessagesByReference(t *testing.T) {
	store, err := codec.NewDirStore(filepath.Join(t.TempDir(), "m"))
	require.NoError(t, err)
	msgs, err := codec.New(codec.Options{Compress: true, Store: store})
	require.NoError(t, err)
	var seen [][]providers.Message
	model := fake.NewResponder(func(req providers.Request) fake.Turn {
		seen = append(seen, req.Messages)
		return fake.Text("ok")
	})
	a, err := activities.New(activities.Config{Stream: stream.NewMemory(stream.MemoryOptions{}), Providers: providers.NewSet(model), DefaultProvider: fake.ID, Messages: msgs})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)
	pass := func(in protocol.ModelPassInput) protocol.ModelPassResult {
		t.Helper()
		v, err := env.ExecuteActivity(protocol.ModelActivityName, in)
		require.NoError(t, err)
		var resp protocol.ModelPassResult
		require.NoError(t, v.Get(&resp))
		return resp
	}
	node := func(hash string) map[string]any {
		t.Helper()
		b, err := msgs.LoadBytes(context.Background(), hash)
		require.NoError(t, err)
		var n map[string]any
		require.NoError(t, json.Unmarshal(b, &n))
		return n
	}

	big := providers.Message{Role: providers.RoleTool, ToolCallID: "c1", Name: "t", Content: strings.Repeat("x", 2000)}
	small := providers.Message{Role: providers.RoleUser, Content: "hi"}
	more := providers.Message{Role: providers.RoleUser, Content: "more"}
	last := providers.Message{Role: providers.RoleAssistant, Content: "last"}
	in := protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-0", Messages: []providers.Message{small, big}}
	resp := pass(in)
	require.NotNil(t, resp.StoredPrefix)
	require.Equal(t, 2, resp.StoredPrefix.Count)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, resp.StoredPrefix.Hash)
	first := *resp.StoredPrefix
	n := node(first.Hash)
	require.Equal(t, "", n["prev"])
	require.Equal(t, float64(2), n["count"])
	require.Len(t, n["messages"], 2, "the first node holds small and large messages alike")

	// The next pass sends the prefix and one message inline: the provider sees all three; the
	// new node holds only that message and links to the first.
	resp = pass(protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-1", Prefix: &first, Messages: []providers.Message{more}})
	require.Equal(t, []providers.Message{small, big, more}, seen[1])
	require.NotNil(t, resp.StoredPrefix)
	second := *resp.StoredPrefix
	require.Equal(t, 3, second.Count)
	require.NotEqual(t, first.Hash, second.Hash)
	n = node(second.Hash)
	require.Equal(t, first.Hash, n["prev"])
	require.Equal(t, float64(3), n["count"])
	require.Equal(t, []any{map[string]any{"role": "user", "content": "more"}}, n["messages"])

	// A chain of three nodes resolves in order; a pass with nothing new reports the same prefix.
	resp = pass(protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-2", Prefix: &second, Messages: []providers.Message{last}})
	require.Equal(t, []providers.Message{small, big, more, last}, seen[2])
	third := *resp.StoredPrefix
	require.Equal(t, 4, third.Count)
	resp = pass(protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-3", Prefix: &third, Messages: []providers.Message{}})
	require.Equal(t, []providers.Message{small, big, more, last}, seen[3])
	require.Equal(t, &third, resp.StoredPrefix)
	require.Len(t, storeList(t, store), 3, "one node per pass that added messages")

	// The same conversation inline again: the same first node (content-addressed, stored once).
	resp = pass(protocol.ModelPassInput{RunID: "r2", OpID: "op", SegmentID: "step-0", Messages: []providers.Message{small, big}})
	require.Equal(t, &first, resp.StoredPrefix)
	require.Len(t, storeList(t, store), 3)

	// A prefix whose count does not match its chain, and one the store does not have:
	// PAYLOAD_MISSING naming the hash, not retryable, the provider not called.
	var ae *temporal.ApplicationError
	for _, p := range []protocol.MessagePrefix{{Count: 3, Hash: first.Hash}, {Count: 1, Hash: "sha256:" + strings.Repeat("0", 64)}} {
		_, err = env.ExecuteActivity(protocol.ModelActivityName, protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-9", Prefix: &p})
		require.ErrorAs(t, err, &ae)
		require.Equal(t, string(contracts.CodePayloadMissing), ae.Type())
		require.True(t, ae.NonRetryable())
		require.Contains(t, ae.Error(), p.Hash)
	}
	require.Len(t, seen, 5)
	in = protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-9", Prefix: &protocol.MessagePrefix{Count: 1, Hash: "sha256:" + strings.Repeat("0", 64)}}

	// Without a message store a reference cannot be read either; a codec without a store is refused.
	plain, err := activities.New(activities.Config{Stream: stream.NewMemory(stream.MemoryOptions{}), Providers: providers.NewSet(model), DefaultProvider: fake.ID})
	require.NoError(t, err)
	env2 := s.NewTestActivityEnvironment()
	plain.Register(env2)
	_, err = env2.ExecuteActivity(protocol.ModelActivityName, in)
	require.ErrorAs(t, err, &ae)
	require.Equal(t, string(contracts.CodePayloadMissing), ae.Type())
	noStore, err := codec.New(codec.Options{Compress: true})
	require.NoError(t, err)
	_, err = activities.New(activities.Config{Stream: stream.NewMemory(stream.MemoryOptions{}), Providers: providers.NewSet(model), Messages: noStore})
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
}

func storeList(t *testing.T, s codec.Store) []codec.Object {
	t.Helper()
	var out []codec.Object
	require.NoError(t, s.List(context.Background(), func(o codec.Object) error { out = append(out, o); return nil }))
	return out
}

// A prefix chain of protocol.MaxPrefixNodes nodes resolves, and the pass stores the whole
// conversation as a new first node instead of a longer chain; one node more fails the pass for
// good with PAYLOAD_CODEC_FAILED before the provider is called.
func TestModelPrefixChainBound(t *testing.T) {
	store, err := codec.NewDirStore(filepath.Join(t.TempDir(), "m"))
	require.NoError(t, err)
	msgs, err := codec.New(codec.Options{Store: store})
	require.NoError(t, err)
	calls := 0
	var last int
	model := fake.NewResponder(func(req providers.Request) fake.Turn {
		calls++
		last = len(req.Messages)
		return fake.Text("ok")
	})
	a, err := activities.New(activities.Config{Stream: stream.NewMemory(stream.MemoryOptions{}), Providers: providers.NewSet(model), DefaultProvider: fake.ID, Messages: msgs})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)
	ctx := context.Background()
	prev := ""
	var heads []string
	for i := range protocol.MaxPrefixNodes + 1 {
		b, err := json.Marshal(map[string]any{"prev": prev, "count": i + 1, "messages": []providers.Message{{Role: providers.RoleUser, Content: fmt.Sprint(i)}}})
		require.NoError(t, err)
		prev, err = msgs.StoreBytes(ctx, b)
		require.NoError(t, err)
		heads = append(heads, prev)
	}
	n := protocol.MaxPrefixNodes
	v, err := env.ExecuteActivity(protocol.ModelActivityName, protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-0",
		Prefix: &protocol.MessagePrefix{Count: n, Hash: heads[n-1]}, Messages: []providers.Message{{Role: providers.RoleUser, Content: "new"}}})
	require.NoError(t, err)
	var resp protocol.ModelPassResult
	require.NoError(t, v.Get(&resp))
	require.Equal(t, n+1, last)
	require.Equal(t, n+1, resp.StoredPrefix.Count)
	b, err := msgs.LoadBytes(ctx, resp.StoredPrefix.Hash)
	require.NoError(t, err)
	var node struct {
		Prev     string              `json:"prev"`
		Messages []providers.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(b, &node))
	require.Equal(t, "", node.Prev, "a new first node")
	require.Len(t, node.Messages, n+1)

	_, err = env.ExecuteActivity(protocol.ModelActivityName, protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-1",
		Prefix: &protocol.MessagePrefix{Count: n + 1, Hash: heads[n]}})
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, string(contracts.CodePayloadCodec), ae.Type())
	require.True(t, ae.NonRetryable())
	require.Equal(t, 1, calls)
}

// failingPuts is a store whose writes fail (reads go to the store it wraps).
type failingPuts struct{ codec.Store }

func (failingPuts) Put(context.Context, string, []byte) error {
	return contracts.Errorf(contracts.CodePersistenceError, "the store does not answer")
}

// A message store that fails while the pass stores its node does not fail the pass: the
// provider's answer is returned without a stored prefix (the next pass sends its messages inline).
func TestModelStoreFailureKeepsTheAnswer(t *testing.T) {
	store, err := codec.NewDirStore(filepath.Join(t.TempDir(), "m"))
	require.NoError(t, err)
	msgs, err := codec.New(codec.Options{Store: failingPuts{store}})
	require.NoError(t, err)
	calls := 0
	model := fake.NewResponder(func(providers.Request) fake.Turn { calls++; return fake.Text("ok") })
	a, err := activities.New(activities.Config{Stream: stream.NewMemory(stream.MemoryOptions{}), Providers: providers.NewSet(model), DefaultProvider: fake.ID, Messages: msgs})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)
	v, err := env.ExecuteActivity(protocol.ModelActivityName, protocol.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-0",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	var resp protocol.ModelPassResult
	require.NoError(t, v.Get(&resp))
	require.Equal(t, "ok", resp.Text)
	require.Nil(t, resp.StoredPrefix)
	require.Equal(t, 1, calls)
	require.Empty(t, storeList(t, store))
}
