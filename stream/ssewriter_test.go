package stream_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/stretchr/testify/require"
)

func TestSSEWriterFraming(t *testing.T) {
	rec := httptest.NewRecorder()
	sw, err := httpwire.NewSSEWriter(rec, httpwire.SSEOptions{})
	require.NoError(t, err)
	require.NoError(t, sw.Event(0, contracts.Chunk{Type: contracts.ChunkSession, SessionID: "s1"}))
	require.NoError(t, sw.Event(7, contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "<b> & you"}))
	require.NoError(t, sw.KeepAlive())
	require.NoError(t, sw.Done())
	require.NoError(t, sw.Err())
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
	require.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))
	require.Equal(t, "keep-alive", rec.Header().Get("Connection"))
	require.Equal(t, "no", rec.Header().Get("X-Accel-Buffering"))
	require.Equal(t, "data: {\"type\":\"session\",\"sessionId\":\"s1\"}\n\n"+
		"id: 7\ndata: {\"type\":\"text-delta\",\"delta\":\"<b> & you\"}\n\n"+
		": keep-alive\n\n"+
		"data: [DONE]\n\n", rec.Body.String())
}

func TestSSEWriterOmitIDsAndTransform(t *testing.T) {
	rec := httptest.NewRecorder()
	sw, err := httpwire.NewSSEWriter(rec, httpwire.SSEOptions{OmitIDs: true, Transform: func(c contracts.Chunk) []any {
		switch c.Type {
		case contracts.ChunkCancelled:
			return nil
		case contracts.ChunkDone:
			return []any{map[string]string{"type": "status", "message": "ending"}, c}
		}
		return []any{c}
	}})
	require.NoError(t, err)
	require.NoError(t, sw.Event(3, contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "hi"}))
	require.NoError(t, sw.Event(4, contracts.Chunk{Type: contracts.ChunkCancelled}))
	require.NoError(t, sw.Event(5, contracts.Chunk{Type: contracts.ChunkDone}))
	require.NoError(t, sw.Done())
	require.Equal(t, "data: {\"type\":\"text-delta\",\"delta\":\"hi\"}\n\n"+
		"data: {\"message\":\"ending\",\"type\":\"status\"}\n\n"+
		"data: {\"type\":\"done\"}\n\n"+
		"data: [DONE]\n\n", rec.Body.String())
}

// failingWriter fails every write after the headers.
type failingWriter struct {
	header http.Header
	writes int
}

func (f *failingWriter) Header() http.Header { return f.header }
func (f *failingWriter) WriteHeader(int)     {}
func (f *failingWriter) Write([]byte) (int, error) {
	f.writes++
	return 0, errBrokenPipe
}

var errBrokenPipe = errors.New("broken pipe")

// The first failed write is sticky: later writes fail with it and write nothing.
func TestSSEWriterErrorIsSticky(t *testing.T) {
	fw := &failingWriter{header: http.Header{}}
	sw, err := httpwire.NewSSEWriter(fw, httpwire.SSEOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, sw.Event(1, contracts.Chunk{Type: contracts.ChunkDone}), errBrokenPipe)
	require.ErrorIs(t, sw.KeepAlive(), errBrokenPipe)
	require.ErrorIs(t, sw.Done(), errBrokenPipe)
	require.ErrorIs(t, sw.Err(), errBrokenPipe)
	require.Equal(t, 1, fw.writes)
}

// Each write gets a deadline of its own: a stream that stays silent for longer than the server's
// WriteTimeout (here with keep-alive comments disabled) still delivers its chunks.
func TestSSEWriterOutlivesServerWriteTimeout(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/runs/{runID}/stream", &sse.Server{Broker: m, KeepAlive: -1})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.WriteTimeout = writeTimeout
	srv.Start()
	defer srv.Close()

	resp := get(t, ctx, srv.URL+"/v1/runs/run/stream", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The silence under test: the server's deadline, counted from the request, passes twice.
	time.Sleep(2*writeTimeout + 100*time.Millisecond)
	require.NoError(t, m.Publish(ctx, "run", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone)))
	var got []contracts.ChunkType
	require.NoError(t, sseclient.ReadSSE(resp.Body, func(id int64, c contracts.Chunk) error {
		got = append(got, c.Type)
		return nil
	}))
	require.Equal(t, []contracts.ChunkType{contracts.ChunkTextDelta, contracts.ChunkDone}, got)
}

// A wire's loop over a stream.Reader writes each entry and keeps the stream alive while it
// waits.
func TestSSEWriterFollow(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	mux := http.NewServeMux()
	var (
		mu   sync.Mutex
		seen []int64
	)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sw, err := httpwire.NewSSEWriter(w, httpwire.SSEOptions{KeepAlive: 5 * time.Millisecond})
		if err != nil {
			return
		}
		// A wire's loop: read the next entry, write it; a keep-alive while nothing arrives.
		rd := stream.NewReader(m, "run", 0, stream.ReaderOptions{Until: stream.UntilResponse, Idle: 5 * time.Millisecond})
		for {
			e, err := rd.Next(r.Context())
			switch {
			case errors.Is(err, io.EOF):
				_ = sw.Done()
				return
			case errors.Is(err, stream.ErrIdle):
				err = sw.KeepAlive()
			case err == nil:
				mu.Lock()
				seen = append(seen, e.Offset)
				mu.Unlock()
				err = sw.Event(e.Offset, e.Chunk)
			}
			if err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp := get(t, ctx, srv.URL+"/", nil)
	sr := &signalReader{r: resp.Body, want: ": keep-alive\n\n", seen: make(chan struct{})}
	published := make(chan error, 1)
	go func() {
		select {
		case <-sr.seen:
			published <- m.Publish(ctx, "run", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone), delta("w:3", "next"))
		case <-ctx.Done():
			published <- ctx.Err()
		}
	}()
	var ids []int64
	require.NoError(t, sseclient.ReadSSE(sr, func(id int64, c contracts.Chunk) error {
		ids = append(ids, id)
		return nil
	}))
	require.NoError(t, <-published)
	require.Equal(t, []int64{1, 2}, ids)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int64{1, 2}, seen)
}
