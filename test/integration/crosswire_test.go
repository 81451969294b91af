package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// postJSON posts body to url and returns the status and the whole answer.
func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// sseData are the data lines of an SSE body, in order.
func sseData(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// One session crosses the wires: a question asked over A2A is listed by the chat page's
// session view and answered on the Kortyx chat route; the A2A task then shows the answer's
// outcome; the next turn of the same session runs over the AI SDK's chat transport, and its
// question is answered by an MCP host's elicitation.
func TestOneSessionAcrossWires(t *testing.T) {
	chosen, err := examples.Parse("hello")
	require.NoError(t, err)
	o := chosen.Options()
	o.DefaultWorkflow = "hello"
	st := testenv.Run(t, context.Background(), app.Config{TemporalAddress: srv.Address(), TaskQueue: taskQueue(t), HTTPAddr: "127.0.0.1:0",
		FakeModels: true, WebPage: true}, o)
	base := "http://" + st.HTTPAddr
	session := "cross-" + uuid.NewString()

	// 1. A2A: the task waits for input.
	code, body := postJSON(t, base+"/a2a/hello", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",
		"messageId":"m-1","role":"user","contextId":"`+session+`","parts":[{"kind":"text","text":"Hi"}]}}}`)
	require.Equal(t, http.StatusOK, code, body)
	var sent struct {
		Result struct {
			ID        string `json:"id"`
			ContextID string `json:"contextId"`
			Status    struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sent), body)
	require.Equal(t, "input-required", sent.Result.Status.State, body)
	require.Equal(t, session, sent.Result.ContextID)
	task := sent.Result.ID

	// 2. The chat page's session view lists the open question, with what answers it.
	res, err := http.Get(base + "/api/sessions/" + session)
	require.NoError(t, err)
	var view struct {
		Pending []struct {
			RequestID string `json:"requestId"`
			Token     string `json:"token"`
			Input     struct {
				Question string `json:"question"`
			} `json:"input"`
		} `json:"pending"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&view))
	res.Body.Close()
	require.Len(t, view.Pending, 1)
	q := view.Pending[0]
	require.Equal(t, "What is your name?", q.Input.Question)

	// 3. Kortyx's chat wire answers it.
	code, body = postJSON(t, base+"/api/chat", `{"sessionId":"`+session+`","clientTurnId":"t2","messages":[{"role":"user","content":"Ada",
		"metadata":{"resume":{"token":"`+q.Token+`","requestId":"`+q.RequestID+`"}}}]}`)
	require.Equal(t, http.StatusOK, code, body)
	var types []string
	greeting := ""
	for _, d := range sseData(body) {
		if d == "[DONE]" { // Kortyx's end of stream
			types = append(types, d)
			continue
		}
		var c struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &c), d)
		types = append(types, c.Type)
		if c.Type == "message" {
			greeting = c.Content
		}
	}
	require.Equal(t, "Hello, Ada!", greeting, body)
	require.Equal(t, []string{"done", "[DONE]"}, types[len(types)-2:], body)

	// 4. The A2A task is completed, with the greeting, read by any process from the run.
	code, body = postJSON(t, base+"/a2a/hello", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+task+`"}}`)
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		Result struct {
			Status struct {
				State   string `json:"state"`
				Message struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"status"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	require.Equal(t, "completed", got.Result.Status.State, body)
	require.NotEmpty(t, got.Result.Status.Message.Parts, body)
	require.Equal(t, "Hello, Ada!", got.Result.Status.Message.Parts[0].Text, body)

	// 5. The session's next turn runs over the AI SDK's transport: hello asks again, as the
	// kortyx_ask tool.
	code, body = postJSON(t, base+"/api/ui/chat", `{"id":"`+session+`","trigger":"submit-message","messages":[{"id":"m3","role":"user","parts":[{"type":"text","text":"again"}]}]}`)
	require.Equal(t, http.StatusOK, code, body)
	var ask map[string]any
	for _, d := range sseData(body) {
		var p map[string]any
		if json.Unmarshal([]byte(d), &p) == nil && p["type"] == "tool-input-available" {
			ask = p
		}
	}
	require.NotNil(t, ask, body)
	require.Equal(t, "kortyx_ask", ask["toolName"])
	require.Equal(t, "What is your name?", ask["input"].(map[string]any)["question"])
	res, err = http.Get(base + "/api/sessions/" + session)
	require.NoError(t, err)
	var after struct {
		Checkpoints []struct {
			TurnIndex int `json:"turnIndex"`
		} `json:"checkpoints"`
		Pending []json.RawMessage `json:"pending"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&after))
	res.Body.Close()
	require.Len(t, after.Pending, 1, "the new question is the session's open one")
	require.Equal(t, 3, after.Checkpoints[len(after.Checkpoints)-1].TurnIndex, "three turns: A2A's prompt, the chat's answer, the AI SDK's prompt")

	// 6. An MCP host names the session: the question the AI SDK turn asked comes as an
	// elicitation, and the answer completes that run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "crosswire", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Grace"}}, nil
		}})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	require.NoError(t, err)
	defer cs.Close()
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "back"}, Meta: mcp.Meta{"kortyx/sessionId": session}})
	require.NoError(t, err)
	require.Equal(t, []string{"What is your name?"}, asked)
	require.False(t, out.IsError)
	require.Len(t, out.Content, 1)
	require.Equal(t, "Hello, Grace!", out.Content[0].(*mcp.TextContent).Text)
	require.Equal(t, "completed", out.Meta["kortyx/status"])
}
