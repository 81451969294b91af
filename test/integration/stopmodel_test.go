package integration_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// reasonAgent is a one-node agent "agent" whose node calls hooks.Reason with the tools, the
// default retry policies and tool chunks on.
func reasonAgent(t *testing.T, id string, toolNames ...string) *workflows.Registry {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: id, Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "reason", Model: providers.Model("fake:test"), Input: in.Text(),
				Tools: toolNames, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}}})
			return workflows.NodeResult{}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	return reg
}

// watchedServer is the fake OpenAI-compatible server behind a handler that records when the
// model request arrives and when the server sees its connection close (the request's context
// ends when the client aborts it).
type watchedServer struct {
	url     string
	arrived chan struct{}
	closed  chan time.Time
}

// newWatchedServer answers every chat completion after a minute (cut short when the client
// goes away): the model request is in flight until the run's cancellation aborts it.
func newWatchedServer(t *testing.T) *watchedServer {
	t.Helper()
	fs := fakeserver.New(func(providers.Request) fake.Turn {
		return fake.Turn{Text: "never", Delay: time.Minute}
	})
	t.Cleanup(fs.Close)
	w := &watchedServer{arrived: make(chan struct{}, 8), closed: make(chan time.Time, 8)}
	target, err := url.Parse(fs.URL())
	require.NoError(t, err)
	h := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.arrived <- struct{}{}
		go func() { <-r.Context().Done(); w.closed <- time.Now() }()
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL + "/v1"
	return w
}

func (w *watchedServer) waitArrived(t *testing.T) {
	t.Helper()
	select {
	case <-w.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the model request never reached the fake provider")
	}
}

// waitHeartbeat waits until the run's model pass has sent its first heartbeat: the SDK sends an
// activity's first heartbeat at once and throttles the later ones, so a cancel after it shows
// how long a cancellation takes to reach a model pass that has been running for a while.
func waitHeartbeat(t *testing.T, runID string) {
	t.Helper()
	eventually(t, 30*time.Second, "the model pass to heartbeat", func() bool {
		d, err := tc.DescribeWorkflow(context.Background(), runID, "")
		require.NoError(t, err)
		for _, a := range d.RawResponse.GetPendingActivities() {
			if a.GetActivityType().GetName() == protocol.ModelActivityName && a.GetLastHeartbeatTime() != nil {
				return true
			}
		}
		return false
	})
}

// closedAfter is how long after t0 the server saw the model request's connection close.
func (w *watchedServer) closedAfter(t *testing.T, t0 time.Time) time.Duration {
	t.Helper()
	select {
	case at := <-w.closed:
		return at.Sub(t0)
	case <-time.After(30 * time.Second):
		t.Fatal("the model request was not aborted within 30 s")
		return 0
	}
}

// startWatchedWorker starts a worker (set up like the programs' workers: newWorker) whose
// provider "fake" is the OpenAI-compatible provider on a watched fake server.
func startWatchedWorker(t *testing.T) (*inproc, *watchedServer) {
	t.Helper()
	ws := newWatchedServer(t)
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	model := openai.New(openai.Options{ID: "fake", BaseURL: ws.url, APIKey: "test"})
	w := newWorker(tc, e.tq, reasonAgent(t, watchedAgent), &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(model)})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e, ws
}

// watchedAgent is the agent of these tests: one Reason call with the default timeouts (a
// model pass's attempt may run 5 minutes), so only the cancellation ends it.
const watchedAgent = "watched"

// cancelBound is the bound the tests hold the abort to: the goal is within 1 s; before the
// worker's heartbeat throttle was shortened it took 7-8 s (80% of the 10 s heartbeat timeout).
const cancelBound = 2 * time.Second

// Item 3: a cancel by the starter (CancelWorkflow) aborts the in-flight provider request
// within a second, not at the next heartbeat 8 s later.
func TestCancelAbortsProviderRequest(t *testing.T) {
	e, ws := startWatchedWorker(t)
	run := startRun(t, e.c, e.tq, watchedAgent, "go")
	ws.waitArrived(t)
	waitHeartbeat(t, run.GetID())
	t0 := time.Now()
	require.NoError(t, e.c.CancelWorkflow(context.Background(), run.GetID(), ""))
	d := ws.closedAfter(t, t0)
	t.Logf("provider request aborted %v after CancelWorkflow", d)
	require.Less(t, d, cancelBound)
	_, err := result(t, run)
	require.True(t, temporal.IsCanceledError(err), "err: %v", err)
}

// startWatchedChat serves the chat route (and its Stop route) on a watched worker.
func startWatchedChat(t *testing.T, o chat.Options) (*chatEnv, *watchedServer) {
	t.Helper()
	e, ws := startWatchedWorker(t)
	o.AllowUnauthenticated = true
	h, err := chat.NewHandler(newService(t, e.c, e.broker, e.tq), o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	mux.Handle("/api/chat/stop", h.StopHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &chatEnv{inproc: e, url: srv.URL}, ws
}

// Item 3: POST /api/chat/stop aborts the in-flight provider request within a second; the
// response ends cancelled, done.
func TestChatStopAbortsProviderRequest(t *testing.T) {
	c, ws := startWatchedChat(t, chat.Options{})
	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", watchedAgent, "go"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	ws.waitArrived(t)
	waitHeartbeat(t, sessionView(t, c.inproc, session).Active.RunID)
	t0 := time.Now()
	resp := post(t, c.url+"/api/chat/stop", map[string]any{"sessionId": session})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var stopped map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stopped))
	resp.Body.Close()
	require.NotEmpty(t, stopped["runId"])
	d := ws.closedAfter(t, t0)
	t.Logf("provider request aborted %v after POST /api/chat/stop", d)
	require.Less(t, d, cancelBound)
	require.Equal(t, contracts.ChunkCancelled, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkDone, l.next(t).chunk(t).Type)
}

// Item 3: a reader that leaves ("cancel", the default) cancels the run, and the
// in-flight provider request is aborted within a second.
func TestChatDisconnectAbortsProviderRequest(t *testing.T) {
	c, ws := startWatchedChat(t, chat.Options{Disconnect: "cancel"})
	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", watchedAgent, "go"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	ws.waitArrived(t)
	waitHeartbeat(t, sessionView(t, c.inproc, session).Active.RunID)
	t0 := time.Now()
	l.close()
	d := ws.closedAfter(t, t0)
	t.Logf("provider request aborted %v after the reader disconnected", d)
	require.Less(t, d, cancelBound)
}

// Issue 35: a message with the policy "interrupt" aborts the running turn's in-flight provider
// request as Stop does (within cancelBound); the turn's reader gets cancelled, done, and the new
// turn's model request arrives.
func TestChatInterruptAbortsProviderRequest(t *testing.T) {
	c, ws := startWatchedChat(t, chat.Options{})
	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", watchedAgent, "go"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	ws.waitArrived(t)
	waitHeartbeat(t, sessionView(t, c.inproc, session).Active.RunID)
	body := prompt(session, "t2", watchedAgent, "go on")
	body["busy"] = "interrupt"
	t0 := time.Now()
	l2 := c.open(t, body) // its turn's model hangs too: the test stops it below
	d := ws.closedAfter(t, t0)
	t.Logf("provider request aborted %v after the interrupting message", d)
	require.Less(t, d, cancelBound)
	require.Equal(t, contracts.ChunkCancelled, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkDone, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkSession, l2.next(t).chunk(t).Type)
	ws.waitArrived(t)
	resp := post(t, c.url+"/api/chat/stop", map[string]any{"sessionId": session})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_ = resp.Body.Close()
}
