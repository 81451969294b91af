package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/kortyx-go/kortyx/stream"
	"go.temporal.io/sdk/client"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// newService is the session service of the routes a test serves: Temporal client c, broker b,
// task queue tq.
func newService(t *testing.T, c client.Client, b stream.Broker, tq string) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Options{Client: c, Broker: b, TaskQueue: tq})
	require.NoError(t, err)
	return svc
}

// chatEnv is a worker plus the chat and checkpoint routes on a real HTTP server.
type chatEnv struct {
	*inproc
	url string
}

// startChat starts a worker and serves the chat route (at /api/chat, its Stop route at
// /api/chat/stop) and the checkpoint route (at /api/checkpoints). The options get the worker's
// client, broker and task queue through one session service, and AllowUnauthenticated when
// they have no Authorize.
func startChat(t *testing.T, o chat.Options, co chat.CheckpointOptions) *chatEnv {
	t.Helper()
	e := startWorker(t, tc)
	svc := newService(t, e.c, e.broker, e.tq)
	o.AllowUnauthenticated = o.Authorize == nil
	h, err := chat.NewHandler(svc, o)
	require.NoError(t, err)
	co.AllowUnauthenticated = co.Authorize == nil
	ch, err := chat.NewCheckpointHandler(svc, co)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	mux.Handle("/api/chat/stop", h.StopHandler())
	mux.Handle("/api/checkpoints", ch)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &chatEnv{inproc: e, url: srv.URL}
}

// event is one server-sent event: its id ("" when it has none) and data.
type event struct {
	ID   string
	Data string
}

// chunk decodes the event's data.
func (ev event) chunk(t *testing.T) contracts.Chunk {
	t.Helper()
	var c contracts.Chunk
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &c), "data: %s", ev.Data)
	return c
}

// sseResponse is a chat response read to its end.
type sseResponse struct {
	Status int
	Header http.Header
	Body   string
	Events []event
	// ParseErr is the error of [sseclient.ReadSSE] on an event stream without [DONE].
	ParseErr error
}

// Chunks are the chunks of the response's events, without the final [DONE].
func (r sseResponse) Chunks(t *testing.T) []contracts.Chunk {
	t.Helper()
	var out []contracts.Chunk
	for _, ev := range r.Events {
		if ev.Data != "[DONE]" {
			out = append(out, ev.chunk(t))
		}
	}
	return out
}

// parseSSE reads an SSE body with [sseclient.ReadSSE] into its events, the final [DONE] included;
// a body that is not an event stream has none. The error is ReadSSE's (nil at [DONE]); the
// events read before it are kept.
func parseSSE(header http.Header, body string) ([]event, error) {
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt != "text/event-stream" {
		return nil, nil
	}
	var out []event
	err := sseclient.ReadSSE(strings.NewReader(body), func(id int64, c contracts.Chunk) error {
		out = append(out, chunkEvent(id, c))
		return nil
	})
	if err == nil {
		out = append(out, event{Data: "[DONE]"})
	}
	return out, err
}

// chunkEvent is the event of a chunk read by [sseclient.ReadSSE] (id 0: the event had none).
func chunkEvent(id int64, c contracts.Chunk) event {
	ev := event{Data: string(must(json.Marshal(c)))}
	if id > 0 {
		ev.ID = strconv.FormatInt(id, 10)
	}
	return ev
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// post sends a JSON body (a string is sent as is) with optional headers "Key: value".
func post(t *testing.T, url string, body any, headers ...string) *http.Response {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		b, err = json.Marshal(v)
		require.NoError(t, err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set(httpwire.ResumableHeader, "1") // these tests read offsets; the Kortyx framing is read in kortyxwire_test.go
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	require.NoError(t, err)
	return resp
}

// send posts a chat request and reads the whole response.
func (c *chatEnv) send(t *testing.T, body any, headers ...string) sseResponse {
	t.Helper()
	resp := post(t, c.url+"/api/chat", body, headers...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	events, perr := parseSSE(resp.Header, string(b))
	return sseResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Events: events, ParseErr: perr}
}

// checkpoints posts a checkpoint route request and decodes its answer into out.
func (c *chatEnv) checkpoints(t *testing.T, body any, out any, headers ...string) int {
	t.Helper()
	resp := post(t, c.url+"/api/checkpoints", body, headers...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(fromKortyx(b), out), "body: %s", b)
	}
	return resp.StatusCode
}

// errorBody is the JSON body of a refused request.
type errorBody struct {
	Error   string            `json:"error"`
	Failure contracts.Failure `json:"failure"`
}

func decodeError(t *testing.T, r sseResponse) errorBody {
	t.Helper()
	var eb errorBody
	require.NoError(t, json.Unmarshal([]byte(r.Body), &eb), "body: %s", r.Body)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	return eb
}

func prompt(session, clientTurn, wf, text string) map[string]any {
	body := map[string]any{"messages": []map[string]any{{"role": "user", "content": text}}}
	if session != "" {
		body["sessionId"] = session
	}
	if clientTurn != "" {
		body["clientTurnId"] = clientTurn
	}
	if wf != "" {
		body["workflowId"] = wf
	}
	return body
}

// resumeBody answers the interrupt chunk ask with the given resume fields.
func resumeBody(session, clientTurn string, ask contracts.Chunk, content string, fields map[string]any) map[string]any {
	resume := map[string]any{"token": ask.ResumeToken, "requestId": ask.RequestID}
	for k, v := range fields {
		resume[k] = v
	}
	body := map[string]any{"sessionId": session, "messages": []map[string]any{
		{"role": "user", "content": content, "metadata": map[string]any{"resume": resume}}}}
	if clientTurn != "" {
		body["clientTurnId"] = clientTurn
	}
	return body
}

func chunkOf(t *testing.T, chunks []contracts.Chunk, typ contracts.ChunkType) contracts.Chunk {
	t.Helper()
	for _, c := range chunks {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s chunk in %v", typ, types(chunks))
	return contracts.Chunk{}
}

// Scenarios 1 and 32: a turn over SSE ends with checkpoint and done, then [DONE]; every chunk
// of the run carries its stream offset as the event id; the next turn of the session starts
// from the head state (the echo agent counts turns in workflow state).
func TestChatSSETurnsCheckpointEachTurn(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)

	r := c.send(t, prompt(session, "", testagents.EchoWorkflow, "  hi  "))
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "text/event-stream", r.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", r.Header.Get("Cache-Control"))
	require.Equal(t, "[DONE]", r.Events[len(r.Events)-1].Data)
	require.True(t, strings.HasSuffix(r.Body, "data: [DONE]\n\n"))
	chunks := r.Chunks(t)
	t.Logf("turn 1: %v", types(chunks))
	require.Equal(t, contracts.ChunkSession, chunks[0].Type)
	require.Equal(t, session, chunks[0].SessionID)
	require.Equal(t, []string{"checkpoint", "done"}, types(chunks)[len(chunks)-2:])
	require.Empty(t, r.Events[0].ID, "the session chunk is not part of the run's stream")
	prev := int64(-1)
	for _, ev := range r.Events[1 : len(r.Events)-1] {
		id, err := strconv.ParseInt(ev.ID, 10, 64)
		require.NoError(t, err, "event %q has no offset", ev.Data)
		require.Greater(t, id, prev)
		prev = id
	}
	require.Equal(t, "Turn 1: hi", sessions.Buffer(chunks).Text)
	cp1 := chunkOf(t, chunks, contracts.ChunkCheckpoint)
	require.Equal(t, 1, *cp1.TurnIndex)

	r = c.send(t, prompt(session, "", "", "again"))
	chunks = r.Chunks(t)
	require.Equal(t, "Turn 2: again", sessions.Buffer(chunks).Text, "the second turn starts from the head's workflow state")
	cp2 := chunkOf(t, chunks, contracts.ChunkCheckpoint)
	require.Equal(t, 2, *cp2.TurnIndex)

	var list []sessions.Checkpoint
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "list", "sessionId": session}, &list))
	require.Len(t, list, 3)
	require.Equal(t, []string{list[1].ID, list[2].ID}, []string{cp1.ID, cp2.ID})
	require.Equal(t, []int{0, 1, 2}, []int{list[0].TurnIndex, list[1].TurnIndex, list[2].TurnIndex})
	require.Equal(t, cp1.ID, list[2].ParentCheckpointID)
}

// Scenario 2: stream:false returns {chunks, text, structured}; two text segments join with one
// space.
func TestChatBufferedJoinsSegments(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	body := prompt("s-"+taskQueue(t), "", testagents.SpeakerWorkflow, "speak")
	body["stream"] = false
	r := c.send(t, body)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	var got sessions.Buffered
	require.NoError(t, json.Unmarshal([]byte(r.Body), &got))
	require.Equal(t, "Hello world", got.Text)
	require.Empty(t, got.Structured)
	require.Equal(t, "session", string(got.Chunks[0].Type))
	require.Equal(t, []string{"text-start", "text-delta", "text-end", "text-start", "text-delta", "text-end", "checkpoint", "done"},
		types(got.Chunks[1:]))
	require.NotEqual(t, got.Chunks[1].SegmentID+got.Chunks[1].OpID, got.Chunks[4].SegmentID+got.Chunks[4].OpID)
}

// Scenarios 9, 10 and 12: a text question answered through metadata.resume.selected, then a
// choice; code before the first question runs once; a wrong request id, a token of another
// session and a consumed token are refused without losing the question.
func TestChatResumeThroughMetadata(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)

	r := c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello"))
	chunks := r.Chunks(t)
	require.Equal(t, []string{"session", "structured-data", "interrupt", "checkpoint", "done"}, types(chunks))
	name := chunkOf(t, chunks, contracts.ChunkInterrupt)

	// Another session with its own question: its token is no good here, and ours not there.
	other := "s2-" + taskQueue(t)
	otherAsk := chunkOf(t, c.send(t, prompt(other, "", testagents.EffectsWorkflow, "hello")).Chunks(t), contracts.ChunkInterrupt)
	r = c.send(t, resumeBody(session, "", otherAsk, "Eve", nil))
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	require.Equal(t, contracts.CodeInvalidResume, decodeError(t, r).Failure.Code)
	r = c.send(t, resumeBody(other, "", name, "Eve", nil))
	require.Equal(t, contracts.CodeInvalidResume, decodeError(t, r).Failure.Code)

	// The right token with a wrong request id.
	wrong := name
	wrong.RequestID = "req-wrong"
	r = c.send(t, resumeBody(session, "", wrong, "Ada", nil))
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	require.Equal(t, contracts.CodeResumeMismatch, decodeError(t, r).Failure.Code)

	// The answer as selected (a string): the next question comes.
	r = c.send(t, resumeBody(session, "t2", name, "", map[string]any{"selected": "Ada"}))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	chunks = r.Chunks(t)
	require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(chunks))
	plan := chunkOf(t, chunks, contracts.ChunkInterrupt)
	require.NotEqual(t, name.ResumeToken, plan.ResumeToken)
	require.Equal(t, 2, *chunkOf(t, chunks, contracts.ChunkCheckpoint).TurnIndex)

	// The consumed token is refused; the same answer turn asked again gets its response back,
	// and nothing runs twice.
	r = c.send(t, resumeBody(session, "", name, "Bob", nil))
	require.Equal(t, contracts.CodeInvalidResume, decodeError(t, r).Failure.Code)
	r = c.send(t, resumeBody(session, "t2", name, "", map[string]any{"selected": "Ada"}))
	require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(r.Chunks(t)))
	require.Equal(t, plan.ResumeToken, chunkOf(t, r.Chunks(t), contracts.ChunkInterrupt).ResumeToken)

	// An invalid answer is refused by the run; the question stays open.
	r = c.send(t, resumeBody(session, "t3x", plan, "", map[string]any{"selected": "gold"}))
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	require.Equal(t, contracts.CodeInvalidResponse, decodeError(t, r).Failure.Code)
	require.Nil(t, sessionView(t, c.inproc, session).Active)

	// The choice as {choice: {id}}: the node completes with both answers.
	r = c.send(t, resumeBody(session, "t3", plan, "", map[string]any{"choice": map[string]any{"id": "pro"}}))
	chunks = r.Chunks(t)
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(chunks))
	require.Equal(t, "Welcome Ada, you are on pro.", sessions.Buffer(chunks).Text)
	require.Equal(t, []string{"before", "before", "between Ada", "after pro"}, readLines(t, c.effects),
		"the code before the first question ran once per session (two sessions)")
}

// Scenario 11: a multi-choice question resumed with choices [{id}, {id}] gets both ids.
func TestChatMultiChoiceResume(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	ask := chunkOf(t, c.send(t, prompt(session, "", testagents.MultiWorkflow, "order")).Chunks(t), contracts.ChunkInterrupt)
	var in contracts.InterruptInput
	require.NoError(t, json.Unmarshal(ask.Input, &in))
	require.Equal(t, contracts.InterruptMultiChoice, in.Kind)
	r := c.send(t, resumeBody(session, "", ask, "", map[string]any{"choices": []map[string]any{{"id": "cheese"}, {"id": "basil"}}}))
	require.Equal(t, "Picked cheese, basil.", sessions.Buffer(r.Chunks(t)).Text)
}

// Scenario 13: cancel:true ends the run: the response is cancelled, done (issue 2's rule, where
// Kortyx sends done alone: see docs/architecture.md), the token is gone, and the response is
// finalized cancelled.
func TestChatResumeCancel(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	ask := chunkOf(t, c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello")).Chunks(t), contracts.ChunkInterrupt)
	r := c.send(t, resumeBody(session, "t2", ask, "", map[string]any{"cancel": true}))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, []string{"session", "cancelled", "done"}, types(r.Chunks(t)))
	require.Equal(t, sessions.Status("cancelled"), f.finals(t, 2)[1].Status)
	r = c.send(t, resumeBody(session, "t3", ask, "Ada", nil))
	require.Equal(t, contracts.CodeInvalidResume, decodeError(t, r).Failure.Code)
	require.Empty(t, sessionView(t, c.inproc, session).Pending)
}

// Scenario 12 over HTTP: two concurrent resumes with one token: exactly one streams the next
// question, the other is refused with a typed error.
func TestChatConcurrentResumesOneWins(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	ask := chunkOf(t, c.send(t, prompt(session, "", testagents.EffectsWorkflow, "hello")).Chunks(t), contracts.ChunkInterrupt)
	var wg sync.WaitGroup
	res := make([]sseResponse, 3)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = c.send(t, resumeBody(session, "", ask, "Ada", nil))
		}()
	}
	wg.Wait()
	wins := 0
	for _, r := range res {
		if r.Status == http.StatusOK {
			wins++
			require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(r.Chunks(t)))
			continue
		}
		code := decodeError(t, r).Failure.Code
		require.Contains(t, []contracts.Code{contracts.CodeSessionBusy, contracts.CodeInvalidResume}, code, r.Body)
	}
	require.Equal(t, 1, wins)
	require.Equal(t, []string{"before", "between Ada"}, readLines(t, c.effects))
}

// liveSSE reads a chat response event by event.
type liveSSE struct {
	resp   *http.Response
	events chan event // closed after [DONE] or when the stream fails (err)
	err    error
	gone   chan struct{} // closed by close
	once   sync.Once
	cancel context.CancelFunc
}

func (c *chatEnv) open(t *testing.T, body any, headers ...string) *liveSSE {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/api/chat", bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set(httpwire.ResumableHeader, "1") // these tests read offsets; the Kortyx framing is read in kortyxwire_test.go
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	l := &liveSSE{resp: resp, events: make(chan event), gone: make(chan struct{}), cancel: cancel}
	go l.read()
	t.Cleanup(l.close)
	return l
}

// read parses the stream with [sseclient.ReadSSE], handing each event to next.
func (l *liveSSE) read() {
	defer close(l.events)
	send := func(ev event) error {
		select {
		case l.events <- ev:
			return nil
		case <-l.gone:
			return context.Canceled
		}
	}
	err := sseclient.ReadSSE(l.resp.Body, func(id int64, c contracts.Chunk) error { return send(chunkEvent(id, c)) })
	if err == nil {
		err = send(event{Data: "[DONE]"})
	}
	l.err = err
}

// next returns the next event.
func (l *liveSSE) next(t *testing.T) event {
	t.Helper()
	ev, ok := <-l.events
	if !ok {
		t.Fatalf("the stream ended: %v", l.err)
	}
	return ev
}

// close disconnects the reader.
func (l *liveSSE) close() {
	l.once.Do(func() { close(l.gone) })
	l.cancel()
	_ = l.resp.Body.Close()
}

// finalized collects the lifecycle hooks' calls.
type finalized struct {
	mu       sync.Mutex
	accepted []chat.TurnAccepted
	final    []chat.ResponseFinalized
	errs     []chat.LifecycleError
	forked   []chat.Forked
	rolled   []chat.RolledBack
	fail     map[string]bool
}

func newFinalized() *finalized { return &finalized{fail: map[string]bool{}} }

func (f *finalized) failing(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[p] = true
}

func (f *finalized) hookErr(p string) error {
	if f.fail[p] {
		return errors.New("the transcript database is down")
	}
	return nil
}

func (f *finalized) options(o chat.Options) chat.Options {
	o.OnTurnAccepted = func(ctx context.Context, ev chat.TurnAccepted) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.accepted = append(f.accepted, ev)
		return f.hookErr("turn-accepted")
	}
	o.OnResponseFinalized = func(ctx context.Context, ev chat.ResponseFinalized) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.final = append(f.final, ev)
		return f.hookErr("response-finalized")
	}
	o.OnLifecycleError = func(ev chat.LifecycleError) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.errs = append(f.errs, ev)
	}
	return o
}

func (f *finalized) checkpointOptions() chat.CheckpointOptions {
	return chat.CheckpointOptions{
		OnForked: func(ctx context.Context, ev chat.Forked) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.forked = append(f.forked, ev)
			return f.hookErr("forked")
		},
		OnRolledBack: func(ctx context.Context, ev chat.RolledBack) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.rolled = append(f.rolled, ev)
			return f.hookErr("rolled-back")
		},
		OnLifecycleError: func(ev chat.LifecycleError) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.errs = append(f.errs, ev)
		},
	}
}

// finals waits until n responses were finalized and returns them.
func (f *finalized) finals(t *testing.T, n int) []chat.ResponseFinalized {
	t.Helper()
	eventually(t, 30*time.Second, "responses to be finalized", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.final) >= n
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.final, n)
	return append([]chat.ResponseFinalized(nil), f.final...)
}

func (f *finalized) lifecycleErrors() []chat.LifecycleError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chat.LifecycleError(nil), f.errs...)
}

// noSession checks that nothing ran in session id: no session workflow, or one that never
// started a turn (a refused first turn; it ends by itself).
func noSession(t *testing.T, c *chatEnv, id string) {
	t.Helper()
	v, err := service(c.c, "").View(context.Background(), id)
	if err != nil {
		require.Equal(t, contracts.CodeInvalidSession, contracts.CodeOf(err), "err: %v", err)
		return
	}
	require.Empty(t, v.Checkpoints)
	require.Nil(t, v.Active)
	require.Empty(t, v.Pending)
}

// Scenario 39: with lifecycle hooks, a request without clientTurnId or sessionId, or whose last
// message is not the user's, is refused with 400 INVALID_REQUEST, and nothing runs.
func TestChatHooksNeedIDs(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	for name, body := range map[string]map[string]any{
		"no clientTurnId": prompt(session, "", testagents.EchoWorkflow, "hi"),
		"no sessionId":    prompt("", "t1", testagents.EchoWorkflow, "hi"),
		"blank ids":       prompt(" ", " ", testagents.EchoWorkflow, "hi"),
		"last from assistant": {"sessionId": session, "clientTurnId": "t1", "workflowId": testagents.EchoWorkflow,
			"messages": []map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}}},
	} {
		r := c.send(t, body)
		require.Equal(t, http.StatusBadRequest, r.Status, name)
		require.Equal(t, contracts.CodeInvalidRequest, decodeError(t, r).Failure.Code, name)
	}
	noSession(t, c, session)
	require.Empty(t, f.accepted)
	require.Empty(t, f.final)
}

// Scenario 40: OnTurnAccepted fails: 503 with a typed persistence failure, no run, and one
// OnLifecycleError with phase turn-accepted.
func TestChatTurnAcceptedFailureStartsNothing(t *testing.T) {
	f := newFinalized()
	f.failing("turn-accepted")
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	r := c.send(t, prompt(session, "t1", testagents.EchoWorkflow, "hi"))
	require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Body)
	eb := decodeError(t, r)
	require.Equal(t, contracts.CodeChatLifecycleHookFailed, eb.Failure.Code)
	require.Equal(t, "persistence", eb.Failure.Category)
	require.NotContains(t, r.Body, "transcript database", "the hook's own error stays on the server")
	noSession(t, c, session)
	errs := f.lifecycleErrors()
	require.Len(t, errs, 1)
	require.Equal(t, "turn-accepted", errs[0].Phase)
	require.Equal(t, "t1", errs[0].ClientTurnID)
	require.Equal(t, contracts.CodeChatLifecycleHookFailed, contracts.CodeOf(errs[0].Err))
	require.ErrorContains(t, errors.Unwrap(errs[0].Err), "transcript database is down")
	require.Empty(t, f.final)
}

// Scenario 41: an interrupted turn is finalized with status interrupted, its ordered pieces
// (structured data, then the question with its resume token) and the checkpoint id; the
// answered turn is finalized completed. A failing OnResponseFinalized changes nothing in the
// SSE body and reaches OnLifecycleError once.
func TestChatResponseFinalized(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)

	r := c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello"))
	chunks := r.Chunks(t)
	ask := chunkOf(t, chunks, contracts.ChunkInterrupt)
	cp := chunkOf(t, chunks, contracts.ChunkCheckpoint)
	fin := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("interrupted"), fin.Status)
	require.Equal(t, session, fin.SessionID)
	require.Equal(t, "t1", fin.ClientTurnID)
	require.Equal(t, cp.ID, fin.CheckpointID)
	require.Equal(t, cp.ID, fin.Message.CheckpointID)
	require.Equal(t, 1, *fin.Message.CheckpointTurnIndex)
	require.Equal(t, "t1:assistant", fin.Message.ID)
	require.Equal(t, "assistant", fin.Message.Role)
	require.Len(t, fin.Message.ContentPieces, 2)
	require.Equal(t, "structured", fin.Message.ContentPieces[0].Type)
	piece := fin.Message.ContentPieces[1]
	require.Equal(t, "interrupt", piece.Type)
	require.Equal(t, ask.ResumeToken, piece.ResumeToken)
	require.Equal(t, ask.RequestID, piece.RequestID)
	require.Equal(t, "What is your name?", piece.Question)
	accepted := f.accepted[0]
	require.Equal(t, "prompt", accepted.Kind)
	require.Equal(t, "hello", accepted.UserMessage.Content)

	// The answer's response fails to save: same body as without hooks, one lifecycle error.
	f.failing("response-finalized")
	r = c.send(t, resumeBody(session, "t2", ask, "Ada", nil))
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(r.Chunks(t)))
	require.True(t, strings.HasSuffix(r.Body, "data: [DONE]\n\n"))
	fin = f.finals(t, 2)[1]
	require.Equal(t, sessions.Status("interrupted"), fin.Status)
	require.Equal(t, "interrupt-response", f.accepted[1].Kind)
	errs := f.lifecycleErrors()
	require.Len(t, errs, 1)
	require.Equal(t, "response-finalized", errs[0].Phase)
	require.Equal(t, "t2", errs[0].ClientTurnID)

	plan := chunkOf(t, r.Chunks(t), contracts.ChunkInterrupt)
	r = c.send(t, resumeBody(session, "t3", plan, "", map[string]any{"selected": []string{"basic"}}))
	require.Equal(t, "Welcome Ada, you are on basic.", sessions.Buffer(r.Chunks(t)).Text)
	fin = f.finals(t, 3)[2]
	require.Equal(t, sessions.Status("completed"), fin.Status)
	require.Equal(t, "Welcome Ada, you are on basic.", fin.Message.Content)
	require.Equal(t, 3, *fin.Message.CheckpointTurnIndex)
	require.Len(t, f.lifecycleErrors(), 2)
	recordHistory(t, tc, "session-chat", protocol.SessionWorkflowID(session))
	recordHistory(t, tc, "effects-session-run", fin.RunID)
}

// Scenario 42: with Disconnect continue, a reader that leaves mid-stream does not cancel the
// run: it completes, its checkpoint is committed, and the response is finalized completed;
// OnExecution's channel closes after the finalization.
func TestChatDisconnectContinue(t *testing.T) {
	f := newFinalized()
	var mu sync.Mutex
	var execs []<-chan struct{}
	o := f.options(chat.Options{Disconnect: "continue", OnExecution: func(done <-chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		execs = append(execs, done)
	}})
	c := startChat(t, o, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", testagents.SlowWorkflow, "work"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkStructuredData, l.next(t).chunk(t).Type)
	l.close()

	fin := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("completed"), fin.Status)
	require.Equal(t, "Finished.", fin.Message.Content)
	require.NotEmpty(t, fin.CheckpointID)
	require.Equal(t, []string{"slow done"}, readLines(t, c.effects))
	mu.Lock()
	require.Len(t, execs, 1)
	done := execs[0]
	mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the execution channel did not close")
	}
	require.Equal(t, fin.CheckpointID, sessionView(t, c.inproc, session).Head)
}

// The default Disconnect cancels the run of a reader that leaves; the response is finalized
// cancelled.
func TestChatDisconnectCancels(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", testagents.SlowWorkflow, "work"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkStructuredData, l.next(t).chunk(t).Type)
	l.close()
	fin := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("cancelled"), fin.Status)
	time.Sleep(testagents.SlowFor)
	require.Empty(t, readLines(t, c.effects), "the cancelled run did not finish its work")
	eventually(t, 10*time.Second, "the turn to end", func() bool { return sessionView(t, c.inproc, session).Active == nil })
}

// The Stop route cancels the session's active run: the open response ends cancelled, done.
func TestChatStopRoute(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", testagents.SlowWorkflow, "work"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkStructuredData, l.next(t).chunk(t).Type)
	resp := post(t, c.url+"/api/chat/stop", map[string]any{"sessionId": session})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var stopped map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stopped))
	resp.Body.Close()
	require.NotEmpty(t, stopped["runId"])
	require.Equal(t, contracts.ChunkCancelled, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkDone, l.next(t).chunk(t).Type)
	require.Equal(t, "[DONE]", l.next(t).Data)
	require.Equal(t, sessions.Status("cancelled"), f.finals(t, 1)[0].Status)
	require.Empty(t, readLines(t, c.effects))

	// Nothing is running now.
	resp = post(t, c.url+"/api/chat/stop", map[string]any{"sessionId": session})
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stopped))
	resp.Body.Close()
	require.Empty(t, stopped["runId"])
}

// A reader that reconnects with the same clientTurnId and Last-Event-ID gets the rest of the
// response, without duplicates and without a second run.
func TestChatReconnectWithLastEventID(t *testing.T) {
	o := chat.Options{Disconnect: "continue", OnExecution: func(<-chan struct{}) {}}
	c := startChat(t, o, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	body := prompt(session, "t1", testagents.SlowWorkflow, "work")
	l := c.open(t, body)
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	progress := l.next(t)
	require.Equal(t, contracts.ChunkStructuredData, progress.chunk(t).Type)
	require.NotEmpty(t, progress.ID)
	l.close()

	r := c.send(t, body, "Last-Event-ID: "+progress.ID)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, []string{"session", "message", "checkpoint", "done"}, types(r.Chunks(t)))
	id, _ := strconv.Atoi(progress.ID)
	next, _ := strconv.Atoi(r.Events[1].ID)
	require.Greater(t, next, id)

	// The whole response again, without Last-Event-ID; still one run.
	r = c.send(t, body)
	require.Equal(t, []string{"session", "structured-data", "message", "checkpoint", "done"}, types(r.Chunks(t)))
	require.Equal(t, []string{"slow done"}, readLines(t, c.effects))
	require.Len(t, sessionView(t, c.inproc, session).Checkpoints, 2)
}

// Scenarios 33, 34 and 43 through the checkpoint route: fork an interrupted checkpoint into a
// new session (new token), roll the source back to it (the later question's token is
// invalidated, the old question answerable again), answer both differently; OnForked and
// OnRolledBack get the ids, and their failure leaves the HTTP result alone.
func TestChatCheckpointRouteRollbackFork(t *testing.T) {
	f := newFinalized()
	c := startChat(t, chat.Options{}, f.checkpointOptions())
	session := "s-" + taskQueue(t)

	chunks := c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello")).Chunks(t)
	name := chunkOf(t, chunks, contracts.ChunkInterrupt)
	progress := chunkOf(t, chunks, contracts.ChunkStructuredData)
	cp1 := chunkOf(t, chunks, contracts.ChunkCheckpoint)
	chunks = c.send(t, resumeBody(session, "t2", name, "Ada", nil)).Chunks(t)
	plan := chunkOf(t, chunks, contracts.ChunkInterrupt)
	cp2 := chunkOf(t, chunks, contracts.ChunkCheckpoint)

	// get: a checkpoint, without its snapshot; an unknown one is null.
	var got map[string]any
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "get", "sessionId": session, "checkpointId": cp2.ID}, &got))
	require.Equal(t, cp2.ID, got["id"])
	require.NotContains(t, got, "snapshot")
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "get", "sessionId": session, "checkpointId": "cp-nope"}, &got))
	require.Nil(t, got)

	// Fork cp1, with OnForked failing: the 200 body is the fork.
	f.failing("forked")
	var fk sessions.ForkResult
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "fork", "sessionId": session, "checkpointId": cp1.ID}, &fk))
	require.Regexp(t, `^session-`, fk.SessionID)
	require.Equal(t, cp1.ID, fk.ForkedFrom)
	forkAsk := fk.Checkpoint.ActivePendingRequests[0]
	require.NotEqual(t, name.ResumeToken, forkAsk.Token)
	require.Len(t, f.forked, 1)
	require.Equal(t, chat.Forked{Request: f.forked[0].Request, SourceSessionID: session, NewSessionID: fk.SessionID,
		SourceCheckpointID: cp1.ID, NewCheckpointID: fk.Checkpoint.ID, Reissued: fk.Reissued}, f.forked[0])
	errs := f.lifecycleErrors()
	require.Len(t, errs, 1)
	require.Equal(t, "forked", errs[0].Phase)

	// Roll the source back to cp1.
	var rb sessions.RollbackResult
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "rollback", "sessionId": session, "checkpointId": cp1.ID}, &rb))
	require.Equal(t, cp1.ID, rb.Head.ID)
	require.Equal(t, []string{plan.ResumeToken}, rb.InvalidatedInterruptTokens)
	require.Empty(t, rb.InvalidatedStructuredStreamIDs)
	require.Equal(t, name.ResumeToken, rb.ActivePendingRequests[0].Token)
	require.Len(t, f.rolled, 1)
	require.Equal(t, cp1.ID, f.rolled[0].HeadCheckpointID)
	var list []sessions.CheckpointSummary
	c.checkpoints(t, map[string]any{"action": "list", "sessionId": session}, &list)
	require.Len(t, list, 2, "cp2 is gone")

	// The invalidated question is refused; the old one is answered differently in each session.
	r := c.send(t, resumeBody(session, "", plan, "", map[string]any{"selected": "pro"}))
	require.Equal(t, contracts.CodeInvalidResume, decodeError(t, r).Failure.Code)
	chunks = c.send(t, resumeBody(session, "t3", name, "Grace", nil)).Chunks(t)
	plan2 := chunkOf(t, chunks, contracts.ChunkInterrupt)
	forkName := contracts.Chunk{ResumeToken: forkAsk.Token, RequestID: forkAsk.RequestID}
	chunks = c.send(t, resumeBody(fk.SessionID, "f1", forkName, "Linus", nil)).Chunks(t)
	forkPlan := chunkOf(t, chunks, contracts.ChunkInterrupt)
	require.Equal(t, "Welcome Grace, you are on pro.", sessions.Buffer(c.send(t,
		resumeBody(session, "t4", plan2, "", map[string]any{"selected": "pro"})).Chunks(t)).Text)
	require.Equal(t, "Welcome Linus, you are on basic.", sessions.Buffer(c.send(t,
		resumeBody(fk.SessionID, "f2", forkPlan, "", map[string]any{"selected": "basic"})).Chunks(t)).Text)

	// Roll back to the session start: the first turn's structured stream is invalidated.
	f.failing("rolled-back")
	c.checkpoints(t, map[string]any{"action": "list", "sessionId": session}, &list)
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "rollback", "sessionId": session, "checkpointId": list[0].ID}, &rb))
	require.Equal(t, []string{progress.StreamID}, rb.InvalidatedStructuredStreamIDs)
	require.Len(t, f.rolled, 2)
	require.Equal(t, list[0].ID, f.rolled[1].HeadCheckpointID)
	require.Equal(t, []string{progress.StreamID}, f.rolled[1].InvalidatedStructuredStreamIDs)
	require.Len(t, f.lifecycleErrors(), 2)
}

// Scenario 44: CompleteResponse ends the HTTP response (checkpoint, done) while the next node
// keeps running; its question is discoverable, and answerable through the chat route.
func TestChatCompleteResponse(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	r := c.send(t, prompt(session, "t1", testagents.BackgroundWorkflow, "report"))
	chunks := r.Chunks(t)
	t.Logf("complete response: %v", types(chunks))
	require.Equal(t, []string{"checkpoint", "done"}, types(chunks)[len(chunks)-2:])
	require.Equal(t, "Your report is on its way.", sessions.Buffer(chunks).Text)
	require.Equal(t, sessions.Status("completed"), f.finals(t, 1)[0].Status)

	var waiting []kortyx.WaitingRun
	eventually(t, 30*time.Second, "the later question to be listed", func() bool {
		var err error
		waiting, err = kortyx.ListWaiting(context.Background(), c.c, session)
		require.NoError(t, err)
		return len(waiting) == 1
	})
	t.Logf("waiting: %+v", waiting)
	require.Equal(t, []string{"background work"}, readLines(t, c.effects))
	require.Equal(t, testagents.BackgroundWorkflow, waiting[0].Workflow)
	require.Equal(t, []string{"background work"}, readLines(t, c.effects))
	// The later question is the run's, not the session's: the session takes the next turn, and
	// the question is answered on the run.
	require.Empty(t, sessionView(t, c.inproc, session).Pending)
	view, err := kortyx.Query(context.Background(), c.c, waiting[0].RunID)
	require.NoError(t, err)
	require.NotNil(t, view.Pending)
	require.Equal(t, "Publish the report?", view.Pending.Input.Question)
	res, err := kortyx.RespondAndWait(context.Background(), c.c, waiting[0].RunID, "", contracts.Response{
		Token: view.Pending.Token, RequestID: view.Pending.RequestID, Selected: []string{"yes"}})
	require.NoError(t, err)
	require.False(t, res.Cancelled)
	r = c.send(t, prompt(session, "t2", testagents.EchoWorkflow, "next"))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, []string{"background work"}, readLines(t, c.effects), "the later node did not run twice")
}

// Scenario 45: a failing node: error with an EXECUTION_FAILED descriptor, then done without
// data; and the statuses of errors before the stream.
func TestChatErrors(t *testing.T) {
	c := startChat(t, chat.Options{MaxBodyBytes: 4096}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	r := c.send(t, prompt(session, "", testagents.BoomWorkflow, "go"))
	require.Equal(t, http.StatusOK, r.Status)
	chunks := r.Chunks(t)
	t.Logf("boom: %v", types(chunks))
	e := chunkOf(t, chunks, contracts.ChunkError)
	require.Equal(t, contracts.CodeExecutionFailed, e.Failure.Code)
	require.Equal(t, e.Failure.Message, e.Message)
	require.NotContains(t, r.Body, "database is down", "the node's own error stays on the server")
	last := chunks[len(chunks)-1]
	require.Equal(t, contracts.ChunkDone, last.Type)
	require.Empty(t, last.Data)

	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   contracts.Code
	}{
		{"invalid JSON", `{"messages": [`, 400, contracts.CodeInvalidRequest},
		{"not an object", `[1]`, 400, contracts.CodeInvalidRequest},
		{"no messages", `{"sessionId": "x"}`, 400, contracts.CodeInvalidRequest},
		{"unknown message key", `{"messages": [{"role": "user", "content": "hi", "mood": "happy"}]}`, 400, contracts.CodeInvalidRequest},
		{"bad role", `{"messages": [{"role": "tool", "content": "hi"}]}`, 400, contracts.CodeInvalidRequest},
		{"too big", `{"messages": [{"role": "user", "content": "` + strings.Repeat("a", 5000) + `"}]}`, 400, contracts.CodeInvalidRequest},
		{"unknown workflow", prompt("s-unknown-"+taskQueue(t), "", "nope", "hi"), 404, contracts.CodeUnknownWorkflow},
		{"bad resume", `{"sessionId": "` + session + `", "messages": [{"role": "user", "content": "x", "metadata": {"resume": {"token": "t", "requestId": "r", "oops": 1}}}]}`, 400, contracts.CodeInvalidRequest},
	} {
		r := c.send(t, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		eb := decodeError(t, r)
		require.Equal(t, tc.code, eb.Failure.Code, tc.name)
		require.Equal(t, eb.Failure.Message, eb.Error, tc.name)
	}
	noSession(t, c, "s-unknown-"+taskQueue(t))

	// A prompt while a turn runs: 409 SESSION_BUSY.
	l := c.open(t, prompt(session, "", testagents.SlowWorkflow, "work"))
	l.next(t)
	r = c.send(t, prompt(session, "", "", "again"))
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, contracts.CodeSessionBusy, decodeError(t, r).Failure.Code)
	l.close()
	eventually(t, 10*time.Second, "the disconnected turn to be cancelled", func() bool { return sessionView(t, c.inproc, session).Active == nil })
}

// The application's Authorize runs before any work on every route: 401 without credentials,
// 403 for another user's session.
func TestChatAuthorization(t *testing.T) {
	authorize := func(r *http.Request, session string) error {
		user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || user == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first."}
		}
		if session != "" && !strings.HasPrefix(session, user+"-") {
			return &contracts.Error{Code: contracts.CodeForbidden, Message: "Not your session."}
		}
		return nil
	}
	c := startChat(t, chat.Options{Authorize: func(r *http.Request, a sessions.Access) error { return authorize(r, a.SessionID) }},
		chat.CheckpointOptions{Authorize: func(r *http.Request, a sessions.Access) error { return authorize(r, a.SessionID) }})
	session := "alice-" + taskQueue(t)
	body := prompt(session, "", testagents.EchoWorkflow, "hi")

	r := c.send(t, body)
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Equal(t, contracts.CodeUnauthorized, decodeError(t, r).Failure.Code)
	r = c.send(t, body, "Authorization: Bearer mallory")
	require.Equal(t, http.StatusForbidden, r.Status)
	require.Equal(t, contracts.CodeForbidden, decodeError(t, r).Failure.Code)
	noSession(t, c, session)

	r = c.send(t, body, "Authorization: Bearer alice")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "Turn 1: hi", sessions.Buffer(r.Chunks(t)).Text)

	list := map[string]any{"action": "list", "sessionId": session}
	require.Equal(t, http.StatusUnauthorized, c.checkpoints(t, list, nil))
	require.Equal(t, http.StatusForbidden, c.checkpoints(t, list, nil, "Authorization: Bearer mallory"))
	var cps []sessions.CheckpointSummary
	require.Equal(t, http.StatusOK, c.checkpoints(t, list, &cps, "Authorization: Bearer alice"))
	require.Len(t, cps, 2)
	resp := post(t, c.url+"/api/chat/stop", map[string]any{"sessionId": session}, "Authorization: Bearer mallory")
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// A turn that failed runs again when retried with its clientTurnId (the Kortyx client's retry
// keeps it), but a reconnecting reader (Last-Event-ID) gets the failed response back. The hooks
// run once per run attempt: not for the reconnect, again for the retry.
func TestChatRetryOfFailedTurnRunsAgain(t *testing.T) {
	f := newFinalized()
	c := startChat(t, f.options(chat.Options{}), chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	body := prompt(session, "t1", testagents.BoomWorkflow, "go")
	require.Equal(t, []string{"session", "error", "done"}, types(c.send(t, body).Chunks(t)))
	first := f.finals(t, 1)[0]
	require.Equal(t, sessions.Status("failed"), first.Status)

	r := c.send(t, body, "Last-Event-ID: 0")
	require.Equal(t, []string{"session", "error", "done"}, types(r.Chunks(t)))
	f.mu.Lock()
	require.Len(t, f.accepted, 1, "the reconnecting reader reads the same run: no OnTurnAccepted")
	require.Len(t, f.final, 1, "nor a second OnResponseFinalized")
	f.mu.Unlock()

	require.Equal(t, []string{"session", "error", "done"}, types(c.send(t, body).Chunks(t)))
	require.NotEqual(t, first.RunID, f.finals(t, 2)[1].RunID, "the retry ran the turn again")
	f.mu.Lock()
	require.Len(t, f.accepted, 2)
	f.mu.Unlock()
}
