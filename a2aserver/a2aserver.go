package a2aserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/sessions"
)

// protocolVersion is the A2A version the cards declare in their 0.3 field protocolVersion: the
// one of the Go SDK's types and JSON-RPC method names (a2a-go v0.3.x) and of the 0.3 JS client
// the tests drive (@a2a-js/sdk 0.3). The 1.0 interfaces are in supportedInterfaces.
const protocolVersion = "0.3.0"

// cardPath is where each agent's card is served, after /a2a/{agent}.
const cardPath = "/.well-known/agent-card.json"

// Options configure [New]. Temporal, the broker, the task queue, the agents (each gets a card
// and an endpoint) and the data converter of run histories are the session service's
// ([sessions.Options]).
type Options struct {
	// Authorize runs before every call of the session service, with what the request does
	// (sessions.Access, Wire "a2a"); return a *contracts.Error with CodeUnauthorized or
	// CodeForbidden (HTTP 401/403; any other error is FORBIDDEN) to refuse. Required unless
	// AllowUnauthenticated. The agent cards are public. For a call on a task, only the run's
	// start (its session; the first page of its history) is read before; an id that is no task of the endpoint's agent is
	// asked about with SessionID "" and then TaskNotFound, so a refused caller cannot tell
	// which tasks exist.
	Authorize func(r *http.Request, a sessions.Access) error
	// AllowUnauthenticated accepts requests without Authorize (development only).
	AllowUnauthenticated bool
	// Owner, when set, names the authenticated caller of a request: a session's first turn
	// makes its caller the session's owner, and the session refuses prompt turns of another
	// one (FORBIDDEN), as on every wire. Answers and stops carry no owner: check them in
	// Authorize against sessions.Service.Owner.
	Owner func(r *http.Request) string
	// BaseURL is the public origin the cards name in their url ("https://agents.example.com");
	// "" means the request's own (http or https, and its Host).
	BaseURL string
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// KeepAlive is the interval of the ": keep-alive" comments of an idle stream; 0 means
	// every 15 s, a negative value disables them.
	KeepAlive time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Busy is what a message sent while the context's run is working does, unless its
	// metadata names one ("kortyx/busy"): "reject" (the default: SESSION_BUSY), "enqueue",
	// "interrupt" or "steer" (docs/steering.md). On a working task, steer adds the message to
	// the task.
	Busy string
}

// Handler serves the A2A agent cards, JSON-RPC endpoints (A2A 1.0 and 0.3) and HTTP+JSON
// routes (A2A 1.0) of every agent under /a2a/.
type Handler struct {
	o   Options
	svc *sessions.Service
}

// New checks the options and returns the handler over svc, the session service the program's
// wires share (it must have a broker, to read the tasks' streams, and a catalog of agents,
// [sessions.Options].Agents); mount it at "/a2a/".
func New(svc *sessions.Service, o Options) (*Handler, error) {
	switch {
	case svc == nil:
		return nil, errors.New("kortyx a2aserver: the session service is required")
	case svc.Broker() == nil:
		return nil, errors.New("kortyx a2aserver: the session service has no broker (sessions.Options.Broker: the stream broker the workers publish to)")
	case svc.Agents() == nil:
		return nil, errors.New("kortyx a2aserver: the session service has no agents (sessions.Options.Agents: the agents to serve)")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx a2aserver: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	case sessions.CheckBusy(o.Busy) != nil:
		return nil, fmt.Errorf("kortyx a2aserver: Options.Busy: %w", sessions.CheckBusy(o.Busy))
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpwire.DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Handler{o: o, svc: svc}, nil
}

// ServeHTTP serves GET /a2a/{agent}/.well-known/agent-card.json, POST /a2a/{agent} (JSON-RPC:
// the methods of A2A 0.3 and of A2A 1.0) and the HTTP+JSON routes of A2A 1.0 under
// /a2a/{agent}/ (message:send, message:stream, tasks/{id}, tasks/{id}:cancel,
// tasks/{id}:subscribe).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/")
	agent, card := strings.CutSuffix(rest, cardPath)
	route := ""
	if a, found := restRoute(r); ok && !card && found != "" {
		agent, route = a, found
	}
	def, known := h.svc.Agent(agent)
	switch {
	case !ok || agent == "" || strings.Contains(agent, "/") || !known:
		httpwire.WriteError(w, r, h.o.Logger, http.StatusNotFound, contracts.Errorf(contracts.CodeNotFound, "No A2A agent at %s.", r.URL.Path))
	case card && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h.card(r, def))
	case card:
		w.Header().Set("Allow", http.MethodGet)
		httpwire.WriteError(w, r, h.o.Logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use GET."))
	case route != "":
		h.rest(w, r, def.ID, route)
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		httpwire.WriteError(w, r, h.o.Logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use POST with a JSON-RPC request."))
	default:
		h.rpc(w, r, def.ID)
	}
}

// agentInterface is an entry of an A2A 1.0 card's supportedInterfaces: a binding of one
// protocol version at a URL.
type agentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// agentCard is the card of both versions: the fields of A2A 0.3 (url, preferredTransport,
// protocolVersion, read by 0.3 clients) and A2A 1.0's supportedInterfaces (read by 1.0 clients).
type agentCard struct {
	*a2a.AgentCard
	SupportedInterfaces []agentInterface `json:"supportedInterfaces"`
}

// card is the agent card of def: one skill, the agent itself; JSON-RPC (1.0 and 0.3) at the
// endpoint, and the HTTP+JSON binding of 1.0 under it.
func (h *Handler) card(r *http.Request, def contracts.Agent) *agentCard {
	base := strings.TrimSuffix(h.o.BaseURL, "/")
	if base == "" {
		base = "http://" + r.Host
		if r.TLS != nil {
			base = "https://" + r.Host
		}
	}
	desc := def.Description
	if desc == "" {
		desc = "The " + def.ID + " agent."
	}
	url := base + "/a2a/" + def.ID
	modes := []string{"text/plain", "application/json"}
	return &agentCard{AgentCard: &a2a.AgentCard{Name: def.ID, Description: desc, Version: def.Version, ProtocolVersion: protocolVersion,
		URL: url, PreferredTransport: a2a.TransportProtocolJSONRPC,
		Capabilities:      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes: modes, DefaultOutputModes: modes,
		Skills: []a2a.AgentSkill{{ID: def.ID, Name: def.ID, Description: desc, Tags: []string{"kortyx"}}}},
		SupportedInterfaces: []agentInterface{
			{URL: url, ProtocolBinding: bindingJSONRPC, ProtocolVersion: v1Version},
			{URL: url, ProtocolBinding: bindingREST, ProtocolVersion: v1Version},
			{URL: url, ProtocolBinding: bindingJSONRPC, ProtocolVersion: "0.3"},
		}}
}

// The JSON-RPC method names of A2A 0.3.
const (
	methodSend        = "message/send"
	methodStream      = "message/stream"
	methodGet         = "tasks/get"
	methodCancel      = "tasks/cancel"
	methodResubscribe = "tasks/resubscribe"
	methodPushPrefix  = "tasks/pushNotificationConfig/"
	methodCard        = "agent/getAuthenticatedExtendedCard"
)

// The A2A JSON-RPC error codes this wire answers with.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeTaskNotFound   = -32001
	codeNotCancelable  = -32002
	codePushNotSupp    = -32003
	codeUnsupported    = -32004
	codeContentType    = -32005
	codeNoExtendedCard = -32007
	codeVersion        = -32009
)

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error: an A2A code, the failure's safe message, and the failure
// descriptor as data.
type rpcError struct {
	Code    int                `json:"code"`
	Message string             `json:"message"`
	Data    *contracts.Failure `json:"data,omitempty"`
}

// codedError is an error with the A2A code to answer it with.
type codedError struct {
	code int // the JSON-RPC code of A2A 0.3
	v1   int // the one of A2A 1.0 where it differs (0: code)
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// rpcFail is an error of A2A code code whose failure has our code c and message msg.
func rpcFail(code int, c contracts.Code, format string, args ...any) error {
	return &codedError{code: code, err: contracts.Errorf(c, format, args...)}
}

// endedFail is the error of a message to a task that has ended: InvalidRequest in A2A 0.3,
// UnsupportedOperation in 1.0.
func endedFail(format string, args ...any) error {
	return &codedError{code: codeInvalidRequest, v1: codeUnsupported, err: contracts.Errorf(contracts.CodeInvalidRequest, format, args...)}
}

// toRPC is the JSON-RPC error of err: the A2A code it carries, else the one of its Kortyx
// code; the message and data are the public failure descriptor (internal failures are logged).
func (h *Handler) toRPC(r *http.Request, method string, err error) *rpcError {
	code, f := h.codeOf(r, method, err, false)
	return &rpcError{Code: code, Message: f.Message, Data: &f}
}

// codeOf is the JSON-RPC code of err in A2A 0.3 (v1 false) or 1.0 and its public failure; an
// internal failure is logged.
func (h *Handler) codeOf(r *http.Request, method string, err error, v1 bool) (int, contracts.Failure) {
	f := httpwire.Public(err)
	code := codeInternal
	var ce *codedError
	switch {
	case errors.As(err, &ce):
		code = ce.code
		if v1 && ce.v1 != 0 {
			code = ce.v1
		}
	case f.Code == contracts.CodeNotFound:
		code = codeTaskNotFound
	case f.Code == contracts.CodeUnauthorized || f.Code == contracts.CodeForbidden:
		code = codeInvalidRequest
	case f.Category == "request" || f.Category == "validation":
		code = codeInvalidParams
	}
	if code == codeInternal {
		h.o.Logger.Error("kortyx a2aserver: request failed", "method", method, "path", r.URL.Path, "code", f.Code, "error", err)
	}
	return code, f
}

// rpc serves one JSON-RPC request to agent's endpoint: a method of A2A 1.0 ([Handler.rpcV1]),
// or one of 0.3. A request that fails before its method is known is answered in the shape of
// the version its A2A-Version header names (none: 0.3).
func (h *Handler) rpc(w http.ResponseWriter, r *http.Request, agent string) {
	body, err := httpwire.ReadBody(w, r, h.o.MaxBodyBytes)
	var req rpcRequest
	switch {
	case err != nil:
		err = rpcFail(codeInvalidRequest, contracts.CodeInvalidRequest, "%s", contracts.FailureOf(err).Message)
	case !json.Valid(body):
		err = rpcFail(codeParse, contracts.CodeInvalidRequest, "The request body is not JSON.")
	case json.Unmarshal(body, &req) != nil:
		err = rpcFail(codeInvalidRequest, contracts.CodeInvalidRequest, "The request body is not a JSON-RPC request object (batches are not accepted).")
	case req.JSONRPC != "2.0" || req.Method == "":
		err = rpcFail(codeInvalidRequest, contracts.CodeInvalidRequest, `A JSON-RPC 2.0 request needs "jsonrpc": "2.0" and a method.`)
	}
	if len(bytes.TrimSpace(req.ID)) == 0 {
		req.ID = json.RawMessage("null")
	}
	c := &call{h: h, r: r, agent: agent}
	switch {
	case (err == nil && v1Methods[req.Method]) || (!isV03(req.Method) && wantsV1(r)):
		h.rpcV1(w, r, req, c, err)
		return
	case err != nil:
		h.reply(w, r, req, nil, err)
		return
	}
	var res any
	switch req.Method {
	case methodStream, methodResubscribe:
		h.stream(w, r, req, c)
		return
	case methodSend:
		res, err = with(req.Params, c.send)
	case methodGet:
		res, err = with(req.Params, func(p *a2a.TaskQueryParams) (*a2a.Task, error) { return c.get(p.ID, p.HistoryLength) })
	case methodCancel:
		res, err = with(req.Params, func(p *a2a.TaskIDParams) (*a2a.Task, error) { return c.cancel(p.ID) })
	case methodCard:
		err = rpcFail(codeNoExtendedCard, contracts.CodeInvalidRequest, "This agent has no authenticated extended card: its public card is all there is.")
	default:
		if strings.HasPrefix(req.Method, methodPushPrefix) {
			err = rpcFail(codePushNotSupp, contracts.CodeInvalidRequest, "Push notifications are not supported: follow the task with message/stream or tasks/resubscribe.")
		} else {
			err = rpcFail(codeMethodNotFound, contracts.CodeInvalidRequest, "Unknown method %q.", req.Method)
		}
	}
	h.reply(w, r, req, res, err)
}

// v03Methods are the JSON-RPC methods of A2A 0.3 (push notification methods aside).
var v03Methods = map[string]bool{methodSend: true, methodStream: true, methodGet: true, methodCancel: true, methodResubscribe: true, methodCard: true}

// isV03 reports whether method is one of A2A 0.3: such a request is served as 0.3 whatever its
// A2A-Version header says.
func isV03(method string) bool {
	return v03Methods[method] || strings.HasPrefix(method, methodPushPrefix)
}

// with decodes params and calls fn with them.
func with[P, R any](params json.RawMessage, fn func(*P) (R, error)) (any, error) {
	var p P
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return fn(&p)
}

// decode decodes params into v: InvalidParams when they do not fit.
func decode(params json.RawMessage, v any) error {
	if len(bytes.TrimSpace(params)) == 0 || json.Unmarshal(params, v) != nil {
		return rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "The params are not valid for this method.")
	}
	return nil
}

// reply writes the JSON-RPC response: result, or err as its error (HTTP 401 or 403 for a
// refused authorization, else 200).
func (h *Handler) reply(w http.ResponseWriter, r *http.Request, req rpcRequest, result any, err error) {
	if err != nil && r.Context().Err() != nil {
		return // the client left
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: result}
	status := http.StatusOK
	if err != nil {
		resp.Result, resp.Error = nil, h.toRPC(r, req.Method, err)
		switch resp.Error.Data.Code {
		case contracts.CodeUnauthorized:
			status = http.StatusUnauthorized
		case contracts.CodeForbidden:
			status = http.StatusForbidden
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// stream serves message/stream and tasks/resubscribe as server-sent events: each A2A event a
// JSON-RPC response of the request's id. A refused authorization before the first event is a
// plain JSON answer with HTTP 401 or 403 ([Handler.reply]), which the official clients read as
// the refusal; any other failure (bad params, an unknown task, one after the first event) is
// one error response in the event stream, the shape those clients read errors of a stream in
// (a 200 JSON answer to a stream request is "Invalid response Content-Type" to @a2a-js/sdk).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, req rpcRequest, c *call) {
	out := h.events(w, c, func(ev a2a.Event) any { return rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: ev} })
	var err error
	if req.Method == methodStream {
		_, err = with(req.Params, func(p *a2a.MessageSendParams) (any, error) { return nil, c.streamMessage(p) })
	} else {
		_, err = with(req.Params, func(p *a2a.TaskIDParams) (any, error) { return nil, c.resubscribe(p.ID, false) })
	}
	if err == nil {
		return
	}
	if code := contracts.CodeOf(err); !out.opened() && (code == contracts.CodeUnauthorized || code == contracts.CodeForbidden) {
		h.reply(w, r, req, nil, err)
		return
	}
	if out.open() == nil && r.Context().Err() == nil {
		_ = out.send("", rpcResponse{JSONRPC: "2.0", ID: req.ID, Error: h.toRPC(r, req.Method, err)})
	}
}

// events is the event stream of a stream request of c, opened at its first write: c emits
// each A2A event as the JSON value wrap returns, and keep-alives while idle.
func (h *Handler) events(w http.ResponseWriter, c *call, wrap func(a2a.Event) any) *sseOut {
	out := &sseOut{w: w, keepAlive: h.o.KeepAlive}
	c.idle = h.o.KeepAlive // the writer's interval: 0 is httpwire.DefaultKeepAlive, a negative value none
	if c.idle == 0 {
		c.idle = httpwire.DefaultKeepAlive
	}
	c.idle = max(c.idle, 0)
	c.emit = func(ev a2a.Event) error {
		if ev == nil {
			return out.keepAliveEvent()
		}
		return out.send("", wrap(ev))
	}
	return out
}

// sseOut is the event stream of one stream request, opened (its headers sent) at its first
// write, written by Kortyx's one SSE writer.
type sseOut struct {
	w         http.ResponseWriter
	keepAlive time.Duration
	sw        *httpwire.SSEWriter
	pending   []any
}

// opened reports whether the stream's headers were sent.
func (s *sseOut) opened() bool { return s.sw != nil }

// open sends the stream's headers, once.
func (s *sseOut) open() error {
	if s.sw != nil {
		return s.sw.Err()
	}
	var err error
	s.sw, err = httpwire.NewSSEWriter(s.w, httpwire.SSEOptions{KeepAlive: s.keepAlive, OmitIDs: true,
		Transform: func(contracts.Chunk) []any { out := s.pending; s.pending = nil; return out }})
	return err
}

// keepAliveEvent writes a keep-alive comment.
func (s *sseOut) keepAliveEvent() error {
	if err := s.open(); err != nil {
		return err
	}
	return s.sw.KeepAlive()
}

// send writes v as one event: a data line of its JSON, after an "event: <name>" line when
// name is set (the error event of A2A 1.0's HTTP+JSON binding, which the SSE writer has no
// field for: it is written past it, on the same response, after the writer's last flush).
func (s *sseOut) send(name string, v any) error {
	if err := s.open(); err != nil {
		return err
	}
	if name == "" {
		s.pending = []any{v}
		return s.sw.Event(0, contracts.Chunk{})
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("kortyx a2aserver: encoding an event: %w", err)
	}
	rc := http.NewResponseController(s.w)
	_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return fmt.Errorf("kortyx a2aserver: writing an event: %w", err)
	}
	return rc.Flush()
}

// authorize asks Options.Authorize about a; a refusal that is not a *contracts.Error is
// FORBIDDEN.
func (h *Handler) authorize(r *http.Request, a sessions.Access) error {
	if h.o.Authorize == nil {
		return nil
	}
	a.Wire = "a2a"
	return httpwire.Refusal(h.o.Authorize(r, a))
}
