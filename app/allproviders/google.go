package allproviders

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
)

// Google is the "google" provider: Gemini (or Vertex AI) as the environment configures it
// (GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL, GOOGLE_GENAI_USE_VERTEXAI and the
// Vertex variables), or, when none of the first four is set and fakes are asked for, a fake
// Gemini server playing the program's script, so that "google:<model>" works without a key.
func Google() app.ProviderFromEnv {
	return app.ProviderFromEnv{
		ID:   google.ID,
		Env:  []string{google.EnvAPIKey, google.EnvGoogleAPIKey, google.EnvBaseURL, google.EnvUseVertexAI},
		Hint: "Vertex AI with " + google.EnvUseVertexAI + "=true and " + google.EnvProject + " and " + google.EnvLocation,
		New: func() (providers.Provider, string, error) {
			p, err := google.New(context.Background(), google.FromEnv())
			if err != nil {
				return nil, "", fmt.Errorf("kortyx: the google provider: %w", err)
			}
			return p, p.BaseURL(), nil
		},
		Fake: func(respond fake.Responder) (providers.Provider, string, func()) {
			srv := fakegemini.New(respond)
			p, err := google.New(context.Background(), google.Options{APIKey: "fake", BaseURL: srv.URL()})
			if err != nil { // only a missing key or a bad backend fails New; both are set here
				panic(err)
			}
			return p, srv.URL(), srv.Close
		},
	}
}
