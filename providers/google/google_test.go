package google_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
	"github.com/kortyx-go/kortyx/providers/internal/providertest"
)

const model = "gemini-2.5-flash"

// clearEnv makes a test independent of the developer's Google variables.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{google.EnvAPIKey, google.EnvGoogleAPIKey, google.EnvBaseURL, google.EnvUseVertexAI,
		google.EnvProject, google.EnvLocation, google.EnvRegion, google.EnvVertexURL} {
		t.Setenv(k, "")
	}
}

func newProvider(t *testing.T, baseURL string) *google.Provider {
	t.Helper()
	p, err := google.New(context.Background(), google.Options{APIKey: "test-key", BaseURL: baseURL})
	require.NoError(t, err)
	return p
}

func serve(t *testing.T, turns ...fake.Turn) (*fakegemini.Server, *google.Provider) {
	t.Helper()
	clearEnv(t)
	srv := fakegemini.NewScript(turns...)
	t.Cleanup(srv.Close)
	return srv, newProvider(t, srv.URL())
}

func ask(text string) providers.Request {
	return providers.Request{Model: model, Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}}
}

var (
	generate = providertest.Generate
	asError  = providertest.AsError
)

// field returns a field of a JSON object at a path, as compact JSON ("" when absent).
func field(t *testing.T, raw []byte, path ...string) string {
	t.Helper()
	cur := json.RawMessage(raw)
	for _, k := range path {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(cur, &m))
		v, ok := m[k]
		if !ok {
			return ""
		}
		cur = v
	}
	var v any
	require.NoError(t, json.Unmarshal(cur, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func both(t *testing.T, fn func(t *testing.T, stream bool)) {
	t.Run("streamed", func(t *testing.T) { fn(t, true) })
	t.Run("not streamed", func(t *testing.T) { fn(t, false) })
}

func TestNew(t *testing.T) {
	clearEnv(t)
	_, err := google.New(context.Background(), google.Options{})
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderConfiguration, ke.Code)
	require.False(t, ke.Retryable)
	require.Contains(t, ke.Message, "GEMINI_API_KEY is not set")

	_, err = google.New(context.Background(), google.Options{APIKey: "k", BaseURL: "localhost:8080"})
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))

	_, err = google.New(context.Background(), google.Options{Backend: google.BackendVertexAI})
	ke = asError(t, err)
	require.Equal(t, contracts.CodeProviderConfiguration, ke.Code)
	require.Contains(t, ke.Message, "GOOGLE_CLOUD_PROJECT")

	p, err := google.New(context.Background(), google.Options{APIKey: "k"})
	require.NoError(t, err)
	require.Equal(t, "google", p.ID())
	require.Equal(t, "https://generativelanguage.googleapis.com/", p.BaseURL())

	p, err = google.New(context.Background(), google.Options{ID: "gemini", APIKey: "k", BaseURL: "http://127.0.0.1:1/"})
	require.NoError(t, err)
	require.Equal(t, "gemini", p.ID())
	require.Equal(t, "http://127.0.0.1:1/", p.BaseURL())
}

func TestFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv(google.EnvAPIKey, "gemini-key")
	t.Setenv(google.EnvBaseURL, "http://localhost:9999/")
	require.Equal(t, google.Options{APIKey: "gemini-key", BaseURL: "http://localhost:9999/"}, google.FromEnv())
	t.Setenv(google.EnvGoogleAPIKey, "google-key")
	require.Equal(t, "google-key", google.FromEnv().APIKey, "GOOGLE_API_KEY wins, as in the SDK")

	t.Setenv(google.EnvUseVertexAI, "true")
	t.Setenv(google.EnvProject, "my-project")
	t.Setenv(google.EnvRegion, "europe-west4")
	require.Equal(t, google.Options{APIKey: "google-key", Backend: google.BackendVertexAI, Project: "my-project", Location: "europe-west4"},
		google.FromEnv())
	t.Setenv(google.EnvLocation, "us-central1")
	require.Equal(t, "us-central1", google.FromEnv().Location)

	// New fills what Options leave empty from the environment.
	clearEnv(t)
	srv := fakegemini.NewScript(fake.Text("hi"))
	defer srv.Close()
	t.Setenv(google.EnvAPIKey, "from-env")
	t.Setenv(google.EnvBaseURL, srv.URL())
	p, err := google.New(context.Background(), google.Options{})
	require.NoError(t, err)
	_, _, err = generate(p, ask("hi"), true)
	require.NoError(t, err)
	require.Equal(t, "from-env", srv.Headers()[0].Get("x-goog-api-key"))
}

// Vertex AI: express mode (an API key) and a project's location, both against the fake (which
// serves Vertex AI's paths too; a project without an HTTP client of one's own would use
// Application Default Credentials).
func TestVertexAI(t *testing.T) {
	clearEnv(t)
	srv := fakegemini.NewScript(fake.Text("from express mode"), fake.Text("from a project"))
	defer srv.Close()
	p, err := google.New(context.Background(), google.Options{Backend: google.BackendVertexAI, APIKey: "k", BaseURL: srv.URL()})
	require.NoError(t, err)
	resp, _, err := generate(p, ask("hi"), true)
	require.NoError(t, err)
	require.Equal(t, "from express mode", resp.Text)
	require.Equal(t, "k", srv.Headers()[0].Get("x-goog-api-key"))

	t.Setenv(google.EnvAPIKey, "env-key") // a project wins over a key of the environment
	p, err = google.New(context.Background(), google.Options{Backend: google.BackendVertexAI, Project: "my-project", Location: "us-central1",
		BaseURL: srv.URL(), HTTPClient: &http.Client{}})
	require.NoError(t, err)
	resp, _, err = generate(p, ask("hi"), false)
	require.NoError(t, err)
	require.Equal(t, "from a project", resp.Text)
	require.Empty(t, srv.Headers()[1].Get("x-goog-api-key"))
}

func TestStreamedTextAndUsage(t *testing.T) {
	u := providers.Usage{Input: 12, Output: 5, Reasoning: 7, CacheRead: 4, Total: 24}
	srv, p := serve(t, fake.Turn{Deltas: []string{"Hel", "lo, ", "", "world"}, Usage: u})
	resp, deltas, err := generate(p, ask("hi"), true)
	require.NoError(t, err)
	require.Equal(t, []string{"Hel", "lo, ", "world"}, deltas, "deltas in order, empty ones not passed on")
	require.Equal(t, "Hello, world", resp.Text)
	require.Empty(t, resp.ToolCalls)
	require.Equal(t, providers.FinishReason{Unified: "stop", Raw: "STOP"}, resp.FinishReason)
	require.Equal(t, u, resp.Usage, "thoughts are Reasoning, cached tokens CacheRead")
	require.Equal(t, map[string]any{"id": "fake-gemini-1", "model": model}, resp.ProviderMetadata)
	require.Empty(t, resp.Warnings)
	require.Nil(t, resp.Continuation)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.True(t, reqs[0].Stream)
	require.Equal(t, model, reqs[0].Model)
	require.Equal(t, ask("hi").Messages, reqs[0].Messages)
	require.Equal(t, "test-key", srv.Headers()[0].Get("x-goog-api-key"))
}

func TestNotStreamed(t *testing.T) {
	srv, p := serve(t, fake.Text("All good."))
	resp, deltas, err := generate(p, ask("hi"), false)
	require.NoError(t, err)
	require.Empty(t, deltas)
	require.Equal(t, "All good.", resp.Text)
	require.Equal(t, providers.Usage{Input: 10, Output: 2, Total: 12}, resp.Usage)
	require.False(t, srv.Requests()[0].Stream)
}

func TestSystemInstructionAndOptionsOnTheWire(t *testing.T) {
	srv, p := serve(t, fake.Text("ok"))
	temp := 0.0
	req := providers.Request{Model: model, Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: "hi"},
	}, Options: providers.CallOptions{Temperature: &temp, MaxOutputTokens: 50, StopSequences: []string{"END", "STOP"}}}
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	require.Empty(t, resp.Warnings)
	raw := srv.Requests()[0].Raw
	require.Equal(t, `{"parts":[{"text":"Be brief."}],"role":"user"}`, field(t, raw, "systemInstruction"))
	require.Equal(t, `[{"parts":[{"text":"hi"}],"role":"user"}]`, field(t, raw, "contents"))
	require.Equal(t, `{"maxOutputTokens":50,"stopSequences":["END","STOP"],"temperature":0}`, field(t, raw, "generationConfig"),
		"a temperature of 0 is sent")
	got := srv.Requests()[0].Request
	require.Equal(t, req.Messages, got.Messages)
	require.Equal(t, req.Options, got.Options)
}

func TestSeveralFunctionCalls(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv, p := serve(t, fake.Calls(
			providers.ToolCall{Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
			providers.ToolCall{Name: "weather", Arguments: json.RawMessage(`{"city":"Paris","days":[1,2]}`)},
		))
		req := ask("where is my order")
		req.Tools = []providers.ToolDefinition{
			{Name: "lookup_order", Description: "Finds an order.", InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}}}`)},
			{Name: "weather"},
		}
		resp, deltas, err := generate(p, req, stream)
		require.NoError(t, err)
		require.Empty(t, deltas)
		require.Equal(t, []providers.ToolCall{
			{ID: "call-lookup_order-1", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
			{ID: "call-weather-2", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris","days":[1,2]}`)},
		}, resp.ToolCalls)
		require.Equal(t, providers.FinishReason{Unified: "tool-calls", Raw: "STOP"}, resp.FinishReason)
		require.Nil(t, resp.Continuation, "the model sent ids and no signatures: nothing to keep")
		require.Equal(t, `[{"functionDeclarations":[{"description":"Finds an order.","name":"lookup_order","parametersJsonSchema":{"properties":{"orderId":{"type":"string"}},"type":"object"}},{"name":"weather"}]}]`,
			field(t, srv.Requests()[0].Raw, "tools"))
		got := srv.Requests()[0].Tools[0]
		require.Equal(t, req.Tools[0].Name, got.Name)
		require.Equal(t, req.Tools[0].Description, got.Description)
		require.JSONEq(t, string(req.Tools[0].InputSchema), string(got.InputSchema), "the SDK re-encodes the schema (keys sorted)")
	})
}

// Gemini may send function calls without ids: the provider names them call-<name>-<n> (n
// counting the calls of the conversation) and sends the responses back without ids, matched by
// name.
func TestFunctionCallsWithoutIDs(t *testing.T) {
	srv, p := serve(t,
		fake.Turn{KeepIDs: true, ToolCalls: []providers.ToolCall{
			{Name: "lookup", Arguments: json.RawMessage(`{"q":"a"}`)},
			{Name: "lookup", Arguments: json.RawMessage(`{"q":"b"}`)},
		}},
		fake.Turn{KeepIDs: true, ToolCalls: []providers.ToolCall{{Name: "lookup", Arguments: json.RawMessage(`{"q":"c"}`)}}},
	)
	req := ask("look both up")
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, []string{"call-lookup-1", "call-lookup-2"}, []string{resp.ToolCalls[0].ID, resp.ToolCalls[1].ID})
	require.NotNil(t, resp.Continuation)

	req.Messages = append(req.Messages,
		providers.Message{Role: providers.RoleAssistant, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation},
		providers.Message{Role: providers.RoleTool, ToolCallID: "call-lookup-1", Name: "lookup", Content: "A"},
		providers.Message{Role: providers.RoleTool, ToolCallID: "call-lookup-2", Name: "lookup", Content: "B"},
	)
	resp, _, err = generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, "call-lookup-3", resp.ToolCalls[0].ID, "unique across the conversation, as the tool loop requires")
	raw := srv.Requests()[1].Raw
	require.Equal(t, `[{"parts":[{"text":"look both up"}],"role":"user"},`+
		`{"parts":[{"functionCall":{"args":{"q":"a"},"name":"lookup"}},{"functionCall":{"args":{"q":"b"},"name":"lookup"}}],"role":"model"},`+
		`{"parts":[{"functionResponse":{"name":"lookup","response":{"output":"A"}}},{"functionResponse":{"name":"lookup","response":{"output":"B"}}}],"role":"user"}]`,
		field(t, raw, "contents"))
	// The server matches them back by name, in order.
	got := srv.Requests()[1].Messages
	require.Equal(t, "call-lookup-1", got[2].ToolCallID)
	require.Equal(t, "A", got[2].Content)
	require.Equal(t, "call-lookup-2", got[3].ToolCallID)
}

func TestToolErrorResultOnTheWire(t *testing.T) {
	srv, p := serve(t, fake.Text("Sorry, the lookup failed."))
	req := ask("where is A-1")
	req.Messages = append(req.Messages,
		providers.Message{Role: providers.RoleAssistant, Content: "Let me check.", ToolCalls: []providers.ToolCall{
			{ID: "call-lookup_order-1", Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
			{ID: "call-refund-2", Name: "refund", Arguments: json.RawMessage(`{}`)},
		}},
		providers.Message{Role: providers.RoleTool, ToolCallID: "call-lookup_order-1", Name: "lookup_order",
			Content: "order service unavailable", IsError: true},
		providers.Message{Role: providers.RoleTool, ToolCallID: "call-refund-2", // no name: found from the call
			Content: `{"ok":true}`, StructuredContent: json.RawMessage(`{"ok":true}`)},
	)
	_, _, err := generate(p, req, true)
	require.NoError(t, err)
	raw := srv.Requests()[0].Raw
	require.Equal(t, `[{"parts":[{"text":"where is A-1"}],"role":"user"},`+
		`{"parts":[{"text":"Let me check."},{"functionCall":{"args":{"orderId":"A-1"},"id":"call-lookup_order-1","name":"lookup_order"}},{"functionCall":{"id":"call-refund-2","name":"refund"}}],"role":"model"},`+
		`{"parts":[{"functionResponse":{"id":"call-lookup_order-1","name":"lookup_order","response":{"error":"order service unavailable"}}},`+
		`{"functionResponse":{"id":"call-refund-2","name":"refund","response":{"output":{"ok":true}}}}],"role":"user"}]`,
		field(t, raw, "contents"))
	got := srv.Requests()[0].Messages
	require.Equal(t, providers.Message{Role: providers.RoleTool, ToolCallID: "call-lookup_order-1", Name: "lookup_order",
		Content: "order service unavailable", IsError: true}, got[2])
	require.Equal(t, providers.Message{Role: providers.RoleTool, ToolCallID: "call-refund-2", Name: "refund",
		Content: `{"ok":true}`, StructuredContent: json.RawMessage(`{"ok":true}`)}, got[3])

	// A tool result that answers no call and names no tool cannot be sent.
	bad := ask("x")
	bad.Messages = append(bad.Messages, providers.Message{Role: providers.RoleTool, ToolCallID: "nope", Content: "?"})
	_, _, err = generate(p, bad, true)
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
	require.Len(t, srv.Requests(), 1, "nothing was sent")
}

func TestJSONSchemaOutput(t *testing.T) {
	schema := `{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"}`
	for _, tc := range []struct{ name, text string }{
		{"valid", `{"answer":"42"}`},
		{"invalid", `{"answer": 42`}, // returned as is: the caller validates and asks for a correction
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := serve(t, fake.Text(tc.text))
			req := ask("answer in JSON")
			req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Name: "answer", Schema: json.RawMessage(schema)}
			resp, _, err := generate(p, req, true)
			require.NoError(t, err)
			require.Equal(t, tc.text, resp.Text)
			require.Empty(t, resp.Warnings)
			raw := srv.Requests()[0].Raw
			require.Equal(t, `"application/json"`, field(t, raw, "generationConfig", "responseMimeType"))
			require.Equal(t, schema, field(t, raw, "generationConfig", "responseJsonSchema"))
			require.JSONEq(t, schema, string(srv.Requests()[0].Options.ResponseFormat.Schema))
		})
	}
	srv, p := serve(t, fake.Text(`{}`))
	req := ask("json")
	req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json"}
	_, _, err := generate(p, req, false)
	require.NoError(t, err)
	require.Equal(t, `{"responseMimeType":"application/json"}`, field(t, srv.Requests()[0].Raw, "generationConfig"))

	req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Schema: json.RawMessage(`{nope`)}
	_, _, err = generate(p, req, false)
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
}

func TestMaxTokensFinishLength(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv, p := serve(t, fake.Turn{Text: "It was a dark and", FinishReason: providers.FinishLength})
		req := ask("tell a story")
		req.Options.MaxOutputTokens = 5
		req.Options.StopSequences = []string{"THE END"}
		resp, _, err := generate(p, req, stream)
		require.NoError(t, err)
		require.Equal(t, "It was a dark and", resp.Text)
		require.Equal(t, providers.FinishReason{Unified: "length", Raw: "MAX_TOKENS"}, resp.FinishReason)
		require.Equal(t, `{"maxOutputTokens":5,"stopSequences":["THE END"]}`, field(t, srv.Requests()[0].Raw, "generationConfig"))
	})
}

func TestSafetyBlockIsRefusal(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		_, p := serve(t, fake.Turn{Text: "Here is how to", FailAfter: 2, Err: &contracts.Error{Code: contracts.CodeProviderRefusal,
			Message: "blocked", Details: map[string]any{"category": "HARM_CATEGORY_HARASSMENT"}}})
		_, deltas, err := generate(p, ask("something bad"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderRefusal, ke.Code)
		require.False(t, ke.Retryable)
		require.Equal(t, map[string]any{"finishReason": "SAFETY", "finishMessage": "blocked", "category": "HARM_CATEGORY_HARASSMENT",
			"categories": []string{"HARM_CATEGORY_HARASSMENT"}}, ke.Details)
		require.Equal(t, "Gemini stopped the answer (SAFETY) for HARM_CATEGORY_HARASSMENT: blocked.", ke.Message,
			"the finishMessage is read from the response body (the SDK drops it on the Gemini API)")
		require.Equal(t, &providers.FinishReason{Unified: "content-filter", Raw: "SAFETY"}, ke.FinishReason)
		if stream {
			require.Equal(t, []string{"Here ", "is "}, deltas, "the text before the block was streamed")
		}
	})
}

// The finishMessage of a refused answer, read from the body as Google sends it: a unary answer
// as indented JSON over several lines, a stream as one event per chunk; without one the message
// names the reason and the categories only.
func TestRefusalFinishMessage(t *testing.T) {
	clearEnv(t)
	const unary = `{
  "candidates": [
    {
      "finishReason": "SAFETY",
      "finishMessage": "The response was blocked: it may contain dangerous content!",
      "index": 0,
      "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]
    }
  ],
  "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}
}
`
	const events = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Sure, \"}]},\"index\":0}]}\r\n\r\n" +
		"data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"finishMessage\":\"Blocked for dangerous content\",\"index\":0," +
		"\"safetyRatings\":[{\"category\":\"HARM_CATEGORY_DANGEROUS_CONTENT\",\"probability\":\"HIGH\",\"blocked\":true}]}]," +
		"\"usageMetadata\":{\"promptTokenCount\":7,\"totalTokenCount\":9}}\r\n\r\n"
	const bare = `{"candidates":[{"finishReason":"RECITATION","index":0}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("alt") == "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(events))
		case r.Header.Get("X-Test") == "bare":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(bare))
		default:
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			_, _ = w.Write([]byte(unary))
		}
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL+"/")

	_, _, err := generate(p, ask("hi"), false)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderRefusal, ke.Code)
	require.Equal(t, "Gemini stopped the answer (SAFETY) for HARM_CATEGORY_DANGEROUS_CONTENT: The response was blocked: it may contain dangerous content!", ke.Message)
	require.Equal(t, "The response was blocked: it may contain dangerous content!", ke.Details["finishMessage"])
	require.Equal(t, &providers.Usage{Input: 7, Total: 7}, ke.Usage)

	_, deltas, err := generate(p, ask("hi"), true)
	ke = asError(t, err)
	require.Equal(t, "Gemini stopped the answer (SAFETY) for HARM_CATEGORY_DANGEROUS_CONTENT: Blocked for dangerous content.", ke.Message)
	require.Equal(t, []string{"Sure, "}, deltas)

	c := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("X-Test", "bare")
		return http.DefaultTransport.RoundTrip(r)
	})}
	p, err = google.New(context.Background(), google.Options{APIKey: "k", BaseURL: srv.URL + "/", HTTPClient: c})
	require.NoError(t, err)
	_, _, err = generate(p, ask("hi"), false)
	ke = asError(t, err)
	require.Equal(t, "Gemini stopped the answer (RECITATION).", ke.Message)
	require.Equal(t, map[string]any{"finishReason": "RECITATION"}, ke.Details)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPromptBlockedIsRefusal(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		_, p := serve(t, fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderRefusal,
			Details: map[string]any{"blockReason": "PROHIBITED_CONTENT"}}})
		_, _, err := generate(p, ask("something bad"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderRefusal, ke.Code)
		require.Equal(t, map[string]any{"blockReason": "PROHIBITED_CONTENT", "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
			"categories": []string{"HARM_CATEGORY_DANGEROUS_CONTENT"}}, ke.Details)
		require.Equal(t, 10, ke.Usage.Input)
	})
}

func TestRateLimitThenSuccess(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv, p := serve(t,
			fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: http.StatusTooManyRequests, Retryable: true,
				Message: "Quota exceeded.", Details: map[string]any{"retryAfterMs": 1500}}},
			fake.Text("ok"),
		)
		_, _, err := generate(p, ask("hi"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
		require.Equal(t, http.StatusTooManyRequests, ke.Status)
		require.True(t, ke.Retryable)
		require.Equal(t, map[string]any{"status": "RESOURCE_EXHAUSTED", "retryAfterMs": 1500}, ke.Details)
		require.Equal(t, 1500*time.Millisecond, ke.RetryAfter)
		require.Equal(t, "Gemini returned 429 Too Many Requests (RESOURCE_EXHAUSTED): Quota exceeded. (rate limit or quota: retried after the delay the server asks for)", ke.Message)
		require.Len(t, srv.Requests(), 1, "the SDK does not retry by itself")

		resp, _, err := generate(p, ask("hi"), stream)
		require.NoError(t, err)
		require.Equal(t, "ok", resp.Text)
		require.Len(t, srv.Requests(), 2)
	})
}

func TestHTTPErrorsClassified(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
		rpc       string
	}{
		{http.StatusBadRequest, false, "INVALID_ARGUMENT"},
		{http.StatusUnauthorized, false, "UNAUTHENTICATED"},
		{http.StatusForbidden, false, "PERMISSION_DENIED"},
		{http.StatusNotFound, false, "NOT_FOUND"},
		{http.StatusRequestTimeout, true, "DEADLINE_EXCEEDED"},
		{http.StatusConflict, true, "ABORTED"},
		{http.StatusInternalServerError, true, "INTERNAL"},
		{http.StatusServiceUnavailable, true, "UNAVAILABLE"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			both(t, func(t *testing.T, stream bool) {
				srv, p := serve(t, fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: tc.status, Message: "nope"}})
				_, _, err := generate(p, ask("hi"), stream)
				ke := asError(t, err)
				require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
				require.Equal(t, tc.status, ke.Status)
				require.Equal(t, tc.retryable, ke.Retryable)
				require.Equal(t, map[string]any{"status": tc.rpc}, ke.Details)
				require.Len(t, srv.Requests(), 1)
				if tc.status == http.StatusUnauthorized || tc.status == http.StatusForbidden {
					require.Contains(t, ke.Message, "check the API key: GEMINI_API_KEY")
				}
			})
		})
	}
}

func TestErrorEventMidStream(t *testing.T) {
	_, p := serve(t, fake.Turn{Text: "one two three", FailAfter: 1,
		Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: http.StatusServiceUnavailable, Retryable: true, Message: "overloaded"}})
	_, deltas, err := generate(p, ask("hi"), true)
	require.Equal(t, []string{"one "}, deltas)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderHTTPError, ke.Code)
	require.Equal(t, http.StatusServiceUnavailable, ke.Status)
	require.True(t, ke.Retryable)
}

func TestStreamCutMidway(t *testing.T) {
	_, p := serve(t, fake.Turn{Text: "one two three four", FailAfter: 2, Err: fake.Fail(contracts.CodeProviderTransportError, true, "cut").Err})
	_, deltas, err := generate(p, ask("hi"), true)
	require.Equal(t, []string{"one ", "two "}, deltas)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderTransportError, ke.Code)
	require.True(t, ke.Retryable)

	_, p = serve(t, fake.Fail(contracts.CodeProviderTransportError, true, "cut"))
	_, _, err = generate(p, ask("hi"), false)
	require.Equal(t, contracts.CodeProviderTransportError, contracts.CodeOf(err))
}

func TestInvalidResponse(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		_, p := serve(t, fake.Fail(contracts.CodeProviderInvalidResponse, true, "garbage"))
		_, _, err := generate(p, ask("hi"), stream)
		ke := asError(t, err)
		require.Equal(t, contracts.CodeProviderInvalidResponse, ke.Code)
		require.True(t, ke.Retryable)
	})
}

func TestAnswerWithoutFinishReason(t *testing.T) {
	clearEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"half"}]}}]}` + "\r\n\r\n"))
	}))
	defer srv.Close()
	_, deltas, err := generate(newProvider(t, srv.URL+"/"), ask("hi"), true)
	require.Equal(t, []string{"half"}, deltas)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderInvalidResponse, ke.Code)
	require.True(t, ke.Retryable)
	require.Contains(t, ke.Message, "the answer ended without a finish reason")
}

func TestNoUsageIsAWarning(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		_, p := serve(t, fake.Turn{Text: "hi there", NoUsage: true})
		resp, _, err := generate(p, ask("hi"), stream)
		require.NoError(t, err)
		require.Equal(t, providers.Usage{}, resp.Usage)
		require.Equal(t, []providers.Warning{providers.NoUsageWarning(google.ID)}, resp.Warnings)
	})
	t.Run("under another id", func(t *testing.T) {
		srv := fakegemini.NewScript(fake.Turn{Text: "hi", NoUsage: true})
		defer srv.Close()
		p, err := google.New(context.Background(), google.Options{ID: "gemini", APIKey: "k", BaseURL: srv.URL()})
		require.NoError(t, err)
		resp, _, err := generate(p, ask("hi"), true)
		require.NoError(t, err)
		require.Equal(t, []providers.Warning{providers.NoUsageWarning("gemini")}, resp.Warnings)
		require.Contains(t, resp.Warnings[0].Message, "The gemini provider's server")
	})
}

func TestCancellation(t *testing.T) {
	t.Run("while waiting for the answer", func(t *testing.T) {
		srv, p := serve(t, fake.Turn{Text: "late", Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := p.Generate(ctx, ask("hi"), func(string) error { return nil })
			done <- err
		}()
		require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 10*time.Second, 5*time.Millisecond)
		cancel()
		err := <-done // a provider that ignored ctx would wait the hour (the test would time out)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
	})
	t.Run("mid-stream", func(t *testing.T) {
		_, p := serve(t, fake.Turn{Deltas: []string{"a ", "b ", "c ", "d"}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var deltas []string
		_, err := p.Generate(ctx, ask("hi"), func(d string) error {
			deltas = append(deltas, d)
			cancel()
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, []string{"a "}, deltas, "nothing is delivered after cancellation")
	})
	t.Run("stalled mid-stream", func(t *testing.T) {
		clearEnv(t)
		gone := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"first "}]}}]}` + "\r\n\r\n"))
			_ = http.NewResponseController(w).Flush()
			<-r.Context().Done() // the rest never comes
			close(gone)
		}))
		defer srv.Close()
		p := newProvider(t, srv.URL+"/")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		deltas := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, err := p.Generate(ctx, ask("hi"), func(d string) error { deltas <- d; return nil })
			done <- err
		}()
		require.Equal(t, "first ", <-deltas)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		<-gone // the provider's request was cancelled: the server saw it go away
	})
	t.Run("onDelta error", func(t *testing.T) {
		_, p := serve(t, fake.Text("a b c"))
		stop := errors.New("stop")
		n := 0
		_, err := p.Generate(context.Background(), ask("hi"), func(string) error { n++; return stop })
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, n)
	})
}

func TestThinkingOptionsOnTheWire(t *testing.T) {
	t.Run("typed provider options", func(t *testing.T) {
		srv, p := serve(t, fake.Text("ok"))
		req := ask("think")
		req.Options.Reasoning = &providers.ReasoningOptions{MaxTokens: 100}
		req.Options.ProviderOptions = map[string]any{"google": google.ProviderOptions{
			ThinkingBudget: ptr(1024), IncludeThoughts: ptr(true), ThinkingLevel: "high", TopK: ptr(40.0), Seed: ptr(7),
			PresencePenalty: ptr(0.5), FrequencyPenalty: ptr(0.25), CachedContent: "cachedContents/abc",
			SafetySettings: []google.SafetySetting{{Category: "HARM_CATEGORY_HARASSMENT", Threshold: "BLOCK_ONLY_HIGH"}},
		}}
		resp, _, err := generate(p, req, true)
		require.NoError(t, err)
		require.Empty(t, resp.Warnings)
		raw := srv.Requests()[0].Raw
		require.Equal(t, `{"frequencyPenalty":0.25,"presencePenalty":0.5,"seed":7,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024,"thinkingLevel":"HIGH"},"topK":40}`, field(t, raw, "generationConfig"),
			"providerOptions.google.thinkingBudget wins over reasoning.maxTokens")
		require.Equal(t, `[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"}]`, field(t, raw, "safetySettings"))
		require.Equal(t, `"cachedContents/abc"`, field(t, raw, "cachedContent"))
	})
	t.Run("reasoning options", func(t *testing.T) {
		srv, p := serve(t, fake.Text("ok"))
		req := ask("think")
		req.Options.Reasoning = &providers.ReasoningOptions{MaxTokens: 2048, IncludeThoughts: true, Effort: "low"}
		_, _, err := generate(p, req, true)
		require.NoError(t, err)
		require.Equal(t, `{"includeThoughts":true,"thinkingBudget":2048,"thinkingLevel":"LOW"}`,
			field(t, srv.Requests()[0].Raw, "generationConfig", "thinkingConfig"))
		require.Equal(t, req.Options.Reasoning, srv.Requests()[0].Options.Reasoning)
	})
	t.Run("a budget of 0 turns thinking off", func(t *testing.T) {
		srv, p := serve(t, fake.Text("ok"))
		req := ask("think")
		// As plain data, e.g. after crossing Temporal as JSON.
		req.Options.ProviderOptions = map[string]any{"google": map[string]any{"thinkingBudget": 0.0}}
		_, _, err := generate(p, req, true)
		require.NoError(t, err)
		require.Equal(t, `{"thinkingBudget":0}`, field(t, srv.Requests()[0].Raw, "generationConfig", "thinkingConfig"))
		require.Equal(t, map[string]any{"google": map[string]any{"thinkingBudget": 0}}, srv.Requests()[0].Options.ProviderOptions)
	})
	t.Run("a pointer to the options", func(t *testing.T) {
		srv, p := serve(t, fake.Text("ok"))
		req := ask("think")
		req.Options.ProviderOptions = map[string]any{"google": &google.ProviderOptions{ThinkingBudget: ptr(-1)}}
		resp, _, err := generate(p, req, true)
		require.NoError(t, err)
		require.Empty(t, resp.Warnings)
		require.Equal(t, `{"thinkingBudget":-1}`, field(t, srv.Requests()[0].Raw, "generationConfig", "thinkingConfig"))
	})
}

func TestWarnings(t *testing.T) {
	srv, p := serve(t, fake.Text("ok"))
	req := ask("hi")
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleSystem, Content: "late rule"})
	req.ModelOptions = map[string]any{"baseURL": "http://elsewhere/"}
	req.Options.Reasoning = &providers.ReasoningOptions{Effort: "extreme"}
	req.Options.ResponseFormat = &providers.ResponseFormat{Type: "xml"}
	req.Options.MaxOutputTokens = -1
	req.Options.ProviderOptions = map[string]any{
		"openai": map[string]any{"seed": 1}, // another provider's: not read, not reported
		"google": map[string]any{"topP": 0.5, "candidateCount": 2},
	}
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, w := range resp.Warnings {
		settings[w.Setting] = w.Type
	}
	require.Equal(t, map[string]string{
		"messages":                              providers.WarningCompatibility,
		"modelOptions.baseURL":                  providers.WarningUnsupported,
		"reasoning.effort":                      providers.WarningUnsupported,
		"responseFormat.type":                   providers.WarningUnsupported,
		"maxOutputTokens":                       providers.WarningOther,
		"providerOptions.google.candidateCount": providers.WarningUnsupported,
	}, settings)
	require.Len(t, resp.Warnings, 6)
	raw := srv.Requests()[0].Raw
	require.Equal(t, `{"topP":0.5}`, field(t, raw, "generationConfig"), "the good options still apply")
	require.Equal(t, `{"parts":[{"text":"late rule"}],"role":"user"}`, field(t, raw, "systemInstruction"))
}

func TestProviderOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts any
		msg  string
	}{
		{"not an object", "fast", "providerOptions.google must be an object of the google provider's options (got a string)."},
		{"a string for a number", map[string]any{"topK": "many", "topP": 0.5}, "providerOptions.google.topK must be a number (got string)."},
		{"a number for a string", map[string]any{"thinkingLevel": 3}, "providerOptions.google.thinkingLevel must be a string (got number)."},
		{"an object for a list", map[string]any{"safetySettings": map[string]any{"category": "HARM_CATEGORY_HARASSMENT"}},
			"providerOptions.google.safetySettings must be an array (got object)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := serve(t, fake.Text("ok"))
			req := ask("hi")
			req.Options.ProviderOptions = map[string]any{"google": tc.opts}
			_, _, err := generate(p, req, true)
			ke := asError(t, err)
			require.Equal(t, contracts.CodeProviderConfiguration, ke.Code)
			require.False(t, ke.Retryable)
			require.Equal(t, tc.msg, ke.Message)
			require.Empty(t, srv.Requests(), "nothing is sent")
		})
	}
	t.Run("a nil pointer is no options", func(t *testing.T) {
		srv, p := serve(t, fake.Text("ok"))
		req := ask("hi")
		req.Options.ProviderOptions = map[string]any{"google": (*google.ProviderOptions)(nil)}
		resp, _, err := generate(p, req, true)
		require.NoError(t, err)
		require.Empty(t, resp.Warnings)
		require.Equal(t, "{}", field(t, srv.Requests()[0].Raw, "generationConfig"))
	})
}

// A provider made with another id reads its options under that id, not under "google".
func TestProviderOptionsUnderTheProvidersID(t *testing.T) {
	clearEnv(t)
	srv := fakegemini.NewScript(fake.Text("ok"))
	defer srv.Close()
	p, err := google.New(context.Background(), google.Options{ID: "gemini", APIKey: "k", BaseURL: srv.URL()})
	require.NoError(t, err)
	req := ask("hi")
	req.Options.ProviderOptions = map[string]any{
		"gemini": map[string]any{"seed": 7, "nope": true},
		"google": map[string]any{"seed": 1},
	}
	resp, _, err := generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, []providers.Warning{{Type: providers.WarningUnsupported, Setting: "providerOptions.gemini.nope",
		Message: "The gemini provider has no option 'nope' (known: cachedContent, frequencyPenalty, includeThoughts, presencePenalty, safetySettings, seed, thinkingBudget, thinkingLevel, topK, topP); it was ignored."}}, resp.Warnings)
	require.Equal(t, `{"seed":7}`, field(t, srv.Requests()[0].Raw, "generationConfig"))
}

// A server of our own for what the fake cannot script: thought parts with signatures, and a
// Retry-After header.
func TestThoughtsAndSignatures(t *testing.T) {
	clearEnv(t)
	var bodies atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<16)
		n, _ := r.Body.Read(b)
		bodies.Store(string(b[:n]))
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me think.","thought":true}]}}]}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Calling.","thoughtSignature":"c2ln"}]}}]}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"q":1}},"thoughtSignature":"c2lnMg=="}]},"finishReason":"STOP"}],` +
				`"usageMetadata":{"promptTokenCount":3,"toolUsePromptTokenCount":2,"candidatesTokenCount":4,"thoughtsTokenCount":5,"totalTokenCount":14}}`,
		} {
			_, _ = w.Write([]byte("data: " + ev + "\r\n\r\n"))
		}
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL+"/")
	req := ask("hi")
	req.Options.Reasoning = &providers.ReasoningOptions{IncludeThoughts: true}
	resp, deltas, err := generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, []string{"Calling."}, deltas, "thoughts are not text")
	require.Equal(t, "Calling.", resp.Text)
	require.Equal(t, "Let me think.", resp.ProviderMetadata["thoughts"])
	require.Equal(t, providers.Usage{Input: 5, Output: 4, Reasoning: 5, Total: 14}, resp.Usage, "tool-use prompt tokens are input")
	require.Equal(t, []providers.ToolCall{{ID: "call-lookup-1", Name: "lookup", Arguments: json.RawMessage(`{"q":1}`)}}, resp.ToolCalls)

	// The signatures go back with the assistant message.
	req.Messages = append(req.Messages,
		providers.Message{Role: providers.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation},
		providers.Message{Role: providers.RoleTool, ToolCallID: "call-lookup-1", Name: "lookup", Content: "found"})
	_, _, err = generate(p, req, true)
	require.NoError(t, err)
	require.Equal(t, `[{"parts":[{"text":"hi"}],"role":"user"},`+
		`{"parts":[{"text":"Let me think.","thought":true},{"text":"Calling.","thoughtSignature":"c2ln"},{"functionCall":{"args":{"q":1},"name":"lookup"},"thoughtSignature":"c2lnMg=="}],"role":"model"},`+
		`{"parts":[{"functionResponse":{"name":"lookup","response":{"output":"found"}}}],"role":"user"}]`,
		field(t, []byte(bodies.Load().(string)), "contents"))
}

func TestRetryAfterHeader(t *testing.T) {
	clearEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`))
	}))
	defer srv.Close()
	_, _, err := generate(newProvider(t, srv.URL+"/"), ask("hi"), true)
	ke := asError(t, err)
	require.True(t, ke.Retryable)
	require.Equal(t, map[string]any{"status": "UNAVAILABLE", "retryAfterMs": 3000}, ke.Details)
}

func TestRequestErrors(t *testing.T) {
	srv, p := serve(t)
	_, _, err := generate(p, providers.Request{}, true)
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
	bad := ask("x")
	bad.Tools = []providers.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`{bad`)}}
	_, _, err = generate(p, bad, true)
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
	bad = ask("x")
	bad.Messages[0].Role = "narrator"
	_, _, err = generate(p, bad, true)
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
	require.Empty(t, srv.Requests())

	// A connection refused is a retryable transport error.
	srv.Close()
	_, _, err = generate(p, ask("x"), true)
	ke := asError(t, err)
	require.Equal(t, contracts.CodeProviderTransportError, ke.Code)
	require.True(t, ke.Retryable)
}

func ptr[T any](v T) *T { return &v }
