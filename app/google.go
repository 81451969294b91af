package app

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
)

// googleProvider returns the "google" provider: Gemini (or Vertex AI) as the environment
// configures it (GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL,
// GOOGLE_GENAI_USE_VERTEXAI, …), or, when none of those is set, a fake Gemini server started
// here playing script, so that "google:<model>" works without a key. stop stops that server.
func googleProvider(ctx context.Context, script fake.Responder) (p *google.Provider, stop func(), err error) {
	o := google.FromEnv()
	stop = func() {}
	if o.APIKey == "" && o.BaseURL == "" && o.Backend == google.BackendGeminiAPI {
		srv := fakegemini.New(script)
		stop = srv.Close
		o = google.Options{APIKey: "fake", BaseURL: srv.URL()}
	}
	if p, err = google.New(ctx, o); err != nil {
		stop()
		return nil, nil, fmt.Errorf("kortyx: the google provider: %w", err)
	}
	return p, stop, nil
}
