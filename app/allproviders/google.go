package allproviders

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/google"
)

// googleFromEnv is the "google" provider: Gemini (or Vertex AI) as the environment configures
// it (GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL, GOOGLE_GENAI_USE_VERTEXAI and
// the Vertex variables).
func googleFromEnv() app.ProviderFromEnv {
	return app.ProviderFromEnv{
		ID:   google.ID,
		Env:  []string{google.EnvAPIKey, google.EnvGoogleAPIKey, google.EnvBaseURL, google.EnvUseVertexAI},
		Hint: "Vertex AI with " + google.EnvUseVertexAI + "=true and GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION",
		New: func() (providers.Provider, string, error) {
			p, err := google.New(context.Background(), google.FromEnv())
			if err != nil {
				return nil, "", fmt.Errorf("kortyx: the google provider: %w", err)
			}
			return p, p.BaseURL(), nil
		},
	}
}
