package fakeanthropic_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/anthropic/fakeanthropic"
	"github.com/kortyx-go/kortyx/providers/fake"
)

func post(t *testing.T, srv *fakeanthropic.Server, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// events reads an SSE body as "name data" lines.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, name+" "+strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

func TestStreamedEvents(t *testing.T) {
	srv := fakeanthropic.NewScript(fake.Turn{Deltas: []string{"Hi", " there"},
		ToolCalls: []providers.ToolCall{{Name: "lookup", Arguments: json.RawMessage(`{"id":"A-1"}`)}},
		Usage:     providers.Usage{Input: 20, Output: 5, CacheRead: 8, CacheWrite: 2}})
	defer srv.Close()
	resp := post(t, srv, `{"model":"claude-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, []string{
		`message_start {"message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":8}},"type":"message_start"}`,
		`content_block_start {"content_block":{"text":"","type":"text"},"index":0,"type":"content_block_start"}`,
		`content_block_delta {"delta":{"text":"Hi","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		`content_block_delta {"delta":{"text":" there","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		`content_block_stop {"index":0,"type":"content_block_stop"}`,
		`content_block_start {"content_block":{"id":"call-lookup-1","input":{},"name":"lookup","type":"tool_use"},"index":1,"type":"content_block_start"}`,
		`content_block_delta {"delta":{"partial_json":"{\"id","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`,
		`content_block_delta {"delta":{"partial_json":"\":\"A","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`,
		`content_block_delta {"delta":{"partial_json":"-1\"}","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`,
		`content_block_stop {"index":1,"type":"content_block_stop"}`,
		`message_delta {"delta":{"stop_details":null,"stop_reason":"tool_use","stop_sequence":null},"type":"message_delta","usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":2,"cache_read_input_tokens":8}}`,
		`message_stop {"type":"message_stop"}`,
	}, events(t, resp.Body))
}

func TestNoUsageSendsNoUsageObjects(t *testing.T) {
	srv := fakeanthropic.NewScript(fake.Turn{Text: "x", NoUsage: true}, fake.Turn{Text: "x", NoUsage: true})
	defer srv.Close()
	ev := events(t, post(t, srv, `{"model":"m","stream":true,"messages":[]}`).Body)
	require.Len(t, ev, 6)
	for _, e := range ev {
		require.NotContains(t, e, "usage")
	}
	b, err := io.ReadAll(post(t, srv, `{"model":"m","messages":[]}`).Body)
	require.NoError(t, err)
	require.NotContains(t, string(b), "usage")
}

func TestErrorBodyAndRetryAfter(t *testing.T) {
	srv := fakeanthropic.NewScript(fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 529,
		Message: "Overloaded", Details: map[string]any{"retryAfterMs": 1500}}})
	defer srv.Close()
	resp := post(t, srv, `{"model":"m","stream":true,"messages":[]}`)
	require.Equal(t, 529, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"), "whole seconds, rounded up")
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, string(b))
}

func TestScriptExhaustedAndUnknownRoute(t *testing.T) {
	srv := fakeanthropic.NewScript()
	defer srv.Close()
	resp := post(t, srv, `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(b), `"type":"api_error"`)
	require.Contains(t, string(b), "script exhausted")

	r2, err := http.Get(srv.URL() + "/v1/models")
	require.NoError(t, err)
	defer func() { _ = r2.Body.Close() }()
	require.Equal(t, http.StatusNotFound, r2.StatusCode)
}

func TestRequestsInKortyxTerms(t *testing.T) {
	var seen providers.Request
	srv := fakeanthropic.New(func(req providers.Request) fake.Turn { seen = req; return fake.Text("ok") })
	defer srv.Close()
	body := `{"model":"m","max_tokens":64,"stop_sequences":["END"],"system":[{"type":"text","text":"Be nice."}],
		"thinking":{"type":"enabled","budget_tokens":1024},
		"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},
		"tools":[{"name":"lookup","description":"Look up.","input_schema":{"type":"object"}}],
		"messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"tu1","name":"lookup","input":{"q":1}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","is_error":true,"content":[{"type":"text","text":"down"}]},{"type":"text","text":"and?"}]}]}`
	post(t, srv, body)
	require.Equal(t, providers.Request{
		Model: "m",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be nice."},
			{Role: providers.RoleUser, Content: "hi"},
			{Role: providers.RoleAssistant, Content: "Let me look.", ToolCalls: []providers.ToolCall{{ID: "tu1", Name: "lookup", Arguments: json.RawMessage(`{"q":1}`)}},
				Continuation: json.RawMessage(`[{"type":"thinking","thinking":"t","signature":"s"}]`)},
			{Role: providers.RoleTool, ToolCallID: "tu1", Name: "lookup", Content: "down", IsError: true},
			{Role: providers.RoleUser, Content: "and?"},
		},
		Tools: []providers.ToolDefinition{{Name: "lookup", Description: "Look up.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Options: providers.CallOptions{MaxOutputTokens: 64, StopSequences: []string{"END"},
			Reasoning:      &providers.ReasoningOptions{MaxTokens: 1024},
			ResponseFormat: &providers.ResponseFormat{Type: "json-schema", Schema: json.RawMessage(`{"type":"object"}`)}},
	}, seen)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, seen, reqs[0].Request)
	require.False(t, reqs[0].Stream)
	require.JSONEq(t, body, string(reqs[0].Raw))
}

// A hanging turn sends Hang.After text deltas, holds the stream open and sees the client go
// away; not streamed, it sends nothing before the client goes away.
func TestHangHoldsTheResponseUntilTheClientGoesAway(t *testing.T) {
	for _, stream := range []bool{true, false} {
		cancelled := make(chan struct{})
		srv := fakeanthropic.NewScript(fake.Turn{Deltas: []string{"one ", "two ", "three"},
			Hang: &fake.Hang{After: 2, Cancelled: func() { close(cancelled) }}})
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"model":"claude-x","max_tokens":10,"stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"hi"}]}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(body))
		require.NoError(t, err)
		got := make(chan []string, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				got <- nil
				return
			}
			defer func() { _ = resp.Body.Close() }()
			var lines []string
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "data: ") {
					lines = append(lines, strings.TrimPrefix(l, "data: "))
					if len(lines) == 4 { // message_start, the text block's start, two deltas
						got <- lines
						<-ctx.Done() // the body stays open until the client goes away
						return
					}
				}
			}
			got <- lines
		}()
		if stream {
			lines := <-got
			require.Len(t, lines, 4)
			require.JSONEq(t, `{"delta":{"text":"two ","type":"text_delta"},"index":0,"type":"content_block_delta"}`, lines[3])
		} else { // the request has arrived before the client goes away
			require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 10*time.Second, 5*time.Millisecond)
		}
		select {
		case <-cancelled:
			t.Fatal("the server saw a cancellation before the client went away")
		default:
		}
		cancel()
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the server never saw the client go away")
		}
		if !stream {
			require.Empty(t, <-got, "nothing is sent before the client goes away")
		}
		srv.Close()
	}
}
