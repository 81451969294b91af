package allproviders_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
)

// Without a key, --model anthropic:… reaches the anthropic provider on a fake Anthropic server
// playing the program's script.
func TestBackendAnthropicModelWithoutKeyUsesTheFakeServer(t *testing.T) {
	clearProviderEnv(t)
	b, err := app.NewBackend(context.Background(), app.BackendOptions{Model: "anthropic:claude-sonnet-4-5", Providers: allproviders.FromEnv(), FakeServers: true,
		FakeModel: func(providers.Request) fake.Turn { return fake.Text("from the script") }})
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, "anthropic", b.DefaultProvider)
	require.Equal(t, "claude-sonnet-4-5", b.DefaultModel)
	p, err := b.Providers.Get("anthropic")
	require.NoError(t, err)
	require.Equal(t, "the scripted fake model (no ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL set) at "+p.(*anthropic.Provider).BaseURL(), b.Model)
	resp, err := p.Generate(context.Background(), providers.Request{Model: b.DefaultModel,
		Messages: []contracts.ModelMessage{{Role: contracts.RoleUser, Content: "hi"}}}, nil)
	require.NoError(t, err)
	require.Equal(t, "from the script", resp.Text)
	require.Equal(t, "end_turn", resp.FinishReason.Raw, "answered over the Anthropic wire")
}

// KORTYX_MODEL may name the provider too; without a prefix the default stays openai; Model
// replaces KORTYX_MODEL.
func TestBackendDefaultModelFromEnv(t *testing.T) {
	clearProviderEnv(t)
	for env, want := range map[string][2]string{
		"anthropic:claude-haiku-4-5": {"anthropic", "claude-haiku-4-5"},
		"gpt-4.1":                    {"openai", "gpt-4.1"},
		"":                           {"openai", "gpt-4.1-mini"},
	} {
		t.Setenv("KORTYX_MODEL", env)
		b, err := app.NewBackend(context.Background(), app.BackendOptions{Providers: allproviders.FromEnv(), FakeServers: true})
		require.NoError(t, err)
		b.Close()
		require.Equal(t, want, [2]string{b.DefaultProvider, b.DefaultModel}, env)
	}
	t.Setenv("KORTYX_MODEL", "anthropic:claude-haiku-4-5")
	b, err := app.NewBackend(context.Background(), app.BackendOptions{Model: "google:gemini-2.5-flash", Providers: allproviders.FromEnv(), FakeServers: true})
	require.NoError(t, err)
	b.Close()
	require.Equal(t, [2]string{"google", "gemini-2.5-flash"}, [2]string{b.DefaultProvider, b.DefaultModel})
}

// The support agent's tool loop on the anthropic provider: the thinking blocks of each pass go
// back, first in the assistant message of the next pass.
func TestSupportAgentOnAnthropicCarriesThinking(t *testing.T) {
	srv := fakeanthropic.New(support.FakeModel(), fakeanthropic.WithThinking(fakeanthropic.Thinking{Text: "Check the order first.", Signature: "sig"}))
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
			if m.Role == contracts.RoleAssistant {
				assistants++
				require.JSONEq(t, `[{"type":"thinking","thinking":"Check the order first.","signature":"sig"}]`, string(m.Continuation), "pass %d", i+2)
			}
		}
		require.Equal(t, i+1, assistants)
	}
}

func clearProviderEnv(t *testing.T) {
	t.Helper()
	for _, e := range allproviders.FromEnv() {
		for _, v := range e.Env {
			t.Setenv(v, "")
		}
	}
	t.Setenv("KORTYX_MODEL", "")
	t.Setenv("KORTYX_MCP_SERVERS", "")
}
