package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/a2aserver"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

// exampleBlock is the first ```sh block of docs/a2a.md under the heading (a "## " line).
func exampleBlock(t *testing.T, heading string) string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(tenv.Root, "docs", "a2a.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(page), "\n"+heading+"\n")
	require.True(t, ok, "docs/a2a.md has no %q section", heading)
	_, rest, ok = strings.Cut(rest, "```sh\n")
	require.True(t, ok, "the section has no sh block")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	return block
}

// The commands of docs/a2a.md's example, run as they are (sh -e, curl) against the dev API of
// a worker with the examples (its address instead of 127.0.0.1:8080): the card, hello's
// question, the answer's greeting.
func TestDocsExample(t *testing.T) {
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: tenv.Server.Address(), TaskQueue: "a2a-docs-" + uuid.NewString(),
		HTTPAddr: "127.0.0.1:0", FakeModels: true}, options(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", strings.ReplaceAll(exampleBlock(t, "## Try it"), "127.0.0.1:8080", r.HTTPAddr))
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 3, "%s", out)
	var card struct{ Name, URL string }
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &card))
	require.Equal(t, "hello", card.Name)
	require.Equal(t, "http://"+r.HTTPAddr+"/a2a/hello", card.URL)
	type task struct {
		Result struct {
			ID     string
			Status struct {
				State   string
				Message struct{ Parts []map[string]any }
			}
			History []struct{ Role string }
		}
	}
	var asked, done task
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &asked))
	require.Equal(t, "input-required", asked.Result.Status.State)
	require.Len(t, asked.Result.Status.Message.Parts, 2)
	require.Equal(t, "What is your name?", asked.Result.Status.Message.Parts[0]["text"])
	require.Equal(t, map[string]any{"type": "string", "minLength": 1.0}, asked.Result.Status.Message.Parts[1]["data"].(map[string]any)["schema"])
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &done))
	require.Equal(t, asked.Result.ID, done.Result.ID)
	require.Equal(t, "completed", done.Result.Status.State)
	require.Equal(t, []map[string]any{{"kind": "text", "text": "Hello, Ada!"}}, done.Result.Status.Message.Parts)
	require.Len(t, done.Result.History, 4)
}

// rpc posts a JSON-RPC request to base and returns the response's result or error (as JSON).
func rpc(t *testing.T, url, method, params string) (result, rpcError map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Result map[string]any
		Error  map[string]any
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Result, body.Error
}

func state(task map[string]any) string { return task["status"].(map[string]any)["state"].(string) }

// The rules of messages the JS scenarios do not show: a message sent again with its messageId
// in the same context gets its task back; blocking false answers at once; a message to a
// working task is refused (SESSION_BUSY); historyLength keeps the last messages.
func TestMessageRules(t *testing.T) {
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: tenv.Server.Address(), TaskQueue: "a2a-rules-" + uuid.NewString(),
		HTTPAddr: "127.0.0.1:0", FakeModels: true}, options(t))
	base := "http://" + r.HTTPAddr + "/a2a/"
	session := "s-" + uuid.NewString()
	send := `{"message":{"kind":"message","messageId":"m-1","role":"user","contextId":"` + session + `","parts":[{"kind":"text","text":"Hi"}]}}`
	first, e := rpc(t, base+"hello", "message/send", send)
	require.Nil(t, e)
	again, e := rpc(t, base+"hello", "message/send", send)
	require.Nil(t, e)
	require.Equal(t, first["id"], again["id"])
	require.Equal(t, "input-required", state(again))

	_, e = rpc(t, base+"hello", "message/send", `{"message":{"kind":"message","messageId":"m-2","role":"user","contextId":"other","taskId":"`+first["id"].(string)+`","parts":[{"kind":"text","text":"Ada"}]}}`)
	require.Equal(t, -32602.0, e["code"])
	require.Equal(t, "Task "+first["id"].(string)+" belongs to context "+session+", not other.", e["message"])

	got, e := rpc(t, base+"hello", "tasks/get", `{"id":"`+first["id"].(string)+`","historyLength":1}`)
	require.Nil(t, e)
	require.Len(t, got["history"], 1)
	require.Equal(t, first["id"].(string)+"/3", got["history"].([]any)[0].(map[string]any)["messageId"])

	// A custom question's data part carries the response schema the session keeps; a data part
	// answers it, checked against that schema.
	asked, e := rpc(t, base+"ship", "message/send", `{"message":{"kind":"message","messageId":"m-s","role":"user","parts":[{"kind":"text","text":"ship"}]}}`)
	require.Nil(t, e)
	require.Equal(t, "input-required", state(asked))
	parts := asked["status"].(map[string]any)["message"].(map[string]any)["parts"].([]any)
	schema, err := json.Marshal(parts[1].(map[string]any)["data"].(map[string]any)["schema"])
	require.NoError(t, err)
	require.JSONEq(t, shipSchema, string(schema))
	answer := func(data string) (map[string]any, map[string]any) {
		return rpc(t, base+"ship", "message/send", `{"message":{"kind":"message","messageId":"m-`+uuid.NewString()+`","role":"user","taskId":"`+
			asked["id"].(string)+`","parts":[{"kind":"data","data":`+data+`}]}}`)
	}
	_, e = answer(`{"speed":"teleport"}`)
	require.Equal(t, -32602.0, e["code"], "%v", e)
	shipped, e := answer(`{"speed":"express"}`)
	require.Nil(t, e)
	require.Equal(t, "completed", state(shipped))
	require.Equal(t, "Shipping express.", shipped["status"].(map[string]any)["message"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"])

	// Text parts are joined by new lines; a data part is the input object.
	for parts, want := range map[string]string{
		`[{"kind":"text","text":"a"},{"kind":"text","text":"b"}]`: `[{"kind":"text","text":"a\nb"}]`,
		`[{"kind":"data","data":{"n":1}}]`:                        `[{"kind":"data","data":{"n":1}}]`,
	} {
		task, e := rpc(t, base+"hello", "message/send", `{"message":{"kind":"message","messageId":"m","role":"user","parts":`+parts+`}}`)
		require.Nil(t, e)
		b, err := json.Marshal(task["history"].([]any)[0].(map[string]any)["parts"])
		require.NoError(t, err)
		require.JSONEq(t, want, string(b))
	}

	// Without the run's stream (another broker: the in-memory one of a restarted process), a
	// task still has its state and its prompt.
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	h, err := a2aserver.New(wireService(t, tenv.Client, stream.NewMemory(stream.MemoryOptions{}), reg, ""), a2aserver.Options{AllowUnauthenticated: true})
	require.NoError(t, err)
	w := do(h, http.MethodPost, "/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+first["id"].(string)+`"}}`)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"`+first["id"].(string)+`","contextId":"`+session+`","status":{"state":"input-required"},
		"history":[{"kind":"message","messageId":"`+first["id"].(string)+`/prompt","role":"user","taskId":"`+first["id"].(string)+`","contextId":"`+session+`",
		"parts":[{"kind":"text","text":"Hi"}]}]}}`, w.Body.String())

	slow, e := rpc(t, base+"slow", "message/send", `{"configuration":{"blocking":false},"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"Go"}]}}`)
	require.Nil(t, e)
	require.Equal(t, "working", state(slow))
	id := slow["id"].(string)
	_, e = rpc(t, base+"slow", "message/send", `{"message":{"kind":"message","messageId":"m-2","role":"user","taskId":"`+id+`","parts":[{"kind":"text","text":"Faster"}]}}`)
	msg := "Task " + id + ` is working and asks nothing yet: answer it when it is input-required, or send the message with metadata {"kortyx/busy": "steer"} (or enqueue, interrupt).`
	require.Equal(t, map[string]any{"code": -32600.0, "message": msg, "data": map[string]any{"version": 1.0, "code": "SESSION_BUSY", "category": "request",
		"message": msg, "retryable": false}}, e)
	done, e := rpc(t, base+"slow", "tasks/cancel", `{"id":"`+id+`"}`)
	require.Nil(t, e)
	require.Equal(t, "canceled", state(done))
}
