package stream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, ctx context.Context, url string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// sseIDs parses a complete stream and returns its event ids.
func sseIDs(t *testing.T, s string) []int64 {
	t.Helper()
	ids := []int64{}
	require.NoError(t, sseclient.ReadSSE(strings.NewReader(s), func(id int64, _ contracts.Chunk) error {
		ids = append(ids, id)
		return nil
	}))
	return ids
}

func TestHandlerExactBytes(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run-1",
		stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkSession, SessionID: "s1"}},
		delta("a:act:1:0", "Hi <b> & \"you\""),
		kc("w:2", contracts.ChunkDone),
		delta("w:3", "next response"),
	))
	srv := httptest.NewServer(sse.Handler(m))
	defer srv.Close()

	resp := get(t, ctx, srv.URL+"/v1/runs/run-1/stream?until=response", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	require.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	require.Equal(t, "id: 1\n"+
		"data: {\"type\":\"session\",\"sessionId\":\"s1\"}\n\n"+
		"id: 2\n"+
		"data: {\"type\":\"text-delta\",\"delta\":\"Hi <b> & \\\"you\\\"\"}\n\n"+
		"id: 3\n"+
		"data: {\"type\":\"done\"}\n\n"+
		"data: [DONE]\n\n", body(t, resp))
}

func TestHandlerConnectionHeader(t *testing.T) {
	// The connection header is hop-by-hop: check what the handler sets, not what a client sees.
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(testCtx(t), "run", kc("w:1", contracts.ChunkDone)))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v1/runs/run/stream", nil)
	sse.Handler(m).ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "keep-alive", rec.Header().Get("Connection"))
	require.True(t, rec.Flushed)
	require.Equal(t, "id: 1\ndata: {\"type\":\"done\"}\n\ndata: [DONE]\n\n", rec.Body.String())
}

func TestHandlerResume(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run",
		delta("w:1", "a"), delta("w:2", "b"), delta("w:3", "c"), delta("w:4", "d"), kc("w:5", contracts.ChunkDone)))
	srv := httptest.NewServer(sse.Handler(m))
	defer srv.Close()

	tests := []struct {
		name   string
		query  string
		header map[string]string
		want   []int64
	}{
		{"from the start", "", nil, []int64{1, 2, 3, 4, 5}},
		{"Last-Event-ID", "", map[string]string{"Last-Event-ID": "2"}, []int64{3, 4, 5}},
		{"after", "?after=3", nil, []int64{4, 5}},
		{"Last-Event-ID overrides after", "?after=1", map[string]string{"Last-Event-ID": "3"}, []int64{4, 5}},
		{"empty Last-Event-ID is absent", "?after=4", map[string]string{"Last-Event-ID": ""}, []int64{5}},
		{"until run", "?until=run&after=1", nil, []int64{2, 3, 4, 5}},
		{"after the end of a finished run", "?after=5", nil, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, ctx, srv.URL+"/v1/runs/run/stream"+tt.query, tt.header)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, tt.want, sseIDs(t, body(t, resp)))
		})
	}
}

func TestHandlerEscapedRunID(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "chat/42#x", kc("w:1", contracts.ChunkDone)))
	srv := httptest.NewServer(sse.Handler(m))
	defer srv.Close()
	resp := get(t, ctx, srv.URL+"/v1/runs/chat%2F42%23x/stream", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []int64{1}, sseIDs(t, body(t, resp)))
}

func TestHandlerBadRequest(t *testing.T) {
	ctx := testCtx(t)
	srv := httptest.NewServer(sse.Handler(stream.NewMemory(stream.MemoryOptions{})))
	defer srv.Close()

	tests := []struct {
		name   string
		query  string
		header map[string]string
		msg    string
	}{
		{"after not a number", "?after=abc", nil, "after"},
		{"negative after", "?after=-1", nil, "after"},
		{"bad Last-Event-ID", "", map[string]string{"Last-Event-ID": "x"}, "Last-Event-ID"},
		{"bad until", "?until=forever", nil, "until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, ctx, srv.URL+"/v1/runs/run/stream"+tt.query, tt.header)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var eb struct {
				Error   string            `json:"error"`
				Failure contracts.Failure `json:"failure"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&eb))
			require.Contains(t, eb.Error, tt.msg)
			require.Equal(t, contracts.CodeInvalidRequest, eb.Failure.Code)
			require.Equal(t, eb.Error, eb.Failure.Message)
			require.Equal(t, 1, eb.Failure.Version)
		})
	}
}

func TestHandlerRoutes(t *testing.T) {
	ctx := testCtx(t)
	mux := http.NewServeMux()
	mux.Handle("/", sse.Handler(stream.NewMemory(stream.MemoryOptions{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	require.Equal(t, http.StatusNotFound, get(t, ctx, srv.URL+"/v1/runs/run", nil).StatusCode)
	require.Equal(t, http.StatusNotFound, get(t, ctx, srv.URL+"/v1/runs//stream", nil).StatusCode)
	resp, err := http.Post(srv.URL+"/v1/runs/run/stream", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestHandlerBrokerFailure(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run", delta("w:1", "a"), delta("w:2", "b"), delta("w:3", "c")))
	b := &failingBroker{Broker: m, failAfter: 2}

	rec := httptest.NewRecorder()
	err := (&sse.Server{Broker: b}).WriteSSE(ctx, rec, "run", 0, stream.UntilRun)
	require.ErrorIs(t, err, errBroker)
	require.Equal(t, http.StatusOK, rec.Code)
	got := rec.Body.String()
	require.True(t, strings.HasPrefix(got, "id: 1\ndata: {\"type\":\"text-delta\",\"delta\":\"a\"}\n\nid: 2\n"), got)
	require.True(t, strings.HasSuffix(got, "\n\n"+
		`data: {"type":"error","message":"An unexpected error occurred.","failure":{"version":1,`+
		`"code":"EXECUTION_FAILED","category":"internal","message":"An unexpected error occurred.",`+
		`"retryable":false}}`+"\n\ndata: [DONE]\n\n"), got)

	var chunks []contracts.Chunk
	var ids []int64
	require.NoError(t, sseclient.ReadSSE(strings.NewReader(got), func(id int64, c contracts.Chunk) error {
		ids = append(ids, id)
		chunks = append(chunks, c)
		return nil
	}))
	require.Equal(t, []int64{1, 2, 0}, ids)
	require.Equal(t, contracts.ChunkError, chunks[2].Type)
	require.NotEmpty(t, chunks[2].Message)
	require.NotNil(t, chunks[2].Failure)
	require.Equal(t, contracts.CodeExecutionFailed, chunks[2].Failure.Code)

	// A *contracts.Error keeps its code and message.
	b2 := &failingBroker{Broker: m, failAfter: 0, err: contracts.Errorf(contracts.CodePersistenceError, "store down")}
	rec = httptest.NewRecorder()
	require.Error(t, (&sse.Server{Broker: b2}).WriteSSE(ctx, rec, "run", 0, stream.UntilRun))
	require.Contains(t, rec.Body.String(), `data: {"type":"error","message":"store down","failure":{"version":1,"code":"PERSISTENCE_ERROR"`)
}

func TestHandlerClientDisconnect(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	returned := make(chan struct{})
	h := sse.Handler(m)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	rctx, cancel := context.WithCancel(ctx)
	resp := get(t, rctx, srv.URL+"/v1/runs/run/stream?until=none", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode) // headers are flushed at once
	cancel()
	select {
	case <-returned:
	case <-ctx.Done():
		t.Fatal("handler still running after the client went away")
	}
}

// signalReader records what passes through it and closes seen when it has seen want.
type signalReader struct {
	r    io.Reader
	want string
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{}
	once sync.Once
}

func (s *signalReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.mu.Lock()
	s.buf.Write(p[:n])
	if strings.Contains(s.buf.String(), s.want) {
		s.once.Do(func() { close(s.seen) })
	}
	s.mu.Unlock()
	return n, err
}

func TestHandlerKeepAlive(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/runs/{runID}/stream", &sse.Server{Broker: m, KeepAlive: 5 * time.Millisecond})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp := get(t, ctx, srv.URL+"/v1/runs/run/stream", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sr := &signalReader{r: resp.Body, want: ": keep-alive\n\n", seen: make(chan struct{})}

	// Publish only once a keep-alive went through: the reader must skip it.
	published := make(chan error, 1)
	go func() {
		select {
		case <-sr.seen:
			published <- m.Publish(ctx, "run", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone))
		case <-ctx.Done():
			published <- ctx.Err()
		}
	}()
	var got []contracts.ChunkType
	require.NoError(t, sseclient.ReadSSE(sr, func(id int64, c contracts.Chunk) error {
		got = append(got, c.Type)
		return nil
	}))
	require.NoError(t, <-published)
	require.Equal(t, []contracts.ChunkType{contracts.ChunkTextDelta, contracts.ChunkDone}, got)
	require.True(t, strings.HasPrefix(sr.buf.String(), ": keep-alive\n\n"), sr.buf.String())
}

func TestHandlerStreamsLiveEntries(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	srv := httptest.NewServer(sse.Handler(m))
	defer srv.Close()

	resp := get(t, ctx, srv.URL+"/v1/runs/run/stream", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Each event is flushed as soon as it is published: publish the next one only when the
	// previous one has been read.
	all := conversation()[:12]
	require.NoError(t, m.Publish(ctx, "run", all[0]))
	br := bufio.NewReader(resp.Body)
	var got []int64
	err := sseclient.ReadSSE(br, func(id int64, c contracts.Chunk) error {
		got = append(got, id)
		if int(id) < len(all) {
			return m.Publish(ctx, "run", all[id])
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, got)
}
