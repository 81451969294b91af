package activities_test

import (
	"path/filepath"
	"strings"
	"testing"

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

// The model activity with a message store: it stores the large messages it received inline and
// reports them (index, hash, size), resolves references into the provider's full list, and
// fails a reference the store does not have for good with PAYLOAD_MISSING naming the hash.
func TestModelMessagesByReference(t *testing.T) {
	store, err := codec.NewDirStore(filepath.Join(t.TempDir(), "m"))
	require.NoError(t, err)
	msgs, err := codec.New(codec.Options{Compress: true, Store: store})
	require.NoError(t, err)
	var seen [][]contracts.ModelMessage
	model := fake.NewResponder(func(req providers.Request) fake.Turn {
		seen = append(seen, req.Messages)
		return fake.Text("ok")
	})
	a, err := activities.New(activities.Config{Stream: stream.NewMemory(), Providers: providers.NewSet(model), DefaultProvider: fake.ID, Messages: msgs})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)

	big := contracts.ModelMessage{Role: contracts.RoleTool, ToolCallID: "c1", Name: "t", Content: strings.Repeat("x", 2000)}
	small := contracts.ModelMessage{Role: contracts.RoleUser, Content: "hi"}
	in := contracts.ModelPassInput{RunID: "r", OpID: "op", SegmentID: "step-0", Messages: []contracts.ModelMessage{small, big}}
	v, err := env.ExecuteActivity(contracts.ModelActivityName, in)
	require.NoError(t, err)
	var resp contracts.ModelResponse
	require.NoError(t, v.Get(&resp))
	require.Len(t, resp.StoredMessages, 1, "only the message of at least contracts.MessageRefMin")
	ref := resp.StoredMessages[0]
	require.Equal(t, 1, ref.Index)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, ref.Hash)
	require.Greater(t, ref.Size, contracts.MessageRefMin)

	// The next pass sends it by reference; the provider sees it in full, nothing is stored again.
	in.Messages = []contracts.ModelMessage{small, {}, {Role: contracts.RoleUser, Content: "more"}}
	in.MessageRefs = []contracts.MessageRef{ref}
	v, err = env.ExecuteActivity(contracts.ModelActivityName, in)
	require.NoError(t, err)
	resp = contracts.ModelResponse{}
	require.NoError(t, v.Get(&resp))
	require.Empty(t, resp.StoredMessages)
	require.Equal(t, []contracts.ModelMessage{small, big, {Role: contracts.RoleUser, Content: "more"}}, seen[1])

	// A reference the store does not have: PAYLOAD_MISSING, not retryable, the provider not called.
	in.MessageRefs = []contracts.MessageRef{{Index: 1, Hash: "sha256:" + strings.Repeat("0", 64), Size: 10}}
	_, err = env.ExecuteActivity(contracts.ModelActivityName, in)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, string(contracts.CodePayloadMissing), ae.Type())
	require.True(t, ae.NonRetryable())
	require.Contains(t, ae.Error(), in.MessageRefs[0].Hash)
	require.Len(t, seen, 2)

	// Without a message store a reference cannot be read either; a codec without a store is refused.
	plain, err := activities.New(activities.Config{Stream: stream.NewMemory(), Providers: providers.NewSet(model), DefaultProvider: fake.ID})
	require.NoError(t, err)
	env2 := s.NewTestActivityEnvironment()
	plain.Register(env2)
	_, err = env2.ExecuteActivity(contracts.ModelActivityName, in)
	require.ErrorAs(t, err, &ae)
	require.Equal(t, string(contracts.CodePayloadMissing), ae.Type())
	noStore, err := codec.New(codec.Options{Compress: true})
	require.NoError(t, err)
	_, err = activities.New(activities.Config{Stream: stream.NewMemory(), Providers: providers.NewSet(model), Messages: noStore})
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
}
