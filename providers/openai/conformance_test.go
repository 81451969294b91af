package openai_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/conformance"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// fakeServer adapts providers/fakeserver to the suite.
type fakeServer struct{ *fakeserver.Server }

func (s fakeServer) Requests() []conformance.Request {
	var out []conformance.Request
	for _, c := range s.Server.Requests() {
		out = append(out, conformance.Request{Request: c.Request, Stream: c.Stream, Raw: c.Raw})
	}
	return out
}

// TestConformance runs the provider suite against the fake OpenAI-compatible server.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Target{
		Name:      "openai",
		Model:     "gpt-4.1-mini",
		NewServer: func(respond fake.Responder) conformance.Server { return fakeServer{fakeserver.New(respond)} },
		NewProvider: func(baseURL string) providers.Provider {
			return openai.New(openai.Options{BaseURL: baseURL, APIKey: "test"})
		},
	})
}
