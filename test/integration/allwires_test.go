package integration_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/allwires"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// callAs posts body to url as the caller of token ("" : none) and returns the status and body.
func callAs(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// failureCode is the failure code of an error body: {failure} of the HTTP routes, the data of a
// JSON-RPC error.
func failureCode(t *testing.T, body string) contracts.Code {
	t.Helper()
	var b struct {
		Failure *contracts.Failure `json:"failure"`
		Error   json.RawMessage    `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &b), body)
	if b.Failure != nil {
		return b.Failure.Code
	}
	var rpc struct {
		Data *contracts.Failure `json:"data"`
	}
	require.NoError(t, json.Unmarshal(b.Error, &rpc), body)
	require.NotNil(t, rpc.Data, body)
	return rpc.Data.Code
}

// mcpCaller is an MCP client session whose requests carry token.
func mcpCaller(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "allwires", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mcpCode is the failure code of an MCP call's JSON-RPC error.
func mcpCode(t *testing.T, err error) contracts.Code {
	t.Helper()
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	var f contracts.Failure
	require.NoError(t, json.Unmarshal(we.Data, &f))
	return f.Code
}

// One authorization function guards every wire (examples/allwires): without a token each wire
// refuses with UNAUTHORIZED in its own error shape; a session started by one caller over one
// wire is refused to another caller on every other wire (FORBIDDEN), and its owner goes on.
func TestOneAuthorizationHookOnEveryWire(t *testing.T) {
	chosen, err := examples.Parse("hello")
	require.NoError(t, err)
	o := chosen.Options()
	tq := taskQueue(t)
	st := testenv.Run(t, context.Background(), app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, FakeModels: true}, o)
	reg := workflows.NewRegistry()
	require.NoError(t, chosen.Register(reg))
	mux := http.NewServeMux()
	require.NoError(t, allwires.Mount(mux, allwires.Options{Client: tc, Broker: st.Broker, Registry: reg, TaskQueue: tq,
		Users: map[string]string{"t-ada": "ada", "t-bob": "bob"}}))
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close) // after the MCP sessions' cleanups, which end their open GET streams
	session := "owned-" + uuid.NewString()
	a2aSend := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user",
		"contextId":"` + session + `","parts":[{"kind":"text","text":"Hi"}]}}}`
	chatPrompt := `{"sessionId":"` + session + `","clientTurnId":"c1","workflowId":"hello","messages":[{"role":"user","content":"hi"}]}`
	uiPrompt := `{"id":"` + session + `","agent":"hello","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`

	// Without a token.
	for name, req := range map[string][2]string{"chat": {"/api/chat", chatPrompt}, "aisdk": {"/api/ui/chat", uiPrompt}, "a2a": {"/a2a/hello", a2aSend}} {
		code, body := callAs(t, api.URL+req[0], "", req[1])
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", name, body)
		require.Equal(t, contracts.CodeUnauthorized, failureCode(t, body), name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = mcpCaller(t, api.URL+"/mcp", "").ListTools(ctx, nil)
	require.Equal(t, contracts.CodeUnauthorized, mcpCode(t, err))

	// Ada starts the session over A2A: it is hers.
	code, body := callAs(t, api.URL+"/a2a/hello", "t-ada", a2aSend)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"state":"input-required"`)
	svc, err := sessions.New(sessions.Options{Client: tc, TaskQueue: tq})
	require.NoError(t, err)
	owner, err := svc.Owner(ctx, session)
	require.NoError(t, err)
	require.Equal(t, "ada", owner)

	// Bob is refused on every wire.
	for name, req := range map[string][2]string{"chat": {"/api/chat", chatPrompt}, "aisdk": {"/api/ui/chat", uiPrompt}, "a2a": {"/a2a/hello", a2aSend}} {
		code, body := callAs(t, api.URL+req[0], "t-bob", req[1])
		require.Equal(t, http.StatusForbidden, code, "%s: %s", name, body)
		require.Equal(t, contracts.CodeForbidden, failureCode(t, body), name)
	}
	_, err = mcpCaller(t, api.URL+"/mcp", "t-bob").CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"},
		Meta: mcp.Meta{"kortyx/sessionId": session}})
	require.Equal(t, contracts.CodeForbidden, mcpCode(t, err))

	// Nor may Bob answer or cancel it: the hook checks the owner of every action that names
	// the session (the session itself checks prompt turns only).
	v, err := svc.View(ctx, session)
	require.NoError(t, err)
	require.Len(t, v.Pending, 1)
	answer := `{"sessionId":"` + session + `","clientTurnId":"c2","messages":[{"role":"user","content":"Bob",
		"metadata":{"resume":{"token":"` + v.Pending[0].Token + `","requestId":"` + v.Pending[0].RequestID + `"}}}]}`
	code, body = callAs(t, api.URL+"/api/chat", "t-bob", answer)
	require.Equal(t, http.StatusForbidden, code, body)
	var task struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	_, sent := callAs(t, api.URL+"/a2a/hello", "t-ada", a2aSend) // the same message again: its task
	require.NoError(t, json.Unmarshal([]byte(sent), &task), sent)
	code, body = callAs(t, api.URL+"/a2a/hello", "t-bob", `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"`+task.Result.ID+`"}}`)
	require.Equal(t, http.StatusForbidden, code, body)
	require.Equal(t, contracts.CodeForbidden, failureCode(t, body))

	// Ada answers on the chat route.
	code, body = callAs(t, api.URL+"/api/chat", "t-ada", `{"sessionId":"`+session+`","clientTurnId":"c2","messages":[{"role":"user","content":"Ada",
		"metadata":{"resume":{"token":"`+v.Pending[0].Token+`","requestId":"`+v.Pending[0].RequestID+`"}}}]}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"content":"Hello, Ada!"`)
}
