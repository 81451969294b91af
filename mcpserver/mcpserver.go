package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure [New]. Temporal, the broker, the task queue and the agents served as
// tools are the session service's ([sessions.Options]).
type Options struct {
	// Authorize runs before tools/list (Action "read", no session) and before a call touches
	// a session: "start" for a new turn (Workflow: the tool's agent); for a call naming a
	// session, "read" first (its open question is looked up), then "answer" when it has one;
	// for a 2026-07-28 call that carries a requestState, "answer" with the state's session.
	// Its request carries the headers of the POST that carried the message (the go-sdk hands a
	// tool handler the headers, not the request): method POST and path "/mcp" whatever the
	// mount, no body. Refuse with a *contracts.Error of
	// CodeUnauthorized or CodeForbidden (any other error refuses with FORBIDDEN). Required
	// unless AllowUnauthenticated.
	Authorize func(r *http.Request, a sessions.Access) error
	// AllowUnauthenticated accepts requests without Authorize (development only).
	AllowUnauthenticated bool
	// Owner, when set, names the authenticated caller of a request: a session's first turn
	// makes its caller the session's owner, and the session refuses prompt turns of another
	// one (FORBIDDEN), as on every wire. Answers and stops carry no owner: check them in
	// Authorize against sessions.Service.Owner.
	Owner func(r *http.Request) string
	// MaxBodyBytes bounds request bodies (default 1 MiB); a larger one is refused with a
	// JSON-RPC error of code INVALID_REQUEST (HTTP 400), as on every wire.
	MaxBodyBytes int64
	// SessionTimeout closes an MCP session (the go-sdk keeps each in this process's memory)
	// after no request came for that long (default 1 h); its runs are not touched.
	SessionTimeout time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Busy is what a call naming a session whose turn is still running does, unless its _meta
	// names one ("kortyx/busy"): "reject" (the default: the call fails with SESSION_BUSY),
	// "enqueue", "interrupt" or "steer" (docs/steering.md).
	Busy string
	// StatelessRevision serves MCP 2026-07-28 beside 2025-03-26 to 2025-11-25: a request whose
	// Mcp-Protocol-Version header, or whose _meta "io.modelcontextprotocol/protocolVersion",
	// is 2026-07-28 is served without a session (server/discover, tools/list, tools/call), and
	// a question of a run is an input-required result whose signed requestState the client's
	// next call sends back with the answer. Off, such a request is refused with the version
	// error -32022 naming the versions served, and a client falls back to 2025-11-25. Turning
	// it on moves every client that prefers 2026-07-28 (the go-sdk v1.8.0 client does) to it:
	// no Mcp-Session-Id, no Last-Event-ID resumption, no logging/setLevel.
	StatelessRevision bool
	// RequestStateKey is the HMAC-SHA256 key of the requestStates of StatelessRevision (at
	// least 32 bytes). Give every API process that serves the same sessions the same key: a
	// state is good on any of them. Without one, New draws a random key: a state is then good
	// only on the process that issued it, until it restarts (elsewhere the client gets -32602
	// and calls again with _meta kortyx/sessionId, which asks the open question again).
	RequestStateKey []byte
}

// Handler is the MCP server: streamable HTTP (POST, GET and DELETE on one path) with one
// tool per agent of the registry.
type Handler struct {
	o         Options
	svc       *sessions.Service
	tools     map[string]*agentTool
	srv       *mcp.Server
	mcp       http.Handler
	stateless http.Handler // the requests of 2026-07-28 (nil unless Options.StatelessRevision)
	key       []byte       // the requestState key
}

// agentTool is one agent served as a tool.
type agentTool struct {
	def contracts.Agent
	// wrapped is set when the agent's input is not an object: the tool's arguments are
	// {"input": value} (or {"message": text} without an input schema).
	wrapped string
	output  bool // the agent has an object output schema: results carry structuredContent
}

// toolName is the MCP tool name rule (SEP-986): 1 to 128 of A-Z, a-z, 0-9, _, - and '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// New checks the options and returns the MCP server over svc, the session service the
// program's wires share (it must have a broker and a catalog of agents,
// [sessions.Options].Agents: its agents at New are the tools). An agent whose id is not a
// valid MCP tool name is not served (logged).
func New(svc *sessions.Service, o Options) (*Handler, error) {
	switch {
	case svc == nil:
		return nil, errors.New("kortyx mcpserver: the session service is required")
	case svc.Broker() == nil:
		return nil, errors.New("kortyx mcpserver: the session service has no broker (sessions.Options.Broker: the stream broker the workers publish to)")
	case svc.Agents() == nil:
		return nil, errors.New("kortyx mcpserver: the session service has no agents (sessions.Options.Agents): they are the tools")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx mcpserver: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
	case sessions.CheckBusy(o.Busy) != nil:
		return nil, fmt.Errorf("kortyx mcpserver: Options.Busy: %w", sessions.CheckBusy(o.Busy))
	case len(o.RequestStateKey) > 0 && len(o.RequestStateKey) < minStateKey:
		return nil, fmt.Errorf("kortyx mcpserver: Options.RequestStateKey has %d bytes: give it at least %d random bytes (or none, for a random key per process)", len(o.RequestStateKey), minStateKey)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpwire.DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = time.Hour
	}
	sdkLog := slog.New(warnings{o.Logger.Handler()}) // the SDK logs every session at info
	srv := mcp.NewServer(&mcp.Implementation{Name: "kortyx", Version: "1"}, &mcp.ServerOptions{Logger: sdkLog})
	h := &Handler{o: o, svc: svc, tools: map[string]*agentTool{}, srv: srv}
	for _, def := range svc.Agents() {
		if !toolName.MatchString(def.ID) {
			o.Logger.Warn("kortyx mcpserver: agent not served: its id is not a valid MCP tool name (1-128 of A-Z a-z 0-9 _ - .)", "agent", def.ID)
			continue
		}
		t, tool := newTool(def)
		h.tools[def.ID] = t
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := h.call(ctx, t, req)
			logResult(ctx, req.Session, res)
			return res, err
		})
	}
	srv.AddReceivingMiddleware(h.authorizeList, checkLevels)
	h.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger: sdkLog, MaxRequestBodyBytes: o.MaxBodyBytes, EventStore: mcp.NewMemoryEventStore(nil),
		SessionTimeout: o.SessionTimeout})
	if o.StatelessRevision {
		h.key = slices.Clone(o.RequestStateKey)
		if len(h.key) == 0 {
			h.key = make([]byte, minStateKey)
			_, _ = rand.Read(h.key) // crypto/rand.Read does not fail
		}
		// The go-sdk serves 2026-07-28 from a stateless handler only: one temporary session per
		// request, its protocol version and capabilities from the request's _meta.
		h.stateless = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Logger: sdkLog, MaxRequestBodyBytes: o.MaxBodyBytes, Stateless: true})
	}
	return h, nil
}

// newTool maps an agent to its tool: input schema from the agent's (an object schema as it
// is; another one under "input"; none: {"message": string}), output schema when the agent's
// is an object schema.
func newTool(def contracts.Agent) (*agentTool, *mcp.Tool) {
	t := &agentTool{def: def}
	tool := &mcp.Tool{Name: def.ID, Description: def.Description}
	if tool.Description == "" {
		tool.Description = "Runs the Kortyx agent " + def.ID + "."
	}
	switch {
	case def.InputSchema == nil:
		t.wrapped = "message"
		tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The user message."}},"required":["message"]}`)
	case schemaType(def.InputSchema.Raw()) == "object":
		tool.InputSchema = def.InputSchema.Raw()
	default:
		t.wrapped = "input"
		tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"input":` + string(def.InputSchema.Raw()) + `},"required":["input"]}`)
	}
	if def.OutputSchema != nil && schemaType(def.OutputSchema.Raw()) == "object" {
		t.output = true
		tool.OutputSchema = def.OutputSchema.Raw()
	}
	return t, tool
}

func schemaType(raw json.RawMessage) string {
	var s struct {
		Type any `json:"type"`
	}
	_ = json.Unmarshal(raw, &s)
	typ, _ := s.Type.(string)
	return typ
}

// input returns the run's input of a call's arguments, or the INVALID_INPUT error (with the
// issues) when they do not match the tool's input schema: the call's result is then a tool
// error ([invalidArguments]).
func (t *agentTool) input(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var in json.RawMessage = args
	if t.wrapped != "" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil {
			return nil, contracts.Errorf(contracts.CodeInvalidInput, "The arguments must be a JSON object.")
		}
		v, ok := obj[t.wrapped]
		if !ok {
			return nil, &contracts.Error{Code: contracts.CodeInvalidInput, Message: "The arguments do not match the tool's input schema.",
				Issues: []contracts.Issue{{Path: []any{t.wrapped}, Code: "required", Message: t.wrapped + " is required"}}}
		}
		in = v
		if t.wrapped == "message" {
			var s string
			if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
				return nil, &contracts.Error{Code: contracts.CodeInvalidInput, Message: "The arguments do not match the tool's input schema.",
					Issues: []contracts.Issue{{Path: []any{"message"}, Code: "invalid_type", Message: "message must be a non-empty string"}}}
			}
			in, _ = json.Marshal(strings.TrimSpace(s))
		}
	}
	if t.def.InputSchema != nil {
		if issues := t.def.InputSchema.ValidateJSON(in); len(issues) > 0 {
			return nil, &contracts.Error{Code: contracts.CodeInvalidInput,
				Message: "The arguments do not match the tool's input schema.", Issues: issues}
		}
	}
	return in, nil
}

// protocolError is a JSON-RPC error of code with err's safe descriptor as its data.
func protocolError(code int64, err error) error {
	f := publicFailure(err)
	data, _ := json.Marshal(f)
	return &jsonrpc.Error{Code: code, Message: f.Message, Data: data}
}

// publicFailure is the failure descriptor a client is shown for err (no cause).
func publicFailure(err error) contracts.Failure {
	f := contracts.FailureOf(err)
	f.Cause = nil
	return f
}

// request is the request the hooks see for a call: the headers of the POST that carried it,
// method POST and path "/mcp" whatever the mount (the go-sdk hands a tool handler the
// headers, not the request).
func (h *Handler) request(ctx context.Context, hdr http.Header) *http.Request {
	r := (&http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/mcp"}, Header: hdr.Clone()}).WithContext(ctx)
	if r.Header == nil {
		r.Header = http.Header{}
	}
	return r
}

// access runs the Authorize hook for a request with header hdr.
func (h *Handler) access(ctx context.Context, hdr http.Header, a sessions.Access) error {
	if h.o.Authorize == nil {
		return nil
	}
	return httpwire.Refusal(h.o.Authorize(h.request(ctx, hdr), a))
}

// authorizeList asks Authorize before tools/list: a refusal is a JSON-RPC error.
func (h *Handler) authorizeList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" && h.o.Authorize != nil {
			var hdr http.Header
			if extra := req.GetExtra(); extra != nil {
				hdr = extra.Header
			}
			if err := h.access(ctx, hdr, sessions.Access{Wire: "mcp", Action: sessions.ActionRead}); err != nil {
				return nil, protocolError(jsonrpc.CodeInvalidRequest, err)
			}
		}
		return next(ctx, method, req)
	}
}

// ServeHTTP serves the streamable HTTP transport. A body over MaxBodyBytes, or one that is not
// a JSON-RPC message ([checkMessages]), is refused with a JSON-RPC error (HTTP 400, data code
// INVALID_REQUEST: the body rule of every wire) before the SDK reads it; so is a batch of a
// protocol version without batches ([refuseBatch]); a method the server does not have gets
// the JSON-RPC error -32601 ([unknownMethod]). With Options.StatelessRevision, a request of
// 2026-07-28 (its Mcp-Protocol-Version header, or a message's _meta protocol version) goes to
// the go-sdk's stateless handler, every other one to the stateful handler of the older
// revisions.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := httpwire.ReadBody(w, r, h.o.MaxBodyBytes)
		if err != nil {
			writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, nil, err)
			return
		}
		msgs, batch, code, err := checkMessages(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, code, nil, err)
			return
		}
		version := r.Header.Get(protocolVersionHeader)
		if err := refuseBatch(msgs, batch, version); err != nil {
			writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, nil, err)
			return
		}
		if m, ok := unknownMethod(msgs); ok && version < "2026-07-28" && h.liveSession(r.Header.Get(sessionIDHeader)) {
			err := contracts.Errorf(contracts.CodeNotFound, "Method not found: %q.", m.method)
			if batch || m.id == nil {
				// A notification, or a message of a batch: the POST is refused as a whole.
				writeError(w, http.StatusBadRequest, jsonrpc.CodeMethodNotFound, nil, err)
				return
			}
			// A request: its JSON-RPC response (a request gets an HTTP 200 response that
			// carries its JSON-RPC response).
			writeError(w, http.StatusOK, jsonrpc.CodeMethodNotFound, m.id, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if h.stateless != nil && (version >= statelessRevision || slices.ContainsFunc(msgs, func(m message) bool { return m.version >= statelessRevision })) {
			h.stateless.ServeHTTP(w, r)
			return
		}
	} else if h.stateless != nil && r.Header.Get(protocolVersionHeader) >= statelessRevision {
		h.stateless.ServeHTTP(w, r) // GET and DELETE: 405, 2026-07-28 has neither
		return
	}
	h.mcp.ServeHTTP(w, r)
}

// The HTTP headers of the streamable transport that ServeHTTP reads.
const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	sessionIDHeader       = "Mcp-Session-Id"
)

// refuseBatch is the refusal of a batch msgs that holds an initialize request (2025-03-26, the
// version with batches, says it must not; the SDK would run it), or of protocol version (the
// Mcp-Protocol-Version header) 2025-06-18 or later, which dropped JSON-RPC batching (nil: not a
// batch, or one the SDK runs). Without the header the version is 2025-03-26, as the transport
// says and the go-sdk assumes; a version the SDK does not support is left to the SDK to refuse.
func refuseBatch(msgs []message, batch bool, version string) error {
	if !batch {
		return nil
	}
	if slices.ContainsFunc(msgs, func(m message) bool { return m.method == "initialize" }) {
		return contracts.Errorf(contracts.CodeInvalidRequest, "The initialize request must not be part of a JSON-RPC batch; send it alone.")
	}
	if version < "2025-06-18" || !slices.Contains(mcp.SupportedProtocolVersions(), version) {
		return nil
	}
	return contracts.Errorf(contracts.CodeInvalidRequest,
		"JSON-RPC batches are not part of MCP since 2025-06-18 (this request's version: %s); send one message per request.", version)
}

// sdkMethods are the methods of a client that the go-sdk v1.8.0 server handles (its table of
// receiving methods, which it does not export). A request of any other method is one the SDK
// refuses with a plain-text HTTP 400; ServeHTTP answers it with the JSON-RPC error -32601.
var sdkMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/templates/list": true,
	"resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"logging/setLevel": true, "completion/complete": true, "server/discover": true, "subscriptions/listen": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/roots/list_changed": true,
}

// unknownMethod returns the first message of msgs whose method the server does not have.
func unknownMethod(msgs []message) (message, bool) {
	for _, m := range msgs {
		if m.hasMethod && !sdkMethods[m.method] {
			return m, true
		}
	}
	return message{}, false
}

// liveSession reports whether the Mcp-Session-Id id names a session of this process, or is
// empty (a POST that would open one). A request for a session that does not exist is left to
// the SDK, whose 404 tells the client to initialize a new one.
func (h *Handler) liveSession(id string) bool {
	if id == "" {
		return true
	}
	for ss := range h.srv.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// message is what ServeHTTP reads of one JSON-RPC message of a POST body.
type message struct {
	method    string
	hasMethod bool            // a request or a notification (else a response)
	id        json.RawMessage // a request's id (nil: a notification or a response)
	version   string          // its _meta's protocol version (2026-07-28 and later; else "")
}

// checkMessages checks the shape of a POST body before the SDK reads it (the SDK answers a
// malformed one with its internal text) and returns its messages, and whether it is a batch:
// valid JSON (else JSON-RPC parse error), one JSON-RPC message or a non-empty array of them,
// each an object whose "jsonrpc" is "2.0", whose "method" (when present) is a string, whose
// "id" (when present) is a string or an integer (the SDK refuses a null one with its own text)
// and whose "params" (when present) is an object, as MCP's messages have (else invalid
// request). The data code is INVALID_REQUEST.
func checkMessages(body []byte) (msgs []message, batch bool, code int64, err error) {
	if !json.Valid(body) {
		return nil, false, jsonrpc.CodeParseError, contracts.Errorf(contracts.CodeInvalidRequest, "The request body is not valid JSON; send one JSON-RPC 2.0 message.")
	}
	body = bytes.TrimSpace(body)
	var raw []json.RawMessage
	if batch = body[0] == '['; batch {
		if json.Unmarshal(body, &raw) != nil || len(raw) == 0 {
			return nil, true, jsonrpc.CodeInvalidRequest, contracts.Errorf(contracts.CodeInvalidRequest, "The request body is an empty array; send one JSON-RPC 2.0 message.")
		}
	} else {
		raw = []json.RawMessage{body}
	}
	for _, m := range raw {
		var msg map[string]json.RawMessage
		if json.Unmarshal(m, &msg) != nil || msg == nil {
			return nil, batch, jsonrpc.CodeInvalidRequest, contracts.Errorf(contracts.CodeInvalidRequest, "The request body must be a JSON-RPC 2.0 message: a JSON object.")
		}
		if string(msg["jsonrpc"]) != `"2.0"` {
			return nil, batch, jsonrpc.CodeInvalidRequest, contracts.Errorf(contracts.CodeInvalidRequest, `The message's "jsonrpc" must be "2.0".`)
		}
		var got message
		if v, ok := msg["method"]; ok {
			if v[0] != '"' || json.Unmarshal(v, &got.method) != nil {
				return nil, batch, jsonrpc.CodeInvalidRequest, contracts.Errorf(contracts.CodeInvalidRequest, `The message's "method" must be a string.`)
			}
			got.hasMethod = true
		}
		if v, ok := msg["id"]; ok {
			if !validID(v) {
				return nil, batch, jsonrpc.CodeInvalidRequest, contracts.Errorf(contracts.CodeInvalidRequest, `The message's "id" must be a string or an integer (a notification has none).`)
			}
			if got.hasMethod {
				got.id = v
			}
		}
		if v, ok := msg["params"]; ok && v[0] != '{' {
			return nil, batch, jsonrpc.CodeInvalidRequest, contracts.Errorf(contracts.CodeInvalidRequest, `The message's "params" must be an object.`)
		} else if ok {
			got.version = metaVersion(v)
		}
		msgs = append(msgs, got)
	}
	return msgs, batch, 0, nil
}

// metaVersion is the protocol version in the _meta of a message's params ("" when none).
func metaVersion(params json.RawMessage) string {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	v, _ := p.Meta[metaProtocolVersion].(string)
	return v
}

// validID reports whether a JSON-RPC id is a string or an integer.
func validID(v json.RawMessage) bool {
	var id any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if d.Decode(&id) != nil {
		return false
	}
	switch id := id.(type) {
	case string:
		return true
	case json.Number:
		_, err := id.Int64()
		return err == nil
	}
	return false
}

// writeError writes a JSON-RPC error response with HTTP status, of the request id (nil: none,
// the request was not read or was not one request); its data is err's failure descriptor.
func writeError(w http.ResponseWriter, status int, code int64, id json.RawMessage, err error) {
	f := publicFailure(err)
	// A nil id is JSON null.
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": f.Message, "data": f}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	_, _ = fmt.Fprintln(w)
}

// warnings passes on the records of warning level and above.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}
