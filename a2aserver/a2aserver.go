package a2aserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/httpapi"
	"github.com/kortyx-go/kortyx/internal/ssewriter"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// protocolVersion is the A2A version the cards declare: the one of the Go SDK's types and
// JSON-RPC method names (a2a-go v0.3.x) and of the JS client the tests drive (@a2a-js/sdk 0.3).
const protocolVersion = "0.3.0"

// cardPath is where each agent's card is served, after /a2a/{agent}.
const cardPath = "/.well-known/agent-card.json"

// Options configure [New].
type Options struct {
	// Client reaches Temporal (required).
	Client client.Client
	// Broker is where the runs' streams are read (required): the workers' broker.
	Broker stream.Broker
	// Registry lists the agents (required): each definition gets a card and an endpoint.
	Registry *workflows.Registry
	// TaskQueue of new sessions and their runs (default contracts.DefaultTaskQueue).
	TaskQueue string
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
	// DataConverter decodes the payloads of run histories (the prompt and the answers of a
	// task's history): the one Client was dialed with (nil: Temporal's default).
	DataConverter converter.DataConverter
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Handler serves the A2A agent cards and JSON-RPC endpoints of every agent under /a2a/.
type Handler struct {
	o   Options
	svc *sessions.Service
}

// New checks the options and returns the handler; mount it at "/a2a/".
func New(o Options) (*Handler, error) {
	switch {
	case o.Client == nil:
		return nil, errors.New("kortyx a2aserver: Options.Client is required")
	case o.Broker == nil:
		return nil, errors.New("kortyx a2aserver: Options.Broker is required (the stream broker the workers publish to)")
	case o.Registry == nil:
		return nil, errors.New("kortyx a2aserver: Options.Registry is required (the agents to serve)")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx a2aserver: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpapi.DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DataConverter == nil {
		o.DataConverter = converter.GetDefaultDataConverter()
	}
	svc, err := sessions.New(sessions.Options{Client: o.Client, Broker: o.Broker, TaskQueue: o.TaskQueue, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return &Handler{o: o, svc: svc}, nil
}

// ServeHTTP serves GET /a2a/{agent}/.well-known/agent-card.json and POST /a2a/{agent}.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/")
	agent, card := strings.CutSuffix(rest, cardPath)
	def, known := h.o.Registry.Lookup(agent)
	switch {
	case !ok || agent == "" || strings.Contains(agent, "/") || !known:
		httpapi.WriteError(w, r, h.o.Logger, http.StatusNotFound, contracts.Errorf(contracts.CodeNotFound, "No A2A agent at %s.", r.URL.Path))
	case card && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h.card(r, def))
	case card:
		w.Header().Set("Allow", http.MethodGet)
		httpapi.WriteError(w, r, h.o.Logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use GET."))
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		httpapi.WriteError(w, r, h.o.Logger, http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use POST with a JSON-RPC request."))
	default:
		h.rpc(w, r, def.ID)
	}
}

// card is the agent card of def: one skill, the agent itself.
func (h *Handler) card(r *http.Request, def *workflows.Definition) *a2a.AgentCard {
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
	modes := []string{"text/plain", "application/json"}
	return &a2a.AgentCard{Name: def.ID, Description: desc, Version: def.Version, ProtocolVersion: protocolVersion,
		URL: base + "/a2a/" + def.ID, PreferredTransport: a2a.TransportProtocolJSONRPC,
		Capabilities:      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes: modes, DefaultOutputModes: modes,
		Skills: []a2a.AgentSkill{{ID: def.ID, Name: def.ID, Description: desc, Tags: []string{"kortyx"}}}}
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
	codeContentType    = -32005
	codeNoExtendedCard = -32007
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
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// rpcFail is an error of A2A code code whose failure has our code c and message msg.
func rpcFail(code int, c contracts.Code, format string, args ...any) error {
	return &codedError{code: code, err: contracts.Errorf(c, format, args...)}
}

// toRPC is the JSON-RPC error of err: the A2A code it carries, else the one of its Kortyx
// code; the message and data are the public failure descriptor (internal failures are logged).
func (h *Handler) toRPC(r *http.Request, method string, err error) *rpcError {
	f := httpapi.Public(err)
	code := codeInternal
	var ce *codedError
	switch {
	case errors.As(err, &ce):
		code = ce.code
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
	return &rpcError{Code: code, Message: f.Message, Data: &f}
}

// rpc serves one JSON-RPC request to agent's endpoint.
func (h *Handler) rpc(w http.ResponseWriter, r *http.Request, agent string) {
	body, err := httpapi.ReadBody(w, r, h.o.MaxBodyBytes)
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
	if err != nil {
		h.reply(w, r, req, nil, err)
		return
	}
	c := &call{h: h, r: r, agent: agent}
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
	var pending []any
	var sw *ssewriter.Writer
	open := func() error {
		if sw != nil {
			return sw.Err()
		}
		var err error
		sw, err = ssewriter.New(w, ssewriter.Options{KeepAlive: h.o.KeepAlive, OmitIDs: true,
			Transform: func(contracts.Chunk) []any { out := pending; pending = nil; return out }})
		return err
	}
	c.idle = h.o.KeepAlive // the writer's interval: 0 is ssewriter.DefaultKeepAlive, a negative value none
	if c.idle == 0 {
		c.idle = ssewriter.DefaultKeepAlive
	}
	c.idle = max(c.idle, 0)
	c.emit = func(ev a2a.Event) error {
		if err := open(); err != nil {
			return err
		}
		if ev == nil {
			return sw.KeepAlive()
		}
		pending = []any{rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: ev}}
		return sw.Event(0, contracts.Chunk{})
	}
	var err error
	if req.Method == methodStream {
		_, err = with(req.Params, func(p *a2a.MessageSendParams) (any, error) { return nil, c.streamMessage(p) })
	} else {
		_, err = with(req.Params, func(p *a2a.TaskIDParams) (any, error) { return nil, c.resubscribe(p.ID) })
	}
	if err == nil {
		return
	}
	if code := contracts.CodeOf(err); sw == nil && (code == contracts.CodeUnauthorized || code == contracts.CodeForbidden) {
		h.reply(w, r, req, nil, err)
		return
	}
	if open() == nil && r.Context().Err() == nil {
		pending = []any{rpcResponse{JSONRPC: "2.0", ID: req.ID, Error: h.toRPC(r, req.Method, err)}}
		_ = sw.Event(0, contracts.Chunk{})
	}
}

// authorize asks Options.Authorize about a; a refusal that is not a *contracts.Error is
// FORBIDDEN.
func (h *Handler) authorize(r *http.Request, a sessions.Access) error {
	if h.o.Authorize == nil {
		return nil
	}
	a.Wire = "a2a"
	return httpapi.Refusal(h.o.Authorize(r, a))
}
