package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// task1 is an A2A 1.0 task as the tests read it.
type task1 struct {
	ID        string
	ContextID string `json:"contextId"`
	Status    struct {
		State   string
		Message struct {
			Role  string
			Parts []map[string]any
		}
	}
	History []struct{ MessageID, Role string }
}

// The commands of docs/a2a.md's 1.0 example, run as they are (sh -e, curl) against the dev API
// of a worker with the examples: hello's question over HTTP+JSON, the answer's greeting over
// JSON-RPC 1.0.
func TestDocsExampleV1(t *testing.T) {
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: tenv.Server.Address(), TaskQueue: "a2a-docs1-" + uuid.NewString(),
		HTTPAddr: "127.0.0.1:0", FakeModels: true}, options(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", strings.ReplaceAll(exampleBlock(t, "## Try it over A2A 1.0"), "127.0.0.1:8080", r.HTTPAddr))
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, "%s", out)
	var asked struct{ Task task1 }
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &asked))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", asked.Task.Status.State)
	require.Equal(t, "ROLE_AGENT", asked.Task.Status.Message.Role)
	require.Len(t, asked.Task.Status.Message.Parts, 2)
	require.Equal(t, map[string]any{"text": "What is your name?"}, asked.Task.Status.Message.Parts[0])
	require.Equal(t, map[string]any{"type": "string", "minLength": 1.0}, asked.Task.Status.Message.Parts[1]["data"].(map[string]any)["schema"])
	var done struct {
		JSONRPC string
		ID      int
		Result  struct{ Task task1 }
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &done))
	require.Equal(t, 2, done.ID)
	require.Equal(t, asked.Task.ID, done.Result.Task.ID)
	require.Equal(t, "TASK_STATE_COMPLETED", done.Result.Task.Status.State)
	require.Equal(t, []map[string]any{{"text": "Hello, Ada!"}}, done.Result.Task.Status.Message.Parts)
	require.Len(t, done.Result.Task.History, 4)
}

// post1 posts body to url with A2A-Version 1.0 and decodes the answer; it returns the status.
func post1(t *testing.T, url, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	return resp.StatusCode
}

// The rules of 1.0 messages the JS scenarios do not show: returnImmediately (and the drafts'
// blocking false) answers at once; a message to a working task is refused (SESSION_BUSY); a
// refused answer is InvalidParams and the question stays open; historyLength keeps the last
// messages; a task started over 0.3 is the same task over 1.0.
func TestV1MessageRules(t *testing.T) {
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: tenv.Server.Address(), TaskQueue: "a2a-rules1-" + uuid.NewString(),
		HTTPAddr: "127.0.0.1:0", FakeModels: true}, options(t))
	base := "http://" + r.HTTPAddr + "/a2a/"
	message := func(extra, parts string) string {
		return `{"message":{"messageId":"m-` + uuid.NewString() + `","role":"ROLE_USER",` + extra + `"parts":` + parts + `}`
	}
	type rpcAnswer struct {
		Result struct{ Task task1 }
		Error  struct {
			Code    int
			Message string
			Data    []map[string]any
		}
	}

	for _, config := range []string{`{"returnImmediately":true}`, `{"blocking":false}`} {
		var sent struct{ Task task1 }
		require.Equal(t, http.StatusOK, post1(t, base+"slow/message:send", message("", `[{"text":"Go"}]`)+`,"configuration":`+config+`}`, &sent))
		require.Equal(t, "TASK_STATE_WORKING", sent.Task.Status.State, config)
		id := sent.Task.ID

		var busy map[string]map[string]any
		require.Equal(t, http.StatusConflict, post1(t, base+"slow/message:send", message(`"taskId":"`+id+`",`, `[{"text":"Faster"}]`)+`}`, &busy))
		msg := "Task " + id + ` is working and asks nothing yet: answer it when it is input-required, or send the message with metadata {"kortyx/busy": "steer"} (or enqueue, interrupt).`
		require.Equal(t, map[string]any{"code": 409.0, "status": "FAILED_PRECONDITION", "message": msg, "details": []any{
			map[string]any{"@type": "github.com/kortyx-go/kortyx/contracts.Failure", "version": 1.0, "code": "SESSION_BUSY", "category": "request", "message": msg, "retryable": false}}}, busy["error"])
		var rpc rpcAnswer
		require.Equal(t, http.StatusOK, post1(t, base+"slow", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+message(`"taskId":"`+id+`",`, `[{"text":"Faster"}]`)+`}}`, &rpc))
		require.Equal(t, -32600, rpc.Error.Code)
		require.Equal(t, "SESSION_BUSY", rpc.Error.Data[0]["code"])

		var cancelled task1
		require.Equal(t, http.StatusOK, post1(t, base+"slow/tasks/"+id+":cancel", "", &cancelled))
		require.Equal(t, "TASK_STATE_CANCELED", cancelled.Status.State)
	}

	// A choice answered with an unknown option: InvalidParams (INVALID_RESPONSE); the question
	// stays open.
	var asked struct{ Task task1 }
	require.Equal(t, http.StatusOK, post1(t, base+"pick/message:send", message("", `[{"text":"Hi"}]`)+`}`, &asked))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", asked.Task.Status.State)
	var refused rpcAnswer
	require.Equal(t, http.StatusOK, post1(t, base+"pick", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+
		message(`"taskId":"`+asked.Task.ID+`",`, `[{"text":"gold"}]`)+`}}`, &refused))
	require.Equal(t, -32602, refused.Error.Code)
	require.Equal(t, `Unknown option "gold": choose one of "basic", "pro".`, refused.Error.Message)
	require.Equal(t, "INVALID_PARAMS", refused.Error.Data[0]["reason"])
	require.Equal(t, "INVALID_RESPONSE", refused.Error.Data[1]["code"])
	var open task1
	require.Equal(t, http.StatusOK, getJSON(t, base+"pick/tasks/"+asked.Task.ID+"?historyLength=1", &open))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", open.Status.State)
	require.Len(t, open.History, 1) // the last message: the question
	require.Equal(t, asked.Task.ID+"/3", open.History[0].MessageID)

	// A task started over 0.3 is the same task over 1.0.
	started, e := rpc(t, base+"hello", "message/send", `{"message":{"kind":"message","messageId":"m-03","role":"user","parts":[{"kind":"text","text":"Hi"}]}}`)
	require.Nil(t, e)
	var got rpcAnswer
	var task struct{ Result task1 }
	require.Equal(t, http.StatusOK, post1(t, base+"hello", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+started["id"].(string)+`"}}`, &task))
	require.Equal(t, started["id"], task.Result.ID)
	require.Equal(t, started["contextId"], task.Result.ContextID)
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", task.Result.Status.State)
	require.Equal(t, http.StatusOK, post1(t, base+"hello", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+
		message(`"taskId":"`+task.Result.ID+`",`, `[{"text":"Ada"}]`)+`}}`, &got))
	require.Equal(t, "TASK_STATE_COMPLETED", got.Result.Task.Status.State)
}

// getJSON gets url and decodes the answer; it returns the status.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	return resp.StatusCode
}
