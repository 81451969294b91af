package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// httpAnswer is an HTTP answer read to its end.
type httpAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// call sends method to url with body (nil: none) through client and reads the answer.
func call(t *testing.T, client *http.Client, method, url string, body any) httpAnswer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return httpAnswer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// jsonError decodes an error answer, which must be JSON {error, failure}.
func jsonError(t *testing.T, a httpAnswer) errorBody {
	t.Helper()
	require.Equal(t, "application/json", a.Header.Get("Content-Type"), "body: %s", a.Body)
	var eb errorBody
	require.NoError(t, json.Unmarshal(a.Body, &eb), "body: %s", a.Body)
	require.Equal(t, eb.Failure.Message, eb.Error)
	return eb
}

// serveAPI serves the worker's HTTP API (app.ServeHTTP) for e and returns its base URL.
func serveAPI(t *testing.T, e *inproc) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, addr, err := app.ServeHTTP(ctx, "127.0.0.1:0", app.API{Client: e.c, Broker: e.broker, TaskQueue: e.tq, DefaultWorkflow: support.WorkflowID})
	require.NoError(t, err)
	return "http://" + addr
}

// Issue 9 item 6: ids that Temporal cannot carry (non-ASCII, spaces, control characters) are
// refused with 400 INVALID_REQUEST naming the field, on every route, before any Temporal call.
func TestHTTPInvalidIDsAre400(t *testing.T) {
	e := startWorker(t, tc)
	base := serveAPI(t, e)
	client := &http.Client{Timeout: 20 * time.Second}
	bad := map[string]string{
		"e acute": "caf\u00e9", "emoji": "s-\U0001F600", "cjk": "会话", "nbsp": "a\u00a0b",
		"tab": "a\tb", "zero width": "a\u200bb", "too long": strings.Repeat("a", contracts.MaxIDLength+1),
	}
	check := func(name string, a httpAnswer, field string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, a.Status, "%s: %s", name, a.Body)
		eb := jsonError(t, a)
		require.Equal(t, contracts.CodeInvalidRequest, eb.Failure.Code, name)
		require.Len(t, eb.Failure.Issues, 1, name)
		require.Equal(t, []any{field}, eb.Failure.Issues[0].Path, name)
		require.Equal(t, "invalid_id", eb.Failure.Issues[0].Code, name)
		require.Contains(t, eb.Error, field, name)
	}
	for name, id := range bad {
		msg := []map[string]any{{"role": "user", "content": "hi"}}
		check(name+" chat sessionId", call(t, client, http.MethodPost, base+"/api/chat",
			map[string]any{"sessionId": id, "messages": msg}), "sessionId")
		check(name+" chat clientTurnId", call(t, client, http.MethodPost, base+"/api/chat",
			map[string]any{"sessionId": "s-ok", "clientTurnId": id, "messages": msg}), "clientTurnId")
		check(name+" stop", call(t, client, http.MethodPost, base+"/api/chat/stop", map[string]any{"sessionId": id}), "sessionId")
		check(name+" checkpoints list", call(t, client, http.MethodPost, base+"/api/checkpoints",
			map[string]any{"action": "list", "sessionId": id}), "sessionId")
		check(name+" checkpoints get", call(t, client, http.MethodPost, base+"/api/checkpoints",
			map[string]any{"action": "get", "sessionId": "s-ok", "checkpointId": id}), "checkpointId")
		check(name+" checkpoints fork", call(t, client, http.MethodPost, base+"/api/checkpoints",
			map[string]any{"action": "fork", "sessionId": "s-ok", "checkpointId": "cp-1", "newSessionId": id}), "newSessionId")
		check(name+" stream", call(t, client, http.MethodGet, base+"/v1/runs/"+url.PathEscape(id)+"/stream", nil), "runId")
	}
	// The ids the system makes itself pass: a new session's id, and its run's stream.
	r := call(t, client, http.MethodPost, base+"/api/chat", map[string]any{"workflowId": testagents.EchoWorkflow, "stream": false,
		"messages": []map[string]any{{"role": "user", "content": "hi"}}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var buffered sessions.Buffered
	require.NoError(t, json.Unmarshal(r.Body, &buffered))
	require.Regexp(t, `^session-[0-9a-f-]{36}$`, buffered.Chunks[0].SessionID)
	cp := chunkOf(t, buffered.Chunks, contracts.ChunkCheckpoint)
	require.Regexp(t, `^cp-[0-9a-f-]{36}@session-[0-9a-f-]{36}$`, cp.ID)
	var got sessions.Checkpoint
	a := call(t, client, http.MethodPost, base+"/api/checkpoints", map[string]any{"action": "get", "sessionId": buffered.Chunks[0].SessionID, "checkpointId": cp.ID})
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
	require.NoError(t, json.Unmarshal(fromKortyx(a.Body), &got))
	require.Regexp(t, `^run-[0-9a-f-]{36}$`, got.RunID)
	s := call(t, client, http.MethodGet, base+"/v1/runs/"+got.RunID+"/stream?until=response", nil)
	require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
}

// Issue 9 item 12: every error of the HTTP API is JSON {error, failure}, also for unknown paths
// and wrong methods (the API's mux and the stream route's own); /readyz answers JSON.
func TestHTTPMuxErrorsAreJSON(t *testing.T) {
	e := startWorker(t, tc)
	base := serveAPI(t, e)
	client := &http.Client{Timeout: 20 * time.Second}
	for _, tc := range []struct {
		method, path string
		status       int
		code         contracts.Code
		allow        string
	}{
		{http.MethodGet, "/nope", 404, contracts.CodeNotFound, ""},
		{http.MethodPost, "/", 405, contracts.CodeInvalidRequest, "GET, HEAD"}, // GET / is the chat page (docs/web.md)
		{http.MethodGet, "/api/chat/other", 404, contracts.CodeNotFound, ""},
		{http.MethodGet, "/v1/runs/run-1/other", 404, contracts.CodeNotFound, ""},
		{http.MethodGet, "/v1/runs/", 404, contracts.CodeNotFound, ""},
		{http.MethodPost, "/v1/runs/run-1/stream", 405, contracts.CodeInvalidRequest, "GET, HEAD"},
		{http.MethodPost, "/healthz", 405, contracts.CodeInvalidRequest, "GET, HEAD"},
		{http.MethodDelete, "/readyz", 405, contracts.CodeInvalidRequest, "GET, HEAD"},
		{http.MethodGet, "/api/chat", 405, contracts.CodeInvalidRequest, "POST"},
		{http.MethodGet, "/api/chat/stop", 405, contracts.CodeInvalidRequest, "POST"},
		{http.MethodGet, "/api/checkpoints", 405, contracts.CodeInvalidRequest, "POST"},
	} {
		a := call(t, client, tc.method, base+tc.path, nil)
		require.Equal(t, tc.status, a.Status, "%s %s: %s", tc.method, tc.path, a.Body)
		require.Equal(t, tc.code, jsonError(t, a).Failure.Code, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.allow, a.Header.Get("Allow"), "%s %s", tc.method, tc.path)
	}
	a := call(t, client, http.MethodGet, base+"/readyz", nil)
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
	require.Equal(t, "application/json", a.Header.Get("Content-Type"))
	require.JSONEq(t, `{"status":"ready","checks":{"temporal":"ok"}}`, string(a.Body)) // no worker, no Redis in this API
	a = call(t, client, http.MethodGet, base+"/healthz", nil)
	require.Equal(t, http.StatusOK, a.Status)
	require.JSONEq(t, `{"status":"ok"}`, string(a.Body))
}

// Issue 9 item 7: with Temporal gone, the routes answer within seconds (the client gives up
// after 20 s; the SDK alone would wait a minute) with 503 TEMPORAL_UNAVAILABLE, retryable, and
// /readyz says so; /healthz (liveness) still answers ok.
func TestHTTPTemporalUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	own, err := devserver.Start(ctx, devserver.Options{BinaryPath: tcliPath, UIPort: -1, SearchAttributes: protocol.SearchAttributeNames()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = own.Kill() })
	c, err := dial(own.Address())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	e := startWorker(t, c)
	base := serveAPI(t, e)
	client := &http.Client{Timeout: 20 * time.Second}

	session := "s-" + taskQueue(t)
	r := call(t, client, http.MethodPost, base+"/api/chat", map[string]any{"sessionId": session, "workflowId": testagents.EchoWorkflow,
		"stream": false, "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, http.StatusOK, call(t, client, http.MethodGet, base+"/readyz", nil).Status)

	require.NoError(t, own.Kill())
	<-own.Done()
	unavailable := func(name string, a httpAnswer) {
		t.Helper()
		require.Equal(t, http.StatusServiceUnavailable, a.Status, "%s: %s", name, a.Body)
		eb := jsonError(t, a)
		require.Equal(t, contracts.CodeTemporalUnavailable, eb.Failure.Code, name)
		require.Equal(t, "persistence", eb.Failure.Category, name)
		require.True(t, eb.Failure.Retryable, name)
		require.NotContains(t, string(a.Body), "connection refused", name)
	}
	unavailable("readyz", call(t, client, http.MethodGet, base+"/readyz", nil))
	unavailable("chat", call(t, client, http.MethodPost, base+"/api/chat", map[string]any{"sessionId": session,
		"messages": []map[string]any{{"role": "user", "content": "again"}}}))
	unavailable("chat new session", call(t, client, http.MethodPost, base+"/api/chat", map[string]any{"workflowId": testagents.EchoWorkflow,
		"messages": []map[string]any{{"role": "user", "content": "hi"}}}))
	unavailable("stop", call(t, client, http.MethodPost, base+"/api/chat/stop", map[string]any{"sessionId": session}))
	unavailable("checkpoints list", call(t, client, http.MethodPost, base+"/api/checkpoints", map[string]any{"action": "list", "sessionId": session}))
	unavailable("checkpoints rollback", call(t, client, http.MethodPost, base+"/api/checkpoints",
		map[string]any{"action": "rollback", "sessionId": session, "checkpointId": "cp-1"}))
	a := call(t, client, http.MethodGet, base+"/healthz", nil)
	require.Equal(t, http.StatusOK, a.Status)
	require.JSONEq(t, `{"status":"ok"}`, string(a.Body))
}

// idle waits until no turn runs in session (its last turn's end reached the session).
func idle(t *testing.T, c *chatEnv, session string) {
	t.Helper()
	eventually(t, 10*time.Second, "the session to be idle", func() bool { return sessionView(t, c.inproc, session).Active == nil })
}

// serveChat serves another chat route for the worker e, with its own handler (as another
// process would), and returns its environment.
func serveChat(t *testing.T, e *inproc, o chat.Options) *chatEnv {
	t.Helper()
	o.AllowUnauthenticated = true
	h, err := chat.NewHandler(newService(t, e.c, e.broker, e.tq), o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &chatEnv{inproc: e, url: srv.URL}
}

// readRest reads l's events up to [DONE] and returns their chunks' types.
func readRest(t *testing.T, l *liveSSE) []string {
	t.Helper()
	var out []string
	for {
		ev := l.next(t)
		if ev.Data == "[DONE]" {
			return out
		}
		out = append(out, string(ev.chunk(t).Type))
	}
}

// openSlow opens a reader of the slow turn t1 of session and reads it up to its progress chunk.
func openSlow(t *testing.T, c *chatEnv, session string) *liveSSE {
	t.Helper()
	l := c.open(t, prompt(session, "t1", testagents.SlowWorkflow, "work"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkStructuredData, l.next(t).chunk(t).Type)
	return l
}

// Issue 9 item 4: a second reader of the same turn (same clientTurnId: a second tab, an
// overlapping reconnect) that hangs up does not cancel the turn the first still reads; nor does
// the first hanging up while the second reads. The turn runs once, is accepted once and
// finalized once.
func TestChatOneReaderLeavingKeepsTheTurn(t *testing.T) {
	for _, leaver := range []string{"second", "first"} {
		t.Run(leaver+" leaves", func(t *testing.T) {
			f := newFinalized()
			c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
			session := "s-" + taskQueue(t)
			first := openSlow(t, c, session)
			second := openSlow(t, c, session)
			stays := first
			if leaver == "second" {
				second.close()
			} else {
				first.close()
				stays = second
			}
			require.Equal(t, []string{"message", "checkpoint", "done"}, readRest(t, stays))
			fin := f.finals(t, 1)
			require.Equal(t, sessions.Status("completed"), fin[0].Status)
			require.Equal(t, []string{"slow done"}, readLines(t, c.effects))
			f.mu.Lock()
			require.Len(t, f.accepted, 1)
			f.mu.Unlock()
		})
	}
}

// Issue 9 item 4: when the last reader of a turn leaves, the turn is cancelled (default
// Disconnect), and finalized once, cancelled.
func TestChatLastReaderLeavingCancels(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	first := openSlow(t, c, session)
	second := openSlow(t, c, session)
	first.close()
	second.close()
	fin := f.finals(t, 1)
	require.Equal(t, sessions.Status("cancelled"), fin[0].Status)
	eventually(t, 10*time.Second, "the turn to end", func() bool { return sessionView(t, c.inproc, session).Active == nil })
	require.Empty(t, readLines(t, c.effects), "the cancelled run did not finish its work")
	require.Len(t, f.finals(t, 1), 1)
}

// Issue 9 item 4: a reader that reattached to a turn another handler (another process)
// started never cancels it when it leaves, even as the only reader of its handler.
// The other handler does not know the turn: it runs the hooks for it once (docs/chat.md), and
// finalizes it when it ends although its reader left.
func TestChatReattachedReaderNeverCancels(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	f := newFinalized()
	other := serveChat(t, c.inproc, f.options(chat.Options{}))
	session := "s-" + taskQueue(t)
	first := openSlow(t, c, session)
	second := openSlow(t, other, session)
	second.close()
	require.Equal(t, []string{"message", "checkpoint", "done"}, readRest(t, first))
	require.Equal(t, []string{"slow done"}, readLines(t, c.effects))
	require.Equal(t, sessions.Status("completed"), f.finals(t, 1)[0].Status)
	f.mu.Lock()
	require.Len(t, f.accepted, 1)
	f.mu.Unlock()
}

// OnExecution is called once per run attempt, not for the requests that reattach to it.
func TestChatOnExecutionOncePerRunAttempt(t *testing.T) {
	var mu sync.Mutex
	var execs []<-chan struct{}
	c := startChat(t, chat.Options{Disconnect: "continue", OnExecution: func(done <-chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		execs = append(execs, done)
	}}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	body := prompt(session, "t1", testagents.SlowWorkflow, "work")
	l := c.open(t, body)
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	progress := l.next(t)
	l.close()
	r := c.send(t, body, "Last-Event-ID: "+progress.ID)
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(r.Chunks(t)))
	r = c.send(t, body)
	require.Equal(t, []string{"session", "structured-data", "message", "checkpoint", "done"}, types(r.Chunks(t)))
	mu.Lock()
	require.Len(t, execs, 1)
	done := execs[0]
	mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the execution channel did not close")
	}
}

// A turn discarded by a rollback runs again when retried with its clientTurnId: the handler
// sees that its checkpoint is gone, so OnTurnAccepted runs before the new run starts (and its
// failure refuses it, nothing runs).
func TestChatRolledBackTurnRunsAgainWithHooks(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	body := prompt(session, "t1", testagents.EchoWorkflow, "hi")
	require.Equal(t, "Turn 1: hi", sessions.Buffer(c.send(t, body).Chunks(t)).Text)
	var list []sessions.CheckpointSummary
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "list", "sessionId": session}, &list))
	require.Len(t, list, 2)
	var rb sessions.RollbackResult
	idle(t, c, session)
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "rollback", "sessionId": session, "checkpointId": list[0].ID}, &rb))

	f.failing("turn-accepted")
	r := c.send(t, body)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Body)
	require.Equal(t, contracts.CodeChatLifecycleHookFailed, decodeError(t, r).Failure.Code)
	v := sessionView(t, c.inproc, session)
	require.Nil(t, v.Active)
	require.Len(t, v.Checkpoints, 1, "nothing ran")

	f.mu.Lock()
	f.fail["turn-accepted"] = false
	f.mu.Unlock()
	require.Equal(t, "Turn 1: hi", sessions.Buffer(c.send(t, body).Chunks(t)).Text, "run again from the session start")
	f.mu.Lock()
	require.Len(t, f.accepted, 3)
	f.mu.Unlock()
	require.Len(t, f.finals(t, 2), 2)
	require.Len(t, sessionView(t, c.inproc, session).Checkpoints, 2)
}

// When the session runs a new attempt where the handler expected the turn it knew (the session
// remembers only its last protocol.MaxRecentTurns turns), OnTurnAccepted runs right after the
// start; its failure refuses the request with 503 and cancels the run (which, this fast, may have
// ended first).
func TestChatUnexpectedNewAttemptRunsTurnAcceptedLate(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	first := prompt(session, "t0", testagents.EchoWorkflow, "hi")
	require.Equal(t, http.StatusOK, c.send(t, first).Status)
	for i := 1; i <= protocol.MaxRecentTurns; i++ {
		idle(t, c, session)
		r := c.send(t, prompt(session, "t"+strconv.Itoa(i), "", "hi"))
		require.Equal(t, http.StatusOK, r.Status, r.Body)
	}
	idle(t, c, session)
	f.finals(t, protocol.MaxRecentTurns+1)

	f.failing("turn-accepted")
	r := c.send(t, first)
	require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Body)
	require.Equal(t, contracts.CodeChatLifecycleHookFailed, decodeError(t, r).Failure.Code)
	f.mu.Lock()
	require.Len(t, f.accepted, protocol.MaxRecentTurns+2, "every turn once, and the late call for the new attempt")
	f.mu.Unlock()
	eventually(t, 10*time.Second, "the new run to end", func() bool { return sessionView(t, c.inproc, session).Active == nil })
	require.Len(t, f.finals(t, protocol.MaxRecentTurns+1), protocol.MaxRecentTurns+1, "the refused attempt is not finalized")
	eventually(t, 10*time.Second, "the session's runs to be listed", func() bool { return sessionRuns(t, session) == protocol.MaxRecentTurns+2 })
	require.Equal(t, protocol.MaxRecentTurns+2, sessionRuns(t, session), "the session did start a new run before the hook ran")
}

// Issue 9 item 5 (seed 001: hooks are attempted once per run attempt): a retry and a reconnect
// with the clientTurnId of a turn that ended with a checkpoint get its response again without
// running OnTurnAccepted or OnResponseFinalized again; a turn refused by OnTurnAccepted is
// accepted by its retry.
func TestChatHooksOncePerRunAttempt(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	body := prompt(session, "t1", testagents.EchoWorkflow, "hi")
	want := []string{"session", "message", "checkpoint", "done"}
	require.Equal(t, want, types(c.send(t, body).Chunks(t)))
	first := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("completed"), first.Status)

	require.Equal(t, want, types(c.send(t, body).Chunks(t)), "a retry")
	require.Equal(t, want, types(c.send(t, body, "Last-Event-ID: 0").Chunks(t)), "a reconnect")
	buffered := prompt(session, "t1", testagents.EchoWorkflow, "hi")
	buffered["stream"] = false
	r := c.send(t, buffered)
	require.Equal(t, http.StatusOK, r.Status)
	f.mu.Lock()
	require.Len(t, f.accepted, 1)
	require.Len(t, f.final, 1)
	f.mu.Unlock()

	// Refused by OnTurnAccepted, then retried: two attempts of the hook, one run.
	f.failing("turn-accepted")
	idle(t, c, session)
	body = prompt(session, "t2", testagents.EchoWorkflow, "again")
	require.Equal(t, http.StatusServiceUnavailable, c.send(t, body).Status)
	f.mu.Lock()
	f.fail["turn-accepted"] = false
	f.mu.Unlock()
	require.Equal(t, want, types(c.send(t, body).Chunks(t)))
	require.Equal(t, want, types(c.send(t, body).Chunks(t)), "a retry")
	fin := f.finals(t, 2)
	require.NotEqual(t, first.RunID, fin[1].RunID)
	f.mu.Lock()
	require.Len(t, f.accepted, 3)
	require.Equal(t, []string{"t1", "t2", "t2"}, []string{f.accepted[0].ClientTurnID, f.accepted[1].ClientTurnID, f.accepted[2].ClientTurnID})
	f.mu.Unlock()
	require.Len(t, sessionView(t, c.inproc, session).Checkpoints, 3, "session start, t1, t2")
}

// Issue 9 item 5: a retry that arrives while the first request of its turn is still in
// OnTurnAccepted waits for it, and then reads the same run: the hooks run once.
func TestChatRetryDuringTurnAcceptedRunsHooksOnce(t *testing.T) {
	f := newFinalized()
	entered, unblock, secondIn := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var accepts, authorized atomic.Int32
	o := f.options(chat.Options{})
	record := o.OnTurnAccepted
	o.OnTurnAccepted = func(ctx context.Context, ev chat.TurnAccepted) error {
		if err := record(ctx, ev); err != nil {
			return err
		}
		if accepts.Add(1) == 1 {
			close(entered)
			<-unblock // only the first call blocks
		}
		return nil
	}
	o.Authorize = func(*http.Request, sessions.Access) error {
		if authorized.Add(1) == 2 {
			close(secondIn) // the retry is past authorization, right before its turn is decided
		}
		return nil
	}
	c := startChat(t, o, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	body := prompt(session, "t1", testagents.EchoWorkflow, "hi")
	results := make(chan sseResponse, 2)
	go func() { results <- c.send(t, body) }()
	<-entered
	go func() { results <- c.send(t, body) }()
	<-secondIn
	close(unblock)
	want := []string{"session", "message", "checkpoint", "done"}
	for range 2 {
		r := <-results
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		require.Equal(t, want, types(r.Chunks(t)))
	}
	require.Len(t, f.finals(t, 1), 1)
	f.mu.Lock()
	require.Len(t, f.accepted, 1)
	f.mu.Unlock()
	require.Len(t, sessionView(t, c.inproc, session).Checkpoints, 2, "one run")
}
