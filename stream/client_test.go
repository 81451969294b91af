package stream_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/stretchr/testify/require"
)

type event struct {
	ID   int64
	Type contracts.ChunkType
}

func TestReadSSE(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []event
		code contracts.Code // expected error code, "" for nil
	}{
		{
			name: "events then done",
			in:   "id: 1\ndata: {\"type\":\"session\"}\n\nid: 2\ndata: {\"type\":\"done\"}\n\ndata: [DONE]\n\n",
			want: []event{{1, contracts.ChunkSession}, {2, contracts.ChunkDone}},
		},
		{
			name: "comments, other fields and empty events are ignored",
			in: ": keep-alive\n\n:hello\nevent: message\nretry: 100\nid: 1\ndata: {\"type\":\"status\"}\n\n" +
				"id: 5\n\n: keep-alive\n\ndata: [DONE]\n\n",
			want: []event{{1, contracts.ChunkStatus}},
		},
		{
			name: "CRLF line endings and no space after colon",
			in:   "id:7\r\ndata:{\"type\":\"done\"}\r\n\r\ndata:[DONE]\r\n\r\n",
			want: []event{{7, contracts.ChunkDone}},
		},
		{
			name: "leading byte order mark",
			in:   "\uFEFFid: 1\ndata: {\"type\":\"done\"}\n\ndata: [DONE]\n\n",
			want: []event{{1, contracts.ChunkDone}},
		},
		{
			name: "multi-line data is joined with newlines",
			in:   "id: 1\ndata: {\"type\":\ndata: \"message\"}\n\ndata: [DONE]\n\n",
			want: []event{{1, contracts.ChunkMessage}},
		},
		{
			name: "ids do not carry over",
			in:   "id: 3\ndata: {\"type\":\"status\"}\n\ndata: {\"type\":\"error\"}\n\ndata: [DONE]\n\n",
			want: []event{{3, contracts.ChunkStatus}, {0, contracts.ChunkError}},
		},
		{
			name: "nothing is read after done",
			in:   "data: [DONE]\n\ndata: {not json}\n\n",
			want: nil,
		},
		{
			name: "invalid JSON",
			in:   "id: 1\ndata: {\"type\":\"status\"}\n\nid: 2\ndata: {\"type\":\n\n",
			want: []event{{1, contracts.ChunkStatus}},
			code: contracts.CodeMalformedStream,
		},
		{
			name: "chunk without type",
			in:   "data: {\"delta\":\"x\"}\n\n",
			code: contracts.CodeMalformedStream,
		},
		{
			name: "invalid id",
			in:   "id: abc\ndata: {\"type\":\"done\"}\n\n",
			code: contracts.CodeMalformedStream,
		},
		{
			name: "missing done",
			in:   "id: 1\ndata: {\"type\":\"done\"}\n\n",
			want: []event{{1, contracts.ChunkDone}},
			code: contracts.CodeTruncatedStream,
		},
		{
			name: "unterminated last event is not delivered",
			in:   "id: 1\ndata: {\"type\":\"status\"}\n\nid: 2\ndata: {\"type\":\"done\"}\n",
			want: []event{{1, contracts.ChunkStatus}},
			code: contracts.CodeTruncatedStream,
		},
		{
			name: "done without blank line",
			in:   "data: [DONE]",
			code: contracts.CodeTruncatedStream,
		},
		{
			name: "empty",
			in:   "",
			code: contracts.CodeTruncatedStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []event
			err := sseclient.ReadSSE(strings.NewReader(tt.in), func(id int64, c contracts.Chunk) error {
				got = append(got, event{id, c.Type})
				return nil
			})
			require.Equal(t, tt.want, got)
			if tt.code == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, tt.code, contracts.CodeOf(err), err.Error())
		})
	}
}

func TestReadSSEReadError(t *testing.T) {
	cause := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("id: 1\ndata: {\"type\":\"status\"}\n\nid: 2\nda"), iotest.ErrReader(cause))
	n := 0
	err := sseclient.ReadSSE(r, func(int64, contracts.Chunk) error { n++; return nil })
	require.Equal(t, 1, n)
	require.Equal(t, contracts.CodeTruncatedStream, contracts.CodeOf(err))
	require.ErrorIs(t, err, cause)
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.True(t, ke.Retryable)
}

func TestReadSSEFnError(t *testing.T) {
	err := sseclient.ReadSSE(strings.NewReader("data: {\"type\":\"status\"}\n\ndata: [DONE]\n\n"),
		func(int64, contracts.Chunk) error { return errStop })
	require.Equal(t, errStop, err)
}

func TestReadSSELongEvent(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // longer than the read buffer
	in := "id: 1\ndata: {\"type\":\"text-delta\",\"delta\":\"" + long + "\"}\n\ndata: [DONE]\n\n"
	var got string
	require.NoError(t, sseclient.ReadSSE(strings.NewReader(in), func(_ int64, c contracts.Chunk) error {
		got = c.Delta
		return nil
	}))
	require.Equal(t, long, got)

	huge := "data: \"" + strings.Repeat("x", (16<<20)) + "\"\n\n"
	err := sseclient.ReadSSE(strings.NewReader(huge), func(int64, contracts.Chunk) error { return nil })
	require.Equal(t, contracts.CodeMalformedStream, contracts.CodeOf(err))
}

// collect follows runID with c and returns the (id, type) of the chunks delivered.
func collect(t *testing.T, ctx context.Context, c *sseclient.Client, after int64, until stream.Until) ([]event, error) {
	t.Helper()
	var got []event
	err := c.Follow(ctx, "run", after, until, func(id int64, ch contracts.Chunk) error {
		got = append(got, event{id, ch.Type})
		return nil
	})
	return got, err
}

func eventsOf(ks []stream.Keyed, from int64) []event {
	var out []event
	for i, k := range ks {
		out = append(out, event{from + int64(i), k.Chunk.Type})
	}
	return out
}

// writeEvents writes entries with the SSE handler's writer, without [DONE].
func writeEvents(w http.ResponseWriter, es []stream.Entry) {
	sw, err := httpwire.NewSSEWriter(w, httpwire.SSEOptions{})
	for _, e := range es {
		if err == nil {
			err = sw.Event(e.Offset, e.Chunk)
		}
	}
}

func TestClientReconnects(t *testing.T) {
	tests := []struct {
		name string
		// first serves the first connection after writing its first two entries.
		first func(w http.ResponseWriter, r *http.Request, b stream.Broker)
		// resumeFromStart makes later connections ignore Last-Event-ID, resending everything.
		resumeFromStart bool
	}{
		{
			name:  "server ends the response early",
			first: func(w http.ResponseWriter, r *http.Request, b stream.Broker) {},
		},
		{
			name: "connection aborted",
			first: func(w http.ResponseWriter, r *http.Request, b stream.Broker) {
				panic(http.ErrAbortHandler)
			},
		},
		{
			name:            "duplicates after reconnection are skipped",
			first:           func(w http.ResponseWriter, r *http.Request, b stream.Broker) {},
			resumeFromStart: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			m := stream.NewMemory(stream.MemoryOptions{})
			all := conversation()[:12]
			require.NoError(t, m.Publish(ctx, "run", all...))

			var (
				mu           sync.Mutex
				requests     int
				lastEventIDs []string
			)
			h := sse.Handler(m)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests++
				n := requests
				lastEventIDs = append(lastEventIDs, r.Header.Get("Last-Event-ID"))
				mu.Unlock()
				switch {
				case n == 1:
					es, err := m.Read(r.Context(), "run", 0, 2)
					if err != nil {
						panic(err)
					}
					writeEvents(w, es)
					tt.first(w, r, m)
				case tt.resumeFromStart:
					_ = (&sse.Server{Broker: m}).WriteSSE(r.Context(), w, "run", 0, stream.UntilRun)
				default:
					h.ServeHTTP(w, r)
				}
			}))
			defer srv.Close()

			got, err := collect(t, ctx, &sseclient.Client{BaseURL: srv.URL + "/", HTTP: srv.Client()}, 0, stream.UntilRun)
			require.NoError(t, err)
			require.Equal(t, eventsOf(all, 1), got)
			require.Equal(t, []string{"", "2"}, lastEventIDs)
		})
	}
}

func TestClientFollow(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	all := conversation()
	require.NoError(t, m.Publish(ctx, "run", all...))
	srv := httptest.NewServer(sse.Handler(m))
	defer srv.Close()
	c := &sseclient.Client{BaseURL: srv.URL}

	tests := []struct {
		name  string
		after int64
		until stream.Until
		want  []event
	}{
		{"response", 0, stream.UntilResponse, eventsOf(all[:4], 1)},
		{"next response", 4, stream.UntilResponse, eventsOf(all[4:8], 5)},
		{"run", 0, stream.UntilRun, eventsOf(all[:12], 1)},
		{"run resumed after an interrupt", 3, stream.UntilRun, eventsOf(all[3:12], 4)},
		{"finished run", 12, stream.UntilRun, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, ctx, c, tt.after, tt.until)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("until cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		n := 0
		err := c.Follow(cctx, "run", 10, stream.UntilCancel, func(id int64, _ contracts.Chunk) error {
			n++
			if id == 14 {
				cancel()
			}
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 4, n)
	})

	t.Run("fn error", func(t *testing.T) {
		err := c.Follow(ctx, "run", 0, stream.UntilRun, func(int64, contracts.Chunk) error { return errStop })
		require.Equal(t, errStop, err)
	})

	t.Run("empty run ID", func(t *testing.T) {
		err := c.Follow(ctx, "", 0, stream.UntilRun, func(int64, contracts.Chunk) error { return nil })
		require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err))
	})
}

func TestClientLiveStream(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	srv := httptest.NewServer(sse.Handler(m))
	defer srv.Close()

	all := conversation()[:12]
	published := make(chan error, 1)
	go func() {
		for _, k := range all {
			if err := m.Publish(ctx, "run", k); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	got, err := collect(t, ctx, &sseclient.Client{BaseURL: srv.URL}, 0, stream.UntilRun)
	require.NoError(t, err)
	require.NoError(t, <-published)
	require.Equal(t, eventsOf(all, 1), got)
}

func TestClientHTTPErrors(t *testing.T) {
	ctx := testCtx(t)
	t.Run("failure in body", func(t *testing.T) {
		srv := httptest.NewServer(sse.Handler(stream.NewMemory(stream.MemoryOptions{})))
		defer srv.Close()
		_, err := collect(t, ctx, &sseclient.Client{BaseURL: srv.URL}, 0, stream.Until(99))
		require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err))
		require.Contains(t, err.Error(), "invalid until")
		var ke *contracts.Error
		require.ErrorAs(t, err, &ke)
		require.Equal(t, http.StatusBadRequest, ke.Status)
	})

	tests := []struct {
		name     string
		status   int
		body     string
		contains string
	}{
		{"error message only", http.StatusServiceUnavailable, `{"error":"try later"}`, "try later"},
		{"not JSON", http.StatusBadGateway, "<html>bad gateway</html>", "502"},
		{"not found", http.StatusNotFound, "404 page not found\n", "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests++
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := collect(t, ctx, &sseclient.Client{BaseURL: srv.URL}, 0, stream.UntilRun)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.contains)
			require.Equal(t, 1, requests) // not retried
		})
	}

	t.Run("not an event stream", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html></html>")
		}))
		defer srv.Close()
		_, err := collect(t, ctx, &sseclient.Client{BaseURL: srv.URL}, 0, stream.UntilRun)
		require.Equal(t, contracts.CodeMalformedStream, contracts.CodeOf(err))
	})
}

func TestClientGivesUp(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": nothing here\n\n")
	}))
	defer srv.Close()

	c := &sseclient.Client{BaseURL: srv.URL, MaxRetries: 2, RetryDelay: time.Millisecond}
	_, err := collect(t, ctx, c, 0, stream.UntilRun)
	require.Equal(t, contracts.CodeTruncatedStream, contracts.CodeOf(err))
	mu.Lock()
	require.Equal(t, 3, requests)
	requests = 0
	mu.Unlock()

	c.MaxRetries = -1
	_, err = collect(t, ctx, c, 0, stream.UntilRun)
	require.Equal(t, contracts.CodeTruncatedStream, contracts.CodeOf(err))
	mu.Lock()
	require.Equal(t, 1, requests)
	mu.Unlock()
}

func TestClientTransportErrorRetried(t *testing.T) {
	ctx := testCtx(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	c := &sseclient.Client{BaseURL: url, MaxRetries: 1, RetryDelay: time.Millisecond}
	_, err := collect(t, ctx, c, 0, stream.UntilRun)
	require.Error(t, err)
	require.NotErrorIs(t, err, context.Canceled)
}

func TestClientServerStreamError(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run", delta("w:1", "a"), delta("w:2", "b"), kc("w:3", contracts.ChunkDone)))
	fb := &failingBroker{Broker: m, failAfter: 2, err: contracts.Errorf(contracts.CodePersistenceError, "store down")}
	var mu sync.Mutex
	requests := 0
	h := sse.Handler(fb)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	c := &sseclient.Client{BaseURL: srv.URL, MaxRetries: 1, RetryDelay: time.Millisecond}
	got, err := collect(t, ctx, c, 0, stream.UntilRun)
	require.Equal(t, contracts.CodePersistenceError, contracts.CodeOf(err))
	require.Contains(t, err.Error(), "store down")
	// The error event is not a chunk of the run; the chunks before it come once.
	require.Equal(t, []event{{1, contracts.ChunkTextDelta}, {2, contracts.ChunkTextDelta}}, got)
	// First connection made progress, the next one did not, then one retry.
	mu.Lock()
	require.Equal(t, 3, requests)
	mu.Unlock()
}

// The client asks for resumable framing (ids to reconnect with), which the chat route writes
// only on request; the run stream route writes ids either way.
func TestClientAsksForResumableFraming(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(httpwire.ResumableHeader))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1\ndata: {\"type\":\"done\"}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	sc := &sseclient.Client{BaseURL: srv.URL}
	var offsets []int64
	require.NoError(t, sc.Follow(context.Background(), "run-1", 0, stream.UntilRun, func(off int64, c contracts.Chunk) error {
		offsets = append(offsets, off)
		return nil
	}))
	require.Equal(t, []string{"1"}, got)
	require.Equal(t, []int64{1}, offsets)
	require.Equal(t, "X-Kortyx-Resumable", httpwire.ResumableHeader)
}
