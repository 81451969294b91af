// Package conformance is the one test suite every model provider passes: the same scenarios —
// streamed text and usage, several tool calls with fragmented arguments, tool errors, JSON-schema
// output, stop sequences and truncation, refusals, rate limits, authentication failures, a cut
// stream, a stream without usage, cancellation — run against a provider talking to a fake server
// of its own wire, scripted with [fake.Turn] values.
//
// A provider package runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Target{
//			Name:  "anthropic",
//			Model: "claude-sonnet-4-5",
//			NewServer: func(respond fake.Responder) conformance.Server { return fakeanthropic.New(respond) },
//			NewProvider: func(baseURL string) providers.Provider {
//				return anthropic.New(anthropic.Options{BaseURL: baseURL, APIKey: "test"})
//			},
//		})
//	}
package conformance

import (
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Server is a fake server of one provider's wire that plays [fake.Turn] values.
type Server interface {
	// URL is the base URL to give the provider.
	URL() string
	// Requests returns the requests received so far, decoded into Kortyx's terms.
	Requests() []Request
	Close()
}

// Request is one request a fake server received, in Kortyx's terms.
type Request struct {
	providers.Request
	// Stream says whether the request asked for a streamed answer.
	Stream bool
	// Raw is the request body exactly as received.
	Raw []byte
}

// Target is a provider under test.
type Target struct {
	// Name names the subtests ("openai", "anthropic", …).
	Name string
	// Model is the model id the requests name.
	Model string
	// NewServer starts a fake server answering with respond.
	NewServer func(respond fake.Responder) Server
	// NewProvider returns the provider talking to baseURL.
	NewProvider func(baseURL string) providers.Provider
}
