package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

const (
	addIn  = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`
	addOut = `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`
	anyIn  = `{"type":"object"}`
)

// testServer is an in-process MCP server over streamable HTTP.
type testServer struct {
	*httptest.Server
	lists  atomic.Int32             // tools/list requests
	calls  map[string]*atomic.Int32 // tools/call requests reaching each handler
	authMu sync.Mutex
	auth   string // Authorization header of the last request
}

func newTestServer(t *testing.T, extra ...func(*sdk.Server)) *testServer {
	t.Helper()
	return newTestServerAt(t, "", extra...)
}

// newTestServerAt starts the server on addr ("" for any free port).
func newTestServerAt(t *testing.T, addr string, extra ...func(*sdk.Server)) *testServer {
	t.Helper()
	ts := &testServer{calls: map[string]*atomic.Int32{}}
	srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				ts.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	add := func(name, desc, in, out string, h func(*sdk.CallToolRequest) (*sdk.CallToolResult, error)) {
		n := &atomic.Int32{}
		ts.calls[name] = n
		tool := &sdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(in)}
		if out != "" {
			tool.OutputSchema = json.RawMessage(out)
		}
		srv.AddTool(tool, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n.Add(1)
			return h(req)
		})
	}
	add("add", "Adds two numbers.", addIn, addOut, func(req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}},
			StructuredContent: map[string]any{"sum": in.A + in.B}}, nil
	})
	add("fail", "Always fails.", anyIn, "", func(*sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no luck"}}}, nil
	})
	add("boom", "Breaks.", anyIn, "", func(*sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, errors.New("kaboom")
	})
	add("echo_meta", "Echoes the idempotency key.", anyIn, "", func(req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(req.Params.Meta[IdempotencyKeyMeta])}}}, nil
	})
	add("mixed", "Returns several kinds of content.", anyIn, "", func(*sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "one"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2}},
			&sdk.ResourceLink{URI: "file:///a.txt", Name: "a"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.txt", Text: "b"}},
			&sdk.TextContent{Text: "two"},
		}}, nil
	})
	for _, f := range extra {
		f(srv)
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.authMu.Lock()
		ts.auth = r.Header.Get("Authorization")
		ts.authMu.Unlock()
		h.ServeHTTP(w, r)
	})
	ts.Server = httptest.NewUnstartedServer(handler)
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		ts.Listener.Close()
		ts.Listener = l
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

func (ts *testServer) lastAuth() string {
	ts.authMu.Lock()
	defer ts.authMu.Unlock()
	return ts.auth
}

// clock is a settable clock for the tool-list cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newPool(t *testing.T, ttl time.Duration) *Pool {
	t.Helper()
	p := &Pool{TTL: ttl}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// retryable reports whether tools.Set.Run treats err as retryable (fails the activity instead
// of returning an isError result).
func retryable(t *testing.T, err error) bool {
	t.Helper()
	set, e := tools.NewSet(tools.Tool{Name: "probe", InputSchema: contracts.MustCompileSchema(anyIn),
		Execute: func(context.Context, tools.Call) (tools.Result, error) { return tools.Result{}, err }})
	require.NoError(t, e)
	_, runErr := set.Run(context.Background(), protocol.ToolCallInput{Tool: "probe"})
	return runErr != nil
}

func names(ts []tools.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func TestToolsListsAllSorted(t *testing.T) {
	ts := newTestServer(t)
	got, err := newPool(t, 0).Tools(context.Background(), Server{URL: ts.URL})
	require.NoError(t, err)
	require.Equal(t, []string{"add", "boom", "echo_meta", "fail", "mixed"}, names(got))
	add := got[0]
	require.Equal(t, "Adds two numbers.", add.Description)
	require.JSONEq(t, addIn, string(add.InputSchema.Raw()))
	require.NotNil(t, add.OutputSchema)
	require.JSONEq(t, addOut, string(add.OutputSchema.Raw()))
	require.Nil(t, got[1].OutputSchema)
}

func TestToolsFiltersAndPrefix(t *testing.T) {
	ts := newTestServer(t)
	p := newPool(t, 0)
	got, err := p.Tools(context.Background(), Server{URL: ts.URL, Include: []string{"*a*", "mixed", "missing"},
		Exclude: []string{"f*"}, Prefix: "calc"})
	require.NoError(t, err)
	require.Equal(t, []string{"calc_add", "calc_echo_meta", "calc_mixed"}, names(got))
	require.Equal(t, "Echoes the idempotency key.", got[1].Description)
	require.JSONEq(t, anyIn, string(got[1].InputSchema.Raw()))

	got, err = p.Tools(context.Background(), Server{URL: ts.URL, Exclude: []string{"add", "boom", "mixed"}})
	require.NoError(t, err)
	require.Equal(t, []string{"echo_meta", "fail"}, names(got))

	_, err = p.Tools(context.Background(), Server{URL: ts.URL, Include: []string{"["}})
	require.ErrorContains(t, err, `filter "["`)
}

func TestCallResults(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	got, err := newPool(t, 0).Tools(ctx, Server{URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}, Prefix: "m"})
	require.NoError(t, err)
	set, err := tools.NewSet(got...)
	require.NoError(t, err)
	require.Equal(t, "Bearer s3cret", ts.lastAuth())

	res, err := set.Run(ctx, protocol.ToolCallInput{Tool: "m_add", ToolCallID: "c1", Input: json.RawMessage(`{"a":1,"b":2}`)})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "3", res.Content)
	require.JSONEq(t, `{"sum":3}`, string(res.StructuredContent))

	res, err = set.Run(ctx, protocol.ToolCallInput{Tool: "m_fail", ToolCallID: "c2"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "no luck", res.Content)

	res, err = set.Run(ctx, protocol.ToolCallInput{Tool: "m_boom", ToolCallID: "c3"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content, "kaboom")
	require.Equal(t, contracts.CodeExecutionFailed, res.Failure.Code, "a plain error: clients get the safe descriptor")
	require.Equal(t, "An unexpected error occurred.", res.Failure.Message)
	require.EqualValues(t, 1, ts.calls["boom"].Load())

	res, err = set.Run(ctx, protocol.ToolCallInput{Tool: "m_mixed", ToolCallID: "c4"})
	require.NoError(t, err)
	require.Equal(t, "one\n[image: image/png]\n[resource: file:///a.txt]\n[resource: file:///b.txt]\ntwo", res.Content)
}

func TestInvalidArgumentsDoNotReachServer(t *testing.T) {
	ts := newTestServer(t)
	res, err := newPool(t, 0).Call(context.Background(), Server{URL: ts.URL},
		protocol.ToolCallInput{Tool: "add", ToolCallID: "c1", Input: json.RawMessage(`{"a":"one"}`)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, contracts.CodeSchemaValidation, res.Failure.Code)
	require.NotEmpty(t, res.Failure.Issues)
	require.EqualValues(t, 0, ts.calls["add"].Load())
}

func TestCall(t *testing.T) {
	ts := newTestServer(t)
	p := newPool(t, 0)
	ctx := context.Background()
	s := Server{URL: ts.URL, Prefix: "x"}

	res, err := p.Call(ctx, s, protocol.ToolCallInput{Tool: "x_add", ToolCallID: "c1", Input: json.RawMessage(`{"a":2,"b":5}`)})
	require.NoError(t, err)
	require.Equal(t, providers.ToolResult{ToolCallID: "c1", Name: "x_add", Content: "7", StructuredContent: json.RawMessage(`{"sum":7}`)}, res)

	res, err = p.Call(ctx, s, protocol.ToolCallInput{Tool: "x_boom", ToolCallID: "c2"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content, "kaboom")

	_, err = p.Call(ctx, s, protocol.ToolCallInput{Tool: "add", ToolCallID: "c3"})
	require.Equal(t, contracts.CodeUnknownTool, contracts.CodeOf(err))
}

func TestIdempotencyKeyReachesServer(t *testing.T) {
	ts := newTestServer(t)
	res, err := newPool(t, 0).Call(context.Background(), Server{URL: ts.URL},
		protocol.ToolCallInput{Tool: "echo_meta", ToolCallID: "c1", IdempotencyKey: "wf-1:op-2:c1"})
	require.NoError(t, err)
	require.Equal(t, "wf-1:op-2:c1", res.Content)
}

func TestOutputSchemaChecked(t *testing.T) {
	ts := newTestServer(t, func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "bad_sum", InputSchema: json.RawMessage(anyIn), OutputSchema: json.RawMessage(addOut)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{StructuredContent: map[string]any{"sum": "many"}}, nil
			})
	})
	res, err := newPool(t, 0).Call(context.Background(), Server{URL: ts.URL}, protocol.ToolCallInput{Tool: "bad_sum", ToolCallID: "c1"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, contracts.CodeInvalidOutput, res.Failure.Code)
}

func TestSchemaThatDoesNotCompile(t *testing.T) {
	ts := newTestServer(t, func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"nope"}}}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	})
	p := newPool(t, 0)
	_, err := p.Tools(context.Background(), Server{URL: ts.URL})
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
	require.ErrorContains(t, err, `tool "broken": input schema`)

	got, err := p.Tools(context.Background(), Server{URL: ts.URL, Exclude: []string{"broken"}})
	require.NoError(t, err)
	require.Len(t, got, 5)
}

func TestServerDownIsRetryable(t *testing.T) {
	ts := newTestServer(t)
	p := newPool(t, -1)
	ctx := context.Background()
	got, err := p.Tools(ctx, Server{URL: ts.URL})
	require.NoError(t, err)
	set, err := tools.NewSet(got...)
	require.NoError(t, err)
	ts.Close()

	res, err := set.Run(ctx, protocol.ToolCallInput{Tool: "add", ToolCallID: "c1", Input: json.RawMessage(`{"a":1,"b":2}`)})
	require.Error(t, err, "result: %+v", res)
	require.ErrorContains(t, err, "kortyx: MCP server "+ts.URL)

	_, err = p.Tools(ctx, Server{URL: ts.URL})
	require.ErrorContains(t, err, "kortyx: MCP server "+ts.URL+": listing tools: ")
	require.True(t, retryable(t, err))

	_, err = p.Call(ctx, Server{URL: ts.URL}, protocol.ToolCallInput{Tool: "add", ToolCallID: "c2"})
	require.Error(t, err)
	require.True(t, retryable(t, err))

	// What the tool listing of a run fails with: typed and retryable, its message naming the
	// server (what an operator and a client see), the transport's text as its cause.
	_, _, err = p.Definitions(ctx, []Server{{URL: ts.URL}})
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, contracts.CodeExecutionFailed, ke.Code)
	require.True(t, ke.Retryable)
	require.Equal(t, "MCP server "+ts.URL+" did not answer: its tools could not be listed.", ke.Message)
	require.ErrorContains(t, ke.Err, "kortyx: MCP server "+ts.URL+": listing tools: ")
}

func TestServerError5xxIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	_, err := newPool(t, 0).Tools(context.Background(), Server{URL: srv.URL})
	require.ErrorContains(t, err, "listing tools")
	require.True(t, retryable(t, err))
}

func TestCancellation(t *testing.T) {
	ts := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newPool(t, 0).Tools(ctx, Server{URL: ts.URL})
	require.ErrorIs(t, err, context.Canceled)
}

func TestToolListCachedForTTL(t *testing.T) {
	ts := newTestServer(t)
	c := &clock{now: time.Unix(1000, 0)}
	p := newPool(t, time.Minute)
	p.now = c.Now
	ctx := context.Background()
	s := Server{URL: ts.URL}

	_, err := p.Tools(ctx, s)
	require.NoError(t, err)
	c.Add(59 * time.Second)
	_, err = p.Tools(ctx, Server{URL: ts.URL, Prefix: "other"}) // same server, other view
	require.NoError(t, err)
	require.EqualValues(t, 1, ts.lists.Load())

	c.Add(time.Second)
	_, err = p.Tools(ctx, s)
	require.NoError(t, err)
	require.EqualValues(t, 2, ts.lists.Load())
}

func TestConcurrentUse(t *testing.T) {
	ts := newTestServer(t)
	p := newPool(t, 0)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			res, err := p.Call(context.Background(), Server{URL: ts.URL},
				protocol.ToolCallInput{Tool: "add", ToolCallID: fmt.Sprint(i), Input: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":1}`, i))})
			if err == nil && res.Content != fmt.Sprint(i+1) {
				err = fmt.Errorf("call %d: got %q", i, res.Content)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.EqualValues(t, 8, ts.calls["add"].Load())
	require.EqualValues(t, 1, ts.lists.Load())
}

func TestReconnectAfterServerRestart(t *testing.T) {
	first := newTestServer(t)
	addr := first.Listener.Addr().String()
	p := newPool(t, 0)
	ctx := context.Background()
	s := Server{URL: first.URL}
	_, err := p.Call(ctx, s, protocol.ToolCallInput{Tool: "add", ToolCallID: "c1", Input: json.RawMessage(`{"a":1,"b":1}`)})
	require.NoError(t, err)
	first.Close()

	second := newTestServerAt(t, addr) // the server restarts on the same URL

	res, err := p.Call(ctx, s, protocol.ToolCallInput{Tool: "add", ToolCallID: "c2", Input: json.RawMessage(`{"a":2,"b":2}`)})
	require.NoError(t, err)
	require.Equal(t, "4", res.Content)
	require.EqualValues(t, 1, second.calls["add"].Load())
}

func TestDefinitions(t *testing.T) {
	one, two := newTestServer(t), newTestServer(t)
	p := newPool(t, 0)
	ctx := context.Background()
	servers := []Server{
		{URL: two.URL, Include: []string{"add", "fail"}, Prefix: "b"},
		{URL: one.URL, Include: []string{"echo_meta", "add"}, Prefix: "a"},
	}
	defs, owner, err := p.Definitions(ctx, servers)
	require.NoError(t, err)
	got := make([]string, len(defs))
	for i, d := range defs {
		got[i] = d.Name
	}
	require.Equal(t, []string{"b_add", "b_fail", "a_add", "a_echo_meta"}, got)
	require.Equal(t, "Adds two numbers.", defs[0].Description)
	require.JSONEq(t, addIn, string(defs[0].InputSchema))
	require.Equal(t, map[string]int{"b_add": 0, "b_fail": 0, "a_add": 1, "a_echo_meta": 1}, owner)

	_, _, err = p.Definitions(ctx, []Server{{URL: one.URL, Include: []string{"add"}}, {URL: two.URL, Include: []string{"a*"}}})
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
	require.True(t, strings.Contains(err.Error(), `"add"`) && strings.Contains(err.Error(), two.URL), err.Error())
}

func TestNotSentErrors(t *testing.T) {
	require.True(t, notSent(fmt.Errorf("calling: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")})))
	require.True(t, notSent(errors.New(`rejected by transport: Post "http://127.0.0.1:1": http: server closed idle connection`)))
	require.False(t, notSent(fmt.Errorf("calling: %w", &net.OpError{Op: "read", Err: errors.New("connection reset")})), "a reset after sending may have run the tool")
	require.False(t, notSent(errors.New("timeout")))
}
