package aisdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
)

// wire is the name of this wire in [sessions.Access].
const wire = "aisdk"

// streamHeader is the response header that marks a UI message stream (UI_MESSAGE_STREAM_HEADERS
// of `ai`).
const streamHeader = "X-Vercel-Ai-Ui-Message-Stream"

// Options configure [New]. Temporal, the broker, the task queue and the checkpoints kept per
// session are the session service's ([sessions.Options]).
type Options struct {
	// DefaultAgent runs the first turn of a chat whose request names no agent.
	DefaultAgent string
	// Authorize runs before any work, with what the request does ([sessions.Access], Wire
	// "aisdk"): return a *contracts.Error with CodeUnauthorized or CodeForbidden (any other
	// error refuses with FORBIDDEN). Required unless AllowUnauthenticated. The chat id is not
	// proof of ownership: check the session against the authenticated caller
	// ([sessions.Service.Owner]).
	Authorize func(r *http.Request, a sessions.Access) error
	// AllowUnauthenticated accepts requests without Authorize (development only).
	AllowUnauthenticated bool
	// Owner, when set, names the authenticated caller of a request: a session's first turn
	// makes its caller the session's owner, and the session refuses prompt turns of another
	// one (FORBIDDEN), as on every wire. Answers and stops carry no owner: check them in
	// Authorize against sessions.Service.Owner.
	Owner func(r *http.Request) string
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// CORS, when set, lets browser apps on other origins call the routes (a chat.CORS: the
	// same type and rules as the chat route's; nil: off). Mount the routes for OPTIONS too.
	CORS *httpwire.CORS
	// KeepAlive is the interval of the ": keep-alive" comments sent while a response has no
	// chunk to send; 0 means every 15 s, a negative value disables them.
	KeepAlive time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Busy is what a message sent while the chat's turn runs does, unless its request's body
	// names one ("busy"): "reject" (the default: 409 SESSION_BUSY), "enqueue", "interrupt" or
	// "steer" (docs/steering.md).
	Busy string
}

// Handler serves the AI SDK's chat transport: POST a chat request, get the turn's response as
// a UI message stream; GET <path>/{id}/stream reattaches to the chat's running turn (204 when
// none runs).
type Handler struct {
	o   Options
	svc *sessions.Service
}

// New checks the options and returns the handler over svc, the session service the program's
// wires share (it must have a broker: the handler reads the responses from it).
func New(svc *sessions.Service, o Options) (*Handler, error) {
	switch {
	case svc == nil:
		return nil, errors.New("kortyx aisdk: the session service is required")
	case svc.Broker() == nil:
		return nil, errors.New("kortyx aisdk: the session service has no broker (sessions.Options.Broker: the stream broker the workers publish to)")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx aisdk: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	case sessions.CheckBusy(o.Busy) != nil:
		return nil, fmt.Errorf("kortyx aisdk: Options.Busy: %w", sessions.CheckBusy(o.Busy))
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpwire.DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Handler{o: o, svc: svc}, nil
}

// ServeHTTP serves a chat request (POST) or a reconnect (GET, the path ending in
// "/{id}/stream").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.o.CORS.Serve(w, r, "GET, POST") {
		return
	}
	switch {
	case r.Method == http.MethodPost:
		h.post(w, r)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/stream"):
		h.resume(w, r)
	default:
		w.Header().Set("Allow", "POST, GET")
		h.fail(w, r, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest,
			"Use POST to send a chat request, GET %s/{id}/stream to reattach.", strings.TrimSuffix(r.URL.Path, "/")))
	}
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	httpwire.WriteError(w, r, h.o.Logger, status, err)
}

func (h *Handler) authorize(r *http.Request, a sessions.Access) error {
	if h.o.Authorize == nil {
		return nil
	}
	return httpwire.Refusal(h.o.Authorize(r, a))
}

// post starts the turn a chat request asks for (a prompt or an answer) and streams its response.
func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	req, t, err := parseRequest(r, h.o.MaxBodyBytes)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	a := sessions.Access{Wire: wire, Action: sessions.ActionStart, SessionID: req.ID, Workflow: req.Agent}
	if t.Answer != nil {
		a = sessions.Access{Wire: wire, Action: sessions.ActionAnswer, SessionID: req.ID}
	}
	if err := h.authorize(r, a); err != nil {
		h.fail(w, r, 0, err)
		return
	}
	var ts sessions.TurnStarted
	var tr sessions.TurnRequest
	m := newMapper(nil)
	var answered string
	if t.Answer == nil {
		ts, tr, err = h.start(r, req, t.Text)
	} else {
		answered = t.Answer.Token
		switch {
		case t.Answer.Cancel:
			m.cancel = &cancelledCall{toolCallID: t.ToolCallID, errorText: t.ErrorText}
		case t.ToolCallID != "":
			m.known = map[string]bool{t.ToolCallID: t.Approved}
		}
		// The request id names the answer's turn: the same answer sent again reattaches to it. A
		// cancel also once its turn has ended (Reconnect): the cancelled run ends the turn
		// without a checkpoint, and the session reattaches a retry to such a turn only for a
		// reader coming back; without it the same cancel is refused (INVALID_RESUME). A cancel
		// of a question the session never asked finds no turn and is refused.
		ts, err = h.svc.Answer(r.Context(), req.ID, *t.Answer, sessions.AnswerOptions{ClientTurnID: clientTurnID(t.Answer.RequestID), Continue: true,
			Reconnect: t.Answer.Cancel})
	}
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	from := ts.Begin
	if t.Answer == nil {
		from = 0 // a prompt's run is new: its response starts the stream
	}
	if ts.Kind == sessions.BusySteer {
		m.steer = &tr
	}
	h.stream(w, r, req.ID, ts, from, answered, m, !ts.Reattached)
}

// start starts a prompt turn (or reattaches to it: the user message's id names the turn).
func (h *Handler) start(r *http.Request, req *request, text string) (sessions.TurnStarted, sessions.TurnRequest, error) {
	input, _ := json.Marshal(text)
	last := req.Messages[len(req.Messages)-1]
	tr := sessions.TurnRequest{ClientTurnID: clientTurnID(last.ID), Workflow: req.Agent, Input: input, Context: req.Context, Busy: req.Busy}
	if tr.Busy == "" {
		tr.Busy = h.o.Busy
	}
	if h.o.Owner != nil {
		tr.Owner = h.o.Owner(r)
	}
	ts, err := h.svc.Start(r.Context(), req.ID, tr)
	if err != nil && contracts.CodeOf(err) == contracts.CodeUnknownWorkflow && req.Agent == "" && h.o.DefaultAgent != "" {
		tr.Workflow = h.o.DefaultAgent
		ts, err = h.svc.Start(r.Context(), req.ID, tr)
	}
	return ts, tr, err
}

// clientTurnID is id when it can name a turn ("" otherwise: the turn is not reattachable).
func clientTurnID(id string) string {
	if len(id) > 128 || contracts.CheckID("clientTurnId", id) != nil {
		return ""
	}
	return id
}

// resume reattaches to the chat's running turn: its response from the beginning (the
// transport replays it), or 204 when no turn runs.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" {
		rest := strings.TrimSuffix(r.URL.Path, "/stream")
		id = rest[strings.LastIndexByte(rest, '/')+1:]
	}
	if err := checkID(id); err != nil {
		h.fail(w, r, 0, err)
		return
	}
	if err := h.authorize(r, sessions.Access{Wire: wire, Action: sessions.ActionRead, SessionID: id}); err != nil {
		h.fail(w, r, 0, err)
		return
	}
	v, err := h.svc.View(r.Context(), id)
	if contracts.CodeOf(err) == contracts.CodeInvalidSession || (err == nil && v.Active == nil) {
		w.WriteHeader(http.StatusNoContent) // no such chat, or no turn runs
		return
	}
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	a := v.Active
	ts := sessions.TurnStarted{SessionID: id, RunID: a.RunID, TurnIndex: a.TurnIndex, Begin: a.Begin}
	h.stream(w, r, id, ts, a.Begin, a.Token, newMapper(nil), false)
}

// stream writes the response of turn ts, read from offset from, as a UI message stream: the
// one loop of a wire (sessions.Reader), each chunk mapped by m, the response's mapper.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, session string, ts sessions.TurnStarted, from int64, answered string, m *mapper, started bool) {
	var schemas map[string]json.RawMessage
	asked := false
	m.schema = func(requestID string) json.RawMessage { // asked once, when a question needs it
		if !asked {
			asked = true
			if v, err := h.svc.View(r.Context(), session); err == nil {
				schemas = v.Schemas
			}
		}
		return schemas[requestID]
	}
	w.Header().Set(streamHeader, "v1")
	sw, err := httpwire.NewSSEWriter(w, httpwire.SSEOptions{KeepAlive: h.o.KeepAlive, OmitIDs: true, Transform: m.chunk})
	if err == nil {
		err = sw.Event(0, contracts.Chunk{Type: contracts.ChunkSession, SessionID: session})
	}
	if err != nil {
		return // the client left
	}
	idle := sw.KeepAliveInterval()
	var rd *sessions.Reader
	if m.steer != nil {
		// A steering message's response: the running turn's, from where its run took it in.
		rd, err = h.svc.FollowSteer(r.Context(), session, ts, *m.steer, sessions.FollowOptions{Idle: idle})
	} else {
		rd, err = h.svc.Follow(r.Context(), session, ts, from, sessions.FollowOptions{Idle: idle, Answered: answered, Started: started})
	}
	for err == nil {
		var e stream.Entry
		e, err = rd.Next(r.Context())
		switch {
		case errors.Is(err, stream.ErrIdle):
			err = sw.KeepAlive()
		case err == nil:
			err = sw.Event(e.Offset, e.Chunk)
		}
	}
	if sw.Err() != nil || r.Context().Err() != nil {
		return // the client left; the run goes on, and a reconnect reattaches
	}
	if !errors.Is(err, io.EOF) {
		_ = sw.Event(0, httpwire.ErrorChunk(h.o.Logger, ts.RunID, err)) // logs err
		_ = sw.Event(0, contracts.Chunk{Type: contracts.ChunkDone})
	}
	_ = sw.Done()
}
