package allproviders_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
)

// Without a Google key the "google" provider reaches a fake Gemini server playing the
// program's script: the support agent runs end to end on it (through the genai SDK and the
// Gemini wire), tool calls, approval and all.
func TestBackendGoogleWithoutKeyRunsTheSupportAgent(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "KORTYX_MCP_SERVERS", google.EnvAPIKey, google.EnvGoogleAPIKey,
		google.EnvBaseURL, google.EnvUseVertexAI} {
		t.Setenv(k, "")
	}
	store := support.NewStore()
	shop, err := support.Tools(store)
	require.NoError(t, err)
	b, err := app.NewBackend(context.Background(), app.BackendOptions{Tools: shop, FakeModel: support.FakeModel(),
		Providers: allproviders.FromEnv(), FakeServers: true})
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, []string{"anthropic", "fake", "google", "openai"}, b.Providers.IDs())
	gp, err := b.Providers.Get("google")
	require.NoError(t, err)
	require.Contains(t, gp.(*google.Provider).BaseURL(), "http://127.0.0.1:")

	set, err := tools.NewSet(shop...)
	require.NoError(t, err)
	reg := workflows.NewRegistry()
	require.NoError(t, support.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{Model: gp, DefaultModel: "gemini-2.5-flash", Tools: set})
	env.OnQuestion("", kortyxtest.Select("approve"))
	res, err := env.Run(support.WorkflowID, "Please refund order A-1001, it arrived broken.")
	require.NoError(t, err)
	require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", res.State.Data["answer"])
	require.Equal(t, 1, store.Refunds())
}

// A configured key reaches Gemini itself (no fake server is started).
func TestBackendGoogleWithKey(t *testing.T) {
	t.Setenv("KORTYX_MCP_SERVERS", "")
	t.Setenv(google.EnvUseVertexAI, "")
	t.Setenv(google.EnvBaseURL, "")
	t.Setenv(google.EnvGoogleAPIKey, "")
	t.Setenv(google.EnvAPIKey, "a-key")
	b, err := app.NewBackend(context.Background(), app.BackendOptions{Providers: allproviders.FromEnv()})
	require.NoError(t, err)
	defer b.Close()
	gp, err := b.Providers.Get("google")
	require.NoError(t, err)
	require.Equal(t, "https://generativelanguage.googleapis.com/", gp.(*google.Provider).BaseURL())
}
