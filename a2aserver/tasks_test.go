package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/a2aserver"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// startRun starts the run of a session turn of agent in session on a task queue no worker
// polls: its history holds its start, nothing runs it. It is terminated at the test's end.
func startRun(t *testing.T, agent, session string) string {
	t.Helper()
	id := "run-" + uuid.NewString()
	ctx := context.Background()
	_, err := tenv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "a2a-none-" + uuid.NewString()}, contracts.RunWorkflowName,
		protocol.RunStart{RunInput: contracts.RunInput{Workflow: agent, Input: json.RawMessage(`"Hi"`), SessionID: session},
			Session: &protocol.SessionBinding{WorkflowID: protocol.SessionWorkflowID(session), SessionID: session, TurnIndex: 1}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tenv.Client.TerminateWorkflow(ctx, id, "", "test over") })
	return id
}

// The task calls with a taskId, as JSON-RPC bodies.
func taskCalls(task string) map[string]string {
	return map[string]string{
		"tasks/get":         `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + task + `"}}`,
		"tasks/cancel":      `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"` + task + `"}}`,
		"tasks/resubscribe": `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"` + task + `"}}`,
		"message/send": `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","taskId":"` +
			task + `","parts":[{"kind":"text","text":"Ada"}]}}}`,
		"message/stream": `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","taskId":"` +
			task + `","parts":[{"kind":"text","text":"Ada"}]}}}`,
	}
}

var taskActions = map[string]sessions.Action{"tasks/get": sessions.ActionRead, "tasks/cancel": sessions.ActionStop, "tasks/resubscribe": sessions.ActionRead, "message/send": sessions.ActionAnswer, "message/stream": sessions.ActionAnswer}

// A refused caller gets the refusal (401) for a task that does not exist as for one that
// does: the hook is asked before anything says whether the task exists (about no session
// when it does not), and nothing past the run's start is read for it. An authorized caller
// then gets TaskNotFound for the task that does not exist.
func TestAuthorizeBeforeTask(t *testing.T) {
	var seen []sessions.Access
	h := newHandler(t, a2aserver.Options{Authorize: func(r *http.Request, a sessions.Access) error {
		seen = append(seen, a)
		if r.Header.Get("Authorization") == "" {
			return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in."}
		}
		return nil
	}})
	session := "s-" + uuid.NewString()
	exists, missing := startRun(t, "hello", session), "run-"+uuid.NewString()
	unauthorized := `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Sign in.","data":{"version":1,"code":"UNAUTHORIZED","category":"request","message":"Sign in.","retryable":false}}}`
	for _, task := range []string{missing, exists, "a b"} {
		for method, body := range taskCalls(task) {
			seen = nil
			w := do(h, http.MethodPost, "/a2a/hello", body)
			require.Equal(t, http.StatusUnauthorized, w.Code, "%s %s", method, task)
			require.Equal(t, "application/json", w.Header().Get("Content-Type"), "%s %s", method, task)
			require.JSONEq(t, unauthorized, w.Body.String(), "%s %s", method, task)
			want := sessions.Access{Wire: "a2a", Action: taskActions[method]}
			if task == exists {
				want.SessionID = session
			}
			require.Equal(t, []sessions.Access{want}, seen, "%s %s", method, task)
		}
	}
	for method, body := range taskCalls(missing) {
		r := httptest.NewRequest(http.MethodPost, "/a2a/hello", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer x")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, method)
		require.JSONEq(t, rpcErr("1", -32001, "NOT_FOUND", `Task \"`+missing+`\" not found.`), rpcBody(t, w, method), method)
	}
}

// A task is one of its endpoint's agent: the taskId of another agent's run is TaskNotFound
// at /a2a/hello, for every call; the same call on a run of hello finds it.
func TestTaskOfAnotherAgent(t *testing.T) {
	h := newHandler(t, a2aserver.Options{})
	other := startRun(t, "other", "s-"+uuid.NewString())
	for method, body := range taskCalls(other) {
		w := do(h, http.MethodPost, "/a2a/hello", body)
		require.Equal(t, http.StatusOK, w.Code, method)
		require.JSONEq(t, rpcErr("1", -32001, "NOT_FOUND", `Task \"`+other+`\" not found.`), rpcBody(t, w, method), method)
	}
	session := "s-" + uuid.NewString()
	mine := startRun(t, "hello", session)
	w := do(h, http.MethodPost, "/a2a/hello", taskCalls(mine)["tasks/get"])
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"`+mine+`","contextId":"`+session+`","status":{"state":"working"},
		"history":[{"kind":"message","messageId":"`+mine+`/prompt","role":"user","taskId":"`+mine+`","contextId":"`+session+`","parts":[{"kind":"text","text":"Hi"}]}]}}`, w.Body.String())
}

// rpcBody is the JSON-RPC response of a call: the body, or for the stream methods the one
// event of their event stream (a stream's errors are events, but for a refusal).
func rpcBody(t *testing.T, w *httptest.ResponseRecorder, method string) string {
	t.Helper()
	if method != "message/stream" && method != "tasks/resubscribe" {
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), method)
		return w.Body.String()
	}
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"), method)
	events := strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n")
	require.Len(t, events, 1, method)
	return strings.TrimPrefix(events[0], "data: ")
}
