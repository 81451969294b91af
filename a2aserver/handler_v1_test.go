package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/a2aserver"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/stretchr/testify/require"
)

// details is the JSON of an A2A 1.0 error's details: the ErrorInfo of reason (none for "")
// and Kortyx's failure descriptor.
func details(reason, kortyx, msg string) string {
	m, _ := json.Marshal(msg)
	info := ""
	if reason != "" {
		info = `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"a2a-protocol.org"},`
	}
	return `[` + info + `{"@type":"github.com/kortyx-go/kortyx/contracts.Failure","version":1,"code":"` + kortyx +
		`","category":"request","message":` + string(m) + `,"retryable":false}]`
}

// rpcErr1 is the JSON-RPC error response of A2A 1.0.
func rpcErr1(id string, code int, reason, kortyx, msg string) string {
	m, _ := json.Marshal(msg)
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `,"data":` + details(reason, kortyx, msg) + `}}`
}

// restErr is the HTTP+JSON error body of A2A 1.0 (a google.rpc.Status).
func restErr(status int, name, reason, kortyx, msg string) string {
	m, _ := json.Marshal(msg)
	return `{"error":{"code":` + strconv.Itoa(status) + `,"status":"` + name + `","message":` + string(m) + `,"details":` + details(reason, kortyx, msg) + `}}`
}

// send1 posts a request with the headers h (name, value, ...).
func send1(h http.Handler, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// endedRun is a run of hello in a session of its own that has ended (terminated: failed).
func endedRun(t *testing.T) string {
	t.Helper()
	run := startRun(t, "hello", "s-"+uuid.NewString())
	require.NoError(t, tenv.Client.TerminateWorkflow(context.Background(), run, "", "test"))
	return run
}

// The JSON-RPC errors of A2A 1.0's methods: exact bodies, HTTP 200, application/json (also for
// the stream methods: 1.0 answers an error before the first event at once).
func TestV1RPCErrors(t *testing.T) {
	h := newHandler(t, a2aserver.Options{MaxBodyBytes: 1024})
	ended := endedRun(t)
	send := func(message string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER",` + message + `}}}`
	}
	for _, c := range []struct {
		name, body, version, want string
	}{
		{"not JSON", `{`, "1.0", rpcErr1("null", -32700, "", "INVALID_REQUEST", "The request body is not JSON.")},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":"` + strings.Repeat("x", 2000) + `"}`, "1.0",
			rpcErr1("null", -32600, "", "INVALID_REQUEST", "Request body is larger than 1024 bytes.")},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, "1.0", rpcErr1("null", -32600, "", "INVALID_REQUEST", "The request body is not a JSON-RPC request object (batches are not accepted).")},
		{"unknown method", `{"jsonrpc":"2.0","id":"a","method":"Frobnicate"}`, "1.0", rpcErr1(`"a"`, -32601, "", "INVALID_REQUEST", `Unknown method "Frobnicate".`)},
		{"0.3 method name under 1.0", `{"jsonrpc":"2.0","id":"a","method":"tasks/list"}`, "1.0", rpcErr1(`"a"`, -32601, "", "INVALID_REQUEST", `Unknown method "tasks/list".`)},
		{"bad params", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":[1]}`, "1.0", rpcErr1("4", -32602, "INVALID_PARAMS", "INVALID_REQUEST", "The params are not valid for this method.")},
		{"no task", `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"run-x"}}`, "1.0", rpcErr1("5", -32001, "TASK_NOT_FOUND", "NOT_FOUND", `Task "run-x" not found.`)},
		{"no task, no header", `{"jsonrpc":"2.0","id":5,"method":"CancelTask","params":{"id":"run-x"}}`, "", rpcErr1("5", -32001, "TASK_NOT_FOUND", "NOT_FOUND", `Task "run-x" not found.`)},
		{"version 0.3", send(`"parts":[{"text":"Hi"}]`), "0.3", rpcErr1("7", -32009, "VERSION_NOT_SUPPORTED", "INVALID_REQUEST",
			`A2A-Version "0.3" is not supported by this method: it is of A2A 1.0 (this endpoint also serves 0.3's message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe).`)},
		{"file part", send(`"parts":[{"url":"https://example.com/a.pdf"}]`), "1.0", rpcErr1("7", -32005, "CONTENT_TYPE_NOT_SUPPORTED", "INVALID_REQUEST", "File parts are not accepted: send text or one data part.")},
		{"empty part", send(`"parts":[{}]`), "1.0", rpcErr1("7", -32602, "INVALID_PARAMS", "INVALID_REQUEST", "Each part needs text or data.")},
		{"data not an object", send(`"parts":[{"data":[1]}]`), "1.0", rpcErr1("7", -32602, "INVALID_PARAMS", "INVALID_REQUEST", "A data part must hold a JSON object.")},
		{"text and data", send(`"parts":[{"text":"a"},{"data":{}}]`), "1.0", rpcErr1("7", -32602, "INVALID_PARAMS", "INVALID_REQUEST", "Send either text or one data part, not both.")},
		{"no message", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{}}`, "1.0", rpcErr1("7", -32602, "INVALID_PARAMS", "INVALID_REQUEST", "params.message is required.")},
		{"0.3 role", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"user","parts":[{"text":"a"}]}}}`, "1.0",
			rpcErr1("7", -32602, "INVALID_PARAMS", "INVALID_REQUEST", `params.message.role must be "ROLE_USER".`)},
		{"push config", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]},
			"configuration":{"taskPushNotificationConfig":{"url":"https://example.com/hook"}}}}`, "1.0",
			rpcErr1("7", -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", "INVALID_REQUEST", "Push notifications are not supported: follow the task with SendStreamingMessage or SubscribeToTask.")},
		{"push method", `{"jsonrpc":"2.0","id":2,"method":"CreateTaskPushNotificationConfig","params":{}}`, "1.0",
			rpcErr1("2", -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", "INVALID_REQUEST", "Push notifications are not supported: follow the task with SendStreamingMessage or SubscribeToTask.")},
		{"list", `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}`, "1.0",
			rpcErr1("2", -32004, "UNSUPPORTED_OPERATION", "INVALID_REQUEST", "Listing tasks is not supported: keep the ids of the tasks you start (a task is a run of a session).")},
		{"extended card", `{"jsonrpc":"2.0","id":3,"method":"GetExtendedAgentCard"}`, "1.0",
			rpcErr1("3", -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "INVALID_REQUEST", "This agent has no extended agent card: its public card is all there is.")},
		{"stream: bad params", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":[1]}`, "1.0", rpcErr1("1", -32602, "INVALID_PARAMS", "INVALID_REQUEST", "The params are not valid for this method.")},
		{"subscribe: no task", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"run-none"}}`, "1.0", rpcErr1("1", -32001, "TASK_NOT_FOUND", "NOT_FOUND", `Task "run-none" not found.`)},
		// A task that has ended (its run terminated: failed): a message to it and SubscribeToTask
		// are UnsupportedOperation, CancelTask TaskNotCancelable.
		{"ended: message", send(`"taskId":"` + ended + `","parts":[{"text":"Ada"}]`), "1.0", rpcErr1("7", -32004, "UNSUPPORTED_OPERATION", "INVALID_REQUEST",
			"Task "+ended+" is failed and cannot be continued: send the message without taskId to start a new task in the same context.")},
		{"ended: stream", strings.Replace(send(`"taskId":"`+ended+`","parts":[{"text":"Ada"}]`), "SendMessage", "SendStreamingMessage", 1), "1.0",
			rpcErr1("7", -32004, "UNSUPPORTED_OPERATION", "INVALID_REQUEST", "Task "+ended+" is failed and cannot be continued: send the message without taskId to start a new task in the same context.")},
		{"ended: cancel", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"` + ended + `"}}`, "1.0",
			rpcErr1("1", -32002, "TASK_NOT_CANCELABLE", "INVALID_REQUEST", "Task "+ended+" is already failed.")},
		{"ended: subscribe", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"` + ended + `"}}`, "1.0",
			rpcErr1("1", -32004, "UNSUPPORTED_OPERATION", "INVALID_REQUEST", "Task "+ended+" is failed: there is nothing to subscribe to; read it with GetTask.")},
	} {
		w := send1(h, http.MethodPost, "/a2a/hello", c.body, "A2A-Version", c.version)
		require.Equal(t, http.StatusOK, w.Code, c.name)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), c.name)
		require.JSONEq(t, c.want, w.Body.String(), c.name)
	}

	// A method of 0.3 is served as 0.3 whatever the A2A-Version header says.
	for _, version := range []string{"", "0.3", "1.0"} {
		w := send1(h, http.MethodPost, "/a2a/hello", `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"id":"run-x"}}`, "A2A-Version", version)
		require.JSONEq(t, rpcErr("5", -32001, "NOT_FOUND", `Task \"run-x\" not found.`), w.Body.String(), version)
		w = send1(h, http.MethodPost, "/a2a/hello", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{}}`, "A2A-Version", version)
		require.JSONEq(t, rpcErr("2", -32003, "INVALID_REQUEST", "Push notifications are not supported: follow the task with message/stream or tasks/resubscribe."), w.Body.String(), version)
	}

	// The same ended task over 0.3 keeps 0.3's code (InvalidRequest) and shape.
	w := do(h, http.MethodPost, "/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","taskId":"`+
		ended+`","parts":[{"kind":"text","text":"Ada"}]}}}`)
	require.JSONEq(t, rpcErr("1", -32600, "INVALID_REQUEST", "Task "+ended+" is failed and cannot be continued: send the message without taskId to start a new task in the same context."), w.Body.String())
}

// The errors of A2A 1.0's HTTP+JSON routes: the A2A error's HTTP status and a google.rpc.Status
// body, exact.
func TestV1RESTErrors(t *testing.T) {
	h := newHandler(t, a2aserver.Options{MaxBodyBytes: 1024})
	ended := endedRun(t)
	msg := func(message string) string {
		return `{"message":{"messageId":"m1","role":"ROLE_USER",` + message + `}}`
	}
	for _, c := range []struct {
		name, method, path, body, version string
		status                            int
		want, allow                       string
	}{
		{"not JSON", "POST", "/a2a/hello/message:send", `{`, "", 400, restErr(400, "INVALID_ARGUMENT", "", "INVALID_REQUEST", "The request body is not JSON."), ""},
		{"not a request", "POST", "/a2a/hello/message:send", `[1]`, "1.0", 400,
			restErr(400, "INVALID_ARGUMENT", "INVALID_PARAMS", "INVALID_REQUEST", "The request body is not a SendMessageRequest."), ""},
		{"too large", "POST", "/a2a/hello/message:send", `{"x":"` + strings.Repeat("x", 2000) + `"}`, "", 400,
			restErr(400, "INVALID_ARGUMENT", "", "INVALID_REQUEST", "Request body is larger than 1024 bytes."), ""},
		{"file part", "POST", "/a2a/hello/message:send", msg(`"parts":[{"raw":"AAAA"}]`), "", 415,
			restErr(415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "INVALID_REQUEST", "File parts are not accepted: send text or one data part."), ""},
		{"stream: agent role", "POST", "/a2a/hello/message:stream", `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"a"}]}}`, "", 400,
			restErr(400, "INVALID_ARGUMENT", "INVALID_PARAMS", "INVALID_REQUEST", `params.message.role must be "ROLE_USER".`), ""},
		{"version", "POST", "/a2a/hello/message:send", msg(`"parts":[{"text":"Hi"}]`), "2.0", 400, restErr(400, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED", "INVALID_REQUEST",
			`A2A-Version "2.0" is not supported by this method: it is of A2A 1.0 (this endpoint also serves 0.3's message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe).`), ""},
		{"no task", "GET", "/a2a/hello/tasks/run-x", "", "1.0", 404, restErr(404, "NOT_FOUND", "TASK_NOT_FOUND", "NOT_FOUND", `Task "run-x" not found.`), ""},
		{"subscribe: no task", "POST", "/a2a/hello/tasks/run-x:subscribe", "", "1.0", 404, restErr(404, "NOT_FOUND", "TASK_NOT_FOUND", "NOT_FOUND", `Task "run-x" not found.`), ""},
		{"bad historyLength", "GET", "/a2a/hello/tasks/run-x?historyLength=all", "", "", 400,
			restErr(400, "INVALID_ARGUMENT", "INVALID_PARAMS", "INVALID_REQUEST", `historyLength must be an integer, not "all".`), ""},
		{"unknown action", "POST", "/a2a/hello/tasks/run-x:pause", "", "", 404, restErr(404, "NOT_FOUND", "", "NOT_FOUND", "No A2A route at /a2a/hello/tasks/run-x:pause."), ""},
		{"wrong method", "GET", "/a2a/hello/message:send", "", "", 405, restErr(405, "UNIMPLEMENTED", "", "INVALID_REQUEST", "Use POST."), "POST"},
		{"wrong method: cancel", "GET", "/a2a/hello/tasks/run-x:cancel", "", "", 405, restErr(405, "UNIMPLEMENTED", "", "INVALID_REQUEST", "Use POST."), "POST"},
		{"list", "GET", "/a2a/hello/tasks", "", "", 400, restErr(400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION", "INVALID_REQUEST",
			"Listing tasks is not supported: keep the ids of the tasks you start (a task is a run of a session)."), ""},
		{"push", "POST", "/a2a/hello/tasks/run-x/pushNotificationConfigs", `{}`, "", 400, restErr(400, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED", "INVALID_REQUEST",
			"Push notifications are not supported: follow the task with message:stream or tasks/{id}:subscribe."), ""},
		{"extended card", "GET", "/a2a/hello/extendedAgentCard", "", "", 400, restErr(400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "INVALID_REQUEST",
			"This agent has no extended agent card: its public card is all there is."), ""},
		{"ended: message", "POST", "/a2a/hello/message:send", msg(`"taskId":"` + ended + `","parts":[{"text":"Ada"}]`), "1.0", 400,
			restErr(400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION", "INVALID_REQUEST", "Task "+ended+" is failed and cannot be continued: send the message without taskId to start a new task in the same context."), ""},
		{"ended: cancel", "POST", "/a2a/hello/tasks/" + ended + ":cancel", "", "1.0", 409,
			restErr(409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "INVALID_REQUEST", "Task "+ended+" is already failed."), ""},
		{"ended: subscribe", "POST", "/a2a/hello/tasks/" + ended + ":subscribe", "", "1.0", 400,
			restErr(400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION", "INVALID_REQUEST", "Task "+ended+" is failed: there is nothing to subscribe to; read it with GetTask."), ""},
	} {
		w := send1(h, c.method, c.path, c.body, "A2A-Version", c.version)
		require.Equal(t, c.status, w.Code, c.name)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), c.name)
		require.JSONEq(t, c.want, w.Body.String(), c.name)
		require.Equal(t, c.allow, w.Header().Get("Allow"), c.name)
	}

	// An unknown agent is the API's own 404 ({error, failure}), as for 0.3.
	w := do(h, http.MethodPost, "/a2a/nobody/message:send", "{}")
	require.Equal(t, http.StatusNotFound, w.Code)
	require.Contains(t, w.Body.String(), `"code":"NOT_FOUND"`)

	// A task of hello found over HTTP+JSON: its state and its prompt in 1.0's spelling.
	session := "s-" + uuid.NewString()
	run := startRun(t, "hello", session)
	w = send1(h, http.MethodGet, "/a2a/hello/tasks/"+run, "")
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"id":"`+run+`","contextId":"`+session+`","status":{"state":"TASK_STATE_WORKING"},
		"history":[{"messageId":"`+run+`/prompt","contextId":"`+session+`","taskId":"`+run+`","role":"ROLE_USER","parts":[{"text":"Hi"}]}]}`, w.Body.String())
}

// A stream that fails after its first event ends with the error: over JSON-RPC 1.0 an error
// response event, over HTTP+JSON an event named "error" holding the google.rpc.Status body.
func TestV1StreamError(t *testing.T) {
	h := newHandler(t, a2aserver.Options{})
	session := "s-" + uuid.NewString()
	run := startRun(t, "hello", session) // its session workflow does not exist
	task := `{"id":"` + run + `","contextId":"` + session + `","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"` + run +
		`/prompt","contextId":"` + session + `","taskId":"` + run + `","role":"ROLE_USER","parts":[{"text":"Hi"}]}]}`
	msg := `Session "` + session + `" does not exist (or has ended).`
	events := func(w *httptest.ResponseRecorder) []string {
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
		return strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n")
	}

	got := events(send1(h, http.MethodPost, "/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"`+run+`"}}`, "A2A-Version", "1.0"))
	require.Len(t, got, 2, strings.Join(got, "\n\n"))
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"task":`+task+`}}`, strings.TrimPrefix(got[0], "data: "))
	require.JSONEq(t, rpcErr1("1", -32602, "INVALID_PARAMS", "INVALID_SESSION", msg), strings.TrimPrefix(got[1], "data: "))

	got = events(send1(h, http.MethodPost, "/a2a/hello/tasks/"+run+":subscribe", ""))
	require.Len(t, got, 2, strings.Join(got, "\n\n"))
	require.JSONEq(t, `{"task":`+task+`}`, strings.TrimPrefix(got[0], "data: "))
	name, data, ok := strings.Cut(got[1], "\n")
	require.True(t, ok, got[1])
	require.Equal(t, "event: error", name)
	require.JSONEq(t, restErr(400, "INVALID_ARGUMENT", "INVALID_PARAMS", "INVALID_SESSION", msg), strings.TrimPrefix(data, "data: "))
}

// A refused caller gets the refusal (401, 403) on 1.0's bindings too: a JSON-RPC error with the
// HTTP status, or the HTTP+JSON error; also for a stream (no event stream is opened).
func TestV1Refused(t *testing.T) {
	var seen []sessions.Access
	h := newHandler(t, a2aserver.Options{Authorize: func(r *http.Request, a sessions.Access) error {
		seen = append(seen, a)
		if r.Header.Get("Authorization") == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in."}
		}
		return &contracts.Error{Code: contracts.CodeForbidden, Message: "Forbidden."}
	}})
	send := `{"message":{"messageId":"m","role":"ROLE_USER","contextId":"s-1","parts":[{"text":"Hi"}]}}`
	for _, c := range []struct {
		name, path, body, auth string
		status                 int
		want                   string
	}{
		{"SendMessage", "/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + send + `}`, "", 401, rpcErr1("1", -32600, "", "UNAUTHORIZED", "Sign in.")},
		{"SendStreamingMessage", "/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":` + send + `}`, "Bearer x", 403, rpcErr1("1", -32600, "", "FORBIDDEN", "Forbidden.")},
		{"message:send", "/a2a/hello/message:send", send, "", 401, restErr(401, "UNAUTHENTICATED", "", "UNAUTHORIZED", "Sign in.")},
		{"message:stream", "/a2a/hello/message:stream", send, "Bearer x", 403, restErr(403, "PERMISSION_DENIED", "", "FORBIDDEN", "Forbidden.")},
	} {
		seen = nil
		w := send1(h, http.MethodPost, c.path, c.body, "Authorization", c.auth)
		require.Equal(t, c.status, w.Code, c.name)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), c.name)
		require.JSONEq(t, c.want, w.Body.String(), c.name)
		require.Equal(t, []sessions.Access{{Wire: "a2a", Action: sessions.ActionStart, SessionID: "s-1", Workflow: "hello"}}, seen, c.name)
	}
}
