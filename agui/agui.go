package agui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
)

// wire is the name of this wire in [sessions.Access].
const wire = "agui"

// Options configure [New].
type Options struct {
	// DefaultAgent runs the turns of a request whose route names no agent (a handler mounted
	// without {agent} in its pattern).
	DefaultAgent string
	// Authorize runs before any work, with what the request does ([sessions.Access], Wire
	// "agui", Action "start" or "answer"): return a *contracts.Error with CodeUnauthorized or
	// CodeForbidden (any other error refuses with FORBIDDEN). Required unless
	// AllowUnauthenticated. The threadId is not proof of ownership: check the session against
	// the authenticated caller ([sessions.Service.Owner]).
	Authorize func(r *http.Request, a sessions.Access) error
	// AllowUnauthenticated accepts requests without Authorize (development only).
	AllowUnauthenticated bool
	// Owner, when set, names the authenticated caller of a request: a session's first turn
	// makes its caller the session's owner, and the session refuses prompt turns of another
	// one (FORBIDDEN), as on every wire. Answers carry no owner: check them in Authorize.
	Owner func(r *http.Request) string
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// CORS, when set, lets browser apps on other origins call the route (the same type and
	// rules as the other wires'; nil: off). Mount the route for OPTIONS too.
	CORS *httpwire.CORS
	// KeepAlive is the interval of the ": keep-alive" comments sent while a response has no
	// event to send; 0 means every 15 s, a negative value disables them.
	KeepAlive time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Busy is what a run sent to a thread whose run is still running does, unless its input
	// names one (forwardedProps.busy): "reject" (the default: 409 SESSION_BUSY), "enqueue",
	// "interrupt" or "steer" (docs/steering.md).
	Busy string
}

// Handler serves AG-UI's HTTP transport: POST a RunAgentInput, get the run's events as
// server-sent events.
type Handler struct {
	o   Options
	svc *sessions.Service
}

// New checks the options and returns the handler over svc, the process's session service.
func New(svc *sessions.Service, o Options) (*Handler, error) {
	switch {
	case svc == nil:
		return nil, errors.New("kortyx agui: the session service is required (sessions.New)")
	case svc.Broker() == nil:
		return nil, errors.New("kortyx agui: the session service has no broker (sessions.Options.Broker: the stream broker the workers publish to)")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx agui: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	case sessions.CheckBusy(o.Busy) != nil:
		return nil, fmt.Errorf("kortyx agui: Options.Busy: %w", sessions.CheckBusy(o.Busy))
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpwire.DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Handler{o: o, svc: svc}, nil
}

// ServeHTTP runs the turn a RunAgentInput asks for (POST; the agent is the route's {agent},
// else DefaultAgent) and writes its events.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.o.CORS.Serve(w, r, http.MethodPost) {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, r, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest,
			"Use POST with a RunAgentInput to run the agent."))
		return
	}
	in, t, err := parseInput(r, h.o.MaxBodyBytes)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	agent := r.PathValue("agent")
	if agent == "" {
		agent = h.o.DefaultAgent
	}
	a := sessions.Access{Wire: wire, Action: sessions.ActionStart, SessionID: in.ThreadID, Workflow: agent}
	if t.answer != nil {
		a = sessions.Access{Wire: wire, Action: sessions.ActionAnswer, SessionID: in.ThreadID}
	} else if agent == "" {
		h.fail(w, r, 0, contracts.Errorf(contracts.CodeUnknownWorkflow, "No agent named: POST to the agent's route (/{agent}), or configure a default agent."))
		return
	}
	if err := h.authorize(r, a); err != nil {
		h.fail(w, r, 0, err)
		return
	}
	ts, tr, err := h.turn(r, in, t, agent)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	from, answered := int64(0), ""
	if t.answer != nil {
		from, answered = ts.Begin, t.answer.Token
	}
	var steer *sessions.TurnRequest
	if ts.Kind == sessions.BusySteer {
		steer = &tr
	}
	h.stream(w, r, in, ts, from, answered, steer)
}

// turn starts the prompt turn or the answer turn of a request, or reattaches to it: the
// runId is the turn's client turn id, so the same run sent again reads the same turn (also
// one that failed: Reconnect).
func (h *Handler) turn(r *http.Request, in *runInput, t turn, agent string) (sessions.TurnStarted, sessions.TurnRequest, error) {
	if t.answer != nil {
		ts, err := h.svc.Answer(r.Context(), in.ThreadID, *t.answer, sessions.AnswerOptions{ClientTurnID: in.RunID, Reconnect: true, Continue: true})
		return ts, sessions.TurnRequest{}, err
	}
	input, _ := json.Marshal(t.text)
	tr := sessions.TurnRequest{ClientTurnID: in.RunID, Workflow: agent, Input: input, Reconnect: true, Busy: in.busy}
	if tr.Busy == "" {
		tr.Busy = h.o.Busy
	}
	if h.o.Owner != nil {
		tr.Owner = h.o.Owner(r)
	}
	ts, err := h.svc.Start(r.Context(), in.ThreadID, tr)
	return ts, tr, err
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

// stream writes the response of turn ts, read from offset from, as AG-UI events: the one loop
// of a wire (sessions.Reader), each chunk mapped by the response's mapper.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, in *runInput, ts sessions.TurnStarted, from int64, answered string, steer *sessions.TurnRequest) {
	m := newMapper(in.ThreadID, in.RunID, in.State)
	m.schema = func(requestID string) json.RawMessage { // a custom question's, asked when one comes
		if v, err := h.svc.View(r.Context(), in.ThreadID); err == nil {
			return v.Schemas[requestID]
		}
		return nil
	}
	sw, err := httpwire.NewSSEWriter(w, httpwire.SSEOptions{KeepAlive: h.o.KeepAlive, OmitIDs: true, Transform: m.chunk})
	if err == nil {
		err = sw.Event(0, contracts.Chunk{Type: contracts.ChunkSession, SessionID: in.ThreadID})
	}
	if err != nil {
		return // the client left
	}
	var rd *sessions.Reader
	if steer != nil {
		// A steering message's response: the running turn's, from where its run took it in.
		rd, err = h.svc.FollowSteer(r.Context(), in.ThreadID, ts, *steer, sessions.FollowOptions{Idle: sw.KeepAliveInterval()})
	} else {
		rd, err = h.svc.Follow(r.Context(), in.ThreadID, ts, from, sessions.FollowOptions{Idle: sw.KeepAliveInterval(), Answered: answered, Started: !ts.Reattached})
	}
	for err == nil {
		var e stream.Entry
		e, err = rd.Next(r.Context())
		switch {
		case errors.Is(err, stream.ErrIdle):
			err = sw.KeepAlive()
		case err == nil:
			err = sw.Event(0, e.Chunk)
		}
	}
	if sw.Err() != nil || r.Context().Err() != nil || errors.Is(err, io.EOF) {
		return // the end of the response, or the client left (the run goes on; the same run reattaches)
	}
	_ = sw.Event(0, httpwire.ErrorChunk(h.o.Logger, ts.RunID, err)) // logs err
}
