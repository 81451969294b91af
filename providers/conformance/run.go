package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Scenario names: the subtests of [Run], under "<Target.Name>/". Target.Skip takes them.
const (
	scenarioText               = "text"
	scenarioToolCalls          = "tool-calls"
	scenarioToolError          = "tool-error-result"
	scenarioSchemaValid        = "json-schema-valid"
	scenarioSchemaInvalid      = "json-schema-invalid"
	scenarioStopSequence       = "stop-sequence"
	scenarioMaxTokens          = "max-tokens"
	scenarioRefusal            = "refusal"
	scenarioRateLimit          = "rate-limit-then-success"
	scenarioUnauthorized       = "unauthorized"
	scenarioStreamCut          = "stream-cut"
	scenarioNoUsage            = "no-usage"
	scenarioUnknownOption      = "unknown-provider-option"
	scenarioBadOption          = "bad-provider-option"
	scenarioCancelledMidStream = "cancelled-mid-stream"
)

const (
	// waitFor bounds how long a pass may hang before the suite gives up on it (a guard against
	// a hanging test, not a speed requirement).
	waitFor = 10 * time.Second
	// retryAfterMs is the retry delay of the 429 scenario: whole seconds, which every wire's
	// Retry-After header carries exactly.
	retryAfterMs = 2000
	// unknownOptionKey is the provider option no provider knows.
	unknownOptionKey = "kortyxConformanceUnknown"
)

// Run runs every scenario against target, each as a subtest "<scenario>" (with "/stream" and
// "/complete" variants where both modes apply) on a fresh fake server. The assertions are exact;
// what a scenario checks is in its subtest, and docs/reason.md's provider table lists which
// providers pass it.
func Run(t *testing.T, target Target) {
	t.Helper()
	require.NotEmpty(t, target.Name, "conformance: Target.Name")
	require.NotEmpty(t, target.Model, "conformance: Target.Model")
	require.NotNil(t, target.NewServer, "conformance: Target.NewServer")
	require.NotNil(t, target.NewProvider, "conformance: Target.NewProvider")
	t.Run(target.Name, func(t *testing.T) {
		s := suite{target: target}
		for _, sc := range []struct {
			name string
			run  func(t *testing.T, stream bool)
			both bool // stream and complete
		}{
			{scenarioText, s.text, true},
			{scenarioToolCalls, s.toolCalls, true},
			{scenarioToolError, s.toolError, false},
			{scenarioSchemaValid, func(t *testing.T, stream bool) { s.schema(t, stream, `{"answer":"42"}`) }, true},
			{scenarioSchemaInvalid, func(t *testing.T, stream bool) { s.schema(t, stream, `{"answer":42}`) }, false},
			{scenarioStopSequence, s.stopSequence, false},
			{scenarioMaxTokens, s.maxTokens, true},
			{scenarioRefusal, s.refusal, true},
			{scenarioRateLimit, s.rateLimit, true},
			{scenarioUnauthorized, s.unauthorized, false},
			{scenarioStreamCut, s.streamCut, false},
			{scenarioNoUsage, s.noUsage, true},
			{scenarioUnknownOption, s.unknownOption, false},
			{scenarioBadOption, s.badOption, false},
			{scenarioCancelledMidStream, s.cancelled, false},
		} {
			t.Run(sc.name, func(t *testing.T) {
				if why, ok := target.Skip[sc.name]; ok {
					t.Skip(why)
				}
				if !sc.both {
					sc.run(t, true)
					return
				}
				t.Run("stream", func(t *testing.T) { sc.run(t, true) })
				t.Run("complete", func(t *testing.T) { sc.run(t, false) })
			})
		}
	})
}

type suite struct{ target Target }

// start starts a server answering with the turns in order (the last one repeats).
func (s suite) start(t *testing.T, turns ...fake.Turn) (Server, providers.Provider) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := s.target.NewServer(func(providers.Request) fake.Turn {
		mu.Lock()
		defer mu.Unlock()
		turn := turns[min(n, len(turns)-1)]
		n++
		return turn
	})
	t.Cleanup(srv.Close)
	return srv, s.target.NewProvider(srv.URL())
}

// ask is the conversation most scenarios send.
func (s suite) ask() providers.Request {
	return providers.Request{Model: s.target.Model, Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: "Say hello"},
	}}
}

// generate runs one pass (streamed or not) and returns the deltas it streamed.
func generate(t *testing.T, p providers.Provider, req providers.Request, stream bool) (providers.Response, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var deltas []string
	var onDelta func(string) error
	if stream {
		onDelta = func(d string) error { deltas = append(deltas, d); return nil }
	}
	resp, err := p.Generate(ctx, req, onDelta)
	require.NoError(t, ctx.Err(), "the pass did not end within %s", waitFor)
	return resp, deltas, err
}

// one returns the only request the server received, checking its model and stream flag.
func (s suite) one(t *testing.T, srv Server, stream bool) Request {
	t.Helper()
	reqs := srv.Requests()
	require.Len(t, reqs, 1, "one request per pass: the provider never retries by itself")
	require.Equal(t, s.target.Model, reqs[0].Model)
	require.Equal(t, stream, reqs[0].Stream, "the request's stream flag")
	return reqs[0]
}

func codeError(t *testing.T, err error, code contracts.Code) *contracts.Error {
	t.Helper()
	require.Error(t, err)
	var ce *contracts.Error
	require.ErrorAs(t, err, &ce, "provider errors are *contracts.Error: %v", err)
	require.Equal(t, code, ce.Code, "%v", err)
	return ce
}

// text: the deltas arrive in order and make the text; usage and the finish reason are mapped;
// the conversation reaches the server.
func (s suite) text(t *testing.T, stream bool) {
	usage := providers.Usage{Input: 12, Output: 4, Total: 16}
	srv, p := s.start(t, fake.Turn{Text: "Hello, world!", Deltas: []string{"Hel", "lo, ", "world", "!"}, Usage: usage})
	resp, deltas, err := generate(t, p, s.ask(), stream)
	require.NoError(t, err)
	if stream {
		require.Equal(t, []string{"Hel", "lo, ", "world", "!"}, deltas)
	}
	require.Equal(t, "Hello, world!", resp.Text)
	require.Empty(t, resp.ToolCalls)
	require.Equal(t, usage, resp.Usage)
	require.Equal(t, providers.FinishStop, resp.FinishReason.Unified)
	require.Empty(t, resp.Warnings)
	got := s.one(t, srv, stream)
	require.Equal(t, s.ask().Messages, got.Messages)
}

var toolDefs = []providers.ToolDefinition{
	{Name: "lookup_order", Description: "Look up an order.", InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`)},
	{Name: "refund", Description: "Refund an order.", InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"},"reason":{"type":"string"}},"required":["orderId"]}`)},
}

// toolCalls: several calls in one turn, their arguments streamed in fragments by the server,
// come back with their ids, names and arguments exactly; the tools reach the server.
func (s suite) toolCalls(t *testing.T, stream bool) {
	calls := []providers.ToolCall{
		{ID: "call_a", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
		{ID: "call_b", Name: "refund", Arguments: json.RawMessage(`{"orderId":"B-2","reason":"arrived late, box damaged"}`)},
		{ID: "call_c", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"C-3"}`)},
	}
	srv, p := s.start(t, fake.Turn{ToolCalls: calls})
	req := s.ask()
	req.Tools = toolDefs
	resp, deltas, err := generate(t, p, req, stream)
	require.NoError(t, err)
	require.Empty(t, deltas)
	require.Empty(t, resp.Text)
	require.Len(t, resp.ToolCalls, len(calls))
	for i, c := range calls {
		require.Equal(t, c.ID, resp.ToolCalls[i].ID, "call %d", i)
		require.Equal(t, c.Name, resp.ToolCalls[i].Name, "call %d", i)
		require.JSONEq(t, string(c.Arguments), string(resp.ToolCalls[i].Arguments), "call %d", i)
	}
	require.Equal(t, providers.FinishToolCalls, resp.FinishReason.Unified)
	got := s.one(t, srv, stream)
	require.Len(t, got.Tools, len(toolDefs))
	for i, d := range toolDefs {
		require.Equal(t, d.Name, got.Tools[i].Name)
		require.Equal(t, d.Description, got.Tools[i].Description)
		require.JSONEq(t, string(d.InputSchema), string(got.Tools[i].InputSchema))
	}
}

// toolError: a tool result that reports a failure reaches the model as the answer to its call
// (with the wire's error flag when it has one), after the assistant's call.
func (s suite) toolError(t *testing.T, stream bool) {
	srv, p := s.start(t, fake.Text("Sorry, the warehouse is offline."))
	req := s.ask()
	req.Tools = toolDefs
	call := providers.ToolCall{ID: "call_a", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)}
	req.Messages = append(req.Messages,
		providers.Message{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{call}},
		providers.Message{Role: providers.RoleTool, ToolCallID: "call_a", Name: "lookup_order", Content: "warehouse offline", IsError: true})
	resp, _, err := generate(t, p, req, stream)
	require.NoError(t, err)
	require.Equal(t, "Sorry, the warehouse is offline.", resp.Text)
	got := s.one(t, srv, stream)
	require.Len(t, got.Messages, 4)
	require.Equal(t, req.Messages[:2], got.Messages[:2])
	a := got.Messages[2]
	require.Equal(t, providers.RoleAssistant, a.Role)
	require.Len(t, a.ToolCalls, 1)
	require.Equal(t, call.ID, a.ToolCalls[0].ID)
	require.Equal(t, call.Name, a.ToolCalls[0].Name)
	require.JSONEq(t, string(call.Arguments), string(a.ToolCalls[0].Arguments))
	r := got.Messages[3]
	require.Equal(t, providers.RoleTool, r.Role)
	require.Equal(t, "call_a", r.ToolCallID)
	require.Equal(t, "lookup_order", r.Name)
	require.Equal(t, "warehouse offline", r.Content)
	require.Equal(t, s.target.ToolErrorFlag, r.IsError, "the tool result's error flag on the wire (Target.ToolErrorFlag)")
}

const answerSchema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`

// schema: a json-schema response format reaches the server with its schema, and the model's
// text comes back as written, valid or not (validating and correcting it is the Reason loop's).
func (s suite) schema(t *testing.T, stream bool, text string) {
	srv, p := s.start(t, fake.Turn{Text: text})
	req := s.ask()
	req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Name: "answer", Schema: json.RawMessage(answerSchema)}
	resp, deltas, err := generate(t, p, req, stream)
	require.NoError(t, err)
	require.Equal(t, text, resp.Text)
	if stream {
		require.Equal(t, text, strings.Join(deltas, ""))
	}
	require.Empty(t, resp.Warnings)
	got := s.one(t, srv, stream)
	require.NotNil(t, got.Options.ResponseFormat, "the schema is sent")
	require.Equal(t, "json-schema", got.Options.ResponseFormat.Type)
	require.JSONEq(t, answerSchema, string(got.Options.ResponseFormat.Schema))
}

// stopSequence: stop sequences are sent; a pass that stopped on one finishes with "stop".
func (s suite) stopSequence(t *testing.T, stream bool) {
	srv, p := s.start(t, fake.Turn{Text: "one two", FinishReason: providers.FinishStop})
	req := s.ask()
	req.Options.StopSequences = []string{"END", "\n\n"}
	resp, _, err := generate(t, p, req, stream)
	require.NoError(t, err)
	require.Equal(t, "one two", resp.Text)
	require.Equal(t, providers.FinishStop, resp.FinishReason.Unified)
	require.Empty(t, resp.Warnings)
	require.Equal(t, []string{"END", "\n\n"}, s.one(t, srv, stream).Options.StopSequences)
}

// maxTokens: the limit is sent; a pass cut by it finishes with "length" (the Reason loop turns
// a cut JSON value into OUTPUT_TRUNCATED) and keeps the text written so far.
func (s suite) maxTokens(t *testing.T, stream bool) {
	srv, p := s.start(t, fake.Turn{Text: `{"answer":"the long`, FinishReason: providers.FinishLength})
	req := s.ask()
	req.Options.MaxOutputTokens = 5
	resp, _, err := generate(t, p, req, stream)
	require.NoError(t, err)
	require.Equal(t, `{"answer":"the long`, resp.Text)
	require.Equal(t, providers.FinishLength, resp.FinishReason.Unified)
	require.Equal(t, 5, s.one(t, srv, stream).Options.MaxOutputTokens)
}

// refusal: PROVIDER_REFUSAL, not retryable, with the model's words; no text is streamed.
func (s suite) refusal(t *testing.T, stream bool) {
	srv, p := s.start(t, fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "I can't help with that."}})
	_, deltas, err := generate(t, p, s.ask(), stream)
	ce := codeError(t, err, contracts.CodeProviderRefusal)
	require.False(t, ce.Retryable)
	require.Contains(t, ce.Message, "I can't help with that.")
	require.Empty(t, deltas)
	s.one(t, srv, stream)
}

// rateLimit: a 429 with a retry-after is retryable, with Details["retryAfterMs"]; the provider
// does not retry by itself, and the next pass succeeds.
func (s suite) rateLimit(t *testing.T, stream bool) {
	srv, p := s.start(t,
		fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429, Retryable: true,
			Message: "Rate limit reached.", Details: map[string]any{"retryAfterMs": retryAfterMs}}},
		fake.Text("ok"))
	_, _, err := generate(t, p, s.ask(), stream)
	ce := codeError(t, err, contracts.CodeProviderHTTPError)
	require.Equal(t, 429, ce.Status)
	require.True(t, ce.Retryable)
	require.Equal(t, retryAfterMs, ce.Details["retryAfterMs"], "Details[\"retryAfterMs\"] is an int of milliseconds")
	require.Len(t, srv.Requests(), 1, "the provider does not retry by itself")
	resp, _, err := generate(t, p, s.ask(), stream)
	require.NoError(t, err)
	require.Equal(t, "ok", resp.Text)
	require.Len(t, srv.Requests(), 2)
}

// unauthorized: a 401 is not retryable and is sent once.
func (s suite) unauthorized(t *testing.T, stream bool) {
	srv, p := s.start(t, fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 401, Message: "Invalid API key."}})
	_, deltas, err := generate(t, p, s.ask(), stream)
	ce := codeError(t, err, contracts.CodeProviderHTTPError)
	require.Equal(t, 401, ce.Status)
	require.False(t, ce.Retryable)
	require.Empty(t, deltas)
	s.one(t, srv, stream)
}

// streamCut: a stream cut after two deltas delivers those two and fails with a retryable
// PROVIDER_TRANSPORT_ERROR (the activity then invalidates the text and retries).
func (s suite) streamCut(t *testing.T, _ bool) {
	srv, p := s.start(t, fake.Turn{Deltas: []string{"one ", "two ", "three"}, FailAfter: 2,
		Err: &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Message: "connection reset"}})
	_, deltas, err := generate(t, p, s.ask(), true)
	ce := codeError(t, err, contracts.CodeProviderTransportError)
	require.True(t, ce.Retryable)
	require.Equal(t, []string{"one ", "two "}, deltas)
	s.one(t, srv, true)
}

// noUsage: an answer without usage gives zero usage and exactly the no-usage warning.
func (s suite) noUsage(t *testing.T, stream bool) {
	_, p := s.start(t, fake.Turn{Text: "fine", NoUsage: true})
	resp, _, err := generate(t, p, s.ask(), stream)
	require.NoError(t, err)
	require.Equal(t, "fine", resp.Text)
	require.Equal(t, providers.Usage{}, resp.Usage)
	require.Equal(t, []providers.Warning{providers.NoUsageWarning(p.ID())}, resp.Warnings)
}

// unknownOption: a key under the provider's own id that it does not know is an unsupported
// warning (options under other ids are not its own and are not reported); the pass runs.
func (s suite) unknownOption(t *testing.T, stream bool) {
	srv, p := s.start(t, fake.Text("ok"))
	req := s.ask()
	req.Options.ProviderOptions = map[string]any{
		p.ID():                     map[string]any{unknownOptionKey: true},
		"kortyx-conformance-other": map[string]any{"anything": 1},
	}
	resp, _, err := generate(t, p, req, stream)
	require.NoError(t, err)
	require.Equal(t, "ok", resp.Text)
	require.Len(t, resp.Warnings, 1, "%v", resp.Warnings)
	require.Equal(t, providers.WarningUnsupported, resp.Warnings[0].Type)
	require.Equal(t, "providerOptions."+p.ID()+"."+unknownOptionKey, resp.Warnings[0].Setting)
	require.NotEmpty(t, resp.Warnings[0].Message)
	s.one(t, srv, stream)
}

// badOption: provider options that are not an object are a PROVIDER_CONFIGURATION error.
func (s suite) badOption(t *testing.T, stream bool) {
	_, p := s.start(t, fake.Text("ok"))
	req := s.ask()
	req.Options.ProviderOptions = map[string]any{p.ID(): "fast"}
	_, _, err := generate(t, p, req, stream)
	ce := codeError(t, err, contracts.CodeProviderConfiguration)
	require.False(t, ce.Retryable)
	require.Contains(t, ce.Message, "providerOptions."+p.ID())
}

// cancelled: cancelling the context mid-stream makes the provider return the context's error,
// and the server sees its request cancelled.
func (s suite) cancelled(t *testing.T, _ bool) {
	seen := make(chan struct{})
	var once sync.Once
	_, p := s.start(t, fake.Turn{Deltas: []string{"a ", "b ", "c "},
		Hang: &fake.Hang{After: 1, Cancelled: func() { once.Do(func() { close(seen) }) }}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deltas []string
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := p.Generate(ctx, s.ask(), func(d string) error {
			deltas = append(deltas, d)
			cancel() // the caller gives up after the first delta
			return nil
		})
		done <- result{err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(waitFor):
		t.Fatalf("Generate did not return within %s of the cancellation", waitFor)
	}
	require.True(t, errors.Is(res.err, context.Canceled), "a cancelled pass returns the context's error, got %v", res.err)
	require.Equal(t, []string{"a "}, deltas)
	select {
	case <-seen:
	case <-time.After(waitFor):
		t.Fatalf("the server did not see the request cancelled within %s", waitFor)
	}
}
