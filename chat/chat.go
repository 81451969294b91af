package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"go.opentelemetry.io/otel/trace"
)

// wire is the name of the chat and checkpoint routes in [sessions.Access].
const wire = "chat"

// The values of Options.Disconnect.
const (
	disconnectCancel   = "cancel"
	disconnectContinue = "continue"
)

// The values of LifecycleError.Phase.
const (
	phaseTurnAccepted      = "turn-accepted"
	phaseResponseFinalized = "response-finalized"
	phaseForked            = "forked"
	phaseRolledBack        = "rolled-back"
)

// TurnAccepted is passed to Options.OnTurnAccepted before a turn runs.
type TurnAccepted struct {
	Request      *http.Request
	SessionID    string
	ClientTurnID string
	UserMessage  Message
	Kind         string // "prompt" or "interrupt-response"
}

// ResponseFinalized is passed to Options.OnResponseFinalized after a response ended.
type ResponseFinalized struct {
	Request      *http.Request
	SessionID    string
	RunID        string
	ClientTurnID string
	Status       sessions.Status
	// CheckpointID is set when a session checkpoint was committed for the response.
	CheckpointID string
	Message      sessions.FinalizedMessage
}

// LifecycleError is passed to Options.OnLifecycleError when a lifecycle callback failed.
type LifecycleError struct {
	// Phase names the callback that failed: "turn-accepted", "response-finalized", "forked"
	// or "rolled-back".
	Phase        string
	ClientTurnID string
	// Err is a *contracts.Error with code CHAT_LIFECYCLE_HOOK_FAILED; its cause is the
	// callback's error.
	Err error
}

// callbackError wraps a lifecycle callback's failure (OnTurnAccepted, OnResponseFinalized,
// OnForked, OnRolledBack) as the error with code CHAT_LIFECYCLE_HOOK_FAILED (Kortyx's
// ChatLifecycleHookError; Kortyx calls these callbacks lifecycle hooks).
func callbackError(phase string, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeChatLifecycleHookFailed, Message: "Chat state could not be saved.",
		Details: map[string]any{"phase": string(phase)}, Err: cause}
}

// Options configure [NewHandler]. Temporal, the broker, the task queue and the checkpoints
// kept per session are the session service's ([sessions.Options]).
type Options struct {
	// DefaultWorkflow runs the first turn of a session whose request names no workflow.
	DefaultWorkflow string
	// Authorize runs before any work, with what the request does ([sessions.Access], Wire
	// "chat": ActionStart with the request's workflow, or ActionAnswer; ActionStop for the Stop
	// route; SessionID "" for a prompt that names no session, which gets a new one): return a
	// *contracts.Error with CodeUnauthorized or CodeForbidden (any other error is 403) to
	// refuse. Required unless AllowUnauthenticated. It is the hook every wire takes. Client-
	// supplied ids are not proof of ownership: check the session against the authenticated
	// caller ([sessions.Service.Owner]).
	Authorize func(r *http.Request, a sessions.Access) error
	// AllowUnauthenticated accepts requests without Authorize (development only).
	AllowUnauthenticated bool
	// Owner, when set, names the authenticated caller of a request (an application user id,
	// never a secret). A session's first accepted turn makes its caller the session's owner,
	// kept by the session workflow (in its memo); a prompt of another
	// owner is refused with FORBIDDEN by the session itself, so two callers racing for a new
	// session id cannot share it. Check the owner of existing sessions in Authorize with
	// [sessions.Service.Owner].
	Owner func(r *http.Request) string
	// OnTurnAccepted runs before a turn starts, once per run attempt (not for requests that
	// reattach to it); its failure refuses the turn (503).
	OnTurnAccepted func(ctx context.Context, ev TurnAccepted) error
	// OnResponseFinalized runs after each response's checkpoint decision, once per run attempt.
	OnResponseFinalized func(ctx context.Context, ev ResponseFinalized) error
	// OnLifecycleError receives the lifecycle callbacks' failures; default: they are logged.
	OnLifecycleError func(ev LifecycleError)
	// Disconnect says what a client disconnect does to the turn: "cancel" (the default) cancels
	// the run when the last reader of its turn leaves before the response's end (only a turn
	// that a request of this handler started); "continue" lets the run finish and be finalized
	// after the reader leaves, and needs OnExecution to keep the host alive until then.
	Disconnect string
	// OnExecution receives, for each run attempt, a channel closed when its execution and its
	// finalization are over (required with Disconnect "continue").
	OnExecution func(done <-chan struct{})
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// FinalizeTimeout bounds how long a turn is followed after its last reader left (default
	// 10 min).
	FinalizeTimeout time.Duration
	// RememberedTurns bounds how many ended turns the handler keeps in memory by clientTurnId,
	// oldest forgotten first (default [defaultRememberedTurns]). A request repeating a
	// forgotten one is still answered: the session tells a retry from a new turn; what is
	// lost is only that readers of one turn in this process share one follower.
	RememberedTurns int
	// KeepAlive is the interval of the ": keep-alive" comments sent while a response has no
	// chunk to send (a long tool call), so that proxies keep the connection; 0 means
	// every 15 s, a negative value disables them.
	KeepAlive time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// index learns, from the checkpoint chunks of the responses this handler streams, which
	// session each checkpoint belongs to, for the checkpoint route's requests that name only a
	// checkpoint (Kortyx's shapes); nil means the process-wide index (of [defaultSessionIndexSize] checkpoints).
	index *sessionIndex // tests set it
	// CORS, when set, answers preflight requests and adds the CORS headers for the origins it
	// allows (off by default); see [CORS].
	CORS *CORS
}

// Handler is the chat route (spec F6.2–F6.7): POST a chat request, get the turn's response as
// server-sent events (or buffered JSON with "stream": false).
type Handler struct {
	o     Options
	svc   *sessions.Service
	index *sessionIndex
	turns turns
}

// NewHandler checks the options and returns the chat route over svc, the session service the
// program's wires share (it must have a broker: the route reads the responses from it).
func NewHandler(svc *sessions.Service, o Options) (*Handler, error) {
	switch {
	case svc == nil:
		return nil, errors.New("kortyx chat: the session service is required")
	case svc.Broker() == nil:
		return nil, errors.New("kortyx chat: the session service has no broker (sessions.Options.Broker: the stream broker the workers publish to)")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx chat: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	case o.Disconnect == disconnectContinue && o.OnExecution == nil:
		return nil, errors.New(`kortyx chat: disconnect: "continue" requires onExecution to retain host lifetime (Options.OnExecution)`)
	case o.Disconnect != "" && o.Disconnect != disconnectCancel && o.Disconnect != disconnectContinue:
		return nil, fmt.Errorf("kortyx chat: Options.Disconnect must be %q or %q", disconnectCancel, disconnectContinue)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpwire.DefaultMaxBody
	}
	if o.FinalizeTimeout <= 0 {
		o.FinalizeTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RememberedTurns <= 0 {
		o.RememberedTurns = defaultRememberedTurns
	}
	h := &Handler{o: o, svc: svc, index: o.index.orDefault()}
	h.turns.max = o.RememberedTurns
	return h, nil
}

func (h *Handler) hasCallbacks() bool {
	return h.o.OnTurnAccepted != nil || h.o.OnResponseFinalized != nil
}

// WriteError writes an error as JSON {error, failure} with the failure's HTTP status (a 5xx is
// logged with its cause on slog.Default()).
func WriteError(w http.ResponseWriter, err error) {
	httpwire.WriteError(w, nil, nil, 0, err)
}

// JSONErrors serves mux and answers the requests that match none of its patterns in the same
// JSON {error, failure} shape as the routes' own errors: an unknown path is 404 NOT_FOUND, a path
// served only for other methods 405 INVALID_REQUEST (with the mux's Allow header). Wrap the mux
// that mounts the chat routes with it (logger nil: slog.Default()).
func JSONErrors(mux *http.ServeMux, logger *slog.Logger) http.Handler {
	return httpwire.JSONErrors(mux, logger)
}

// fail writes err as the request's error answer; a 5xx is logged with its cause.
func fail(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	httpwire.WriteError(w, r, logger, 0, err)
}

// methodNotAllowed answers a request that is not a POST.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, logger *slog.Logger) {
	w.Header().Set("Allow", http.MethodPost)
	httpwire.WriteError(w, r, logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use POST."))
}

func authError(err error) error {
	var ke *contracts.Error
	if errors.As(err, &ke) {
		return err
	}
	return &contracts.Error{Code: contracts.CodeForbidden, Message: "Forbidden.", Err: err}
}

// ServeHTTP serves one chat turn.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.o.CORS.Serve(w, r, http.MethodPost) {
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, h.o.Logger)
		return
	}
	req, err := parseRequest(r, h.o.MaxBodyBytes)
	if err != nil {
		fail(w, r, h.o.Logger, err)
		return
	}
	last := req.last()
	resume := req.ResumeOf()
	if h.hasCallbacks() {
		// Checked before Authorize: a request without the ids is malformed whoever sends it.
		if err := callbackFields(req); err != nil {
			fail(w, r, h.o.Logger, err)
			return
		}
	}
	if h.o.Authorize != nil {
		a := sessions.Access{Wire: wire, Action: sessions.ActionStart, SessionID: req.SessionID, Workflow: req.WorkflowID}
		if resume != nil {
			a = sessions.Access{Wire: wire, Action: sessions.ActionAnswer, SessionID: req.SessionID}
		}
		if err := h.o.Authorize(r, a); err != nil {
			fail(w, r, h.o.Logger, authError(err))
			return
		}
	}
	if req.SessionID == "" {
		req.SessionID = "session-" + uuid.NewString()
	}
	kind := "prompt"
	a := &ask{session: req.SessionID, clientTurn: req.ClientTurnID, kind: kind}
	if resume != nil {
		kind = "interrupt-response"
		a.kind, a.token = kind, strings.TrimSpace(resume.Token)
	} else if req.input() == "" {
		fail(w, r, h.o.Logger, contracts.Errorf(contracts.CodeInvalidRequest, "The request has no user message to answer."))
		return
	}
	if err := h.svc.CheckBroker(r.Context()); err != nil { // before the turn slot and callbacks
		fail(w, r, h.o.Logger, err)
		return
	}
	// Requests of one ask take turns: each decides, knowing what the one before it started,
	// whether its turn is a new run attempt (OnTurnAccepted runs) or a reattach (it does not).
	var sl *slot
	if req.ClientTurnID != "" {
		sl = h.turns.slot(*a)
		if err := sl.acquire(r.Context()); err != nil {
			h.turns.put(*a, sl)
			return // the reader left while waiting
		}
	} else {
		a = nil
	}
	release := func() {
		if sl != nil {
			sl.release()
			h.turns.put(*a, sl)
			sl = nil
		}
	}
	defer release()
	accept := func() error {
		ev := TurnAccepted{Request: r, SessionID: req.SessionID, ClientTurnID: req.ClientTurnID, UserMessage: last, Kind: kind}
		err := runCallback(phaseTurnAccepted, func() error { return h.o.OnTurnAccepted(r.Context(), ev) })
		if err != nil {
			reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: phaseTurnAccepted, ClientTurnID: req.ClientTurnID, Err: err})
		}
		return err
	}
	accepted := false
	if h.o.OnTurnAccepted != nil && !h.expectReattach(r.Context(), sl, req.SessionID, lastEventID(r) >= 0) {
		if err := accept(); err != nil {
			fail(w, r, h.o.Logger, err)
			return
		}
		accepted = true
	}
	ts, begin, from, err := h.start(r.Context(), r, req, resume)
	if err != nil {
		fail(w, r, h.o.Logger, err)
		return
	}
	if h.o.OnTurnAccepted != nil && !accepted && !ts.Reattached {
		// The session started a new run where this handler expected the turn it knew (the
		// session no longer remembers it: more than 32 turns ago). The
		// callback runs now; if it fails, the run is cancelled at once (a fast run may have ended
		// first).
		if err := accept(); err != nil {
			if _, serr := h.svc.Stop(context.WithoutCancel(r.Context()), req.SessionID, ts.RunID); serr != nil {
				h.o.Logger.Warn("kortyx chat: cancelling a turn whose OnTurnAccepted failed", "run", ts.RunID, "error", serr)
			}
			fail(w, r, h.o.Logger, err)
			return
		}
	}
	t, fresh := h.turns.attach(sl, ts, begin)
	if fresh {
		h.started(t, r, req, a, from)
	}
	release()
	h.respond(w, r, req, t, from, !ts.Reattached)
}

// callbackFields checks what the lifecycle callbacks need of a request (seed 001: "Both hooks
// require a nonempty sessionId and clientTurnId"): INVALID_REQUEST with one issue per missing
// field, or nil.
func callbackFields(req *Request) error {
	var issues []contracts.Issue
	for _, f := range []struct{ name, v string }{{"sessionId", req.SessionID}, {"clientTurnId", req.ClientTurnID}} {
		if f.v == "" {
			issues = append(issues, contracts.Issue{Path: []any{f.name}, Code: "required", Message: f.name + " is required: the lifecycle callbacks need it"})
		}
	}
	if req.last().Role != "user" {
		issues = append(issues, contracts.Issue{Path: []any{"messages"}, Code: "invalid_value", Message: "the last message must be from the user"})
	}
	if len(issues) == 0 {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid.", Issues: issues}
}

// expectReattach reports whether the request will get the turn the slot knows (see
// turns.expectReattach). For a turn that committed a checkpoint it asks the session whether the
// checkpoint is still there: a rollback discards the turns after its target, which then run
// again. If the session cannot say, the turn is expected.
func (h *Handler) expectReattach(ctx context.Context, sl *slot, sessionID string, reconnect bool) bool {
	reattach, checkpoint := h.turns.expectReattach(sl, reconnect)
	if !reattach || checkpoint == "" {
		return reattach
	}
	view, err := h.svc.View(ctx, sessionID)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(view.Checkpoints, func(c sessions.CheckpointSummary) bool { return c.ID == checkpoint })
}

// start starts (or re-attaches to) the turn and returns where the turn's response begins in the
// run's stream and the offset this reader follows from: the beginning, or the client's
// Last-Event-ID when it re-attaches to a turn it was reading. ctx bounds the Temporal calls; r's
// own context says whether the reader is still there.
func (h *Handler) start(ctx context.Context, r *http.Request, req *Request, resume *Resume) (sessions.TurnStarted, int64, int64, error) {
	reattach := func(begin int64) int64 {
		if after := lastEventID(r); after >= begin {
			return after
		}
		return begin
	}
	if resume == nil {
		prior := make([]contracts.Message, 0, len(req.Messages))
		for _, m := range req.Messages[:len(req.Messages)-1] {
			prior = append(prior, contracts.Message{Role: m.Role, Content: m.Content, ID: m.ID})
		}
		input, _ := json.Marshal(req.input())
		turn := sessions.TurnRequest{ClientTurnID: req.ClientTurnID, Workflow: req.WorkflowID, Input: input, Messages: prior, Context: req.Context,
			Reconnect: lastEventID(r) >= 0}
		if h.o.Owner != nil {
			turn.Owner = h.o.Owner(r)
		}
		ts, err := h.svc.Start(ctx, req.SessionID, turn)
		if err != nil && contracts.CodeOf(err) == contracts.CodeUnknownWorkflow && req.WorkflowID == "" && h.o.DefaultWorkflow != "" {
			turn.Workflow = h.o.DefaultWorkflow
			ts, err = h.svc.Start(ctx, req.SessionID, turn)
		}
		if err != nil || !ts.Reattached {
			return ts, 0, 0, err
		}
		return ts, 0, reattach(0), nil // a prompt's run is new: its response starts the stream
	}
	answer := resume.response(req.last().Content)
	ts, err := h.svc.Answer(ctx, req.SessionID, answer, sessions.AnswerOptions{ClientTurnID: req.ClientTurnID, Reconnect: lastEventID(r) >= 0,
		Continue: h.o.Disconnect == disconnectContinue})
	if err != nil {
		return ts, 0, 0, err
	}
	if ts.Reattached {
		return ts, ts.Begin, reattach(ts.Begin), nil
	}
	return ts, ts.Begin, ts.Begin, nil
}

func lastEventID(r *http.Request) int64 {
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

// respond streams (or buffers) the turn's response to this reader, from offset from: one loop
// reads the response from the broker (through the session service's reader) and writes each
// chunk, and hands it to the turn's finalization on the way.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, req *Request, t *turn, from int64, started bool) {
	session := contracts.Chunk{Type: contracts.ChunkSession, SessionID: req.SessionID}
	chunks := []contracts.Chunk{session}
	tc, traced := traceChunk(r, t.ts.RunID)
	if traced {
		chunks = append(chunks, tc)
	}
	buffered := req.Stream != nil && !*req.Stream
	feeder := h.turns.join(t, from)
	var sw *httpwire.SSEWriter
	var idle time.Duration
	if !buffered {
		var err error
		opts := httpwire.SSEOptions{KeepAlive: h.o.KeepAlive}
		if !resumable(r) {
			runID := t.ts.RunID
			cancel := req.ResumeOf() != nil && req.ResumeOf().Cancel
			opts.OmitIDs = true
			opts.Transform = func(c contracts.Chunk) []any {
				if cancel && c.Type == contracts.ChunkCancelled {
					// Kortyx: a cancelled question's stream yields only done.
					return nil
				}
				return kortyxChunks(runID, c)
			}
		}
		if sw, err = httpwire.NewSSEWriter(w, opts); err == nil {
			err = sw.Event(0, session)
		}
		if err == nil && traced {
			err = sw.Event(0, tc)
		}
		if err != nil {
			h.quit(r, req, t, feeder, true)
			return
		}
		switch idle = h.o.KeepAlive; {
		case idle == 0:
			idle = httpwire.DefaultKeepAlive
		case idle < 0:
			idle = 0
		}
	}
	rd, err := h.svc.Follow(r.Context(), req.SessionID, t.ts, from, sessions.FollowOptions{Idle: idle, Answered: t.token, Started: started})
	pos := from
	for err == nil {
		var e stream.Entry
		e, err = rd.Next(r.Context())
		switch {
		case errors.Is(err, stream.ErrIdle):
			err = sw.KeepAlive()
			continue
		case err != nil:
			continue
		}
		h.index.learn(e.Chunk)
		pos = h.turns.feed(t, pos, e)
		if sw != nil {
			err = sw.Event(e.Offset, e.Chunk)
		} else {
			chunks = append(chunks, e.Chunk)
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil && ((sw != nil && sw.Err() != nil) || r.Context().Err() != nil) {
		h.quit(r, req, t, feeder, true)
		return
	}
	if err == nil {
		h.turns.responseOver(t)
	} else {
		fail := httpwire.ErrorChunk(h.o.Logger, t.ts.RunID, err) // logs err
		chunks = append(chunks, fail, contracts.Chunk{Type: contracts.ChunkDone})
		if sw != nil {
			_ = sw.Event(0, fail)
			_ = sw.Event(0, contracts.Chunk{Type: contracts.ChunkDone})
		}
	}
	if sw != nil {
		_ = sw.Done()
	} else {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sessions.Buffer(chunks))
	}
	// The response is complete only once it was finalized: a client that reads it to its end
	// finds OnResponseFinalized's work done (its transcript saved). The reader that read it
	// along with the finalization finalizes it; another waits.
	if h.turns.claim(t, pos, false) {
		h.finish(t, err)
	} else if h.turns.unjoin(t, &feeder) {
		h.follow(t)
	}
	if err == nil {
		select {
		case <-t.ended:
		case <-r.Context().Done():
		}
	}
	h.quit(r, req, t, feeder, false)
}

// quit unregisters a reader of t (a feeder of its finalization when feeder is set): when the
// finalization has lost its last feeder before the response's end, the rest of the response is
// read by a follower of its own. With disconnectCancel, the last reader leaving early cancels a
// run attempt that a request of this handler started (see turns.leave).
func (h *Handler) quit(r *http.Request, req *Request, t *turn, feeder, early bool) {
	if h.turns.unjoin(t, &feeder) {
		h.follow(t)
	}
	h.leave(r, req, t, early)
}

// leave unregisters a reader of t; with disconnectCancel, the last reader leaving early cancels
// a run attempt that a request of this handler started (see turns.leave).
func (h *Handler) leave(r *http.Request, req *Request, t *turn, early bool) {
	if !h.turns.leave(t, early, h.o.Disconnect != disconnectContinue, h.o.FinalizeTimeout) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.o.FinalizeTimeout)
	defer cancel()
	if _, err := h.svc.Stop(ctx, req.SessionID, t.ts.RunID); err != nil {
		h.o.Logger.Warn("kortyx chat: cancelling the run of a disconnected reader failed", "run", t.ts.RunID, "error", err)
	}
}

// started registers a new run attempt t, started (or first read) by request r: OnExecution gets
// the channel its finalization closes, and the finalization follows the response on its own
// when no reader of this request can feed it (it reads from after the response's beginning).
func (h *Handler) started(t *turn, r *http.Request, req *Request, a *ask, from int64) {
	if h.o.OnExecution != nil {
		h.o.OnExecution(t.ended)
	}
	h.turns.origin(t, r, req, a)
	if none := false; from > t.begin && h.turns.unjoin(t, &none) {
		h.follow(t)
	}
}

// follow reads the rest of t's response for its finalization, apart from its readers, from
// where the finalization is, and finalizes it; it ends with the response, or when the last
// reader has been gone for FinalizeTimeout (the response is then finalized as it stands).
func (h *Handler) follow(t *turn) {
	ctx := t.bg
	go func() {
		pos := h.turns.position(t)
		var err error
		if pos >= 0 {
			var rd *sessions.Reader
			rd, err = h.svc.Follow(ctx, t.req.SessionID, t.ts, pos, sessions.FollowOptions{Answered: t.token})
			for err == nil {
				var e stream.Entry
				if e, err = rd.Next(ctx); err == nil {
					h.index.learn(e.Chunk)
					pos = h.turns.feed(t, pos, e)
				}
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		if ctx.Err() != nil {
			err = nil // given up (FinalizeTimeout): finalized as it stands
		}
		if h.turns.claim(t, pos, ctx.Err() != nil) {
			h.finish(t, err)
		} else {
			h.turns.followed(t)
		}
	}()
}

// finish finalizes t's response once (OnResponseFinalized), with err the error that ended it
// (nil: its done), then closes the turn's channel (OnExecution).
func (h *Handler) finish(t *turn, err error) {
	defer close(t.ended)
	chunks := append([]contracts.Chunk{{Type: contracts.ChunkSession, SessionID: t.req.SessionID}}, h.turns.response(t)...)
	if err != nil {
		f := httpwire.Public(httpwire.StreamFailure(err))
		chunks = append(chunks, contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}, contracts.Chunk{Type: contracts.ChunkDone})
	}
	msg, status := sessions.Finalize(t.req.ClientTurnID, chunks)
	h.turns.settle(t, msg.CheckpointID)
	h.finalize(t.r, t.req, t.ts, msg, status)
	h.turns.done(t, t.a)
	if t.stop != nil {
		t.stop()
	}
}

// finalize runs OnResponseFinalized with the normalized assistant message; its failure goes to
// OnLifecycleError and changes nothing else.
func (h *Handler) finalize(r *http.Request, req *Request, ts sessions.TurnStarted, msg sessions.FinalizedMessage, status sessions.Status) {
	if h.o.OnResponseFinalized == nil {
		return
	}
	ev := ResponseFinalized{Request: r, SessionID: req.SessionID, RunID: ts.RunID, ClientTurnID: req.ClientTurnID,
		Status: status, CheckpointID: msg.CheckpointID, Message: msg}
	err := runCallback(phaseResponseFinalized, func() error { return h.o.OnResponseFinalized(context.WithoutCancel(r.Context()), ev) })
	if err != nil {
		reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: phaseResponseFinalized, ClientTurnID: req.ClientTurnID, Err: err})
	}
}

// StopHandler serves the Stop button: POST {"sessionId": "..."} cancels the session's active run
// (authorized like chat requests) and answers {"runId": "..."} ("" when nothing was running).
func (h *Handler) StopHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.o.CORS.Serve(w, r, http.MethodPost) {
			return
		}
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, h.o.Logger)
			return
		}
		var body struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&body); err != nil || strings.TrimSpace(body.SessionID) == "" {
			fail(w, r, h.o.Logger, contracts.Errorf(contracts.CodeInvalidRequest, "Send {\"sessionId\": \"...\"}."))
			return
		}
		req := &Request{SessionID: strings.TrimSpace(body.SessionID)}
		if err := contracts.CheckID("sessionId", req.SessionID); err != nil {
			fail(w, r, h.o.Logger, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid.", Issues: err.Issues})
			return
		}
		if h.o.Authorize != nil {
			if err := h.o.Authorize(r, sessions.Access{Wire: wire, Action: sessions.ActionStop, SessionID: req.SessionID}); err != nil {
				fail(w, r, h.o.Logger, authError(err))
				return
			}
		}
		runID, err := h.svc.Stop(r.Context(), req.SessionID, "")
		if err != nil {
			fail(w, r, h.o.Logger, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"runId": runID})
	})
}

// traceChunk returns Kortyx's trace chunk for a request that is traced (tracing configured: the
// request's context carries a sampled span, the HTTP server span of telemetry.ServeHTTP or of
// the application's own middleware): the trace id and span id of that span, under which the
// turn's Temporal spans are, and the turn's run id. There is no rootSpanName: Kortyx's is the
// name of its root span "kortyx.run", which this port does not have (the request's span is the
// turn's root). ok is false when the request is not traced.
func traceChunk(r *http.Request, runID string) (c contracts.Chunk, ok bool) {
	sc := trace.SpanContextFromContext(r.Context())
	if !sc.IsValid() || !sc.IsSampled() {
		return c, false
	}
	return contracts.Chunk{Type: contracts.ChunkTrace, TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), RunID: runID}, true
}
