package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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
	// Kind is "prompt" or "interrupt-response"; for a message sent while a turn ran, with a
	// busy policy other than reject (docs/steering.md), how the session took it: "prompt" (no
	// turn ran after all), "enqueue" (its turn started after the turns before it: the callback
	// runs then), "interrupt" (it stopped the running turn) or "steer" (the running turn takes
	// it in; no turn of its own starts).
	Kind string
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
	// 10 min; [sessions.TurnsOptions].FinalizeTimeout).
	FinalizeTimeout time.Duration
	// RememberedTurns bounds how many ended turns the handler keeps in memory by clientTurnId,
	// oldest forgotten first (default 4096; [sessions.TurnsOptions].Remembered). A request
	// repeating a forgotten one is still answered: the session tells a retry from a new turn;
	// what is lost is only that readers of one turn in this process share one follower.
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
	// Busy is what a prompt sent while the session's turn runs does, unless its request names
	// one ("busy"): "reject" (the default: 409 SESSION_BUSY), "enqueue", "interrupt" or "steer"
	// (docs/steering.md).
	Busy string
}

// Handler is the chat route (spec F6.2–F6.7): POST a chat request, get the turn's response as
// server-sent events (or buffered JSON with "stream": false).
type Handler struct {
	o     Options
	svc   *sessions.Service
	index *sessionIndex
	turns *sessions.Turns // the turns its requests read
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
	case sessions.CheckBusy(o.Busy) != nil:
		return nil, fmt.Errorf("kortyx chat: Options.Busy: %w", sessions.CheckBusy(o.Busy))
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpwire.DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &Handler{o: o, svc: svc, index: o.index.orDefault()}
	turns, err := sessions.NewTurns(svc, sessions.TurnsOptions{Continue: o.Disconnect == disconnectContinue,
		FinalizeTimeout: o.FinalizeTimeout, Remembered: o.RememberedTurns, OnAttempt: o.OnExecution,
		OnChunk: h.index.learn, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	h.turns = turns
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
	ask := sessions.TurnAsk{SessionID: req.SessionID, ClientTurnID: req.ClientTurnID}
	if resume != nil {
		kind = "interrupt-response"
		ask.Answer, ask.Token = true, strings.TrimSpace(resume.Token)
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
	tr, err := h.turns.Take(r.Context(), ask)
	if err != nil {
		return // the reader left while waiting
	}
	defer tr.Release()
	accept := func() error { return h.accept(r, req, last, kind) }
	accepted := false
	// A message with a busy policy learns from the session how it was taken: its callback runs
	// after (with that kind).
	policy := h.busy(req)
	if h.o.OnTurnAccepted != nil && (resume != nil || policy == sessions.BusyReject) && !tr.ExpectReattach(r.Context(), lastEventID(r) >= 0) {
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
	if ts.Kind != "" {
		kind = ts.Kind
	}
	if h.o.OnTurnAccepted != nil && !accepted && !ts.Reattached {
		// The session started a new run where this handler expected the turn it knew (the
		// session no longer remembers it: more than 32 turns ago), or took a message with a busy
		// policy. The callback runs now; if it fails, the run is cancelled at once (a fast run
		// may have ended first); a steering message is in its turn already.
		if err := accept(); err != nil {
			if ts.Kind == sessions.BusySteer {
				fail(w, r, h.o.Logger, err)
				return
			}
			if _, serr := h.svc.Stop(context.WithoutCancel(r.Context()), req.SessionID, ts.RunID); serr != nil {
				h.o.Logger.Warn("kortyx chat: cancelling a turn whose OnTurnAccepted failed", "run", ts.RunID, "error", serr)
			}
			fail(w, r, h.o.Logger, err)
			return
		}
	}
	if ts.Kind == sessions.BusySteer {
		// The response to a steering message is the running turn's, from where its run takes
		// it in; that turn's own reader finalizes it.
		tr.Release()
		h.respond(w, r, req, &steerReading{svc: h.svc, session: req.SessionID, ts: ts, req: h.turnRequest(r, req)}, ts.RunID, false)
		return
	}
	tr.Attach(r.Context(), ts, begin, from, func(ctx context.Context, f sessions.Finalized) { h.finalize(ctx, r, f) })
	h.respond(w, r, req, tr, ts.RunID, !ts.Reattached)
}

// busy is the busy policy of request req: its own, or the handler's.
func (h *Handler) busy(req *Request) string {
	if req.Busy != "" {
		return req.Busy
	}
	if h.o.Busy != "" {
		return h.o.Busy
	}
	return sessions.BusyReject
}

// reading is how respond reads a response: a turn's reader of the handler's registry, or a
// steering message's (steerReading).
type reading interface {
	Follow(ctx context.Context, o sessions.FollowOptions) error
	Next(ctx context.Context) (stream.Entry, error)
	Leave(ctx context.Context)
	Finish(ctx context.Context, err error)
}

// steerReading reads the response to a steering message ([sessions.Service.FollowSteer]).
type steerReading struct {
	svc     *sessions.Service
	session string
	ts      sessions.TurnStarted
	req     sessions.TurnRequest
	rd      *sessions.Reader
}

func (s *steerReading) Follow(ctx context.Context, o sessions.FollowOptions) error {
	rd, err := s.svc.FollowSteer(ctx, s.session, s.ts, s.req, sessions.FollowOptions{Idle: o.Idle})
	s.rd = rd
	return err
}

func (s *steerReading) Next(ctx context.Context) (stream.Entry, error) { return s.rd.Next(ctx) }
func (s *steerReading) Leave(context.Context)                          {}
func (s *steerReading) Finish(context.Context, error)                  {}

// accept runs OnTurnAccepted for the turn request r asks for; its failure goes to
// OnLifecycleError and is returned.
func (h *Handler) accept(r *http.Request, req *Request, last Message, kind string) error {
	ev := TurnAccepted{Request: r, SessionID: req.SessionID, ClientTurnID: req.ClientTurnID, UserMessage: last, Kind: kind}
	err := runCallback(phaseTurnAccepted, func() error { return h.o.OnTurnAccepted(r.Context(), ev) })
	if err != nil {
		reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: phaseTurnAccepted, ClientTurnID: req.ClientTurnID, Err: err})
	}
	return err
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
		turn := h.turnRequest(r, req)
		turn.Reconnect = lastEventID(r) >= 0
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

// turnRequest is the prompt turn request r asks for.
func (h *Handler) turnRequest(r *http.Request, req *Request) sessions.TurnRequest {
	prior := make([]contracts.Message, 0, len(req.Messages))
	for _, m := range req.Messages[:len(req.Messages)-1] {
		prior = append(prior, contracts.Message{Role: m.Role, Content: m.Content, ID: m.ID})
	}
	input, _ := json.Marshal(req.input())
	turn := sessions.TurnRequest{ClientTurnID: req.ClientTurnID, Workflow: req.WorkflowID, Input: input, Messages: prior, Context: req.Context,
		Busy: h.busy(req)}
	if h.o.Owner != nil {
		turn.Owner = h.o.Owner(r)
	}
	return turn
}

func lastEventID(r *http.Request) int64 {
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

// respond streams (or buffers) the turn's response to this reader: one loop reads the response
// from the broker (through the turn registry's reader, which hands each chunk to the turn's
// finalization on the way) and writes each chunk.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, req *Request, tr reading, runID string, started bool) {
	session := contracts.Chunk{Type: contracts.ChunkSession, SessionID: req.SessionID}
	chunks := []contracts.Chunk{session}
	tc, traced := traceChunk(r, runID)
	if traced {
		chunks = append(chunks, tc)
	}
	buffered := req.Stream != nil && !*req.Stream
	var sw *httpwire.SSEWriter
	var idle time.Duration
	if !buffered {
		var err error
		opts := httpwire.SSEOptions{KeepAlive: h.o.KeepAlive}
		if !resumable(r) {
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
			tr.Leave(r.Context())
			return
		}
		switch idle = h.o.KeepAlive; {
		case idle == 0:
			idle = httpwire.DefaultKeepAlive
		case idle < 0:
			idle = 0
		}
	}
	err := tr.Follow(r.Context(), sessions.FollowOptions{Idle: idle, Started: started})
	for err == nil {
		var e stream.Entry
		e, err = tr.Next(r.Context())
		switch {
		case errors.Is(err, stream.ErrIdle):
			err = sw.KeepAlive()
			continue
		case err != nil:
			continue
		}
		h.index.learn(e.Chunk)
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
		tr.Leave(r.Context()) // with Disconnect "cancel", the last reader leaving cancels the run
		return
	}
	if err != nil {
		fail := httpwire.ErrorChunk(h.o.Logger, runID, err) // logs err
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
	// finds OnResponseFinalized's work done (its transcript saved).
	tr.Finish(r.Context(), err)
}

// finalize runs OnResponseFinalized with the normalized assistant message of a run attempt that
// request r started; its failure goes to OnLifecycleError and changes nothing else.
func (h *Handler) finalize(ctx context.Context, r *http.Request, f sessions.Finalized) {
	if h.o.OnResponseFinalized == nil {
		return
	}
	ev := ResponseFinalized{Request: r, SessionID: f.SessionID, RunID: f.RunID, ClientTurnID: f.ClientTurnID,
		Status: f.Status, CheckpointID: f.Message.CheckpointID, Message: f.Message}
	err := runCallback(phaseResponseFinalized, func() error { return h.o.OnResponseFinalized(ctx, ev) })
	if err != nil {
		reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: phaseResponseFinalized, ClientTurnID: f.ClientTurnID, Err: err})
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
