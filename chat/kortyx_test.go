package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"github.com/stretchr/testify/require"
)

func TestResumable(t *testing.T) {
	for name, tc := range map[string]struct {
		headers map[string]string
		want    bool
	}{
		"no header":           {nil, false},
		"resumable 1":         {map[string]string{httpwire.ResumableHeader: "1"}, true},
		"resumable 0":         {map[string]string{httpwire.ResumableHeader: "0"}, false},
		"Last-Event-ID":       {map[string]string{"Last-Event-ID": "3"}, true},
		"Last-Event-ID 0":     {map[string]string{"Last-Event-ID": "0"}, true},
		"resumable lowercase": {map[string]string{"x-kortyx-resumable": "1"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			require.Equal(t, tc.want, resumable(r))
		})
	}
}

// encode is what Kortyx framing writes for c, as JSON objects.
func encode(t *testing.T, runID string, c contracts.Chunk) []kortyxwire.Chunk {
	t.Helper()
	var out []kortyxwire.Chunk
	for _, v := range kortyxChunks(runID, c) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		var m kortyxwire.Chunk
		require.NoError(t, json.Unmarshal(b, &m))
		out = append(out, m)
	}
	return out
}

func TestKortyxChunks(t *testing.T) {
	cancelled := encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkCancelled, RunID: "run-1", Reason: "stopped by the user"})
	require.Equal(t, []kortyxwire.Chunk{{"type": "error", "message": "The run was cancelled: stopped by the user", "failure": map[string]any{
		"version": float64(1), "code": "CANCELLED", "category": "workflow", "message": "The run was cancelled: stopped by the user",
		"retryable": false, "details": map[string]any{"runId": "run-1", "reason": "stopped by the user"}}}}, cancelled)
	require.NoError(t, kortyxwire.Check(cancelled[0]))
	require.Equal(t, "The run was cancelled.", encode(t, "run-2", contracts.Chunk{Type: contracts.ChunkCancelled})[0]["message"])

	f := contracts.Failure{Version: 1, Code: contracts.CodeExecutionCancelled, Category: "workflow", Message: "Cancelled."}
	renamed := encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkError, Message: "Cancelled.", Failure: &f})
	require.Equal(t, "CANCELLED", renamed[0]["failure"].(map[string]any)["code"])
	require.Equal(t, contracts.CodeExecutionCancelled, f.Code, "the published chunk is not modified")
	f.Code = contracts.CodeExecutionLimitReached
	require.Equal(t, "LIMIT_REACHED", encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkError, Message: "x", Failure: &f})[0]["failure"].(map[string]any)["code"])

	inv := encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: "s1"})
	require.Equal(t, []kortyxwire.Chunk{{"type": "structured-data-invalidated", "streamId": "s1", "checkpointId": "run-1"}}, inv)
	require.NoError(t, kortyxwire.Check(inv[0]))
	kept := encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: "s1", CheckpointID: "cp-1"})
	require.Equal(t, "cp-1", kept[0]["checkpointId"])

	custom := contracts.InterruptInput{Kind: contracts.InterruptCustom, Question: "Pick a plan", Contract: "plan",
		Request: json.RawMessage(`{"max":3}`), SchemaID: "plan.v1"}
	in := encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "q1", ResumeToken: "tok", Input: protocol.RawJSON(custom)})
	require.Equal(t, map[string]any{"kind": "text", "multiple": false, "question": "Pick a plan", "schemaId": "plan.v1",
		"contract": "plan", "request": map[string]any{"max": float64(3)}}, in[0]["input"])
	require.NoError(t, kortyxwire.Check(in[0]))

	text := encode(t, "run-1", contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "q1", ResumeToken: "tok",
		Input: protocol.RawJSON(contracts.InterruptInput{Kind: contracts.InterruptText, Question: "Name?"})})
	require.Equal(t, map[string]any{"kind": "text", "multiple": false, "question": "Name?"}, text[0]["input"], "null options are left out")
	require.NoError(t, kortyxwire.Check(text[0]))
	choice := contracts.InterruptInput{Kind: contracts.InterruptChoice, Question: "Approve?", Options: []contracts.Option{{ID: "approve", Label: "Approve"}}}
	raw := protocol.RawJSON(choice)
	same := kortyxChunks("run-1", contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "q1", ResumeToken: "tok", Input: raw})
	require.Equal(t, raw, same[0].(contracts.Chunk).Input, "choice questions are written as published")

	f2 := contracts.Failure{Version: 1, Code: contracts.CodeExecutionFailed, Category: "internal", Message: "Failed."}
	for _, c := range []contracts.Chunk{{Type: contracts.ChunkSession, SessionID: "s"}, {Type: contracts.ChunkType("trace"), TraceID: "t", SpanID: "sp", RunID: "r"},
		{Type: contracts.ChunkStatus, Message: "m"}, {Type: contracts.ChunkTextStart, SegmentID: "g"}, {Type: contracts.ChunkTextDelta, Delta: "hi"},
		{Type: contracts.ChunkTextEnd}, {Type: contracts.ChunkMessage, Content: "c"}, {Type: contracts.ChunkToolCallStart, Tool: "t", ToolCallID: "1"},
		{Type: contracts.ChunkToolCallResult, ToolCallID: "1"}, {Type: contracts.ChunkToolCallError, ToolCallID: "1", Message: "m"},
		{Type: contracts.ChunkType("tool-result"), Tool: "t", Content: "c"}, {Type: contracts.ChunkStructuredData, StreamID: "s", DataType: "d", Kind: contracts.StructuredSet, Path: "p"},
		{Type: contracts.ChunkTransition, TransitionTo: "w"}, {Type: contracts.ChunkCheckpoint, ID: "cp-1", SessionID: "s"},
		{Type: contracts.ChunkLimitReached, Limit: "maxToolCalls"}, {Type: contracts.ChunkError, Message: "Failed.", Failure: &f2}, {Type: contracts.ChunkDone},
		{Type: contracts.ChunkResumeRejected, RequestID: "q"}, {Type: contracts.ChunkTextInvalidated, OpID: "o", SegmentID: "g"}} {
		require.Equal(t, []any{c}, kortyxChunks("run-1", c))
	}
}

func TestResumeResponseJSONObjectSelected(t *testing.T) {
	res := Resume{Token: "t", RequestID: "r", Selected: json.RawMessage(`[" {\"plan\": \"pro\"} "]`)}
	got := res.response(`{"plan": "pro"}`)
	require.Equal(t, []string{` {"plan": "pro"} `}, got.Selected)
	require.JSONEq(t, `{"plan": "pro"}`, string(got.Value))
	a, err := protocol.NormalizeAnswer(contracts.InterruptInput{Kind: contracts.InterruptCustom}, got, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"plan": "pro"}`, string(a.Value), "a custom question takes the object")
	a, err = protocol.NormalizeAnswer(contracts.InterruptInput{Kind: contracts.InterruptText}, got, nil)
	require.NoError(t, err)
	require.Equal(t, ` {"plan": "pro"} `, a.Text, "a text question still takes the text")

	for _, sel := range []string{`["approve"]`, `["[1,2]"]`, `["{not json"]`, `["a", "{}"]`} {
		got := (&Resume{Token: "t", RequestID: "r", Selected: json.RawMessage(sel)}).response("x")
		require.Nil(t, got.Value, sel)
	}
	got = (&Resume{Token: "t", RequestID: "r", Selected: json.RawMessage(`["{\"a\":1}"]`), Value: json.RawMessage(`{"b":2}`)}).response("")
	require.JSONEq(t, `{"b":2}`, string(got.Value), "an explicit value wins")
}

func TestSessionIndex(t *testing.T) {
	x := newSessionIndex(2)
	x.put("cp-1", "s1")
	x.put("", "s1")
	x.put("cp-0", "")
	x.learn(contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: "cp-2", SessionID: "s2"})
	x.learn(contracts.Chunk{Type: contracts.ChunkSession, ID: "cp-9", SessionID: "s9"})
	s, ok := x.session("cp-1")
	require.True(t, ok)
	require.Equal(t, "s1", s)
	_, ok = x.session("cp-9")
	require.False(t, ok, "only checkpoint chunks are learned")
	x.put("cp-3", "s3") // evicts the oldest, cp-1
	_, ok = x.session("cp-1")
	require.False(t, ok)
	s, _ = x.session("cp-2")
	require.Equal(t, "s2", s)
	require.Equal(t, processIndex, (*sessionIndex)(nil).orDefault())
}

// The default index is bounded: beyond defaultSessionIndexSize checkpoints (10,000) the oldest
// is evicted.
func TestSessionIndexDefaultCap(t *testing.T) {
	require.Equal(t, 10_000, defaultSessionIndexSize)
	x := newSessionIndex(defaultSessionIndexSize)
	for i := range defaultSessionIndexSize + 1 {
		x.put(fmt.Sprintf("cp-%d", i), "s")
	}
	_, ok := x.session("cp-0")
	require.False(t, ok, "the oldest is evicted")
	for _, id := range []string{"cp-1", fmt.Sprintf("cp-%d", defaultSessionIndexSize)} {
		_, ok = x.session(id)
		require.True(t, ok, id)
	}
	require.Len(t, x.m, defaultSessionIndexSize)
	require.Equal(t, defaultSessionIndexSize, processIndex.max)
}

func TestKortyxCheckpointRequests(t *testing.T) {
	idx := newSessionIndex(10)
	var authorized []sessions.Access
	resolved := map[string]string{"cp-app": "s-app"}
	h, err := NewCheckpointHandler(service(t, lazyClient(t), nil), CheckpointOptions{index: idx,
		Authorize: func(r *http.Request, a sessions.Access) error {
			authorized = append(authorized, a)
			return contracts.Errorf(contracts.CodeForbidden, "Stop here.") // before Temporal
		},
		ResolveSession: func(ctx context.Context, r *http.Request, id string) (string, error) { return resolved[id], nil },
	})
	require.NoError(t, err)
	do := func(body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/checkpoints", strings.NewReader(body)))
		return w
	}
	// Unknown checkpoint: 404 before authorization.
	w := do(`{"action": "rollback", "checkpointId": "cp-x"}`)
	require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), `"code":"NOT_FOUND"`)
	require.Contains(t, w.Body.String(), `send its sessionId with it`)
	require.Empty(t, authorized)

	idx.put("cp-1", "s1")
	for _, body := range []string{`{"action": "rollback", "checkpointId": "cp-1"}`, `{"action": "fork", "checkpointId": "cp-1"}`,
		`{"action": "get", "checkpointId": "cp-1"}`, `{"action": "fork", "checkpointId": "cp-app", "newSessionId": "n"}`} {
		require.Equal(t, http.StatusForbidden, do(body).Code, body)
	}
	require.Equal(t, []sessions.Access{
		{Wire: "chat", Action: sessions.ActionRollback, SessionID: "s1"},
		{Wire: "chat", Action: sessions.ActionFork, SessionID: "s1"},
		{Wire: "chat", Action: sessions.ActionRead, SessionID: "s1"},
		{Wire: "chat", Action: sessions.ActionFork, SessionID: "s-app", NewSessionID: "n"},
	}, authorized, "the resolved session is authorized like a sent one")
	authorized = nil
	require.Equal(t, http.StatusForbidden, do(`{"action": "rollback", "sessionId": "s7", "checkpointId": "cp-1"}`).Code)
	require.Equal(t, []sessions.Access{{Wire: "chat", Action: sessions.ActionRollback, SessionID: "s7"}}, authorized, "a sent session is used as sent")
	require.Equal(t, http.StatusBadRequest, do(`{"action": "list"}`).Code, "list still needs its session")
}

func TestKortyxResult(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 250e6, time.UTC)
	rb := sessions.RollbackResult{SessionID: "s1", Head: sessions.CheckpointSummary{ID: "cp-1", SessionID: "s1", CreatedAt: at, Workflow: "w", Nodes: []string{}},
		InvalidatedStructuredStreamIDs: []string{"st"}, InvalidatedInterruptTokens: []string{},
		ActivePendingRequests: []contracts.PendingRequest{{RequestID: "q", Token: "t", CreatedAt: at}}}
	b, err := json.Marshal(kortyxResult(rb))
	require.NoError(t, err)
	require.JSONEq(t, `{"sessionId": "s1", "head": "cp-1", "invalidatedStructuredStreamIds": ["st"], "invalidatedInterruptTokens": [],
		"headCheckpoint": {"id": "cp-1", "sessionId": "s1", "turnIndex": 0, "createdAt": 1772366400250, "workflow": "w", "nodes": []},
		"activePendingRequests": [{"requestId": "q", "token": "t", "workflow": "", "node": "", "input": {"kind": "", "multiple": false, "options": null}, "createdAt": 1772366400250}]}`, string(b))
	fk := sessions.ForkResult{SessionID: "s2", ParentSessionID: "s1", ForkedFrom: "cp-1", Checkpoint: sessions.Checkpoint{ID: "cp-2", SessionID: "s2", CreatedAt: at}}
	b, err = json.Marshal(kortyxResult(fk))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, float64(1772366400250), m["checkpoint"].(map[string]any)["createdAt"])
	require.Equal(t, "cp-1", m["forkedFrom"])
}

func TestCORS(t *testing.T) {
	h, err := NewCheckpointHandler(service(t, lazyClient(t), nil), CheckpointOptions{AllowUnauthenticated: true,
		CORS: &CORS{AllowedOrigins: []string{"https://app.example"}, AllowCredentials: true}})
	require.NoError(t, err)
	pre := func(origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodOptions, "/api/checkpoints", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "content-type")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := pre("https://app.example")
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Equal(t, http.Header{
		"Access-Control-Allow-Origin":      {"https://app.example"},
		"Access-Control-Allow-Credentials": {"true"},
		"Access-Control-Allow-Methods":     {"POST, OPTIONS"},
		"Access-Control-Allow-Headers":     {"Content-Type, Authorization, Last-Event-ID, X-Kortyx-Resumable"},
		"Access-Control-Max-Age":           {"600"},
		"Vary":                             {"Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers"},
	}, w.Header())
	w = pre("https://evil.example")
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))
	require.Contains(t, w.Body.String(), `"code":"FORBIDDEN"`)

	// An actual request: the headers on its answer (here a 400), none for another origin.
	actual := func(origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/api/checkpoints", strings.NewReader(`{"action": "list"}`))
		r.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w = actual("https://app.example")
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "https://app.example", w.Header().Get("Access-Control-Allow-Origin"))
	require.Equal(t, "true", w.Header().Get("Access-Control-Allow-Credentials"))
	require.Equal(t, []string{"Origin"}, w.Header().Values("Vary"))
	w = actual("https://evil.example")
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))

	// Off by default: a preflight is a method the route does not serve.
	off, err := NewCheckpointHandler(service(t, lazyClient(t), nil), CheckpointOptions{AllowUnauthenticated: true})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodOptions, "/api/checkpoints", nil)
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", "POST")
	w = httptest.NewRecorder()
	off.ServeHTTP(w, r)
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))

	// The chat and stop routes take the same option; "*" allows any origin.
	ch, err := NewHandler(service(t, lazyClient(t), stream.NewMemory(stream.MemoryOptions{})), Options{AllowUnauthenticated: true, CORS: &CORS{AllowedOrigins: []string{"*"}}})
	require.NoError(t, err)
	for _, route := range []http.Handler{ch, ch.StopHandler()} {
		r := httptest.NewRequest(http.MethodOptions, "/api/chat", nil)
		r.Header.Set("Origin", "https://other.example")
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		route.ServeHTTP(w, r)
		require.Equal(t, http.StatusNoContent, w.Code)
		require.Equal(t, "https://other.example", w.Header().Get("Access-Control-Allow-Origin"))
		require.Empty(t, w.Header().Get("Access-Control-Allow-Credentials"))
	}
}
