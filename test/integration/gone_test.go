package integration_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/stretchr/testify/require"
)

// What a reader sees when the chunks of a turn or run are gone (evicted, lost with a restarted
// in-memory broker, or published in another process's memory): an error chunk with code
// STREAM_GONE and the end of the stream, within a bound. The bound is the failure signal (a
// 20 s context), not a timing claim.

// gate is a broker that drops the publishes made while drop is set (chunks published into
// another process's memory, as seen from this one).
type gate struct {
	stream.Broker
	drop atomic.Bool
	// droppedDone counts the done chunks dropped: a response that never reached the broker.
	droppedDone atomic.Int32
}

func (g *gate) Publish(ctx context.Context, runID string, chunks ...stream.Keyed) error {
	if g.drop.Load() {
		for _, c := range chunks {
			if c.Chunk.Type == contracts.ChunkDone {
				g.droppedDone.Add(1)
			}
		}
		return nil
	}
	return g.Broker.Publish(ctx, runID, chunks...)
}

// startWorkerOn is startWorker with the worker publishing to b.
func startWorkerOn(t *testing.T, b stream.Broker) *inproc {
	t.Helper()
	e := &inproc{c: tc, tq: taskQueue(t), effects: filepath.Join(t.TempDir(), "effects.txt")}
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	set, err := tools.NewSet((&testagents.Recorder{File: e.effects}).Tool())
	require.NoError(t, err)
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: b,
		Providers: providers.NewSet(fake.NewResponder(testagents.Responder(false))), Tools: set})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

// goneRoutes serves the chat route and the run stream route over broker b (another process's
// view when b is not the worker's), for the worker e. done is closed when every request has
// returned: the count of requests in flight.
type goneRoutes struct {
	url      string
	inflight sync.WaitGroup
	mu       sync.Mutex
	execs    []<-chan struct{} // closed when a turn's finalizer has ended (Options.OnExecution)
}

func serveGone(t *testing.T, e *inproc, b stream.Broker, o chat.Options) *goneRoutes {
	t.Helper()
	o.AllowUnauthenticated = true
	g := &goneRoutes{}
	o.OnExecution = func(done <-chan struct{}) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.execs = append(g.execs, done)
	}
	h, err := chat.NewHandler(newService(t, tc, b, e.tq), o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	mux.Handle("GET /v1/runs/{runID}/stream", &sse.Server{Broker: b, Run: service(tc, "").RunState, KeepAlive: -1})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.inflight.Add(1)
		defer g.inflight.Done()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// chat posts a chat request and reads the whole response, failing after 20 s.
func (g *goneRoutes) chat(t *testing.T, body any, headers ...string) sseResponse {
	t.Helper()
	return bounded(t, func() sseResponse { return (&chatEnv{url: g.url}).send(t, body, headers...) })
}

// runStream reads the run stream route, failing after 20 s.
func (g *goneRoutes) runStream(t *testing.T, runID string, headers ...string) sseResponse {
	t.Helper()
	return bounded(t, func() sseResponse {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/v1/runs/"+runID+"/stream", nil)
		require.NoError(t, err)
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		events, perr := parseSSE(resp.Header, string(b))
		return sseResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Events: events, ParseErr: perr}
	})
}

// idle waits (bounded) until no request of g is in flight and every turn's finalizer has
// ended: no reader or finalizer goroutine is left. It returns how many finalizers there were.
func (g *goneRoutes) idle(t *testing.T) int {
	t.Helper()
	done := make(chan struct{})
	go func() { g.inflight.Wait(); close(done) }()
	deadline := time.After(20 * time.Second)
	select {
	case <-done:
	case <-deadline:
		t.Fatal("a request of the routes is still running")
	}
	g.mu.Lock()
	execs := append([]<-chan struct{}(nil), g.execs...)
	g.mu.Unlock()
	for _, ch := range execs {
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("a turn's finalizer is still following its stream")
		}
	}
	return len(execs)
}

func bounded(t *testing.T, f func() sseResponse) sseResponse {
	t.Helper()
	out := make(chan sseResponse, 1)
	go func() { out <- f() }()
	select {
	case r := <-out:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end within 20 s")
		return sseResponse{}
	}
}

// requireGoneChat checks a chat response that ends with the STREAM_GONE error: session,
// error, done, [DONE].
func requireGoneChat(t *testing.T, r sseResponse, contains string) contracts.Chunk {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NoError(t, r.ParseErr)
	chunks := r.Chunks(t)
	require.Equal(t, []string{"session", "error", "done"}, types(chunks), r.Body)
	require.Equal(t, "[DONE]", r.Events[len(r.Events)-1].Data)
	e := chunks[1]
	require.Equal(t, contracts.Code("STREAM_GONE"), e.Failure.Code)
	require.Contains(t, e.Message, contains)
	return e
}

// requireGoneRun checks a run stream response: error, [DONE].
func requireGoneRun(t *testing.T, r sseResponse, contains string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NoError(t, r.ParseErr)
	chunks := r.Chunks(t)
	require.Equal(t, []string{"error"}, types(chunks), r.Body)
	require.Equal(t, contracts.Code("STREAM_GONE"), chunks[0].Failure.Code)
	require.Contains(t, chunks[0].Message, contains)
	require.Equal(t, "[DONE]", r.Events[len(r.Events)-1].Data)
}

// A turn evicted from the broker (a Memory that keeps one run): its reattach, and its run
// stream (also with Last-Event-ID), end with STREAM_GONE.
func TestGoneEvictedTurn(t *testing.T) {
	m := stream.NewMemory(stream.MemoryOptions{MaxRuns: 1})
	e := startWorkerOn(t, m)
	g := serveGone(t, e, m, chat.Options{})
	s1, s2 := "s-"+taskQueue(t), "s2-"+taskQueue(t)
	first := g.chat(t, prompt(s1, "t1", testagents.EchoWorkflow, "one"))
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(first.Chunks(t)), first.Body)
	run1 := runOf(t, e, s1)
	second := g.chat(t, prompt(s2, "t1", testagents.EchoWorkflow, "two"))
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(second.Chunks(t)))

	requireGoneChat(t, g.chat(t, prompt(s1, "t1", testagents.EchoWorkflow, "one")), "the run has ended and the run's chunks are no longer kept")
	requireGoneChat(t, g.chat(t, prompt(s1, "t1", testagents.EchoWorkflow, "one"), "Last-Event-ID: 3"), "offset 3 is past the end of the stream, which is empty")
	requireGoneRun(t, g.runStream(t, run1), "the run has ended and the run's chunks are no longer kept")
	requireGoneRun(t, g.runStream(t, run1, "Last-Event-ID: 2"), "offset 2 is past the end")
	require.Equal(t, 2, g.idle(t))
}

// A restarted in-memory broker (a new Memory behind a new handler): resuming a turn with
// Last-Event-ID past the end, or from the start, ends with STREAM_GONE.
func TestGoneRestartedBroker(t *testing.T) {
	m := stream.NewMemory(stream.MemoryOptions{})
	e := startWorkerOn(t, m)
	g := serveGone(t, e, m, chat.Options{})
	s := "s-" + taskQueue(t)
	r := g.chat(t, prompt(s, "t1", testagents.EchoWorkflow, "one"))
	chunks := r.Chunks(t)
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(chunks))

	restarted := serveGone(t, e, stream.NewMemory(stream.MemoryOptions{}), chat.Options{})
	requireGoneChat(t, restarted.chat(t, prompt(s, "t1", testagents.EchoWorkflow, "one"), "Last-Event-ID: "+r.Events[1].ID),
		"offset 1 is past the end of the stream, which is empty")
	requireGoneChat(t, restarted.chat(t, prompt(s, "t1", testagents.EchoWorkflow, "one")), "the run has ended")
	require.Equal(t, 1, restarted.idle(t))
}

// Two processes on in-memory brokers: the second serves a chat whose run executes on the
// first's worker and publishes into the first's memory. It ends with STREAM_GONE (the hint
// names KORTYX_REDIS_URL) instead of hanging after the session chunk.
func TestGoneTwoProcesses(t *testing.T) {
	m1 := stream.NewMemory(stream.MemoryOptions{})
	e := startWorkerOn(t, m1)
	serveGone(t, e, m1, chat.Options{})
	second := serveGone(t, e, stream.NewMemory(stream.MemoryOptions{}), chat.Options{})
	s := "s-" + taskQueue(t)
	requireGoneChat(t, second.chat(t, prompt(s, "t1", testagents.EchoWorkflow, "one")), "set KORTYX_REDIS_URL")
	require.Equal(t, 1, second.idle(t))
}

// The next turn's content is never taken for a turn whose chunks are gone: the first turn's
// question never reaches this process's broker; while its reader (and finalizer) wait, the
// answer turn publishes here. The first turn's reader gets STREAM_GONE and is finalized as a
// failure without the second turn's content; the second turn is read and finalized whole.
func TestGoneNextTurnIsNotTheOldOne(t *testing.T) {
	gb := &gate{Broker: stream.NewMemory(stream.MemoryOptions{})}
	e := startWorkerOn(t, gb)
	f := newFinalized()
	g := serveGone(t, e, gb, f.options(chat.Options{Disconnect: "continue", OnExecution: func(<-chan struct{}) {}}))
	s := "s-" + taskQueue(t)

	gb.drop.Store(true)
	first := make(chan sseResponse, 1)
	go func() { first <- g.chat(t, prompt(s, "t1", "hello", "hi")) }()
	var ask contracts.PendingRequest
	eventually(t, 20*time.Second, "the question to be asked", func() bool {
		v, err := service(tc, "").View(context.Background(), s)
		if err != nil || len(v.Pending) == 0 {
			return false
		}
		ask = v.Pending[0]
		return true
	})
	// The session knows the question before the run has published its response: wait until
	// the whole response (its done) was dropped.
	eventually(t, 20*time.Second, "the question's response to be dropped", func() bool { return gb.droppedDone.Load() > 0 })
	gb.drop.Store(false)
	second := g.chat(t, resumeBody(s, "t2", contracts.Chunk{ResumeToken: ask.Token, RequestID: ask.RequestID}, "Ada", nil))
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(second.Chunks(t)), second.Body)
	require.Equal(t, "Hello, Ada!", chunkOf(t, second.Chunks(t), contracts.ChunkMessage).Content)

	var r sseResponse
	select {
	case r = <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("the first turn's reader did not end")
	}
	requireGoneChat(t, r, "set KORTYX_REDIS_URL")

	fins := f.finals(t, 2)
	byTurn := map[string]chat.ResponseFinalized{}
	for _, fin := range fins {
		byTurn[fin.ClientTurnID] = fin
	}
	require.Equal(t, sessions.Status("failed"), byTurn["t1"].Status)
	require.NotContains(t, byTurn["t1"].Message.Content, "Ada")
	require.Equal(t, sessions.Status("completed"), byTurn["t2"].Status)
	require.Equal(t, "Hello, Ada!", byTurn["t2"].Message.Content)
	require.Equal(t, 2, g.idle(t))
}

// runOf returns the run of the session's head checkpoint's turn.
func runOf(t *testing.T, e *inproc, session string) string {
	t.Helper()
	v := sessionView(t, e, session)
	require.NotEmpty(t, v.Checkpoints)
	cp, err := service(e.c, "").Checkpoint(context.Background(), session, v.Checkpoints[len(v.Checkpoints)-1].ID)
	require.NoError(t, err)
	return cp.RunID
}

// A turn that ended with a question still open is rebuilt from the session when its stream is
// gone: the reader of a restarted broker gets the same interrupt and checkpoint chunks as the
// original response (without event ids), then done; the rebuilt response is finalized as
// interrupted and its question can be answered.
func TestGoneOpenQuestionIsRebuilt(t *testing.T) {
	m := stream.NewMemory(stream.MemoryOptions{})
	e := startWorkerOn(t, m)
	g := serveGone(t, e, m, chat.Options{})
	s := "s-" + taskQueue(t)
	orig := g.chat(t, prompt(s, "t1", "hello", "hi"))
	want := orig.Chunks(t)
	require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(want), orig.Body)

	f := newFinalized()
	restarted := serveGone(t, e, stream.NewMemory(stream.MemoryOptions{}), f.options(chat.Options{}))
	r := restarted.chat(t, prompt(s, "t1", "hello", "hi"))
	require.Equal(t, want, r.Chunks(t), r.Body)
	for _, ev := range r.Events {
		require.Empty(t, ev.ID, "rebuilt chunks have no offset")
	}
	fin := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("interrupted"), fin.Status)
	require.Equal(t, want[2].ID, fin.CheckpointID)

	// The rebuilt question is answerable (through the first process, whose broker has the run).
	next := g.chat(t, resumeBody(s, "t2", want[1], "Ada", nil))
	require.Equal(t, "Hello, Ada!", chunkOf(t, next.Chunks(t), contracts.ChunkMessage).Content)
	require.Equal(t, 1, restarted.idle(t))
	require.Equal(t, 2, g.idle(t))
}

// A reader that leaves (Disconnect "continue") a turn whose chunks are in another process: the
// finalizer does not follow for FinalizeTimeout (10 min) but ends once the stream is gone, and
// finalizes the response as failed with STREAM_GONE.
func TestGoneFinalizerEndsAfterDisconnect(t *testing.T) {
	m1 := stream.NewMemory(stream.MemoryOptions{})
	e := startWorkerOn(t, m1)
	f := newFinalized()
	second := serveGone(t, e, stream.NewMemory(stream.MemoryOptions{}), f.options(chat.Options{Disconnect: "continue"}))
	s := "s-" + taskQueue(t)
	l := (&chatEnv{url: second.url}).open(t, prompt(s, "t1", testagents.EchoWorkflow, "one"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	l.close()
	require.Equal(t, 1, second.idle(t))
	fin := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("failed"), fin.Status)
	require.Len(t, fin.Message.ContentPieces, 1)
	require.Equal(t, contracts.Code("STREAM_GONE"), fin.Message.ContentPieces[0].Failure.Code)
}
