package allproviders_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
)

// The support agent's tool loop on the anthropic provider: the thinking blocks of each pass go
// back, first in the assistant message of the next pass.
func TestSupportAgentOnAnthropicCarriesThinking(t *testing.T) {
	srv := fakeanthropic.New(support.FakeModel())
	srv.Thinking = []fakeanthropic.Thinking{{Text: "Check the order first.", Signature: "sig"}}
	defer srv.Close()
	store := support.NewStore()
	ts, err := support.Tools(store)
	require.NoError(t, err)
	set, err := tools.NewSet(ts...)
	require.NoError(t, err)
	reg := workflows.NewRegistry()
	require.NoError(t, support.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{Model: anthropic.New(anthropic.Options{BaseURL: srv.URL()}), DefaultModel: "claude-test", Tools: set})
	env.OnQuestion("", kortyxtest.Select("approve"))
	_, err = env.Run(support.WorkflowID, "Please refund order A-1001, it arrived broken.")
	require.NoError(t, err)
	require.Equal(t, 1, store.Refunds())

	reqs := srv.Requests()
	require.Len(t, reqs, 3, "lookup, refund, answer")
	for i, r := range reqs[1:] {
		var assistants int
		for _, m := range r.Messages {
			if m.Role == providers.RoleAssistant {
				assistants++
				require.JSONEq(t, `[{"type":"thinking","thinking":"Check the order first.","signature":"sig"}]`, string(m.Continuation), "pass %d", i+2)
			}
		}
		require.Equal(t, i+1, assistants)
	}
}
