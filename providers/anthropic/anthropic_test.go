package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/internal/providertest"
)

func serve(t *testing.T, turns ...fake.Turn) (*fakeanthropic.Server, *anthropic.Provider) {
	t.Helper()
	srv := fakeanthropic.NewScript(turns...)
	t.Cleanup(srv.Close)
	return srv, anthropic.New(anthropic.Options{BaseURL: srv.URL(), APIKey: "test-key"})
}

func ask(text string) providers.Request {
	return providers.Request{Model: "claude-test", Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}}
}

var (
	generate = providertest.Generate
	asError  = providertest.AsError
)

// field decodes a top-level field of the request body.
func field(t *testing.T, c fakeanthropic.Captured, name string) any {
	t.Helper()
	raw := c.Field(name)
	if raw == nil {
		return nil
	}
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func TestIDAndDefaults(t *testing.T) {
	require.Equal(t, "anthropic", anthropic.New(anthropic.Options{}).ID())
	require.Equal(t, "claude", anthropic.New(anthropic.Options{ID: "claude"}).ID())
	require.Equal(t, anthropic.DefaultBaseURL, anthropic.New(anthropic.Options{}).BaseURL())
}

func TestFromEnv(t *testing.T) {
	srv := fakeanthropic.NewScript(fake.Text("hi"))
	defer srv.Close()
	t.Setenv(anthropic.EnvAPIKey, "env-key")
	t.Setenv(anthropic.EnvBaseURL, srv.URL())
	p := anthropic.FromEnv()
	require.Equal(t, srv.URL(), p.BaseURL())
	_, _, err := generate(p, ask("hi"), false)
	require.NoError(t, err)
	require.Equal(t, "Bearer env-key", srv.Captured()[0].Header.Get("Authorization"))
}

func TestNoKeyForAnthropicsAPI(t *testing.T) {
	_, err := anthropic.New(anthropic.Options{}).Generate(context.Background(), ask("hi"), nil)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderConfiguration, ke.Code)
	require.False(t, ke.Retryable)
	require.Contains(t, ke.Message, "ANTHROPIC_API_KEY is not set")
}

func TestNoKeyForAnotherServerSendsNoCredentials(t *testing.T) {
	srv := fakeanthropic.NewScript(fake.Text("hi"))
	defer srv.Close()
	_, _, err := generate(anthropic.New(anthropic.Options{BaseURL: srv.URL()}), ask("hi"), true)
	require.NoError(t, err)
	h := srv.Captured()[0].Header
	require.Empty(t, h.Get("Authorization"))
	require.Empty(t, h.Get("X-Api-Key"))
}

func TestStreamedTextAndUsage(t *testing.T) {
	srv, p := serve(t, fake.Turn{Deltas: []string{"Hel", "lo, ", "", "world"},
		Usage: providers.Usage{Input: 100, Output: 4, Total: 104, CacheRead: 60, CacheWrite: 30}})
	req := ask("hi")
	req.Messages = append([]providers.Message{{Role: providers.RoleSystem, Content: "Be brief."}}, req.Messages...)
	resp, deltas, err := generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, []string{"Hel", "lo, ", "world"}, deltas, "in order; empty deltas are not passed on")
	require.Equal(t, "Hello, world", resp.Text)
	require.Empty(t, resp.ToolCalls)
	require.Equal(t, providers.FinishReason{Unified: providers.FinishStop, Raw: "end_turn"}, resp.FinishReason)
	require.Equal(t, providers.Usage{Input: 100, Output: 4, Total: 104, CacheRead: 60, CacheWrite: 30}, resp.Usage)
	require.Equal(t, map[string]any{"id": "msg_fake_1", "model": "claude-test"}, resp.ProviderMetadata)
	require.Empty(t, resp.Warnings)
	require.Empty(t, resp.Continuation)

	reqs := srv.Captured()
	require.Len(t, reqs, 1)
	c := reqs[0]
	require.True(t, c.Stream)
	require.Equal(t, float64(anthropic.DefaultMaxTokens), field(t, c, "max_tokens"))
	require.Equal(t, []any{map[string]any{"type": "text", "text": "Be brief."}}, field(t, c, "system"), "system messages go to the top-level system")
	require.Equal(t, []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}, field(t, c, "messages"))
	require.Equal(t, "Bearer test-key", c.Header.Get("Authorization"))
	require.Equal(t, "0", c.Header.Get("X-Stainless-Retry-Count"))
	// The server saw the conversation as it was sent.
	require.Equal(t, req.Messages, c.Request.Request.Messages)
}

func TestNotStreamed(t *testing.T) {
	srv, p := serve(t, fake.Turn{Text: "Hello there", Usage: providers.Usage{Input: 12, Output: 3, Reasoning: 1, CacheRead: 2}})
	resp, deltas, err := generate(p, ask("hi"), false)
	require.NoError(t, err)
	require.Empty(t, deltas)
	require.Equal(t, "Hello there", resp.Text)
	require.Equal(t, providers.Usage{Input: 12, Output: 3, Total: 15, Reasoning: 1, CacheRead: 2}, resp.Usage)
	require.Equal(t, providers.FinishReason{Unified: providers.FinishStop, Raw: "end_turn"}, resp.FinishReason)
	require.False(t, srv.Captured()[0].Stream)
}

func TestSeveralToolCallsWithFragmentedArguments(t *testing.T) {
	calls := []providers.ToolCall{
		{ID: "toolu_1", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1001","verbose":true}`)},
		{ID: "toolu_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Zürich"}`)},
	}
	for _, stream := range []bool{true, false} {
		srv, p := serve(t, fake.Turn{Text: "Checking.", ToolCalls: calls})
		req := ask("order A-1001 and the weather")
		req.Tools = []providers.ToolDefinition{
			{Name: "lookup_order", Description: "Look an order up.", InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`)},
			{Name: "weather"},
		}
		resp, _, err := generate(p, req, stream)
		require.NoError(t, err)
		require.Equal(t, "Checking.", resp.Text)
		require.Equal(t, calls, resp.ToolCalls)
		require.Equal(t, providers.FinishReason{Unified: providers.FinishToolCalls, Raw: "tool_use"}, resp.FinishReason)
		require.JSONEq(t, `[{"name":"lookup_order","description":"Look an order up.","input_schema":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}},
			{"name":"weather","input_schema":{"type":"object","properties":{}}}]`, string(srv.Captured()[0].Field("tools")))
	}
}

func TestToolErrorResult(t *testing.T) {
	srv, p := serve(t, fake.Text("Sorry, that failed."))
	req := ask("refund A-1")
	req.Messages = append(req.Messages,
		providers.Message{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{
			{ID: "toolu_1", Name: "refund", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
			{ID: "toolu_2", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
		}},
		providers.Message{Role: providers.RoleTool, ToolCallID: "toolu_1", Name: "refund", Content: "refund service down", IsError: true},
		providers.Message{Role: providers.RoleTool, ToolCallID: "toolu_2", Name: "lookup_order", StructuredContent: json.RawMessage(`{"status":"delivered"}`)},
	)
	_, _, err := generate(p, req, true)
	require.NoError(t, err)
	c := srv.Captured()[0]
	require.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"refund A-1"}]},
		{"role":"assistant","content":[
			{"type":"tool_use","id":"toolu_1","name":"refund","input":{"orderId":"A-1"}},
			{"type":"tool_use","id":"toolu_2","name":"lookup_order","input":{"orderId":"A-1"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"refund service down"}]},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"{\"status\":\"delivered\"}"}]}]}
	]`, string(c.Field("messages")), "both results in one user message; is_error on the failed one")
	got := c.Request.Request.Messages
	require.Len(t, got, 4)
	require.Equal(t, providers.Message{Role: providers.RoleTool, ToolCallID: "toolu_1", Name: "refund", Content: "refund service down", IsError: true}, got[2])
}

func TestJSONSchemaOutput(t *testing.T) {
	schema := `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`
	for _, tc := range []struct{ name, text string }{
		{"valid", `{"answer":"42"}`},
		{"invalid", `{"answer":42}`}, // validation and its corrections are the workflow's; the provider returns the text
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := serve(t, fake.Text(tc.text))
			req := ask("answer")
			req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Schema: json.RawMessage(schema), Name: "output"}
			resp, _, err := generate(p, req, true)
			require.NoError(t, err)
			require.Equal(t, tc.text, resp.Text)
			require.Empty(t, resp.Warnings)
			c := srv.Captured()[0]
			require.Equal(t, `{"format":{"type":"json_schema","schema":`+schema+`}}`, string(c.Field("output_config")), "the schema's exact bytes")
			require.Equal(t, &providers.ResponseFormat{Type: "json-schema", Schema: json.RawMessage(schema)}, c.Request.Request.Options.ResponseFormat)
		})
	}
}

func TestJSONObjectOutput(t *testing.T) {
	srv, p := serve(t, fake.Text(`{}`))
	req := ask("json please")
	req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json"}
	_, _, err := generate(p, req, false)
	require.NoError(t, err)
	require.Equal(t, `{"format":{"type":"json_schema","schema":{"type":"object"}}}`, string(srv.Captured()[0].Field("output_config")))
}

func TestStopSequenceAndMaxTokens(t *testing.T) {
	srv, p := serve(t,
		fake.Turn{Text: "one two", FinishReason: "stop_sequence"},
		fake.Turn{Text: "truncat", FinishReason: providers.FinishLength},
	)
	req := ask("count")
	req.Options.StopSequences = []string{"three", "END"}
	req.Options.MaxOutputTokens = 5
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, providers.FinishReason{Unified: providers.FinishStop, Raw: "stop_sequence"}, resp.FinishReason)
	c := srv.Captured()[0]
	require.Equal(t, []any{"three", "END"}, field(t, c, "stop_sequences"))
	require.Equal(t, float64(5), field(t, c, "max_tokens"))
	require.Equal(t, []string{"three", "END"}, c.Request.Request.Options.StopSequences)

	resp, _, err = generate(p, ask("long"), true)
	require.NoError(t, err)
	require.Equal(t, providers.FinishReason{Unified: providers.FinishLength, Raw: "max_tokens"}, resp.FinishReason)
}

func TestRefusal(t *testing.T) {
	for _, stream := range []bool{true, false} {
		_, p := serve(t, fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "I can't help with that.",
			Details: map[string]any{"category": "cyber"}}})
		_, _, err := generate(p, ask("bad"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderRefusal, ke.Code)
		require.False(t, ke.Retryable)
		require.Equal(t, "The model refused to answer: I can't help with that.", ke.Message)
		require.Equal(t, map[string]any{"refusal": "I can't help with that.", "category": "cyber"}, ke.Details)
	}
}

func TestRefusalMidStream(t *testing.T) {
	_, p := serve(t, fake.Turn{Deltas: []string{"Sure, ", "here"}, FailAfter: 1,
		Err: &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "Stopped."}})
	_, deltas, err := generate(p, ask("bad"), true)
	require.Equal(t, []string{"Sure, "}, deltas)
	require.Equal(t, contracts.CodeProviderRefusal, asError(t, err).Code)
}

func TestRateLimitWithRetryAfterThenSuccess(t *testing.T) {
	srv, p := serve(t,
		fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429, Message: "Number of requests has exceeded your rate limit.",
			Details: map[string]any{"retryAfterMs": 2000}}},
		fake.Text("ok"),
	)
	_, deltas, err := generate(p, ask("hi"), true)
	ke := asError(t, err)
	require.Empty(t, deltas)
	require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
	require.Equal(t, 429, ke.Status)
	require.True(t, ke.Retryable)
	require.Equal(t, "Anthropic API returned 429 Too Many Requests: Number of requests has exceeded your rate limit.", ke.Message)
	require.Equal(t, map[string]any{"type": "rate_limit_error", "retryAfterMs": 2000}, ke.Details)
	require.Len(t, srv.Requests(), 1, "the SDK does not retry by itself")

	resp, _, err := generate(p, ask("hi"), true)
	require.NoError(t, err)
	require.Equal(t, "ok", resp.Text)
	require.Len(t, srv.Requests(), 2)
}

func TestHTTPErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		status    int
		typ       string
		retryable bool
		message   string
	}{
		{400, "invalid_request_error", false, "Anthropic API returned 400 Bad Request: boom"},
		{401, "authentication_error", false, "Anthropic API returned 401 Unauthorized: boom (check the API key: ANTHROPIC_API_KEY or anthropic.Options.APIKey)"},
		{403, "permission_error", false, "Anthropic API returned 403 Forbidden: boom (check the API key: ANTHROPIC_API_KEY or anthropic.Options.APIKey)"},
		{404, "not_found_error", false, "Anthropic API returned 404 Not Found: boom (check the model id and the base URL)"},
		{413, "request_too_large", false, "Anthropic API returned 413 Request Entity Too Large: boom"},
		{500, "api_error", true, "Anthropic API returned 500 Internal Server Error: boom"},
		{503, "api_error", true, "Anthropic API returned 503 Service Unavailable: boom"},
		{529, "overloaded_error", true, "Anthropic API returned 529 Overloaded: boom"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			srv, p := serve(t, fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: tc.status, Message: "boom"}})
			_, _, err := generate(p, ask("hi"), true)
			ke := asError(t, err)
			require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
			require.Equal(t, tc.status, ke.Status)
			require.Equal(t, tc.retryable, ke.Retryable)
			require.Equal(t, tc.message, ke.Message)
			require.Equal(t, map[string]any{"type": tc.typ}, ke.Details)
			require.Len(t, srv.Requests(), 1, "never retried by the SDK")
		})
	}
}

func TestErrorEventInStream(t *testing.T) {
	for _, tc := range []struct {
		typ       string
		retryable bool
	}{{"overloaded_error", true}, {"invalid_request_error", false}} {
		_, p := serve(t, fake.Turn{Deltas: []string{"a", "b", "c"}, FailAfter: 2,
			Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "mid-stream", Details: map[string]any{"type": tc.typ}}})
		_, deltas, err := generate(p, ask("hi"), true)
		require.Equal(t, []string{"a", "b"}, deltas)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
		require.Equal(t, 0, ke.Status, "an error event arrives on a 200 stream")
		require.Equal(t, tc.retryable, ke.Retryable, tc.typ)
		require.Equal(t, "The Anthropic API reported an error in the stream: mid-stream", ke.Message)
	}
}

func TestStreamCutMidway(t *testing.T) {
	_, p := serve(t, fake.Turn{Deltas: []string{"one ", "two ", "three"}, FailAfter: 2,
		Err: &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true}})
	_, deltas, err := generate(p, ask("hi"), true)
	require.Equal(t, []string{"one ", "two "}, deltas)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderTransportError, ke.Code)
	require.True(t, ke.Retryable)
}

func TestConnectionClosedWithoutAnswer(t *testing.T) {
	for _, stream := range []bool{true, false} {
		_, p := serve(t, fake.Fail(contracts.CodeProviderTransportError, true, "cut"))
		_, _, err := generate(p, ask("hi"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderTransportError, ke.Code)
		require.True(t, ke.Retryable)
	}
}

func TestInvalidResponse(t *testing.T) {
	for _, stream := range []bool{true, false} {
		_, p := serve(t, fake.Fail(contracts.CodeProviderInvalidResponse, true, "bad"))
		_, _, err := generate(p, ask("hi"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderInvalidResponse, ke.Code, "stream %v", stream)
		require.True(t, ke.Retryable)
	}
}

func TestStreamWithoutMessageStop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	}))
	defer srv.Close()
	_, err := anthropic.New(anthropic.Options{BaseURL: srv.URL}).Generate(context.Background(), ask("hi"), func(string) error { return nil })
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderTransportError, ke.Code)
	require.True(t, ke.Retryable)
	require.Contains(t, ke.Message, "the stream ended before message_stop")
}

func TestNoUsageWarning(t *testing.T) {
	for _, stream := range []bool{true, false} {
		_, p := serve(t, fake.Turn{Text: "hi", NoUsage: true})
		resp, _, err := generate(p, ask("hi"), stream)
		require.NoError(t, err)
		require.Equal(t, providers.Usage{}, resp.Usage)
		require.Equal(t, []providers.Warning{{Type: providers.WarningOther, Setting: "usage",
			Message: "The anthropic provider's server reported no token usage for this pass; its usage is counted as 0."}}, resp.Warnings)
	}
}

func TestCancellationMidStream(t *testing.T) {
	seen := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\"}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done() // the rest never comes
		close(seen)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deltas []string
	_, err := anthropic.New(anthropic.Options{BaseURL: srv.URL}).Generate(ctx, ask("hi"), func(d string) error {
		deltas = append(deltas, d)
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled, "the context's own error: never retried")
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
	require.Equal(t, []string{"Hel"}, deltas)
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the request cancelled")
	}
}

func TestOnDeltaErrorAborts(t *testing.T) {
	_, p := serve(t, fake.Turn{Deltas: []string{"a", "b"}})
	stop := errors.New("stop")
	_, err := p.Generate(context.Background(), ask("hi"), func(string) error { return stop })
	require.Same(t, stop, err)
}

func TestThinkingRoundTrip(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := fakeanthropic.NewScript(
			fake.Call("lookup_order", `{"orderId":"A-1"}`),
			fake.Text("Order A-1 shipped."),
		)
		srv.Thinking = []fakeanthropic.Thinking{
			{Text: "The user wants order A-1. ", Signature: "sig-1"},
			{Redacted: "opaque=="},
		}
		p := anthropic.New(anthropic.Options{BaseURL: srv.URL(), APIKey: "k"})
		req := ask("where is A-1?")
		req.Options.Reasoning = &providers.ReasoningOptions{MaxTokens: 2048, IncludeThoughts: true}
		resp, _, err := generate(p, req, stream)
		require.NoError(t, err)
		require.Equal(t, "The user wants order A-1. ", resp.ProviderMetadata["thinking"])
		require.JSONEq(t, `{"provider":"anthropic","blocks":[
			{"type":"thinking","thinking":"The user wants order A-1. ","signature":"sig-1"},
			{"type":"redacted_thinking","data":"opaque=="}]}`, string(resp.Continuation))
		require.Equal(t, `{"budget_tokens":2048,"display":"summarized","type":"enabled"}`, string(srv.Captured()[0].Field("thinking")))

		// The next pass sends the thinking back before the tool call, as the API requires.
		req.Messages = append(req.Messages,
			providers.Message{Role: providers.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation},
			providers.Message{Role: providers.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Name: "lookup_order", Content: `{"status":"shipped"}`})
		_, _, err = generate(p, req, stream)
		require.NoError(t, err)
		var msgs []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		require.NoError(t, json.Unmarshal(srv.Captured()[1].Field("messages"), &msgs))
		require.Len(t, msgs, 3)
		require.Equal(t, "assistant", msgs[1].Role)
		require.Len(t, msgs[1].Content, 3)
		require.JSONEq(t, `{"type":"thinking","thinking":"The user wants order A-1. ","signature":"sig-1"}`, string(msgs[1].Content[0]))
		require.JSONEq(t, `{"type":"redacted_thinking","data":"opaque=="}`, string(msgs[1].Content[1]))
		require.JSONEq(t, `{"type":"tool_use","id":"call-lookup_order-1","name":"lookup_order","input":{"orderId":"A-1"}}`, string(msgs[1].Content[2]))
		srv.Close()
	}
}

func TestForeignContinuationIsNotSent(t *testing.T) {
	srv, p := serve(t, fake.Text("ok"))
	req := ask("hi")
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "earlier", Continuation: json.RawMessage(`{"provider":"google","x":1}`)},
		providers.Message{Role: providers.RoleUser, Content: "again"})
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, []providers.Warning{{Type: providers.WarningCompatibility, Setting: "messages.continuation",
		Message: "An assistant message carries continuation data of another provider; it was not sent (thinking of another model cannot be continued)."}}, resp.Warnings)
	require.JSONEq(t, `[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"earlier"}]},{"role":"user","content":[{"type":"text","text":"again"}]}]`,
		string(srv.Captured()[0].Field("messages")))
}

func TestUnsupportedOptionsWarn(t *testing.T) {
	srv, p := serve(t, fake.Text("ok"))
	req := ask("hi")
	temp := 0.2
	req.ModelOptions = map[string]any{"baseURL": "http://elsewhere", "streaming": true} // streaming is the caller's
	req.Options.Temperature = &temp
	req.Options.MaxOutputTokens = -1
	req.Options.Reasoning = &providers.ReasoningOptions{Effort: "extreme", IncludeThoughts: true}
	req.Options.ResponseFormat = &providers.ResponseFormat{Type: "yaml"}
	req.Options.ProviderOptions = map[string]any{
		"anthropic": map[string]any{"topK": 40, "userId": "u-1"},
		"openai":    map[string]any{"seed": 1}, // another provider's: not read
	}
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, w := range resp.Warnings {
		settings[w.Setting] = w.Type
	}
	require.Equal(t, map[string]string{
		"modelOptions.baseURL":           providers.WarningUnsupported,
		"providerOptions.anthropic.topK": providers.WarningUnsupported,
		"temperature":                    providers.WarningUnsupported,
		"maxOutputTokens":                providers.WarningOther,
		"reasoning.includeThoughts":      providers.WarningOther,
		"reasoning.effort":               providers.WarningUnsupported,
		"responseFormat.type":            providers.WarningUnsupported,
	}, settings)
	require.Len(t, resp.Warnings, 7)
	c := srv.Captured()[0]
	require.Nil(t, c.Field("temperature"), "not sent")
	require.Nil(t, c.Field("output_config"))
	require.Equal(t, float64(anthropic.DefaultMaxTokens), field(t, c, "max_tokens"))
	require.Equal(t, map[string]any{"user_id": "u-1"}, field(t, c, "metadata"))
}

func TestProviderOptions(t *testing.T) {
	srv, p := serve(t, fake.Text("ok"), fake.Text("ok"))
	req := ask("hi")
	req.Messages = append([]providers.Message{{Role: providers.RoleSystem, Content: "A long, stable system prompt."}}, req.Messages...)
	req.Tools = []providers.ToolDefinition{{Name: "a"}, {Name: "b"}}
	req.Options.MaxOutputTokens = 8000
	req.Options.Reasoning = &providers.ReasoningOptions{Effort: "high"}
	req.Options.ProviderOptions = map[string]any{"anthropic": anthropic.ProviderOptions{
		ThinkingBudget: 4000, CacheControl: "1h", CacheSystem: true, CacheTools: true,
		ServiceTier: "standard_only", DisableParallelToolUse: true,
	}}
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	require.Empty(t, resp.Warnings)
	c := srv.Captured()[0]
	require.Equal(t, `{"budget_tokens":4000,"type":"enabled"}`, string(c.Field("thinking")))
	require.Equal(t, `{"ttl":"1h","type":"ephemeral"}`, string(c.Field("cache_control")))
	require.Equal(t, `[{"text":"A long, stable system prompt.","cache_control":{"ttl":"1h","type":"ephemeral"},"type":"text"}]`, string(c.Field("system")))
	require.JSONEq(t, `[{"name":"a","input_schema":{"type":"object","properties":{}}},
		{"name":"b","input_schema":{"type":"object","properties":{}},"cache_control":{"ttl":"1h","type":"ephemeral"}}]`, string(c.Field("tools")))
	require.Equal(t, `"standard_only"`, string(c.Field("service_tier")))
	require.Equal(t, `{"disable_parallel_tool_use":true,"type":"auto"}`, string(c.Field("tool_choice")))
	require.Equal(t, `{"effort":"high"}`, string(c.Field("output_config")))

	// The same options as a JSON object, as YAML agents write them.
	req.Options.ProviderOptions = map[string]any{"anthropic": map[string]any{"thinking": "adaptive", "cacheControl": "ephemeral"}}
	_, _, err = generate(p, req, false)
	require.NoError(t, err)
	c = srv.Captured()[1]
	require.Equal(t, `{"type":"adaptive"}`, string(c.Field("thinking")))
	require.Equal(t, `{"type":"ephemeral"}`, string(c.Field("cache_control")))
}

func TestBadProviderOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    any
		message string
	}{
		{"not an object", "fast", "providerOptions.anthropic must be an object of the anthropic provider's options"},
		{"wrong type", map[string]any{"thinkingBudget": "lots"}, "providerOptions.anthropic.thinkingBudget must be an integer (got string)."},
		{"bad thinking", map[string]any{"thinking": "deep"}, `providerOptions.anthropic.thinking must be adaptive, enabled or disabled (got "deep").`},
		{"enabled without budget", map[string]any{"thinking": "enabled"}, "providerOptions.anthropic.thinking 'enabled' needs a budget"},
		{"bad cache", map[string]any{"cacheControl": "forever"}, `providerOptions.anthropic.cacheControl must be ephemeral, 5m or 1h (got "forever").`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := serve(t)
			req := ask("hi")
			req.Options.ProviderOptions = map[string]any{"anthropic": tc.opts}
			_, _, err := generate(p, req, true)
			ke := asError(t, err)
			require.Equal(t, contracts.CodeProviderConfiguration, ke.Code)
			require.False(t, ke.Retryable)
			require.Contains(t, ke.Message, tc.message)
			require.Empty(t, srv.Requests(), "nothing was sent")
		})
	}
}

func TestNoModel(t *testing.T) {
	_, p := serve(t)
	_, err := p.Generate(context.Background(), providers.Request{Messages: ask("hi").Messages}, nil)
	require.Equal(t, contracts.CodeProviderConfiguration, asError(t, err).Code)
}

func TestSDKReadsNoEnvironment(t *testing.T) {
	srv := fakeanthropic.NewScript(fake.Text("hi"))
	defer srv.Close()
	t.Setenv(anthropic.EnvAPIKey, "env-key")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Custom: 1")
	_, _, err := generate(anthropic.New(anthropic.Options{BaseURL: srv.URL()}), ask("hi"), true)
	require.NoError(t, err)
	h := srv.Captured()[0].Header
	require.Empty(t, h.Get("Authorization"), "New takes the key from Options only")
	require.Empty(t, h.Get("X-Custom"))
}

func TestFinishReasons(t *testing.T) {
	for raw, unified := range map[string]string{
		"end_turn": providers.FinishStop, "stop_sequence": providers.FinishStop, "max_tokens": providers.FinishLength,
		"model_context_window_exceeded": providers.FinishLength, "tool_use": providers.FinishToolCalls, "pause_turn": providers.FinishOther,
	} {
		_, p := serve(t, fake.Turn{Text: "x", FinishReason: raw})
		resp, _, err := generate(p, ask("hi"), true)
		require.NoError(t, err)
		require.Equal(t, providers.FinishReason{Unified: unified, Raw: raw}, resp.FinishReason)
	}
}

// answer serves one fixed non-streamed body with the given status and headers.
func answer(t *testing.T, status int, header map[string]string, body string) *anthropic.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return anthropic.New(anthropic.Options{BaseURL: srv.URL})
}

func TestStopSequenceInMetadata(t *testing.T) {
	p := answer(t, 200, nil, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"one two"}],
		"stop_reason":"stop_sequence","stop_sequence":"three","usage":{"input_tokens":3,"output_tokens":2}}`)
	resp, _, err := generate(p, ask("count"), false)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"id": "msg_1", "model": "claude-x", "stopSequence": "three"}, resp.ProviderMetadata)
	require.Equal(t, providers.Usage{Input: 3, Output: 2, Total: 5}, resp.Usage)
}

func TestAnswerWithoutStopReason(t *testing.T) {
	p := answer(t, 200, nil, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":3,"output_tokens":2}}`)
	_, _, err := generate(p, ask("hi"), false)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderInvalidResponse, ke.Code)
	require.Contains(t, ke.Message, "the answer has no stop_reason")
}

func TestRetryAfterMs(t *testing.T) {
	p := answer(t, 429, map[string]string{"retry-after-ms": "1500", "request-id": "req_9"},
		`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	_, _, err := generate(p, ask("hi"), false)
	ke := asError(t, err)
	require.True(t, ke.Retryable)
	require.Equal(t, map[string]any{"type": "rate_limit_error", "retryAfterMs": 1500, "requestId": "req_9"}, ke.Details)
}

func TestErrorBodyThatIsNotJSON(t *testing.T) {
	p := answer(t, 502, nil, `<html>Bad gateway</html>`)
	_, _, err := generate(p, ask("hi"), false)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
	require.True(t, ke.Retryable)
	require.Equal(t, "Anthropic API returned 502 Bad Gateway: <html>Bad gateway</html>", ke.Message)
}

func TestLargeNonStreamedPassIsAConfigurationError(t *testing.T) {
	srv, p := serve(t, fake.Text("never"))
	req := ask("write a book")
	req.Options.MaxOutputTokens = 64000
	_, _, err := generate(p, req, false)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderConfiguration, ke.Code)
	require.False(t, ke.Retryable)
	require.Equal(t, "A non-streamed pass with max_tokens 64000 is refused by the Anthropic SDK (streaming is required for operations that may take longer than 10 minutes): stream the pass, or lower MaxOutputTokens.", ke.Message)
	require.Empty(t, srv.Requests())
}

func TestInvalidToolArgumentsAreKeptAsText(t *testing.T) {
	for _, stream := range []bool{true, false} {
		_, p := serve(t, fake.Turn{ToolCalls: []providers.ToolCall{{ID: "t1", Name: "lookup", Arguments: json.RawMessage(`{"orderId":`)}}})
		resp, _, err := generate(p, ask("hi"), stream)
		require.NoError(t, err)
		require.Equal(t, `"{\"orderId\":"`, string(resp.ToolCalls[0].Arguments), "stream %v", stream)
	}
}
