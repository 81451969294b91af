package stream_test

import (
	"context"
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

// phases is a ReaderOptions.Run that reports the given phases in turn (the last one from then
// on) and counts the calls.
type phases struct {
	mu    sync.Mutex
	list  []stream.Phase
	calls int
}

func (p *phases) run(context.Context, string) (stream.RunState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := min(p.calls, len(p.list)-1)
	p.calls++
	return stream.RunState{Phase: p.list[i]}, nil
}

// goneRead serves one GET of the run stream of runID with s and returns the events read, the
// raw body, and waits (bounded by the test's 20 s context, the failure signal) until the
// handler has returned: no goroutine of the request is left.
func goneRead(t *testing.T, s *sse.Server, runID string, header map[string]string) ([]contracts.Chunk, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("GET /v1/runs/{runID}/stream", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		s.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	raw := body(t, get(t, ctx, srv.URL+"/v1/runs/"+runID+"/stream", header))
	require.NoError(t, ctx.Err(), "the stream did not end")
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the handler did not return")
	}
	var chunks []contracts.Chunk
	require.NoError(t, sseclient.ReadSSE(strings.NewReader(raw), func(_ int64, c contracts.Chunk) error {
		chunks = append(chunks, c)
		return nil
	}))
	return chunks, raw
}

func requireGone(t *testing.T, chunks []contracts.Chunk, raw string, code contracts.Code, contains string) {
	t.Helper()
	require.Len(t, chunks, 1, raw)
	require.Equal(t, contracts.ChunkError, chunks[0].Type)
	require.NotNil(t, chunks[0].Failure)
	require.Equal(t, code, chunks[0].Failure.Code)
	require.Contains(t, chunks[0].Message, contains)
	require.True(t, strings.HasSuffix(raw, "data: [DONE]\n\n"), raw)
}

// A run evicted from a memory broker (MaxRuns 1) whose execution is closed: gone at once.
func TestGoneEvictedRun(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{MaxRuns: 1})
	require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone)))
	require.NoError(t, m.Publish(ctx, "run-b", delta("w:1", "other")))
	p := &phases{list: []stream.Phase{stream.PhaseClosed}}
	chunks, raw := goneRead(t, &sse.Server{Broker: m, Run: p.run, KeepAlive: -1}, "run-a", nil)
	requireGone(t, chunks, raw, "STREAM_GONE", "the run has ended and the run's chunks are no longer kept")
	require.Equal(t, 1, p.calls)
}

// A restarted broker (a new, empty Memory) and a reader resuming with Last-Event-ID: gone
// without asking the run (the offset is past the end of what the broker has).
func TestGoneRestartedBrokerWithLastEventID(t *testing.T) {
	p := &phases{list: []stream.Phase{stream.PhaseRunning}}
	chunks, raw := goneRead(t, &sse.Server{Broker: stream.NewMemory(stream.MemoryOptions{}), Run: p.run, KeepAlive: -1}, "run-a",
		map[string]string{"Last-Event-ID": "7"})
	requireGone(t, chunks, raw, "STREAM_GONE", "offset 7 is past the end of the stream, which is empty")
	require.Equal(t, 0, p.calls)
}

// Last-Event-ID past the end of a retained stream: gone, also without Server.Run.
func TestGoneLastEventIDPastTheEnd(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "a"), delta("w:2", "b"), delta("w:3", "c")))
	chunks, raw := goneRead(t, &sse.Server{Broker: m, KeepAlive: -1}, "run-a", map[string]string{"Last-Event-ID": "9"})
	requireGone(t, chunks, raw, "STREAM_GONE", "offset 9 is past the end of the stream (offset 3)")
}

// A run that is running with nothing in the broker is waited for; once it is closed with
// still nothing there, the stream is gone.
func TestGoneRunningThenClosed(t *testing.T) {
	p := &phases{list: []stream.Phase{stream.PhaseRunning, stream.PhaseRunning, stream.PhaseClosed}}
	chunks, raw := goneRead(t, &sse.Server{Broker: stream.NewMemory(stream.MemoryOptions{}), Run: p.run, KeepAlive: -1}, "run-a", nil)
	requireGone(t, chunks, raw, "STREAM_GONE", "the run has ended")
	require.Equal(t, 3, p.calls)
}

// A waiting run with nothing in the broker is gone on the second check (its response was
// published, but not here); a missing run is NOT_FOUND.
func TestGoneWaitingAndMissing(t *testing.T) {
	p := &phases{list: []stream.Phase{stream.PhaseWaiting}}
	chunks, raw := goneRead(t, &sse.Server{Broker: stream.NewMemory(stream.MemoryOptions{}), Run: p.run, KeepAlive: -1}, "run-a", nil)
	requireGone(t, chunks, raw, "STREAM_GONE", "the run waits for an answer")
	require.Equal(t, 2, p.calls)

	p = &phases{list: []stream.Phase{stream.PhaseMissing}}
	chunks, raw = goneRead(t, &sse.Server{Broker: stream.NewMemory(stream.MemoryOptions{}), Run: p.run, KeepAlive: -1}, "run-a", nil)
	requireGone(t, chunks, raw, contracts.CodeNotFound, `There is no run "run-a".`)
}

// A run that publishes while the reader waits is followed as before; the run is not asked
// before goneInterval without a chunk.
func TestGoneRunningRunStreams(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	p := &phases{list: []stream.Phase{stream.PhaseRunning}}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = m.Publish(ctx, "run-a", delta("w:1", "a"), kc("w:2", contracts.ChunkDone))
	}()
	chunks, _ := goneRead(t, &sse.Server{Broker: m, Run: p.run, KeepAlive: -1}, "run-a", nil)
	require.Equal(t, []contracts.ChunkType{contracts.ChunkTextDelta, contracts.ChunkDone}, []contracts.ChunkType{chunks[0].Type, chunks[1].Type})
	require.Len(t, chunks, 2)
	require.Equal(t, 0, p.calls)
}

// FollowRun: a reader at the end of a closed run's stream waiting for a next response gets
// STREAM_GONE; with UntilCancel it keeps following until its context ends.
func TestFollowRunEndOfClosedRun(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "a"), kc("w:2", contracts.ChunkDone)))
	p := &phases{list: []stream.Phase{stream.PhaseClosed}}
	err := stream.FollowRun(ctx, m, "run-a", 2, stream.UntilResponse, p.run, func(stream.Entry) error { return nil })
	require.Equal(t, contracts.Code("STREAM_GONE"), contracts.CodeOf(err))
	require.ErrorContains(t, err, "the run has ended: nothing follows offset 2")

	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = stream.FollowRun(cctx, m, "run-a", 2, stream.UntilCancel, p.run, func(stream.Entry) error { return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// A run that publishes its response and ends while it is being asked: what it published is
// read, not reported gone.
func TestGonePublishedWhileAsked(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	calls := 0
	run := func(context.Context, string) (stream.RunState, error) {
		if calls++; calls == 1 {
			require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "a"), kc("w:2", contracts.ChunkDone)))
		}
		return stream.RunState{Phase: stream.PhaseClosed}, nil
	}
	var got []contracts.ChunkType
	require.NoError(t, stream.FollowRun(ctx, m, "run-a", 0, stream.UntilRun, run, func(e stream.Entry) error {
		got = append(got, e.Chunk.Type)
		return nil
	}))
	require.Equal(t, []contracts.ChunkType{contracts.ChunkTextDelta, contracts.ChunkDone}, got)
	require.Equal(t, 1, calls)
}

// clock is a test clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// A finished run's stream is dropped once the retention after its final done has passed: a
// reader of the closed run then gets STREAM_GONE. A response that ends with an interrupt does
// not start the retention; a later publish starts it again.
func TestGoneAfterRetention(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{Retention: time.Minute})
	clk := &clock{now: time.Unix(1_000_000, 0)}
	stream.SetClock(m, clk.Now)
	require.NoError(t, m.Publish(ctx, "asks", delta("w:1", "q"), kc("w:2", contracts.ChunkInterrupt), kc("w:3", contracts.ChunkDone)))
	require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone)))
	clk.Add(59 * time.Second)
	require.NoError(t, m.Publish(ctx, "run-b", delta("w:1", "b"), kc("w:2", contracts.ChunkDone)))
	first, last, err := m.Bounds(ctx, "run-a")
	require.NoError(t, err)
	require.Equal(t, [2]int64{1, 2}, [2]int64{first, last}, "kept within the retention")

	clk.Add(time.Second)
	first, last, err = m.Bounds(ctx, "run-a")
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, [2]int64{first, last}, "dropped once it has passed")
	p := &phases{list: []stream.Phase{stream.PhaseClosed}}
	chunks, raw := goneRead(t, &sse.Server{Broker: m, Run: p.run, KeepAlive: -1}, "run-a", nil)
	requireGone(t, chunks, raw, "STREAM_GONE", "the run has ended and the run's chunks are no longer kept")

	// run-b's final done was 1 s ago; a publish after it starts its retention again.
	clk.Add(30 * time.Second)
	require.NoError(t, m.Publish(ctx, "run-b", kc("w:3", contracts.ChunkStatus)))
	clk.Add(59 * time.Second)
	es, err := m.Read(ctx, "run-b", 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 3)
	clk.Add(time.Second)
	es, err = m.Read(ctx, "run-b", 0, 0)
	require.NoError(t, err)
	require.Empty(t, es)

	// A run whose only response ended with an interrupt waits for its answer: kept.
	es, err = m.Read(ctx, "asks", 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 3)
	last, err = m.Last(ctx, "run-a")
	require.NoError(t, err)
	require.Zero(t, last, "a later publish would start again at offset 1")
}

// With the retention off (< 0), a finished run stays; the default retention is
// the default retention (10 min).
func TestRetentionOff(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{Retention: -1})
	clk := &clock{now: time.Unix(1_000_000, 0)}
	stream.SetClock(m, clk.Now)
	require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone)))
	clk.Add(1000 * time.Hour)
	es, err := m.Read(ctx, "run-a", 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 2)

	d := stream.NewMemory(stream.MemoryOptions{})
	stream.SetClock(d, clk.Now)
	require.NoError(t, d.Publish(ctx, "run-a", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone)))
	clk.Add(10*time.Minute - time.Second)
	last, err := d.Last(ctx, "run-a")
	require.NoError(t, err)
	require.Equal(t, int64(2), last)
	clk.Add(time.Second)
	last, err = d.Last(ctx, "run-a")
	require.NoError(t, err)
	require.Zero(t, last)
}

// An idle broker drops expired runs by itself (no call needed): polled with a deadline.
func TestRetentionIdleSweep(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{Retention: 20 * time.Millisecond})
	require.NoError(t, m.Publish(ctx, "run-a", delta("w:1", "hi"), kc("w:2", contracts.ChunkDone)))
	require.Eventually(t, func() bool { return stream.Runs(m) == 0 }, 10*time.Second, 5*time.Millisecond)
}
