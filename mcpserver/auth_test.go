package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/mcpserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func helloRegistry(t *testing.T) *workflows.Registry {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	return reg
}

func TestNewNeedsAuthorization(t *testing.T) {
	_, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{})
	require.EqualError(t, err, "kortyx mcpserver: Options.Authorize is required: authorize every request (or set AllowUnauthenticated for development)")
}

// The hook sees every request before it touches anything; its refusal is a JSON-RPC error
// whose data is the failure descriptor.
func TestAuthorize(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{
		Authorize: func(r *http.Request, a sessions.Access) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, strings.Join([]string{a.Wire, string(a.Action), a.SessionID, a.Workflow, r.Header.Get("X-Caller")}, "|"))
			if a.Action == sessions.ActionStart {
				return contracts.Errorf(contracts.CodeUnauthorized, "Sign in first.")
			}
			return nil
		}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("X-Caller", "ada")
		return http.DefaultTransport.RoundTrip(r)
	})}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, 1)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}})
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	require.Equal(t, int64(jsonrpc.CodeInvalidRequest), werr.Code)
	require.Equal(t, "Sign in first.", werr.Message)
	var f contracts.Failure
	require.NoError(t, json.Unmarshal(werr.Data, &f))
	require.Equal(t, contracts.CodeUnauthorized, f.Code)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 2)
	require.Equal(t, "mcp|read|||ada", seen[0])
	require.True(t, strings.HasPrefix(seen[1], "mcp|start|mcp-"), seen[1])
	require.True(t, strings.HasSuffix(seen[1], "|hello|ada"), seen[1])
	seen = nil
	mu.Unlock()

	// A call naming a session with an open question: "read" (the question is looked up), then
	// "answer", and no "start". (The client has no elicitation: the result says the run waits.)
	s := startStack(t)
	waiting, err := connect(t, s.addr, &recorder{}).CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-auth-1"}})
	require.NoError(t, err)
	require.Equal(t, "waiting", waiting.Meta["kortyx/status"], text(t, waiting))
	res2, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "back"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-auth-1"}})
	require.NoError(t, err)
	require.Equal(t, "waiting", res2.Meta["kortyx/status"], text(t, res2))
	mu.Lock()
	require.Equal(t, []string{"mcp|read|mcp-auth-1||ada", "mcp|answer|mcp-auth-1||ada"}, seen)
}

// A body over MaxBodyBytes is refused before the SDK reads it: HTTP 400, a JSON-RPC error of
// code INVALID_REQUEST, the body rule of every wire.
func TestBodyLimit(t *testing.T) {
	h, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{
		AllowUnauthenticated: true, MaxBodyBytes: 1024})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","arguments":{"message":"` + strings.Repeat("x", 2048) + `"}}}`
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body is larger than 1024 bytes.",
		"data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"Request body is larger than 1024 bytes.","retryable":false}}}`, string(b))
}

// A body that is not a JSON-RPC message is refused before the SDK reads it (the SDK would
// answer with its internal text): HTTP 400, a JSON-RPC error whose data code is INVALID_REQUEST.
func TestMalformedBody(t *testing.T) {
	h, err := mcpserver.New(wireService(t, env.Client, stream.NewMemory(stream.MemoryOptions{}), helloRegistry(t), ""), mcpserver.Options{
		AllowUnauthenticated: true})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	const notJSON, notMessage = "The request body is not valid JSON; send one JSON-RPC 2.0 message.", "The request body must be a JSON-RPC 2.0 message: a JSON object."
	for _, tc := range []struct {
		body    string
		code    int
		message string
	}{
		{``, -32700, notJSON},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, notJSON},
		{`[]`, -32600, "The request body is an empty array; send one JSON-RPC 2.0 message."},
		{`"ping"`, -32600, notMessage},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},5]`, -32600, notMessage},
		{`{"id":1,"method":"ping"}`, -32600, `The message's "jsonrpc" must be "2.0".`},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, -32600, `The message's "method" must be a string.`},
		{`{"jsonrpc":"2.0","id":1,"method":null}`, -32600, `The message's "method" must be a string.`},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, `The message's "id" must be a string or an integer (a notification has none).`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, `The message's "id" must be a string or an integer (a notification has none).`},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, `The message's "id" must be a string or an integer (a notification has none).`},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`, -32600, `The message's "params" must be an object.`},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":[{"protocolVersion":"2025-11-25"}]}`, -32600, `The message's "params" must be an object.`},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[]}]`, -32600, `The message's "params" must be an object.`},
	} {
		t.Run(tc.body, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			msg, _ := json.Marshal(tc.message)
			require.JSONEq(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s,
				"data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":%s,"retryable":false}}}`, tc.code, msg, msg), string(b))
		})
	}
}
