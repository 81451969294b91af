package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/httpapi"
	"github.com/kortyx-go/kortyx/stream"
	"go.temporal.io/sdk/client"
)

// Disconnect says what a client disconnect does to the turn.
type Disconnect string

// Disconnect modes.
const (
	// DisconnectCancel (default) cancels the run when the last reader of its turn leaves before
	// the response's end (only a turn that a request of this handler started).
	DisconnectCancel Disconnect = "cancel"
	// DisconnectContinue lets the run finish and be finalized after the reader leaves; it
	// needs Options.OnExecution to keep the host alive until then.
	DisconnectContinue Disconnect = "continue"
)

// Phase names the lifecycle callback that failed.
type Phase string

// Lifecycle phases.
const (
	PhaseTurnAccepted      Phase = "turn-accepted"
	PhaseResponseFinalized Phase = "response-finalized"
	PhaseForked            Phase = "forked"
	PhaseRolledBack        Phase = "rolled-back"
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
	Status       stream.Status
	// CheckpointID is set when a session checkpoint was committed for the response.
	CheckpointID string
	Message      stream.FinalizedMessage
}

// LifecycleError is passed to Options.OnLifecycleError when a lifecycle callback failed.
type LifecycleError struct {
	Phase        Phase
	ClientTurnID string
	// Err is a *contracts.Error with code CHAT_LIFECYCLE_HOOK_FAILED; its cause is the
	// callback's error.
	Err error
}

// CallbackError wraps a lifecycle callback's failure (OnTurnAccepted, OnResponseFinalized,
// OnForked, OnRolledBack) as the error with code CHAT_LIFECYCLE_HOOK_FAILED (Kortyx's
// ChatLifecycleHookError; Kortyx calls these callbacks lifecycle hooks).
func CallbackError(phase Phase, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeChatLifecycleHookFailed, Message: "Chat state could not be saved.",
		Details: map[string]any{"phase": string(phase)}, Err: cause}
}

// Options configure [NewHandler].
type Options struct {
	// Client reaches Temporal (required).
	Client client.Client
	// Broker is where the runs' streams are read (required): the workers' broker.
	Broker stream.Broker
	// TaskQueue of sessions and runs (default contracts.DefaultTaskQueue).
	TaskQueue string
	// DefaultWorkflow runs the first turn of a session whose request names no workflow.
	DefaultWorkflow string
	// MaxCheckpoints per new session (default 50).
	MaxCheckpoints int
	// Authorize runs before any work: return a *contracts.Error with CodeUnauthorized or
	// CodeForbidden (any other error is 403) to refuse. Required unless AllowUnauthenticated.
	// Client-supplied ids and context are not proof of ownership: check the session against
	// the authenticated caller.
	Authorize func(r *http.Request, req *Request) error
	// AllowUnauthenticated accepts requests without Authorize (development only).
	AllowUnauthenticated bool
	// Owner, when set, names the authenticated caller of a request (an application user id,
	// never a secret). A session's first accepted turn makes its caller the session's owner,
	// kept by the session workflow (memo [contracts.SessionOwnerMemo]); a prompt of another
	// owner is refused with FORBIDDEN by the session itself, so two callers racing for a new
	// session id cannot share it. Check the owner of existing sessions in Authorize with
	// [kortyx.SessionOwner].
	Owner func(r *http.Request) string
	// OnTurnAccepted runs before a turn starts, once per run attempt (not for requests that
	// reattach to it); its failure refuses the turn (503).
	OnTurnAccepted func(ctx context.Context, ev TurnAccepted) error
	// OnResponseFinalized runs after each response's checkpoint decision, once per run attempt.
	OnResponseFinalized func(ctx context.Context, ev ResponseFinalized) error
	// OnLifecycleError receives the lifecycle callbacks' failures; default: they are logged.
	OnLifecycleError func(ev LifecycleError)
	// Disconnect is DisconnectCancel (default) or DisconnectContinue.
	Disconnect Disconnect
	// OnExecution receives, for each run attempt, a channel closed when its execution and its
	// finalization are over (required with DisconnectContinue).
	OnExecution func(done <-chan struct{})
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// FinalizeTimeout bounds how long a turn is followed after its last reader left (default
	// 10 min).
	FinalizeTimeout time.Duration
	// RememberedTurns bounds how many ended turns the handler keeps in memory by clientTurnId,
	// oldest forgotten first (default [DefaultRememberedTurns]). A request repeating a
	// forgotten one is still answered: the session tells a retry from a new turn; what is
	// lost is only that readers of one turn in this process share one follower.
	RememberedTurns int
	// KeepAlive is the interval of the ": keep-alive" comments sent while a response has no
	// chunk to send (a long tool call), so that proxies keep the connection; 0 means
	// [stream.DefaultKeepAlive], a negative value disables them.
	KeepAlive time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Index learns, from the checkpoint chunks of the responses this handler streams, which
	// session each checkpoint belongs to, for the checkpoint route's requests that name only a
	// checkpoint (Kortyx's shapes); nil means the process-wide index (of [DefaultSessionIndexSize] checkpoints).
	Index *SessionIndex
	// CORS, when set, answers preflight requests and adds the CORS headers for the origins it
	// allows (off by default); see [CORS].
	CORS *CORS
}

// Handler is the chat route (spec F6.2–F6.7): POST a chat request, get the turn's response as
// server-sent events (or buffered JSON with "stream": false).
type Handler struct {
	o        Options
	index    *SessionIndex
	turns    turns
	runState stream.RunFunc
}

// NewHandler checks the options and returns the chat route.
func NewHandler(o Options) (*Handler, error) {
	switch {
	case o.Client == nil:
		return nil, errors.New("kortyx chat: Options.Client is required")
	case o.Broker == nil:
		return nil, errors.New("kortyx chat: Options.Broker is required (the stream broker the workers publish to)")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx chat: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	case o.Disconnect == DisconnectContinue && o.OnExecution == nil:
		return nil, errors.New(`kortyx chat: disconnect: "continue" requires onExecution to retain host lifetime (Options.OnExecution)`)
	case o.Disconnect != "" && o.Disconnect != DisconnectCancel && o.Disconnect != DisconnectContinue:
		return nil, fmt.Errorf("kortyx chat: Options.Disconnect must be %q or %q", DisconnectCancel, DisconnectContinue)
	}
	if o.TaskQueue == "" {
		o.TaskQueue = contracts.DefaultTaskQueue
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.FinalizeTimeout <= 0 {
		o.FinalizeTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RememberedTurns <= 0 {
		o.RememberedTurns = DefaultRememberedTurns
	}
	h := &Handler{o: o, runState: RunState(o.Client), index: o.Index.orDefault()}
	h.turns.max = o.RememberedTurns
	return h, nil
}

func (h *Handler) hasCallbacks() bool {
	return h.o.OnTurnAccepted != nil || h.o.OnResponseFinalized != nil
}

// WriteError writes an error as JSON {error, failure} with the failure's HTTP status (a 5xx is
// logged with its cause on slog.Default()).
func WriteError(w http.ResponseWriter, err error) {
	httpapi.WriteError(w, nil, nil, 0, err)
}

// JSONErrors serves mux and answers the requests that match none of its patterns in the same
// JSON {error, failure} shape as the routes' own errors: an unknown path is 404 NOT_FOUND, a path
// served only for other methods 405 INVALID_REQUEST (with the mux's Allow header). Wrap the mux
// that mounts the chat routes with it (logger nil: slog.Default()).
func JSONErrors(mux *http.ServeMux, logger *slog.Logger) http.Handler {
	return httpapi.JSONErrors(mux, logger)
}

// fail writes err as the request's error answer; a 5xx is logged with its cause.
func fail(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	httpapi.WriteError(w, r, logger, 0, err)
}

// methodNotAllowed answers a request that is not a POST.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, logger *slog.Logger) {
	w.Header().Set("Allow", http.MethodPost)
	httpapi.WriteError(w, r, logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use POST."))
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
	if h.o.CORS.serve(w, r) {
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
	last := req.Last()
	resume := req.ResumeOf()
	if h.hasCallbacks() {
		// Checked before Authorize: a request without the ids is malformed whoever sends it.
		if err := callbackFields(req); err != nil {
			fail(w, r, h.o.Logger, err)
			return
		}
	}
	if h.o.Authorize != nil {
		if err := h.o.Authorize(r, req); err != nil {
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
	} else if req.Input() == "" {
		fail(w, r, h.o.Logger, contracts.Errorf(contracts.CodeInvalidRequest, "The request has no user message to answer."))
		return
	}
	if err := h.brokerAnswers(r.Context()); err != nil {
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
		err := runCallback(PhaseTurnAccepted, func() error { return h.o.OnTurnAccepted(r.Context(), ev) })
		if err != nil {
			reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: PhaseTurnAccepted, ClientTurnID: req.ClientTurnID, Err: err})
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
	var ts contracts.TurnStarted
	var begin, from int64
	err = temporalCall(r.Context(), h.o.Client, func(ctx context.Context) error {
		var err error
		ts, begin, from, err = h.start(ctx, r, req, resume)
		return err
	})
	if err != nil {
		fail(w, r, h.o.Logger, err)
		return
	}
	if h.o.OnTurnAccepted != nil && !accepted && !ts.Reattached {
		// The session started a new run where this handler expected the turn it knew (the
		// session no longer remembers it: more than contracts.MaxRecentTurns turns ago). The
		// callback runs now; if it fails, the run is cancelled at once (a fast run may have ended
		// first).
		if err := accept(); err != nil {
			if _, serr := kortyx.StopTurn(context.WithoutCancel(r.Context()), h.o.Client, req.SessionID, ts.RunID); serr != nil {
				h.o.Logger.Warn("kortyx chat: cancelling a turn whose OnTurnAccepted failed", "run", ts.RunID, "error", serr)
			}
			fail(w, r, h.o.Logger, err)
			return
		}
	}
	t, fresh := h.turns.attach(sl, ts, begin)
	if fresh {
		h.startFinalizer(t, r, req, a)
	}
	release()
	h.respond(w, r, req, t, from)
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
	if req.Last().Role != "user" {
		issues = append(issues, contracts.Issue{Path: []any{"messages"}, Code: "invalid_value", Message: "the last message must be from the user"})
	}
	if len(issues) == 0 {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid.", Issues: issues}
}

// brokerPingTimeout bounds the broker check before a turn.
const brokerPingTimeout = 2 * time.Second

// brokerAnswers checks the broker's store when the broker can be pinged (the Redis broker; the
// in-memory one has no store): a turn whose chunks cannot be delivered is not started. The
// error is STREAM_UNAVAILABLE (retryable, HTTP 503).
func (h *Handler) brokerAnswers(ctx context.Context) error {
	p, ok := h.o.Broker.(interface{ Ping(context.Context) error })
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, brokerPingTimeout)
	defer cancel()
	err := p.Ping(ctx)
	if err == nil {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Err: err,
		Message: "The stream store (Redis) does not answer, so no turn was started; try again shortly."}
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
	var view contracts.SessionView
	err := temporalCall(ctx, h.o.Client, func(ctx context.Context) error {
		var err error
		view, err = kortyx.Session(ctx, h.o.Client, sessionID)
		return err
	})
	if err != nil {
		return true
	}
	return slices.ContainsFunc(view.Checkpoints, func(c contracts.CheckpointSummary) bool { return c.ID == checkpoint })
}

// start starts (or re-attaches to) the turn and returns where the turn's response begins in the
// run's stream and the offset this reader follows from: the beginning, or the client's
// Last-Event-ID when it re-attaches to a turn it was reading. ctx bounds the Temporal calls; r's
// own context says whether the reader is still there.
func (h *Handler) start(ctx context.Context, r *http.Request, req *Request, resume *Resume) (contracts.TurnStarted, int64, int64, error) {
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
		input, _ := json.Marshal(req.Input())
		turn := contracts.TurnRequest{ClientTurnID: req.ClientTurnID, Workflow: req.WorkflowID, Input: input, Messages: prior, Context: req.Context,
			Reconnect: lastEventID(r) >= 0}
		if h.o.Owner != nil {
			turn.Owner = h.o.Owner(r)
		}
		opts := kortyx.SessionOptions{TaskQueue: h.o.TaskQueue, MaxCheckpoints: h.o.MaxCheckpoints}
		ts, err := kortyx.StartTurn(ctx, h.o.Client, req.SessionID, turn, opts)
		if err != nil && contracts.CodeOf(err) == contracts.CodeUnknownWorkflow && req.WorkflowID == "" && h.o.DefaultWorkflow != "" {
			turn.Workflow = h.o.DefaultWorkflow
			ts, err = kortyx.StartTurn(ctx, h.o.Client, req.SessionID, turn, opts)
		}
		if err != nil || !ts.Reattached {
			return ts, 0, 0, err
		}
		return ts, 0, reattach(0), nil // a prompt's run is new: its response starts the stream
	}
	answer := resume.Response(req.Last().Content)
	var begin, from int64
	ts, err := kortyx.AnswerTurn(ctx, h.o.Client, req.SessionID, answer, kortyx.AnswerOptions{
		ClientTurnID: req.ClientTurnID, Reconnect: lastEventID(r) >= 0,
		Claimed: func(ctx context.Context, ts contracts.TurnStarted) error {
			var err error
			if ts.Reattached {
				begin, err = h.answeredAt(ctx, ts.RunID, answer.Token)
				return err
			}
			// The run is waiting, so its stream is still: what comes next belongs to this response.
			from, err = h.o.Broker.Last(ctx, ts.RunID)
			return err
		},
		// The reader left while the answer was on its way: cancel, as for any disconnect.
		Gone: func() bool { return r.Context().Err() != nil && h.o.Disconnect != DisconnectContinue },
	})
	if ts.Reattached {
		return ts, begin, reattach(begin), err
	}
	if err != nil {
		return ts, 0, 0, err
	}
	// A run restored by a rollback or fork may have asked its question again between the
	// offset read above and the answer: the response starts after that question's done.
	if at, err := h.answeredAt(ctx, ts.RunID, answer.Token); err == nil && at > from {
		from = at
	}
	return ts, from, from, nil
}

// answeredAt returns the offset after which the response to the question of token begins in the
// run's stream: the done that follows the question's (last) interrupt chunk.
func (h *Handler) answeredAt(ctx context.Context, runID, token string) (int64, error) {
	entries, err := h.o.Broker.Read(ctx, runID, 0, 0)
	if err != nil {
		return 0, err
	}
	asked := false
	var at int64
	for _, e := range entries {
		switch {
		case e.Chunk.Type == contracts.ChunkInterrupt && e.Chunk.ResumeToken == token:
			asked = true
		case asked && e.Chunk.Type == contracts.ChunkDone:
			at, asked = e.Offset, false
		}
	}
	if at == 0 {
		return 0, &contracts.Error{Code: contracts.CodeNotFound, Message: "The response to this answer is no longer in the stream."}
	}
	return at, nil
}

func lastEventID(r *http.Request) int64 {
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

// respond streams (or buffers) the turn's response to this reader, from offset from.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, req *Request, t *turn, from int64) {
	session := contracts.Chunk{Type: contracts.ChunkSession, SessionID: req.SessionID}
	chunks := []contracts.Chunk{session}
	buffered := req.Stream != nil && !*req.Stream
	run, guard := h.turnFollow(r.Context(), req.SessionID, t, from)
	var sse *stream.SSEWriter
	if !buffered {
		var err error
		opts := stream.SSEOptions{KeepAlive: h.o.KeepAlive, Run: run}
		if !Resumable(r) {
			runID := t.ts.RunID
			opts.OmitIDs = true
			opts.Transform = func(c contracts.Chunk) []any { return KortyxChunks(runID, c) }
		}
		if sse, err = stream.NewSSEWriter(w, opts); err == nil {
			err = sse.Event(0, session)
		}
		if err != nil {
			h.leave(r, req, t, true)
			return
		}
	}
	collect := guard(func(e stream.Entry) error {
		chunks = append(chunks, e.Chunk)
		h.index.learn(e.Chunk)
		return nil
	})
	var err error
	if sse != nil {
		err = sse.Follow(r.Context(), h.o.Broker, t.ts.RunID, from, stream.UntilResponse, collect)
	} else {
		err = stream.FollowRun(r.Context(), h.o.Broker, t.ts.RunID, from, stream.UntilResponse, run, collect)
	}
	if err != nil && ((sse != nil && sse.Err() != nil) || r.Context().Err() != nil) {
		h.leave(r, req, t, true)
		return
	}
	if isGone(err) && len(chunks) == 1 {
		if rebuilt := h.rebuild(r.Context(), req.SessionID, t); rebuilt != nil {
			h.o.Logger.Warn("kortyx chat: the run's stream is gone; its open question was rebuilt from the session", "run", t.ts.RunID)
			chunks, err = append(chunks, rebuilt...), nil
			for _, c := range rebuilt {
				if sse != nil {
					_ = sse.Event(0, c)
				}
			}
		}
	}
	if err == nil {
		h.turns.responseOver(t)
	} else {
		var fail contracts.Chunk
		if isGone(err) {
			h.o.Logger.Warn("kortyx chat: the run's stream is gone", "run", t.ts.RunID, "error", err)
			f := httpapi.Public(err)
			fail = contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}
		} else {
			fail = httpapi.ErrorChunk(h.o.Logger, t.ts.RunID, err) // logs err
		}
		chunks = append(chunks, fail, contracts.Chunk{Type: contracts.ChunkDone})
		if sse != nil {
			_ = sse.Event(0, fail)
			_ = sse.Event(0, contracts.Chunk{Type: contracts.ChunkDone})
		}
	}
	if sse != nil {
		_ = sse.Done()
	} else {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(stream.Buffer(chunks))
	}
	if err == nil {
		// The response is complete only once it was finalized: a client that reads it to its
		// end finds OnResponseFinalized's work done (its transcript saved).
		select {
		case <-t.ended:
		case <-r.Context().Done():
		}
	}
	h.leave(r, req, t, false)
}

// leave unregisters a reader of t; with DisconnectCancel, the last reader leaving early cancels
// a run attempt that a request of this handler started (see turns.leave).
func (h *Handler) leave(r *http.Request, req *Request, t *turn, early bool) {
	if !h.turns.leave(t, early, h.o.Disconnect != DisconnectContinue, h.o.FinalizeTimeout) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.o.FinalizeTimeout)
	defer cancel()
	err := temporalCall(ctx, h.o.Client, func(ctx context.Context) error {
		_, err := kortyx.StopTurn(ctx, h.o.Client, req.SessionID, t.ts.RunID)
		return err
	})
	if err != nil {
		h.o.Logger.Warn("kortyx chat: cancelling the run of a disconnected reader failed", "run", t.ts.RunID, "error", err)
	}
}

// startFinalizer follows the response of a new turn, apart from its readers, and finalizes it
// once (OnResponseFinalized), then closes the turn's channel (OnExecution). It follows until the
// response's end, or until the last reader has been gone for FinalizeTimeout.
func (h *Handler) startFinalizer(t *turn, r *http.Request, req *Request, a *ask) {
	if h.o.OnExecution != nil {
		h.o.OnExecution(t.ended)
	}
	ctx := h.turns.followContext(t, r)
	go func() {
		defer close(t.ended)
		chunks := []contracts.Chunk{{Type: contracts.ChunkSession, SessionID: req.SessionID}}
		run, guard := h.turnFollow(ctx, req.SessionID, t, t.begin)
		err := stream.FollowRun(ctx, h.o.Broker, t.ts.RunID, t.begin, stream.UntilResponse, run, guard(func(e stream.Entry) error {
			chunks = append(chunks, e.Chunk)
			h.index.learn(e.Chunk)
			return nil
		}))
		if isGone(err) && len(chunks) == 1 {
			if rebuilt := h.rebuild(ctx, req.SessionID, t); rebuilt != nil {
				chunks, err = append(chunks, rebuilt...), nil
			}
		}
		if err != nil && ctx.Err() == nil {
			f := httpapi.Public(httpapi.StreamFailure(err))
			chunks = append(chunks, contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}, contracts.Chunk{Type: contracts.ChunkDone})
		}
		msg, status := stream.Finalize(req.ClientTurnID, chunks)
		h.turns.settle(t, msg.CheckpointID)
		h.finalize(r, req, t.ts, msg, status)
		h.turns.done(t, a)
		t.stop()
	}()
}

// finalize runs OnResponseFinalized with the normalized assistant message; its failure goes to
// OnLifecycleError and changes nothing else.
func (h *Handler) finalize(r *http.Request, req *Request, ts contracts.TurnStarted, msg stream.FinalizedMessage, status stream.Status) {
	if h.o.OnResponseFinalized == nil {
		return
	}
	ev := ResponseFinalized{Request: r, SessionID: req.SessionID, RunID: ts.RunID, ClientTurnID: req.ClientTurnID,
		Status: status, CheckpointID: msg.CheckpointID, Message: msg}
	err := runCallback(PhaseResponseFinalized, func() error { return h.o.OnResponseFinalized(context.WithoutCancel(r.Context()), ev) })
	if err != nil {
		reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: PhaseResponseFinalized, ClientTurnID: req.ClientTurnID, Err: err})
	}
}

// StopHandler serves the Stop button: POST {"sessionId": "..."} cancels the session's active run
// (authorized like chat requests) and answers {"runId": "..."} ("" when nothing was running).
func (h *Handler) StopHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.o.CORS.serve(w, r) {
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
			if err := h.o.Authorize(r, req); err != nil {
				fail(w, r, h.o.Logger, authError(err))
				return
			}
		}
		var runID string
		err := temporalCall(r.Context(), h.o.Client, func(ctx context.Context) error {
			var err error
			runID, err = kortyx.StopSession(ctx, h.o.Client, req.SessionID)
			return err
		})
		if err != nil {
			fail(w, r, h.o.Logger, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"runId": runID})
	})
}
