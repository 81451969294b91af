// Package conformance is the one test suite every model provider passes: the same scenarios —
// streamed text and usage, several tool calls with fragmented arguments, tool errors, JSON-schema
// output, stop sequences and truncation, refusals, rate limits, authentication failures, a cut
// stream, a stream without usage, cancellation — run against a provider talking to a fake server
// of its own wire, scripted with [fake.Turn] values.
//
// What a fake server must do for the suite: play the turn its Responder returns for each
// request, with the Turn fields Text, Deltas (one wire event each, in order), ToolCalls (their
// arguments split over several events, calls interleaved where the wire allows), Usage, NoUsage
// (send no usage at all), FinishReason, Err (a *contracts.Error: PROVIDER_REFUSAL as the wire's
// refusal or safety block, PROVIDER_TRANSPORT_ERROR as a cut connection — after FailAfter deltas
// when set —, any other code as the wire's error response with Status, and
// Details["retryAfterMs"] as the wire's retry-after header in whole seconds) and Hang (send
// Hang.After deltas, wait for the request's context to end, call Hang.Cancelled); and decode
// every request back into Kortyx's terms ([Request]): the messages (system prompt first, tool
// results as RoleTool messages with ToolCallID and Name), the tools, and the call options the
// wire carries (a JSON schema output, however the wire asks for it, as
// Options.ResponseFormat{Type: "json-schema", Schema}).
//
// What a provider must do: everything [providers.Provider] says, and the warnings of
// [providers.NoUsageWarning] (an answer without usage) and [providers.DecodeOptions] (its own
// options under its id in ProviderOptions).
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
//
// [Fake] is the target of the in-process scripted provider (providers/fake).
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
	// ToolErrorFlag: the wire marks a failed tool result (Anthropic's is_error) and the server
	// decodes it into providers.Message.IsError; without it the suite checks that IsError is false
	// on the server's side (the failure is in the content).
	ToolErrorFlag bool
	// Skip names scenarios the target does not run, with the reason the subtest reports. The
	// scenarios are the subtests of [Run]: text, tool-calls, tool-error-result,
	// json-schema-valid, json-schema-invalid, stop-sequence, max-tokens, refusal,
	// rate-limit-then-success, unauthorized, stream-cut, no-usage, unknown-provider-option,
	// bad-provider-option, cancelled-mid-stream. docs/reason.md's provider table lists every skip.
	Skip map[string]string
}
