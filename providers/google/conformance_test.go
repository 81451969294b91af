package google_test

import (
	"context"
	"testing"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/conformance"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
)

// TestConformance runs the provider suite against the fake Gemini server.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Target{
		Name:      "google",
		Model:     "gemini-2.5-flash",
		NewServer: func(respond fake.Responder) conformance.Server { return fakegemini.New(respond) },
		// Gemini's functionResponse.response marks a failure with its "error" key (the
		// API's convention: "output" for a result, "error" for error details), which
		// fakegemini decodes into IsError.
		ToolErrorFlag: true,
		NewProvider: func(baseURL string) providers.Provider {
			p, err := google.New(context.Background(), google.Options{APIKey: "test", BaseURL: baseURL})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
	})
}
