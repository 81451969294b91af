package a2aserver_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/a2aserver"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

// newHandler is the handler over the tests' Temporal server (no worker: these requests are
// refused before a run would start) with hello registered.
func newHandler(t *testing.T, o a2aserver.Options) http.Handler {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	if o.Authorize == nil {
		o.AllowUnauthenticated = true
	}
	h, err := a2aserver.New(wireService(t, tenv.Client, stream.NewMemory(stream.MemoryOptions{}), reg, ""), o)
	require.NoError(t, err)
	return h
}

func do(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	return w
}

func rpcErr(id string, code int, kortyx, msg string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `","data":{"version":1,"code":"` + kortyx +
		`","category":"request","message":"` + msg + `","retryable":false}}}`
}

// The JSON-RPC errors of requests the wire refuses itself: exact bodies, HTTP 200.
func TestRPCErrors(t *testing.T) {
	h := newHandler(t, a2aserver.Options{MaxBodyBytes: 1024})
	msg := func(parts string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":` + parts + `}}}`
	}
	for _, c := range []struct{ name, body, want string }{
		{"not JSON", `{`, rpcErr("null", -32700, "INVALID_REQUEST", "The request body is not JSON.")},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`, rpcErr("null", -32600, "INVALID_REQUEST", "The request body is not a JSON-RPC request object (batches are not accepted).")},
		{"not 2.0", `{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`, rpcErr("1", -32600, "INVALID_REQUEST", `A JSON-RPC 2.0 request needs \"jsonrpc\": \"2.0\" and a method.`)},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":"` + strings.Repeat("x", 2000) + `"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body is larger than 1024 bytes.","data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"Request body is larger than 1024 bytes.","retryable":false}}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":"a","method":"tasks/list"}`, rpcErr(`"a"`, -32601, "INVALID_REQUEST", `Unknown method \"tasks/list\".`)},
		{"push", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{}}`,
			rpcErr("2", -32003, "INVALID_REQUEST", "Push notifications are not supported: follow the task with message/stream or tasks/resubscribe.")},
		{"extended card", `{"jsonrpc":"2.0","id":3,"method":"agent/getAuthenticatedExtendedCard"}`,
			rpcErr("3", -32007, "INVALID_REQUEST", "This agent has no authenticated extended card: its public card is all there is.")},
		{"bad params", `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":[1]}`, rpcErr("4", -32602, "INVALID_REQUEST", "The params are not valid for this method.")},
		{"no task", `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"id":"run-x"}}`, rpcErr("5", -32001, "NOT_FOUND", `Task \"run-x\" not found.`)},
		{"bad task id", `{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"id":"a b"}}`, rpcErr("5", -32001, "NOT_FOUND", `Task \"a b\" not found.`)},
		{"file part", msg(`[{"kind":"file","file":{"uri":"https://example.com/a.pdf"}}]`), rpcErr("7", -32005, "INVALID_REQUEST", "File parts are not accepted: send text or one data part.")},
		{"text and data", msg(`[{"kind":"text","text":"a"},{"kind":"data","data":{}}]`), rpcErr("7", -32602, "INVALID_REQUEST", "Send either text or one data part, not both.")},
		{"two data parts", msg(`[{"kind":"data","data":{}},{"kind":"data","data":{}}]`), rpcErr("7", -32602, "INVALID_REQUEST", "Send at most one data part in a message.")},
		{"empty", msg(`[{"kind":"text","text":"  "}]`), rpcErr("7", -32602, "INVALID_REQUEST", "The message has no text and no data part.")},
		{"unknown part", msg(`[{"kind":"image"}]`), rpcErr("7", -32602, "INVALID_REQUEST", "The params are not valid for this method.")},
		{"agent role", `{"jsonrpc":"2.0","id":8,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"a"}]}}}`,
			rpcErr("8", -32602, "INVALID_REQUEST", `params.message must be a message of role \"user\".`)},
		{"bad context", `{"jsonrpc":"2.0","id":9,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","contextId":"a b","parts":[{"kind":"text","text":"a"}]}}}`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): ' ' at byte 1 is not allowed","data":{"version":1,"code":"INVALID_SESSION","category":"request","message":"sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): ' ' at byte 1 is not allowed","retryable":false,"issues":[{"path":["sessionId"],"code":"invalid_id","message":"sessionId must use only visible ASCII characters (letters, digits, punctuation; no spaces): ' ' at byte 1 is not allowed"}]}}}`},
	} {
		w := do(h, http.MethodPost, "/a2a/hello", c.body)
		require.Equal(t, http.StatusOK, w.Code, c.name)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), c.name)
		require.JSONEq(t, c.want, w.Body.String(), c.name)
	}
}

// A stream request that fails (other than by a refused authorization) is an event stream of
// its JSON-RPC error, before or after its first event: the shape the official clients read a
// stream's errors in.
func TestStreamError(t *testing.T) {
	h := newHandler(t, a2aserver.Options{})
	stream := func(parts string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":` + parts + `}}}`
	}
	for _, c := range []struct{ name, body, want string }{
		{"no task", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"run-none"}}`, rpcErr("1", -32001, "NOT_FOUND", `Task \"run-none\" not found.`)},
		{"bad params", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":[1]}`, rpcErr("1", -32602, "INVALID_REQUEST", "The params are not valid for this method.")},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"message/stream"}`, rpcErr("1", -32602, "INVALID_REQUEST", "The params are not valid for this method.")},
		{"file part", stream(`[{"kind":"file","file":{"uri":"https://example.com/a.pdf"}}]`), rpcErr("1", -32005, "INVALID_REQUEST", "File parts are not accepted: send text or one data part.")},
	} {
		w := do(h, http.MethodPost, "/a2a/hello", c.body)
		require.Equal(t, http.StatusOK, w.Code, c.name)
		require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"), c.name)
		events := strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n")
		require.Len(t, events, 1, c.name)
		require.JSONEq(t, c.want, strings.TrimPrefix(events[0], "data: "), c.name)
	}

	// A run of hello whose session workflow does not exist: resubscribe sends the task, then
	// fails to read the session, which ends the event stream.
	session := "s-" + uuid.NewString()
	run := startRun(t, "hello", session)
	w := do(h, http.MethodPost, "/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"`+run+`"}}`)
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	events := strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n")
	require.Len(t, events, 2, w.Body.String())
	require.Contains(t, events[0], `"result":{"kind":"task","id":"`+run+`"`)
	msg := `Session \"` + session + `\" does not exist (or has ended).`
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"`+msg+`","data":{"version":1,"code":"INVALID_SESSION","category":"request","message":"`+msg+`","retryable":false}}}`,
		strings.TrimPrefix(events[1], "data: "))
}

// A refused stream request is HTTP 401 or 403 with the JSON-RPC error, as any request: not an
// event stream.
func TestStreamRefused(t *testing.T) {
	h := newHandler(t, a2aserver.Options{Authorize: func(r *http.Request, a sessions.Access) error {
		if r.Header.Get("Authorization") == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in."}
		}
		return errors.New("not yours")
	}})
	run := startRun(t, "hello", "s-"+uuid.NewString())
	for _, c := range []struct {
		name, body, auth string
		status           int
		want             string
	}{
		{"stream", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"Hi"}]}}}`, "",
			http.StatusUnauthorized, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Sign in.","data":{"version":1,"code":"UNAUTHORIZED","category":"request","message":"Sign in.","retryable":false}}}`},
		{"resubscribe", `{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":"` + run + `"}}`, "Bearer x",
			http.StatusForbidden, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Forbidden.","data":{"version":1,"code":"FORBIDDEN","category":"request","message":"Forbidden.","retryable":false}}}`},
	} {
		r := httptest.NewRequest(http.MethodPost, "/a2a/hello", strings.NewReader(c.body))
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, c.status, w.Code, c.name)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), c.name)
		require.JSONEq(t, c.want, w.Body.String(), c.name)
	}
}

// Routes: the card (with BaseURL), unknown agents, wrong methods.
func TestRoutes(t *testing.T) {
	h := newHandler(t, a2aserver.Options{BaseURL: "https://agents.example.com/"})
	w := do(h, http.MethodGet, "/a2a/hello/.well-known/agent-card.json", "")
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"name":"hello","description":"The hello agent.","version":"1","protocolVersion":"0.3.0","url":"https://agents.example.com/a2a/hello",
		"preferredTransport":"JSONRPC","capabilities":{"streaming":true},"defaultInputModes":["text/plain","application/json"],
		"defaultOutputModes":["text/plain","application/json"],"skills":[{"id":"hello","name":"hello","description":"The hello agent.","tags":["kortyx"]}],
		"supportedInterfaces":[{"url":"https://agents.example.com/a2a/hello","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
			{"url":"https://agents.example.com/a2a/hello","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
			{"url":"https://agents.example.com/a2a/hello","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`, w.Body.String())
	for _, c := range []struct {
		method, path string
		status       int
		code         contracts.Code
		allow        string
	}{
		{http.MethodGet, "/a2a/nobody/.well-known/agent-card.json", 404, contracts.CodeNotFound, ""},
		{http.MethodPost, "/a2a/nobody", 404, contracts.CodeNotFound, ""},
		{http.MethodPost, "/a2a/hello/x", 404, contracts.CodeNotFound, ""},
		{http.MethodGet, "/a2a/hello", 405, contracts.CodeInvalidRequest, "POST"},
		{http.MethodPost, "/a2a/hello/.well-known/agent-card.json", 405, contracts.CodeInvalidRequest, "GET"},
	} {
		w := do(h, c.method, c.path, "{}")
		require.Equal(t, c.status, w.Code, c.path)
		require.Contains(t, w.Body.String(), `"code":"`+string(c.code)+`"`, c.path)
		require.Equal(t, c.allow, w.Header().Get("Allow"), c.path)
	}
}

// The authorization hook: it sees what a request does, and its refusal is HTTP 401 or 403 with
// the JSON-RPC error; without a hook (and without AllowUnauthenticated) New fails.
func TestAuthorize(t *testing.T) {
	var seen []sessions.Access
	refuse := errors.New("no")
	h := newHandler(t, a2aserver.Options{Authorize: func(r *http.Request, a sessions.Access) error {
		seen = append(seen, a)
		if r.Header.Get("Authorization") == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in."}
		}
		return refuse
	}})
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","contextId":"s-1","parts":[{"kind":"text","text":"Hi"}]}}}`
	w := do(h, http.MethodPost, "/a2a/hello", body)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Sign in.","data":{"version":1,"code":"UNAUTHORIZED","category":"request","message":"Sign in.","retryable":false}}}`, w.Body.String())
	r := httptest.NewRequest(http.MethodPost, "/a2a/hello", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer x")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusForbidden, w.Code)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Forbidden.","data":{"version":1,"code":"FORBIDDEN","category":"request","message":"Forbidden.","retryable":false}}}`, w.Body.String())
	want := sessions.Access{Wire: "a2a", Action: sessions.ActionStart, SessionID: "s-1", Workflow: "hello"}
	require.Equal(t, []sessions.Access{want, want}, seen)

	// The card needs no authorization.
	require.Equal(t, http.StatusOK, do(h, http.MethodGet, "/a2a/hello/.well-known/agent-card.json", "").Code)
	require.Len(t, seen, 2)

	_, err := a2aserver.New(wireService(t, tenv.Client, stream.NewMemory(stream.MemoryOptions{}), workflows.NewRegistry(), ""), a2aserver.Options{})
	require.EqualError(t, err, "kortyx a2aserver: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
}
