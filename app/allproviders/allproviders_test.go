package allproviders_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/google"
)

// The providers after openai, in the order of the error of a worker without a provider (its
// full text: test/integration TestWorkerWithoutProviderDoesNotStart).
func TestFromEnvListsGoogleThenAnthropic(t *testing.T) {
	list := allproviders.FromEnv()
	require.Len(t, list, 2)
	require.Equal(t, "google", list[0].ID)
	require.Equal(t, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"}, list[0].Env)
	require.Equal(t, "Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true and GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION", list[0].Hint)
	require.Equal(t, "anthropic", list[1].ID)
	require.Equal(t, []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}, list[1].Env)
	require.Empty(t, list[1].Hint)
}

// Each New reaches what its variables name.
func TestFromEnvNewReachesTheConfiguredEndpoint(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "")
	t.Setenv(anthropic.EnvBaseURL, "http://127.0.0.1:1")
	t.Setenv(google.EnvUseVertexAI, "")
	t.Setenv(google.EnvBaseURL, "")
	t.Setenv(google.EnvGoogleAPIKey, "")
	t.Setenv(google.EnvAPIKey, "a-key")
	list := allproviders.FromEnv()
	gp, where, err := list[0].New()
	require.NoError(t, err)
	require.Equal(t, "google", gp.ID())
	require.Equal(t, "https://generativelanguage.googleapis.com/", where, "a key reaches Gemini itself")
	ap, where, err := list[1].New()
	require.NoError(t, err)
	require.Equal(t, "anthropic", ap.ID())
	require.Equal(t, "http://127.0.0.1:1", where)
}

// app.CheckModel knows the ids of this package's providers (app writes them out: it must not
// link their SDKs).
func TestCheckModelKnowsEveryProvider(t *testing.T) {
	for _, p := range allproviders.FromEnv() {
		require.NoError(t, app.CheckModel(p.ID+":some-model"), p.ID)
	}
}
