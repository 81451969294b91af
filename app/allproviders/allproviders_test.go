package allproviders_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
)

func TestFromEnvWithoutVariables(t *testing.T) {
	t.Run("fakes asked for: the fake server of each wire", func(t *testing.T) {
		clearProviderEnv(t)
		b, err := app.NewBackend(context.Background(), app.BackendOptions{Providers: allproviders.FromEnv(), FakeServers: true})
		require.NoError(t, err)
		defer b.Close()
		require.Equal(t, []string{"anthropic", "fake", "google", "openai"}, b.Providers.IDs())
		require.Len(t, b.ProviderInfo, 4)
		for i, id := range []string{"openai", "google", "anthropic"} {
			p := b.ProviderInfo[i]
			require.Equal(t, id, p.ID)
			require.True(t, p.Fake)
			require.Empty(t, p.Env)
			require.True(t, strings.HasPrefix(p.Where, "http://127.0.0.1:"), p.Where)
		}
		require.Equal(t, app.ProviderInfo{ID: "fake", Where: "the in-process scripted model", Fake: true}, b.ProviderInfo[3])
	})
	t.Run("no fakes: an error naming every provider's variables", func(t *testing.T) {
		clearProviderEnv(t)
		_, err := app.NewBackend(context.Background(), app.BackendOptions{Providers: allproviders.FromEnv()})
		require.EqualError(t, err, "kortyx: no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL (openai); "+
			"or GEMINI_API_KEY or GOOGLE_API_KEY or GOOGLE_GEMINI_BASE_URL or GOOGLE_GENAI_USE_VERTEXAI (google), "+
			"Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true and GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION; "+
			"or ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL (anthropic). "+
			"To answer from the scripted fake model servers instead (tests, demos), set KORTYX_FAKE_MODELS=1")
	})
	t.Run("one provider configured: the others are not registered", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
		t.Setenv("KORTYX_MODEL", "anthropic:claude-sonnet-4-5")
		b, err := app.NewBackend(context.Background(), app.BackendOptions{Providers: allproviders.FromEnv()})
		require.NoError(t, err)
		defer b.Close()
		require.Equal(t, []string{"anthropic", "fake"}, b.Providers.IDs())
		require.Equal(t, "claude-sonnet-4-5 at http://127.0.0.1:1", b.Model)
	})
}

// app.ProviderIDs writes the ids of this package's providers out (app must not link their
// SDKs); they are the ids these providers register under.
func TestProviderIDsNameEveryProvider(t *testing.T) {
	ids := app.ProviderIDs()
	for _, p := range allproviders.FromEnv() {
		require.Contains(t, ids, p.ID)
	}
	require.NoError(t, app.CheckModel("anthropic:claude-sonnet-4-5"))
	require.NoError(t, app.CheckModel("google:gemini-2.5-flash"))
}
