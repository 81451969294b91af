package fakeserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
)

func start(t *testing.T, srv *fakeserver.Server) *fakeserver.Server {
	t.Helper()
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// events reads the data of every server-sent event of a response.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

func TestStreamWire(t *testing.T) {
	srv := start(t, fakeserver.NewScript(fake.Turn{
		Text: "Hi there",
		ToolCalls: []providers.ToolCall{
			{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Zürich"}`)},
			{Name: "lookup", Arguments: json.RawMessage(`{"orderId":"A-1"}`)},
		},
		Usage: providers.Usage{Input: 5, Output: 3, Reasoning: 2, CacheRead: 4},
	}))
	data := events(t, post(t, srv.URL(), `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
	require.Equal(t, "[DONE]", data[len(data)-1])

	var (
		texts    []string
		indexes  []int
		args     = map[int]string{}
		firsts   = map[int][3]string{}
		finishes []string
		usage    int
	)
	for i, d := range data[:len(data)-1] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(d), &c), d)
		require.Equal(t, "chat.completion.chunk", c.Object)
		if i == 0 {
			require.Equal(t, "assistant", c.Choices[0].Delta.Role)
		}
		if c.Usage != nil {
			usage++
			require.Empty(t, c.Choices)
			require.Equal(t, 5, c.Usage.PromptTokens)
			require.Equal(t, 3, c.Usage.CompletionTokens)
			require.Equal(t, 8, c.Usage.TotalTokens)
			require.Equal(t, 4, c.Usage.PromptTokensDetails.CachedTokens)
			require.Equal(t, 2, c.Usage.CompletionTokensDetails.ReasoningTokens)
			continue
		}
		ch := c.Choices[0]
		if ch.Delta.Content != nil && *ch.Delta.Content != "" {
			texts = append(texts, *ch.Delta.Content)
		}
		for _, tc := range ch.Delta.ToolCalls {
			require.NotNil(t, tc.Index)
			if _, seen := firsts[*tc.Index]; !seen {
				firsts[*tc.Index] = [3]string{tc.ID, tc.Type, tc.Function.Name}
			} else {
				require.Empty(t, tc.ID, "only the first fragment carries the id")
				require.Empty(t, tc.Function.Name)
			}
			indexes = append(indexes, *tc.Index)
			args[*tc.Index] += tc.Function.Arguments
		}
		if ch.FinishReason != nil {
			finishes = append(finishes, *ch.FinishReason)
		}
	}
	require.Equal(t, []string{"Hi ", "there"}, texts)
	require.Equal(t, []int{0, 1, 0, 1, 0, 1}, indexes, "fragments of the two calls interleave")
	require.Equal(t, map[int][3]string{0: {"call_a", "function", "weather"}, 1: {"call-lookup-1", "function", "lookup"}}, firsts)
	require.Equal(t, map[int]string{0: `{"city":"Zürich"}`, 1: `{"orderId":"A-1"}`}, args)
	require.Equal(t, []string{"tool_calls"}, finishes)
	require.Equal(t, 1, usage)

	got := srv.Requests()[0]
	require.True(t, got.Stream)
	require.True(t, got.IncludeUsage)
}

func TestStreamWithoutUsage(t *testing.T) {
	srv := start(t, fakeserver.NewScript(fake.Text("a b")))
	data := events(t, post(t, srv.URL(), `{"model":"m","stream":true,"messages":[]}`))
	for _, d := range data {
		require.NotContains(t, d, `"usage"`)
	}
	require.Len(t, data, 5) // role, "a ", "b", finish, [DONE]
	require.False(t, srv.Requests()[0].IncludeUsage)
}

func TestCompletionWire(t *testing.T) {
	srv := start(t, fakeserver.NewScript(
		fake.Text("Hello."),
		fake.Turn{ToolCalls: []providers.ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}, FinishReason: "length"},
	))
	var body struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	resp := post(t, srv.URL(), `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "chat.completion", body.Object)
	require.Equal(t, "m1", body.Model)
	require.Equal(t, "assistant", body.Choices[0].Message.Role)
	require.Equal(t, `"Hello."`, string(body.Choices[0].Message.Content))
	require.Equal(t, "stop", body.Choices[0].FinishReason)
	require.Equal(t, 11, body.Usage.TotalTokens)

	resp = post(t, srv.URL(), `{"messages":[]}`)
	body.Choices = nil
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, fakeserver.Model, body.Model)
	msg := body.Choices[0].Message
	require.Empty(t, msg.Content, "no content with tool calls only")
	require.Len(t, msg.ToolCalls, 1)
	require.Equal(t, "c1", msg.ToolCalls[0].ID)
	require.Equal(t, "function", msg.ToolCalls[0].Type)
	require.Equal(t, `{"x":1}`, msg.ToolCalls[0].Function.Arguments)
	require.Equal(t, "length", body.Choices[0].FinishReason)
}

func TestErrorWire(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		retryAfter string
		body       string
	}{
		{"429 with retry-after", &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429, Message: "slow down",
			Details: map[string]any{"retryAfterMs": 1500}}, 429, "2",
			`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`},
		{"type and code from details", &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429,
			Details: map[string]any{"type": "insufficient_quota", "code": "insufficient_quota"}}, 429, "",
			`{"error":{"message":"Too Many Requests","type":"insufficient_quota","code":"insufficient_quota"}}`},
		{"default 500", &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "boom"}, 500, "",
			`{"error":{"message":"boom","type":"server_error","code":null}}`},
		{"other non-retryable code is a 400", fake.Fail(contracts.CodeProviderConfiguration, false, "bad").Err, 400, "",
			`{"error":{"message":"bad","type":"invalid_request_error","code":null}}`},
		{"plain error is a 500", io.ErrClosedPipe, 500, "",
			`{"error":{"message":"io: read/write on closed pipe","type":"server_error","code":null}}`},
	} {
		for _, stream := range []string{"true", "false"} {
			t.Run(tc.name+"/stream="+stream, func(t *testing.T) {
				srv := start(t, fakeserver.NewScript(fake.Turn{Err: tc.err}))
				resp := post(t, srv.URL(), `{"model":"m","stream":`+stream+`,"messages":[]}`)
				require.Equal(t, tc.status, resp.StatusCode)
				require.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.JSONEq(t, tc.body, string(b))
			})
		}
	}
}

func TestFailuresWire(t *testing.T) {
	t.Run("refusal", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Fail(contracts.CodeProviderRefusal, false, "No.")))
		b, _ := io.ReadAll(post(t, srv.URL(), `{"messages":[]}`).Body)
		require.Contains(t, string(b), `"refusal":"No."`)
	})
	t.Run("invalid JSON", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Fail(contracts.CodeProviderInvalidResponse, true, "")))
		resp := post(t, srv.URL(), `{"messages":[]}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, _ := io.ReadAll(resp.Body)
		require.False(t, json.Valid(b))
	})
	t.Run("invalid chunk", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Fail(contracts.CodeProviderInvalidResponse, true, "")))
		data := events(t, post(t, srv.URL(), `{"stream":true,"messages":[]}`))
		require.Len(t, data, 1)
		require.False(t, json.Valid([]byte(data[0])))
	})
	t.Run("connection closed", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Fail(contracts.CodeProviderTransportError, true, "")))
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
		if resp != nil {
			_ = resp.Body.Close()
		}
		require.Error(t, err)
	})
	t.Run("connection cut mid-stream", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Turn{Deltas: []string{"a", "b", "c"}, FailAfter: 2,
			Err: &contracts.Error{Code: contracts.CodeProviderTransportError}}))
		resp := post(t, srv.URL(), `{"stream":true,"messages":[]}`)
		b, err := io.ReadAll(resp.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		require.Equal(t, 3, strings.Count(string(b), "data: "), "role chunk and 2 deltas")
	})
	t.Run("error event mid-stream", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Turn{Deltas: []string{"a", "b"}, FailAfter: 1,
			Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "overloaded"}}))
		data := events(t, post(t, srv.URL(), `{"stream":true,"messages":[]}`))
		require.JSONEq(t, `{"error":{"message":"overloaded","type":"server_error","code":null}}`, data[len(data)-1])
	})
	t.Run("script exhausted", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript())
		resp := post(t, srv.URL(), `{"messages":[]}`)
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		b, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(b), "script exhausted")
	})
	t.Run("body not JSON", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript(fake.Text("x")))
		resp := post(t, srv.URL(), `{nope`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Empty(t, srv.Requests())
	})
	t.Run("unknown path", func(t *testing.T) {
		srv := start(t, fakeserver.NewScript())
		resp, err := http.Get(srv.URL() + "/embeddings")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestDelayRespectsContext(t *testing.T) {
	srv := start(t, fakeserver.NewScript(fake.Turn{Text: "late", Delay: time.Minute}, fake.Turn{Text: "soon", Delay: time.Millisecond}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(`{"messages":[]}`))
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req) //nolint:bodyclose // fails
	require.ErrorIs(t, err, context.DeadlineExceeded)

	b, _ := io.ReadAll(post(t, srv.URL(), `{"messages":[]}`).Body)
	require.Contains(t, string(b), `"content":"soon"`)
}

func TestRequestDecoding(t *testing.T) {
	var got providers.Request
	srv := start(t, fakeserver.New(func(req providers.Request) fake.Turn {
		got = req
		return fake.Text("ok")
	}))
	resp := post(t, srv.URL(), `{
		"model": "m", "temperature": 0.2, "max_completion_tokens": 9, "stop": "END", "reasoning_effort": "low",
		"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type":"object"}, "strict": true}},
		"messages": [
			{"role": "system", "content": "sys"},
			{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]},
			{"role": "assistant", "content": null, "tool_calls": [
				{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
				{"id": "c2", "type": "function", "function": {"name": "g", "arguments": "oops"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": "done"}
		],
		"tools": [{"type": "function", "function": {"name": "f", "description": "F.", "parameters": {"type":"object"}}}]
	}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	temp := 0.2
	require.Equal(t, providers.Request{
		Model: "m",
		Messages: []providers.Message{
			{Role: "system", Content: "sys"},
			{Role: "user", Content: "ab"},
			{Role: "assistant", ToolCalls: []providers.ToolCall{
				{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"x":1}`)},
				{ID: "c2", Name: "g", Arguments: json.RawMessage(`"oops"`)},
			}},
			{Role: "tool", ToolCallID: "c1", Name: "f", Content: "done"},
		},
		Tools: []providers.ToolDefinition{{Name: "f", Description: "F.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Options: providers.CallOptions{
			Temperature: &temp, MaxOutputTokens: 9, StopSequences: []string{"END"},
			Reasoning:      &providers.ReasoningOptions{Effort: "low"},
			ResponseFormat: &providers.ResponseFormat{Type: "json-schema", Name: "r", Schema: json.RawMessage(`{"type":"object"}`)},
		},
	}, got)
	require.Equal(t, got, srv.Requests()[0].Request)
	require.Equal(t, json.RawMessage(`0.2`), srv.Requests()[0].Field("temperature"))
	require.Nil(t, srv.Requests()[0].Field("seed"))
}

func TestCanned(t *testing.T) {
	respond := fakeserver.Canned()
	require.Equal(t, "(fake model) You said: hello", respond(providers.Request{Messages: []providers.Message{
		{Role: "system", Content: "sys"}, {Role: "user", Content: "hello"},
	}}).Text)
	require.Equal(t, "(fake model) OK.", respond(providers.Request{Messages: []providers.Message{
		{Role: "tool", Content: "result"},
	}}).Text)
	require.Equal(t, "(fake model) OK.", respond(providers.Request{}).Text)

	srv := start(t, fakeserver.New(nil))
	b, _ := io.ReadAll(post(t, srv.URL(), `{"messages":[{"role":"user","content":"hey"}]}`).Body)
	require.Contains(t, string(b), "(fake model) You said: hey")
}

// A responder written for the in-process fake gives the same answers through the server and
// the openai provider.
func TestParityWithInProcessFake(t *testing.T) {
	t.Setenv(openai.EnvAPIKey, "")
	t.Setenv(openai.EnvBaseURL, "")
	respond := func(req providers.Request) fake.Turn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == providers.RoleTool {
			return fake.Text("The order " + last.Name + " said: " + last.Content)
		}
		return fake.Calls(providers.ToolCall{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"id":"A-1"}`)})
	}
	srv := start(t, fakeserver.New(respond))
	models := map[string]providers.Provider{
		"in-process": fake.NewResponder(respond),
		"server":     openai.New(openai.Options{BaseURL: srv.URL()}),
	}
	results := map[string][]providers.Response{}
	for name, m := range models {
		msgs := []providers.Message{{Role: providers.RoleUser, Content: "where is A-1?"}}
		for range 2 {
			resp, err := m.Generate(context.Background(), providers.Request{Model: "m", Messages: msgs}, func(string) error { return nil })
			require.NoError(t, err, name)
			got := providers.Response{Text: resp.Text, Usage: resp.Usage,
				FinishReason: providers.FinishReason{Unified: resp.FinishReason.Unified}}
			if len(resp.ToolCalls) > 0 {
				got.ToolCalls = resp.ToolCalls
			}
			results[name] = append(results[name], got)
			if len(resp.ToolCalls) > 0 {
				msgs = append(msgs,
					providers.Message{Role: providers.RoleAssistant, ToolCalls: resp.ToolCalls},
					providers.Message{Role: providers.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Name: resp.ToolCalls[0].Name, Content: "shipped"})
			}
		}
	}
	require.Equal(t, results["in-process"], results["server"])
	require.Equal(t, "The order lookup said: shipped", results["server"][1].Text)
}
