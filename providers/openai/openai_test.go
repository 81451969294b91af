package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/internal/providertest"
	"github.com/kortyx-go/kortyx/providers/openai"
)

// clearEnv makes a test independent of the developer's OPENAI_* variables.
func clearEnv(t *testing.T) {
	t.Helper()
	t.Setenv(openai.EnvAPIKey, "")
	t.Setenv(openai.EnvBaseURL, "")
}

func serve(t *testing.T, turns ...fake.Turn) (*fakeserver.Server, *openai.Provider) {
	t.Helper()
	clearEnv(t)
	srv := fakeserver.NewScript(turns...)
	t.Cleanup(srv.Close)
	return srv, openai.New(openai.Options{BaseURL: srv.URL()})
}

func ask(text string) providers.Request {
	return providers.Request{Model: "fake-model", Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}}
}

var (
	generate = providertest.Generate
	asError  = providertest.AsError
)

func TestID(t *testing.T) {
	clearEnv(t)
	require.Equal(t, "openai", openai.New(openai.Options{}).ID())
	require.Equal(t, "ollama", openai.New(openai.Options{ID: "ollama"}).ID())
	require.Equal(t, openai.DefaultBaseURL, openai.New(openai.Options{}).BaseURL())
}

func TestStreamedText(t *testing.T) {
	srv, p := serve(t, fake.Turn{Deltas: []string{"Hel", "lo, ", "", "world"}})
	resp, deltas, err := generate(p, ask("hi"), true)
	require.NoError(t, err)
	require.Equal(t, []string{"Hel", "lo, ", "world"}, deltas, "empty deltas are not passed on")
	require.Equal(t, "Hello, world", resp.Text)
	require.Empty(t, resp.ToolCalls)
	require.Equal(t, providers.FinishReason{Unified: "stop", Raw: "stop"}, resp.FinishReason)
	require.Equal(t, providers.Usage{Input: 10, Output: 4, Total: 14}, resp.Usage)
	require.Equal(t, map[string]any{"id": "chatcmpl-fake-1", "model": "fake-model", "systemFingerprint": "fp_fakeserver"},
		resp.ProviderMetadata)
	require.Empty(t, resp.Warnings)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.True(t, reqs[0].Stream)
	require.True(t, reqs[0].IncludeUsage)
	require.Equal(t, "fake-model", reqs[0].Model)
}

func TestStreamedToolCallsInterleaved(t *testing.T) {
	_, p := serve(t, fake.Turn{
		Text: "Checking. ",
		ToolCalls: []providers.ToolCall{
			{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Zürich","unit":"celsius","days":3}`)},
			{ID: "call_b", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
			{Name: "no_args"},
		},
	})
	resp, deltas, err := generate(p, ask("weather?"), true)
	require.NoError(t, err)
	require.Equal(t, []string{"Checking. "}, deltas)
	require.Equal(t, []providers.ToolCall{
		{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Zürich","unit":"celsius","days":3}`)},
		{ID: "call_b", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
		{ID: "call-no_args-1", Name: "no_args", Arguments: json.RawMessage(`{}`)},
	}, resp.ToolCalls)
	require.Equal(t, providers.FinishReason{Unified: "tool-calls", Raw: "tool_calls"}, resp.FinishReason)
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage providers.Usage
		want  providers.Usage
	}{
		{"full", providers.Usage{Input: 120, Output: 30, Total: 150, Reasoning: 12, CacheRead: 64},
			providers.Usage{Input: 120, Output: 30, Total: 150, Reasoning: 12, CacheRead: 64}},
		{"total defaults to input+output", providers.Usage{Input: 7, Output: 5},
			providers.Usage{Input: 7, Output: 5, Total: 12}},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				_, p := serve(t, fake.Turn{Text: "ok", Usage: tc.usage})
				resp, _, err := generate(p, ask("hi"), stream)
				require.NoError(t, err)
				require.Equal(t, tc.want, resp.Usage)
			})
		}
	}
}

func TestNonStreamed(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		srv, p := serve(t, fake.Text("Hello there."))
		resp, _, err := generate(p, ask("hi"), false)
		require.NoError(t, err)
		require.Equal(t, "Hello there.", resp.Text)
		require.Equal(t, providers.FinishReason{Unified: "stop", Raw: "stop"}, resp.FinishReason)
		require.Equal(t, providers.Usage{Input: 10, Output: 2, Total: 12}, resp.Usage)
		require.Equal(t, "chatcmpl-fake-1", resp.ProviderMetadata["id"])
		require.False(t, srv.Requests()[0].Stream)
		require.Nil(t, srv.Requests()[0].Field("stream_options"))
	})
	t.Run("tool calls", func(t *testing.T) {
		_, p := serve(t, fake.Calls(
			providers.ToolCall{ID: "c1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)},
			providers.ToolCall{ID: "c2", Name: "b", Arguments: json.RawMessage(`[1,2]`)},
		))
		resp, _, err := generate(p, ask("go"), false)
		require.NoError(t, err)
		require.Empty(t, resp.Text)
		require.Equal(t, []providers.ToolCall{
			{ID: "c1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)},
			{ID: "c2", Name: "b", Arguments: json.RawMessage(`[1,2]`)},
		}, resp.ToolCalls)
		require.Equal(t, "tool-calls", resp.FinishReason.Unified)
	})
}

func TestInvalidToolArgumentsKeptAsString(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			_, p := serve(t, fake.Turn{ToolCalls: []providers.ToolCall{
				{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"city": "Par`)},
			}})
			resp, _, err := generate(p, ask("go"), stream)
			require.NoError(t, err)
			require.Len(t, resp.ToolCalls, 1)
			require.Equal(t, `"{\"city\": \"Par"`, string(resp.ToolCalls[0].Arguments))
		})
	}
}

func TestMessageConversion(t *testing.T) {
	schema := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"]}`
	srv, p := serve(t, fake.Text("done"))
	req := providers.Request{
		Model: "gpt-test",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Content: "Where is A-1?"},
			{Role: providers.RoleAssistant, Content: "Let me look.", ToolCalls: []providers.ToolCall{
				{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"z":"A-1"}`)},
				{ID: "call_2", Name: "audit", Arguments: json.RawMessage(`"not json {"`)},
			}},
			{Role: providers.RoleTool, ToolCallID: "call_1", Name: "lookup", Content: `{"status":"shipped"}`},
			{Role: providers.RoleTool, ToolCallID: "call_2", Name: "audit", Content: "audit failed: denied", IsError: true},
			{Role: providers.RoleTool, ToolCallID: "call_3", Name: "structured", StructuredContent: json.RawMessage(`{"n":1}`)},
		},
		Tools: []providers.ToolDefinition{
			{Name: "lookup", Description: "Find an order.", InputSchema: json.RawMessage(schema)},
			{Name: "ping"},
		},
	}
	_, _, err := generate(p, req, false)
	require.NoError(t, err)

	got := srv.Requests()[0]
	require.Equal(t, "gpt-test", got.Model)
	require.Equal(t, []providers.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Where is A-1?"},
		{Role: "assistant", Content: "Let me look.", ToolCalls: []providers.ToolCall{
			{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"z":"A-1"}`)},
			// Arguments kept as a JSON string go back as the model's text.
			{ID: "call_2", Name: "audit", Arguments: json.RawMessage(`"not json {"`)},
		}},
		{Role: "tool", ToolCallID: "call_1", Name: "lookup", Content: `{"status":"shipped"}`},
		{Role: "tool", ToolCallID: "call_2", Name: "audit", Content: "audit failed: denied"},
		{Role: "tool", ToolCallID: "call_3", Content: `{"n":1}`},
	}, got.Messages)
	require.Equal(t, []providers.ToolDefinition{
		{Name: "lookup", Description: "Find an order.", InputSchema: json.RawMessage(schema)},
		{Name: "ping", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
	}, got.Tools)

	// The wire form: function tools and tool calls, arguments as strings.
	var wire struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				Type     string `json:"type"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(got.Raw, &wire))
	require.Equal(t, "function", wire.Messages[2].ToolCalls[0].Type)
	require.Equal(t, `{"z":"A-1"}`, wire.Messages[2].ToolCalls[0].Function.Arguments)
	require.Equal(t, `not json {`, wire.Messages[2].ToolCalls[1].Function.Arguments)
	require.Equal(t, "call_1", wire.Messages[3].ToolCallID)
	require.Equal(t, "function", wire.Tools[0].Type)
	require.Equal(t, schema, string(wire.Tools[0].Function.Parameters), "schema sent verbatim")
}

func TestResponseFormats(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`
	for _, tc := range []struct {
		name   string
		format *providers.ResponseFormat
		want   string // response_format on the wire; "" for none
	}{
		{"none", nil, ""},
		{"text", &providers.ResponseFormat{Type: "text"}, `{"type":"text"}`},
		{"json", &providers.ResponseFormat{Type: "json"}, `{"type":"json_object"}`},
		{"json-schema default name", &providers.ResponseFormat{Type: "json-schema", Schema: json.RawMessage(schema)},
			`{"type":"json_schema","json_schema":{"name":"response","schema":` + schema + `,"strict":true}}`},
		{"json-schema named", &providers.ResponseFormat{Type: "json-schema", Name: "ticket", Schema: json.RawMessage(schema)},
			`{"type":"json_schema","json_schema":{"name":"ticket","schema":` + schema + `,"strict":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := serve(t, fake.Text(`{"title":"x"}`))
			req := ask("go")
			req.Options.ResponseFormat = tc.format
			resp, _, err := generate(p, req, true)
			require.NoError(t, err)
			require.Empty(t, resp.Warnings)
			got := srv.Requests()[0].Field("response_format")
			if tc.want == "" {
				require.Nil(t, got)
				return
			}
			require.Equal(t, tc.want, string(got), "schema passed verbatim")
		})
	}

	t.Run("json-schema without schema", func(t *testing.T) {
		_, p := serve(t)
		req := ask("go")
		req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json-schema"}
		_, _, err := generate(p, req, false)
		require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
		require.False(t, asError(t, err).Retryable)
	})
}

func TestOptionsMapping(t *testing.T) {
	srv, p := serve(t, fake.Text("ok"))
	temp := 0.5
	req := ask("go")
	req.Options = providers.CallOptions{
		Temperature:     &temp,
		MaxOutputTokens: 256,
		StopSequences:   []string{"END", "STOP"},
		Reasoning:       &providers.ReasoningOptions{Effort: "low"},
		ProviderOptions: map[string]any{"openai": map[string]any{
			"topP": 0.9, "seed": float64(42), "user": "u-1", "presencePenalty": 0.5, "frequencyPenalty": -0.5,
			"parallelToolCalls": false, "serviceTier": "flex", "store": true,
			"metadata": map[string]any{"team": "support"},
		}, "anthropic": map[string]any{"topK": 40}}, // another provider's options are not read
	}
	resp, _, err := generate(p, req, false)
	require.NoError(t, err)
	require.Empty(t, resp.Warnings)

	var wire map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Raw, &wire))
	for k, want := range map[string]any{
		"temperature": 0.5, "max_completion_tokens": float64(256), "stop": []any{"END", "STOP"},
		"reasoning_effort": "low", "top_p": 0.9, "seed": float64(42), "user": "u-1",
		"presence_penalty": 0.5, "frequency_penalty": -0.5, "parallel_tool_calls": false,
		"service_tier": "flex", "store": true, "metadata": map[string]any{"team": "support"},
	} {
		require.Equal(t, want, wire[k], k)
	}
	got := srv.Requests()[0].Options
	require.Equal(t, 0.5, *got.Temperature)
	require.Equal(t, 256, got.MaxOutputTokens)
	require.Equal(t, []string{"END", "STOP"}, got.StopSequences)
}

func TestWarnings(t *testing.T) {
	type w struct{ Type, Setting string }
	zero := 0.0
	for _, tc := range []struct {
		name    string
		opts    providers.CallOptions
		model   map[string]any
		want    []w
		notSent string // a request field that must be absent
	}{
		{name: "temperature 0", opts: providers.CallOptions{Temperature: &zero},
			want: []w{{"compatibility", "temperature"}}, notSent: "temperature"},
		{name: "reasoning maxTokens", opts: providers.CallOptions{Reasoning: &providers.ReasoningOptions{Effort: "high", MaxTokens: 1000}},
			want: []w{{"unsupported", "reasoning.maxTokens"}}},
		{name: "includeThoughts", opts: providers.CallOptions{Reasoning: &providers.ReasoningOptions{IncludeThoughts: true}},
			want: []w{{"unsupported", "reasoning.includeThoughts"}}, notSent: "reasoning_effort"},
		{name: "unknown provider option", opts: providers.CallOptions{ProviderOptions: map[string]any{"openai": map[string]any{"logitBias": map[string]any{"1": 2}}}},
			want: []w{{"unsupported", "providerOptions.openai.logitBias"}}, notSent: "logit_bias"},
		{name: "topP 0", opts: providers.CallOptions{ProviderOptions: map[string]any{"openai": map[string]any{"topP": 0}}},
			want: []w{{"compatibility", "providerOptions.openai.topP"}}, notSent: "top_p"},
		{name: "top-level option (deprecated, still sent)", opts: providers.CallOptions{ProviderOptions: map[string]any{"seed": 7, "openai": map[string]any{"user": "u"}}},
			want: []w{{"deprecated", "providerOptions.seed"}}},
		{name: "unknown response format", opts: providers.CallOptions{ResponseFormat: &providers.ResponseFormat{Type: "yaml"}},
			want: []w{{"unsupported", "responseFormat.type"}}, notSent: "response_format"},
		{name: "unknown model option", model: map[string]any{"region": "eu"},
			want: []w{{"unsupported", "modelOptions.region"}}},
		{name: "several, in order", model: map[string]any{"zone": 1},
			opts: providers.CallOptions{Temperature: &zero, Reasoning: &providers.ReasoningOptions{MaxTokens: 5, IncludeThoughts: true},
				ProviderOptions: map[string]any{"openai": map[string]any{"b": 1, "a": 2}}},
			want: []w{{"unsupported", "modelOptions.zone"}, {"compatibility", "temperature"}, {"unsupported", "reasoning.maxTokens"},
				{"unsupported", "reasoning.includeThoughts"}, {"unsupported", "providerOptions.openai.a"}, {"unsupported", "providerOptions.openai.b"}}},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				srv, p := serve(t, fake.Text("ok"))
				req := ask("go")
				req.Options, req.ModelOptions = tc.opts, tc.model
				resp, _, err := generate(p, req, stream)
				require.NoError(t, err)
				got := make([]w, 0, len(resp.Warnings))
				for _, x := range resp.Warnings {
					require.NotEmpty(t, x.Message)
					got = append(got, w{x.Type, x.Setting})
				}
				require.Equal(t, tc.want, got)
				if tc.notSent != "" {
					require.Nil(t, srv.Requests()[0].Field(tc.notSent))
				}
			})
		}
	}
}

func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct{ scripted, unified, raw string }{
		{"stop", "stop", "stop"},
		{"length", "length", "length"},
		{"content-filter", "content-filter", "content_filter"},
		{"tool-calls", "tool-calls", "tool_calls"},
		{"function_call", "tool-calls", "function_call"},
		{"end_turn", "other", "end_turn"},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.scripted, stream), func(t *testing.T) {
				_, p := serve(t, fake.Turn{Text: "x", FinishReason: tc.scripted})
				resp, _, err := generate(p, ask("go"), stream)
				require.NoError(t, err)
				require.Equal(t, providers.FinishReason{Unified: tc.unified, Raw: tc.raw}, resp.FinishReason)
			})
		}
	}
}

func httpFail(status int, details map[string]any) fake.Turn {
	return fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: status,
		Message: "upstream says no", Details: details}}
}

func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		name         string
		turn         fake.Turn
		status       int
		retryable    bool
		retryAfterMs any // nil: none
		message      []string
		code         any // Details["code"]; nil: none
	}{
		{"401", httpFail(401, nil), 401, false, nil,
			[]string{"OpenAI-compatible server returned 401 Unauthorized: upstream says no", "OPENAI_API_KEY"}, "invalid_api_key"},
		{"403", httpFail(403, nil), 403, false, nil, []string{"403 Forbidden"}, nil},
		{"400", httpFail(400, nil), 400, false, nil, []string{"400 Bad Request: upstream says no"}, nil},
		{"404", httpFail(404, nil), 404, false, nil, []string{"model id"}, "model_not_found"},
		{"408", httpFail(408, nil), 408, true, nil, nil, nil},
		{"409", httpFail(409, nil), 409, true, nil, nil, nil},
		{"429 retry-after", httpFail(429, map[string]any{"retryAfterMs": 2000}), 429, true, 2000,
			[]string{"OpenAI-compatible server returned 429 Too Many Requests: upstream says no"}, "rate_limit_exceeded"},
		{"429 retry-after rounded up", httpFail(429, map[string]any{"retryAfterMs": 1200}), 429, true, 2000, nil, "rate_limit_exceeded"},
		{"429 insufficient_quota", httpFail(429, map[string]any{"code": "insufficient_quota", "type": "insufficient_quota"}),
			429, false, nil, []string{"quota"}, "insufficient_quota"},
		{"429 billing limit", httpFail(429, map[string]any{"code": "billing_hard_limit_reached"}), 429, false, nil, nil,
			"billing_hard_limit_reached"},
		{"500", httpFail(500, nil), 500, true, nil, []string{"500 Internal Server Error"}, nil},
		{"503 retry-after", httpFail(503, map[string]any{"retryAfterMs": 5000}), 503, true, 5000, nil, nil},
		{"plain error is 500", fake.Turn{Err: errors.New("boom")}, 500, true, nil, []string{"boom"}, nil},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				_, p := serve(t, tc.turn)
				_, deltas, err := generate(p, ask("go"), stream)
				require.Equal(t, contracts.CodeProviderHTTPError, contracts.CodeOf(err))
				require.Empty(t, deltas)
				ke := asError(t, err)
				require.Equal(t, tc.status, ke.Status)
				require.Equal(t, tc.retryable, ke.Retryable)
				require.Equal(t, tc.retryAfterMs, ke.Details["retryAfterMs"])
				for _, m := range tc.message {
					require.Contains(t, ke.Message, m)
				}
				require.Equal(t, tc.code, ke.Details["code"])
				require.NotNil(t, ke.Err, "cause kept")
			})
		}
	}
}

func TestErrorEventMidStream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		typ       string
		retryable bool
	}{
		{"server error", "server_error", true},
		{"bad request", "invalid_request_error", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := serve(t, fake.Turn{Deltas: []string{"a", "b", "c"}, FailAfter: 2,
				Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "overloaded", Details: map[string]any{"type": tc.typ}}})
			_, deltas, err := generate(p, ask("go"), true)
			require.Equal(t, []string{"a", "b"}, deltas)
			require.Equal(t, contracts.CodeProviderHTTPError, contracts.CodeOf(err))
			ke := asError(t, err)
			require.Equal(t, tc.retryable, ke.Retryable)
			require.Contains(t, ke.Message, "overloaded")
		})
	}
}

func TestRefusal(t *testing.T) {
	refuse := &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "I can't help with that."}
	for _, tc := range []struct {
		name   string
		turn   fake.Turn
		stream bool
		deltas []string
	}{
		{"not streamed", fake.Turn{Err: refuse}, false, nil},
		{"streamed", fake.Turn{Err: refuse}, true, nil},
		{"after some text", fake.Turn{Deltas: []string{"Well, ", "no. ", "never"}, Err: refuse, FailAfter: 2}, true, []string{"Well, ", "no. "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := serve(t, tc.turn)
			_, deltas, err := generate(p, ask("do something bad"), tc.stream)
			require.Equal(t, tc.deltas, deltas)
			require.Equal(t, contracts.CodeProviderRefusal, contracts.CodeOf(err))
			ke := asError(t, err)
			require.False(t, ke.Retryable)
			require.Contains(t, ke.Message, "I can't help with that.")
		})
	}
}

func TestInvalidResponse(t *testing.T) {
	bad := &contracts.Error{Code: contracts.CodeProviderInvalidResponse}
	for _, tc := range []struct {
		name   string
		turn   fake.Turn
		stream bool
	}{
		{"body not JSON", fake.Turn{Err: bad}, false},
		{"first chunk not JSON", fake.Turn{Err: bad}, true},
		{"chunk not JSON mid-stream", fake.Turn{Deltas: []string{"a", "b"}, Err: bad, FailAfter: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := serve(t, tc.turn)
			_, _, err := generate(p, ask("go"), tc.stream)
			require.Equal(t, contracts.CodeProviderInvalidResponse, contracts.CodeOf(err))
			require.True(t, asError(t, err).Retryable)
		})
	}
}

// rawServer answers every request with body (streamed bodies are SSE).
func rawServer(t *testing.T, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestMalformedResponses(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		stream                  bool
	}{
		{"no choices", "application/json", `{"id":"x","object":"chat.completion","choices":[]}`, false},
		{"empty body", "application/json", ``, false},
		{"wrong types", "application/json", `{"choices":"many"}`, false},
		{"stream without finish reason", "text/event-stream",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n", true},
		{"stream ends without [DONE] or finish", "text/event-stream",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			p := openai.New(openai.Options{BaseURL: rawServer(t, tc.contentType, tc.body)})
			_, _, err := generate(p, ask("go"), tc.stream)
			require.Equal(t, contracts.CodeProviderInvalidResponse, contracts.CodeOf(err), "%v", err)
			require.True(t, asError(t, err).Retryable)
		})
	}

	t.Run("error body not JSON", func(t *testing.T) {
		clearEnv(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "3")
			http.Error(w, "<html>Bad   gateway</html>", http.StatusBadGateway)
		}))
		t.Cleanup(srv.Close)
		_, _, err := generate(openai.New(openai.Options{BaseURL: srv.URL}), ask("go"), true)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
		require.Equal(t, 502, ke.Status)
		require.True(t, ke.Retryable)
		require.Equal(t, 3000, ke.Details["retryAfterMs"])
		require.Contains(t, ke.Message, "502 Bad Gateway: <html>Bad gateway</html>")
	})
}

func TestTransportErrors(t *testing.T) {
	cut := &contracts.Error{Code: contracts.CodeProviderTransportError}
	for _, tc := range []struct {
		name   string
		turn   fake.Turn
		stream bool
		deltas []string
	}{
		{"connection closed", fake.Turn{Err: cut}, false, nil},
		{"connection closed before the stream", fake.Turn{Err: cut}, true, nil},
		{"cut mid-stream after 2 deltas", fake.Turn{Deltas: []string{"one ", "two ", "three"}, Err: cut, FailAfter: 2}, true,
			[]string{"one ", "two "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := serve(t, tc.turn)
			_, deltas, err := generate(p, ask("go"), tc.stream)
			require.Equal(t, tc.deltas, deltas)
			require.Equal(t, contracts.CodeProviderTransportError, contracts.CodeOf(err), "%v", err)
			ke := asError(t, err)
			require.True(t, ke.Retryable)
			require.NotNil(t, ke.Err)
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		clearEnv(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		p := openai.New(openai.Options{BaseURL: "http://" + addr + "/v1"})
		for _, stream := range []bool{true, false} {
			_, _, err := generate(p, ask("go"), stream)
			require.Equal(t, contracts.CodeProviderTransportError, contracts.CodeOf(err), "%v", err)
			ke := asError(t, err)
			require.True(t, ke.Retryable)
			require.Contains(t, ke.Message, addr)
		}
	})
}

func TestCancellation(t *testing.T) {
	t.Run("while waiting for the answer", func(t *testing.T) {
		clearEnv(t)
		started := make(chan struct{})
		srv := fakeserver.New(func(providers.Request) fake.Turn {
			close(started)
			return fake.Turn{Text: "late", Delay: time.Minute}
		})
		t.Cleanup(srv.Close)
		p := openai.New(openai.Options{BaseURL: srv.URL()})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		_, err := p.Generate(ctx, ask("go"), nil)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
		var ke *contracts.Error
		require.False(t, errors.As(err, &ke), "not wrapped as a provider error")
	})
	t.Run("mid-stream", func(t *testing.T) {
		_, p := serve(t, fake.Turn{Deltas: []string{"a", "b", "c", "d"}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var deltas []string
		_, err := p.Generate(ctx, ask("go"), func(d string) error {
			deltas = append(deltas, d)
			if len(deltas) == 2 {
				cancel()
			}
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, []string{"a", "b"}, deltas)
	})
	t.Run("already cancelled", func(t *testing.T) {
		srv, p := serve(t, fake.Text("never"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Generate(ctx, ask("go"), nil)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, srv.Requests())
	})
	t.Run("deadline", func(t *testing.T) {
		_, p := serve(t, fake.Turn{Text: "late", Delay: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := p.Generate(ctx, ask("go"), func(string) error { return nil })
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestOnDeltaErrorReturnedUnchanged(t *testing.T) {
	_, p := serve(t, fake.Turn{Deltas: []string{"a", "b", "c"}})
	stop := errors.New("client went away")
	calls := 0
	_, err := p.Generate(context.Background(), ask("go"), func(string) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	require.Same(t, stop, err)
	require.Equal(t, 2, calls)
}

func TestAPIKey(t *testing.T) {
	t.Run("missing with the default base URL", func(t *testing.T) {
		clearEnv(t)
		for _, opts := range []openai.Options{{}, {BaseURL: "https://api.openai.com/v1"}} {
			_, _, err := generate(openai.New(opts), ask("go"), true)
			require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
			ke := asError(t, err)
			require.False(t, ke.Retryable)
			require.Contains(t, ke.Message, "OPENAI_API_KEY is not set")
			require.Contains(t, ke.Message, "OPENAI_BASE_URL")
		}
	})
	t.Run("custom base URL without a key sends no Authorization", func(t *testing.T) {
		srv, p := serve(t, fake.Text("ok"))
		_, _, err := generate(p, ask("go"), true)
		require.NoError(t, err)
		require.Empty(t, srv.Requests()[0].Header.Get("Authorization"))
		require.Empty(t, srv.Requests()[0].Header.Get("OpenAI-Organization"))
	})
	t.Run("key and organization from options", func(t *testing.T) {
		clearEnv(t)
		srv := fakeserver.NewScript(fake.Text("ok"))
		t.Cleanup(srv.Close)
		p := openai.New(openai.Options{BaseURL: srv.URL(), APIKey: "sk-opt", Organization: "org-1"})
		_, _, err := generate(p, ask("go"), false)
		require.NoError(t, err)
		require.Equal(t, "Bearer sk-opt", srv.Requests()[0].Header.Get("Authorization"))
		require.Equal(t, "org-1", srv.Requests()[0].Header.Get("OpenAI-Organization"))
	})
	t.Run("key and base URL from the environment", func(t *testing.T) {
		srv := fakeserver.NewScript(fake.Text("ok"))
		t.Cleanup(srv.Close)
		t.Setenv(openai.EnvAPIKey, "sk-env")
		t.Setenv(openai.EnvBaseURL, srv.URL())
		p := openai.New(openai.Options{})
		require.Equal(t, srv.URL(), p.BaseURL())
		resp, _, err := generate(p, ask("go"), true)
		require.NoError(t, err)
		require.Equal(t, "ok", resp.Text)
		require.Equal(t, "Bearer sk-env", srv.Requests()[0].Header.Get("Authorization"))
	})
}

func TestPerRequestOverrides(t *testing.T) {
	clearEnv(t)
	home := fakeserver.New(fakeserver.Canned())
	t.Cleanup(home.Close)
	p := openai.New(openai.Options{BaseURL: home.URL(), APIKey: "sk-home", Organization: "org-home"})

	t.Run("baseURL and apiKey", func(t *testing.T) {
		other := fakeserver.New(fakeserver.Canned())
		t.Cleanup(other.Close)
		req := ask("hello")
		req.ModelOptions = map[string]any{"baseURL": other.URL(), "apiKey": "sk-other"}
		resp, _, err := generate(p, req, true)
		require.NoError(t, err)
		require.Equal(t, "(fake model) You said: hello", resp.Text)
		require.Empty(t, resp.Warnings)
		require.Len(t, other.Requests(), 1)
		require.Equal(t, "Bearer sk-other", other.Requests()[0].Header.Get("Authorization"))
		require.Empty(t, other.Requests()[0].Header.Get("OpenAI-Organization"))
	})
	t.Run("baseURL alone does not leak the provider's key", func(t *testing.T) {
		other := fakeserver.New(fakeserver.Canned())
		t.Cleanup(other.Close)
		req := ask("hello")
		req.ModelOptions = map[string]any{"baseURL": other.URL()}
		_, _, err := generate(p, req, false)
		require.NoError(t, err)
		require.Empty(t, other.Requests()[0].Header.Get("Authorization"))
	})
	t.Run("apiKey alone", func(t *testing.T) {
		n := len(home.Requests())
		req := ask("hello")
		req.ModelOptions = map[string]any{"apiKey": "sk-request"}
		_, _, err := generate(p, req, false)
		require.NoError(t, err)
		got := home.Requests()[n]
		require.Equal(t, "Bearer sk-request", got.Header.Get("Authorization"))
		require.Equal(t, "org-home", got.Header.Get("OpenAI-Organization"))
	})
	t.Run("no override uses the provider's key", func(t *testing.T) {
		n := len(home.Requests())
		_, _, err := generate(p, ask("hello"), false)
		require.NoError(t, err)
		require.Equal(t, "Bearer sk-home", home.Requests()[n].Header.Get("Authorization"))
	})
	for _, tc := range []struct {
		name    string
		opts    map[string]any
		message string
	}{
		{"OpenAI without a key", map[string]any{"baseURL": "https://api.openai.com/v1"}, "apiKey"},
		{"baseURL not a string", map[string]any{"baseURL": 11434}, "baseURL"},
		{"apiKey not a string", map[string]any{"apiKey": true}, "apiKey"},
		{"baseURL not a URL", map[string]any{"baseURL": "localhost:11434"}, "http://localhost:11434/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := ask("hello")
			req.ModelOptions = tc.opts
			_, _, err := generate(p, req, true)
			require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
			ke := asError(t, err)
			require.False(t, ke.Retryable)
			require.Contains(t, ke.Message, tc.message)
		})
	}
}

func TestConfigurationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  providers.Request
	}{
		{"no model", providers.Request{Messages: ask("x").Messages}},
		{"tool schema not JSON", providers.Request{Model: "m", Messages: ask("x").Messages,
			Tools: []providers.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`{nope`)}}}},
		{"rejected by the client before sending", providers.Request{Model: "o3-mini", Messages: ask("x").Messages,
			Options: providers.CallOptions{ProviderOptions: map[string]any{"openai": map[string]any{"presencePenalty": 1}}}}},
		{"provider option of the wrong type", providers.Request{Model: "m", Messages: ask("x").Messages,
			Options: providers.CallOptions{ProviderOptions: map[string]any{"openai": map[string]any{"seed": "42"}}}}},
		{"provider options not an object", providers.Request{Model: "m", Messages: ask("x").Messages,
			Options: providers.CallOptions{ProviderOptions: map[string]any{"openai": "fast"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := serve(t)
			_, _, err := generate(p, tc.req, true)
			require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err), "%v", err)
			require.False(t, asError(t, err).Retryable)
			require.Empty(t, srv.Requests())
		})
	}
}

func TestScriptExhaustedIsServerError(t *testing.T) {
	_, p := serve(t)
	_, _, err := generate(p, ask("go"), true)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
	require.Equal(t, 500, ke.Status)
	require.Contains(t, ke.Message, "script exhausted")
}

func TestCustomHTTPClient(t *testing.T) {
	clearEnv(t)
	srv := fakeserver.NewScript(fake.Text("ok"))
	t.Cleanup(srv.Close)
	var seen int
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen++
		return http.DefaultTransport.RoundTrip(r)
	})}
	p := openai.New(openai.Options{BaseURL: srv.URL(), HTTPClient: client})
	_, _, err := generate(p, ask("go"), true)
	require.NoError(t, err)
	require.Equal(t, 1, seen)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
