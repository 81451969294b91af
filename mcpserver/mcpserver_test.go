package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	e, err := testenv.Start("the mcpserver tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	e.Close()
	os.Exit(code)
}

// stack is a worker and the dev HTTP API of the support and hello examples.
type stack struct {
	set  *examples.Set
	addr string // the API's host:port
	tq   string
}

// startStack runs the examples on one process (worker + API), on the in-process fake model.
func startStack(t *testing.T) *stack {
	t.Helper()
	set, err := examples.Parse("support,hello")
	require.NoError(t, err)
	tq := fmt.Sprintf("mcp-%d", time.Now().UnixNano())
	o := set.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := set.Register(reg); err != nil {
			return err
		}
		return registerTestAgents(reg)
	}
	r := testenv.Run(t, context.Background(), app.Config{TemporalAddress: env.Server.Address(), TaskQueue: tq, Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true}, o)
	return &stack{set: set, addr: r.HTTPAddr, tq: tq}
}

const (
	scoreInput  = `{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`
	scoreOutput = `{"type":"object","properties":{"score":{"type":"integer"}},"required":["score"]}`
	shoutInput  = `{"type":"string","minLength":1}`
	sizeSchema  = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	// shipSchema nests an object: not an elicitation form, so it is asked as one JSON text
	// field that the SDK does not check, and the session does.
	shipSchema = `{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"]}},"required":["address"]}`
)

// registerTestAgents adds two agents of the tests: score (object input and output schemas:
// its result is structured) and shout (a string input schema: the tool takes {"input": ...}).
func registerTestAgents(reg *workflows.Registry) error {
	return reg.Add(&workflows.Definition{ID: "score", Version: "1", Description: "Scores a name.",
		InputSchema: contracts.MustCompileSchema(scoreInput), OutputSchema: contracts.MustCompileSchema(scoreOutput),
		Nodes: map[string]workflows.Node{"score": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			var v struct {
				Name string `json:"name"`
			}
			if err := in.Decode(&v); err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"score": len(v.Name)}, UI: &workflows.UI{Message: "Scored " + v.Name + "."}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "score"}},
	}, &workflows.Definition{ID: "order", Version: "1", Description: "Takes an order: colors, then a size.",
		Nodes: map[string]workflows.Node{"ask": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			colors, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "colors", Kind: contracts.InterruptMultiChoice, Question: "Which colors?",
				Options: []contracts.Option{{ID: "red", Label: "Red"}, {ID: "blue", Label: "Blue"}, {ID: "green", Label: "Green"}}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			size, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "size", Kind: contracts.InterruptCustom, Question: "Which size?",
				Request: map[string]any{"question": "Which size?"}, SchemaID: "size", ResponseSchema: contracts.MustCompileSchema(sizeSchema)})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: "Colors " + strings.Join(colors.Selected, "+") + ", size " + string(size.Value) + "."}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "ask"}},
	}, &workflows.Definition{ID: "ship", Version: "1", Description: "Ships to an address.",
		Nodes: map[string]workflows.Node{"ask": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			to, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "address", Kind: contracts.InterruptCustom, Question: "Where to?",
				Request: map[string]any{"question": "Where to?"}, SchemaID: "ship", ResponseSchema: contracts.MustCompileSchema(shipSchema)})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: "Shipping to " + string(to.Value) + "."}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "ask"}},
	}, &workflows.Definition{ID: "slow", Version: "1", Description: "Takes an hour.",
		Nodes: map[string]workflows.Node{"wait": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, workflow.Sleep(ctx, time.Hour)
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "wait"}},
	}, &workflows.Definition{ID: "shout", Version: "1",
		InputSchema: contracts.MustCompileSchema(shoutInput),
		Nodes: map[string]workflows.Node{"shout": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			switch in.Text() {
			case "fail":
				return workflows.NodeResult{}, &contracts.Error{Code: contracts.CodeInvalidInput, Message: "Nothing to shout."}
			case "crash":
				return workflows.NodeResult{}, errors.New("the internal detail no client sees")
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: strings.ToUpper(in.Text()) + "!"}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "shout"}},
	})
}

// recorder is a client's view of a call: the elicitations it got and the progress messages.
type recorder struct {
	mu          sync.Mutex
	elicits     []*mcp.ElicitParams
	progress    []string
	answer      func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	elicitation bool
}

func (r *recorder) client() *mcp.Client {
	o := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.progress = append(r.progress, req.Params.Message)
	}}
	if r.elicitation {
		o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.mu.Lock()
			r.elicits = append(r.elicits, req.Params)
			r.mu.Unlock()
			return r.answer(ctx, req.Params)
		}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "kortyx-test", Version: "1"}, o)
}

func connect(t *testing.T, addr string, r *recorder) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := r.client().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func accept(answer any) func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%T", res.Content[0])
	return tc.Text
}

const (
	messageSchema = `{"type":"object","properties":{"message":{"type":"string","description":"The user message."}},"required":["message"]}`
	textElicit    = `{"properties":{"answer":{"title":"Answer","type":"string"}},"required":["answer"],"type":"object"}`
	approveElicit = `{"properties":{"answer":{"oneOf":[{"const":"approve","title":"Approve"},{"const":"deny","title":"Deny"}],"title":"Answer","type":"string"}},"required":["answer"],"type":"object"}`
)

func TestTools(t *testing.T) {
	s := startStack(t)
	cs := connect(t, s.addr, &recorder{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion, "the client asked for 2026-07-28 first")
	require.Equal(t, `{"logging":{},"tools":{"listChanged":true}}`, jsonOf(t, cs.InitializeResult().Capabilities))
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name+" | "+tool.Description+" | "+jsonOf(t, tool.InputSchema)+" | "+jsonOf(t, tool.OutputSchema))
	}
	canonical := func(doc string) string {
		var v any
		require.NoError(t, json.Unmarshal([]byte(doc), &v))
		return jsonOf(t, v)
	}
	require.Equal(t, []string{
		"hello | Runs the Kortyx agent hello. | " + canonical(messageSchema) + " | null",
		"order | Takes an order: colors, then a size. | " + canonical(messageSchema) + " | null",
		"score | Scores a name. | " + canonical(scoreInput) + " | " + canonical(scoreOutput),
		"ship | Ships to an address. | " + canonical(messageSchema) + " | null",
		"shout | Runs the Kortyx agent shout. | " + canonical(`{"type":"object","properties":{"input":`+shoutInput+`},"required":["input"]}`) + " | null",
		"slow | Takes an hour. | " + canonical(messageSchema) + " | null",
		"support | Answer order questions; refund orders after a human approves. | " + canonical(messageSchema) + " | null",
	}, got)

	// An object output schema: the run's data is the structured content.
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "score", Arguments: map[string]any{"name": "Ada"}})
	require.NoError(t, err)
	require.False(t, out.IsError, text(t, out))
	require.Equal(t, "Scored Ada.", text(t, out))
	require.Equal(t, `{"score":3}`, jsonOf(t, out.StructuredContent))
	// A string input schema: the argument "input" is the run's input.
	out, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"input": "hey"}})
	require.NoError(t, err)
	require.Equal(t, "HEY!", text(t, out))
	// A failed run: a tool error with the safe message and code, never the internal text.
	for input, want := range map[string]string{"fail": "Nothing to shout. (INVALID_INPUT)", "crash": "An unexpected error occurred. (EXECUTION_FAILED)"} {
		out, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"input": input}})
		require.NoError(t, err)
		require.True(t, out.IsError)
		require.Equal(t, want, text(t, out))
		require.Equal(t, "failed", out.Meta["kortyx/status"])
		require.NotContains(t, jsonOf(t, out), "internal detail")
	}
	// Arguments the input schema refuses: a tool execution error (MCP 2025-11-25), not a
	// protocol error, with the code and the issues; no session was touched.
	out, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "score", Arguments: map[string]any{"name": ""}})
	require.NoError(t, err)
	require.True(t, out.IsError)
	require.Equal(t, "The arguments do not match the tool's input schema. (name: minLength: got 0, want 1) (INVALID_INPUT)", text(t, out))
	f := failureOf(t, out)
	require.Equal(t, contracts.CodeInvalidInput, f.Code)
	require.Len(t, f.Issues, 1)
	require.Equal(t, []any{"name"}, f.Issues[0].Path)
	require.Equal(t, []string{"kortyx/failure", "kortyx/status"}, metaKeys(out))
	require.Equal(t, "failed", out.Meta["kortyx/status"])
}

// failureOf is the kortyx/failure descriptor of a result.
func failureOf(t *testing.T, res *mcp.CallToolResult) contracts.Failure {
	t.Helper()
	var f contracts.Failure
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, res.Meta["kortyx/failure"])), &f))
	return f
}

// metaKeys are the keys of a result's _meta, sorted.
func metaKeys(res *mcp.CallToolResult) []string {
	var keys []string
	for k := range res.Meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestHelloElicitation(t *testing.T) {
	s := startStack(t)
	r := &recorder{elicitation: true, answer: accept("Ada")}
	cs := connect(t, s.addr, r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-hello-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	require.Equal(t, "Hello, Ada!", text(t, res))
	require.Equal(t, "mcp-hello-1", res.Meta["kortyx/sessionId"])
	require.Equal(t, "completed", res.Meta["kortyx/status"])
	require.Len(t, r.elicits, 1)
	e := r.elicits[0]
	require.Equal(t, "What is your name?", e.Message)
	require.Equal(t, textElicit, jsonOf(t, e.RequestedSchema))
	require.Equal(t, "mcp-hello-1", e.Meta["kortyx/sessionId"])
	require.Equal(t, res.Meta["kortyx/runId"], e.Meta["kortyx/runId"], "the question's run answers the call")

	// The same session again: a new turn (the question was answered), asked again.
	r.answer = accept("Grace")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "again"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-hello-1"}})
	require.NoError(t, err)
	require.Equal(t, "Hello, Grace!", text(t, res))
	require.Len(t, r.elicits, 2)
}

func TestHelloWithoutElicitationWaits(t *testing.T) {
	s := startStack(t)
	cs := connect(t, s.addr, &recorder{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-wait-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, `The run waits for an answer: What is your name? Call hello again with _meta {"kortyx/sessionId": "mcp-wait-1"} to answer it.`, text(t, res))
	require.Equal(t, "waiting", res.Meta["kortyx/status"])

	// A client with elicitation comes back for the question.
	r := &recorder{elicitation: true, answer: accept("Lin")}
	cs2 := connect(t, s.addr, r)
	res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "back"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-wait-1"}})
	require.NoError(t, err)
	require.Equal(t, "Hello, Lin!", text(t, res))
	require.Len(t, r.elicits, 1)
}

func TestSupportApproval(t *testing.T) {
	s := startStack(t)
	r := &recorder{elicitation: true, answer: accept("approve")}
	cs := connect(t, s.addr, r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: "support", Arguments: map[string]any{"message": "Please refund order A-1001, it arrived broken."}}
	params.SetProgressToken("p-1")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", text(t, res))
	require.Equal(t, 1, s.set.Store.Refunds())
	require.Len(t, r.elicits, 1)
	require.Equal(t, "Approve refund?", r.elicits[0].Message)
	require.Equal(t, approveElicit, jsonOf(t, r.elicits[0].RequestedSchema))
	// The last deltas' progress notifications can reach the client's handler after CallTool
	// returned (seen once in a clean-clone run: the recorded text ended mid-sentence).
	var progress []string
	require.Eventually(t, func() bool {
		r.mu.Lock()
		progress = append([]string(nil), r.progress...)
		r.mu.Unlock()
		return len(progress) >= 3 && strings.Join(progress[2:], "") == "Done: order A-1001 is refunded (R-5001, full amount)."
	}, 5*time.Second, 10*time.Millisecond, "the text deltas, in order: %q", progress)
	require.Equal(t, []string{"Calling lookup_order.", "Calling refund."}, progress[:2])
	require.Equal(t, text(t, res), strings.Join(progress[2:], ""), "the text deltas, in order")

	// Declined: the refund is denied, not made.
	r.answer = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "support", Arguments: map[string]any{"message": "Refund order A-1003 please."}})
	require.NoError(t, err)
	require.Equal(t, "I have not refunded order A-1003: Tool call denied by user.", text(t, res))
	require.Equal(t, 1, s.set.Store.Refunds())
}

func TestCancelCancelsTheRun(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	callCtx, cancelCall := context.WithCancel(ctx)
	runs := make(chan string, 1)
	release := make(chan struct{})
	defer close(release)
	r := &recorder{elicitation: true, answer: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		runs <- p.Meta["kortyx/runId"].(string)
		cancelCall() // the host cancels while the question is open
		select {
		case <-ctx.Done():
		case <-release:
		}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}}
	cs := connect(t, s.addr, r)
	_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}})
	require.ErrorIs(t, err, context.Canceled)
	run := <-runs
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflow(ctx, run, "")
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
	}, 30*time.Second, 100*time.Millisecond, "run %s ends cancelled", run)
}

// A cancel while the run runs (no question open) stops it.
func TestCancelStopsARunningRun(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := sessions.New(sessions.Options{Client: env.Client, TaskQueue: s.tq})
	require.NoError(t, err)
	cs := connect(t, s.addr, &recorder{})
	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"message": "go"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-slow-1"}})
		done <- err
	}()
	var run string
	require.Eventually(t, func() bool {
		v, err := svc.View(ctx, "mcp-slow-1")
		if err == nil && v.Active != nil {
			run = v.Active.RunID
		}
		return run != ""
	}, 30*time.Second, 50*time.Millisecond)
	cancelCall()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflow(ctx, run, "")
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
	}, 30*time.Second, 100*time.Millisecond, "run %s ends cancelled", run)
}

func TestBadInput(t *testing.T) {
	s := startStack(t)
	cs := connect(t, s.addr, &recorder{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Arguments that do not match the input schema: a tool execution error.
	for _, tc := range []struct {
		args any
		want string
		path []any
	}{
		{map[string]any{"text": "hi"}, "The arguments do not match the tool's input schema. (message: message is required) (INVALID_INPUT)", []any{"message"}},
		{map[string]any{"message": " "}, "The arguments do not match the tool's input schema. (message: message must be a non-empty string) (INVALID_INPUT)", []any{"message"}},
		{[]any{"hi"}, "The arguments must be a JSON object. (INVALID_INPUT)", nil},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: tc.args})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Equal(t, tc.want, text(t, res))
		f := failureOf(t, res)
		require.Equal(t, contracts.CodeInvalidInput, f.Code)
		if tc.path != nil {
			require.Len(t, f.Issues, 1)
			require.Equal(t, tc.path, f.Issues[0].Path)
		}
	}
	// A _meta session id that is not an id: a protocol error (-32602), the call's params are wrong.
	var werr *jsonrpc.Error
	var f contracts.Failure
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"kortyx/sessionId": "bad id with spaces"}})
	require.ErrorAs(t, err, &werr)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
	f = contracts.Failure{}
	require.NoError(t, json.Unmarshal(werr.Data, &f))
	require.Equal(t, contracts.CodeInvalidRequest, f.Code)
	require.Equal(t, []any{"kortyx/sessionId"}, f.Issues[0].Path)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	require.ErrorContains(t, err, "unknown tool")
}

// dialer keeps the connections it dials, to cut them as a process that dies would.
type dialer struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

func (d *dialer) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFree waits until addr can be listened on again.
func waitFree(t *testing.T, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		_ = l.Close()
		return true
	}, 10*time.Second, 50*time.Millisecond)
}

// TestReconnectAfterAPIRestart: a worker and an API-only process over Redis; the host's call
// waits on the question when the API process stops; another API process on the same address
// asks the question again to a host that reconnects and names the session, and the answer
// finishes the same run.
func TestReconnectAfterAPIRestart(t *testing.T) {
	rs := redistest.Start(t)
	set, err := examples.Parse("support,hello")
	require.NoError(t, err)
	tq := fmt.Sprintf("mcp-restart-%d", time.Now().UnixNano())
	cfg := app.Config{TemporalAddress: env.Server.Address(), TaskQueue: tq, Namespace: "default", RedisURL: rs.URL(), FakeModels: true}
	testenv.Run(t, context.Background(), cfg, set.Options()) // the worker: no HTTP
	api := cfg
	api.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	apiOnly := set.Options()
	apiOnly.APIOnly = true
	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	a1 := testenv.Run(t, ctx1, api, apiOnly)
	require.Equal(t, api.HTTPAddr, a1.HTTPAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	asked := make(chan *mcp.ElicitParams, 1)
	release := make(chan struct{})
	defer close(release)
	r1 := &recorder{elicitation: true, answer: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked <- p
		select { // the host never answers here: the API process goes away first
		case <-ctx.Done():
		case <-release:
		}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}}
	conns := &dialer{}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	cs1, err := r1.client().Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + api.HTTPAddr + "/mcp",
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: conns.dial}}}, nil)
	require.NoError(t, err)
	callDone := make(chan error, 1)
	go func() {
		_, err := cs1.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"},
			Meta: mcp.Meta{"kortyx/sessionId": "mcp-restart-1"}})
		callDone <- err
	}()
	first := <-asked
	run := first.Meta["kortyx/runId"].(string)

	stop1() // the API process stops; the run waits in Temporal, its stream in Redis
	waitFree(t, api.HTTPAddr)
	conns.closeAll()                                   // its connections die with it
	testenv.Run(t, context.Background(), api, apiOnly) // another API process, same address
	require.Error(t, <-callDone, "the call of the process that went away fails")
	_ = cs1.Close()

	r2 := &recorder{elicitation: true, answer: accept("Ada")}
	cs2 := connect(t, api.HTTPAddr, r2)
	res, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "back"},
		Meta: mcp.Meta{"kortyx/sessionId": "mcp-restart-1"}})
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", text(t, res))
	require.Equal(t, run, res.Meta["kortyx/runId"], "the same run finished")
	require.Len(t, r2.elicits, 1)
	require.Equal(t, "What is your name?", r2.elicits[0].Message)
	// The call ends with the response's done, which the run publishes just before its last
	// workflow task completes: the execution closes a moment later.
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflow(ctx, run, "")
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 10*time.Second, 50*time.Millisecond, "the run completes")
}

// TestResumeOnTheSameProcess: the connection of a call's stream breaks while its question is
// open; the client resumes the stream with Last-Event-ID (the SDK's event store of this
// process) and gets the rest of the call.
func TestResumeOnTheSameProcess(t *testing.T) {
	s := startStack(t)
	conns := &dialer{}
	r := &recorder{elicitation: true, answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		conns.closeAll() // the call's stream (and every other connection) breaks now
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var gets []string
	var mu sync.Mutex
	tr := &http.Transport{DialContext: conns.dial}
	hc := &http.Client{Transport: roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			mu.Lock()
			gets = append(gets, req.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		return tr.RoundTrip(req)
	})}
	cs, err := r.client().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}})
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", text(t, res))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, gets, "the client resumed with a GET")
	require.NotEmpty(t, gets[0], "with Last-Event-ID")
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestQuestionKinds: a multi-choice question and a custom one (its flat schema the form, whose
// content the SDK checks against it: a refused one leaves the question open);
// decline cancels the run; cancel leaves the question open; a repeated kortyx/turnId
// reattaches to its turn.
func TestQuestionKinds(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answers := []map[string]any{{"answer": []any{"red", "blue"}}, {"n": "big"}}
	r := &recorder{elicitation: true}
	r.answer = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		a := answers[0]
		answers = answers[1:]
		return &mcp.ElicitResult{Action: "accept", Content: a}, nil
	}
	cs := connect(t, s.addr, r)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "order", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-order-1"}})
	require.NoError(t, err)
	// The form's content does not fit the form's schema: the MCP SDK refuses it before it
	// reaches the session, and the question stays open.
	require.False(t, res.IsError, text(t, res))
	require.Equal(t, "waiting", res.Meta["kortyx/status"], text(t, res))
	require.Len(t, r.elicits, 2)
	require.Equal(t, "Which colors?", r.elicits[0].Message)
	require.Equal(t, `{"properties":{"answer":{"items":{"anyOf":[{"const":"red","title":"Red"},{"const":"blue","title":"Blue"},{"const":"green","title":"Green"}]},"minItems":1,"title":"Answer","type":"array"}},"required":["answer"],"type":"object"}`,
		jsonOf(t, r.elicits[0].RequestedSchema))
	require.Equal(t, "Which size?", r.elicits[1].Message)
	require.JSONEq(t, sizeSchema, jsonOf(t, r.elicits[1].RequestedSchema), "a flat object schema is the elicitation form itself")

	// The size question is still open: a call naming the session asks it again.
	answers = []map[string]any{{"n": 2}}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "order", Arguments: map[string]any{"message": "again"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-order-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	require.Equal(t, `Colors red+blue, size {"n":2}.`, text(t, res))
	require.Len(t, r.elicits, 3)
	require.Equal(t, "Which size?", r.elicits[2].Message)

	// cancel (dismissed): the question stays open; decline: the run is cancelled.
	r.answer = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-decline-1"}})
	require.NoError(t, err)
	require.Equal(t, "waiting", res.Meta["kortyx/status"])
	run := res.Meta["kortyx/runId"]
	r.answer = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "hi"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-decline-1"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "cancelled", res.Meta["kortyx/status"])
	require.Equal(t, run, res.Meta["kortyx/runId"])
	require.Equal(t, "The run was cancelled. (EXECUTION_CANCELLED)", text(t, res))

	// The same kortyx/turnId again: the same turn's result, not a second run.
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "score", Arguments: map[string]any{"name": "Ada"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-turn-1", "kortyx/turnId": "t-1"}})
	require.NoError(t, err)
	again, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "score", Arguments: map[string]any{"name": "Ada"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-turn-1", "kortyx/turnId": "t-1"}})
	require.NoError(t, err)
	require.Equal(t, first.Meta["kortyx/runId"], again.Meta["kortyx/runId"])
	require.Equal(t, "Scored Ada.", text(t, again))
	require.Equal(t, `{"score":3}`, jsonOf(t, again.StructuredContent))
}

// TestRefusedAnswer: an answer the session refuses (a JSON value its nested response schema
// does not match; the SDK does not check a text field) leaves the question open: the result
// says the run waits, with the refusal's failure, and the next call asks the question again.
func TestRefusedAnswer(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := &recorder{elicitation: true, answer: accept(`{"address":{"city":""}}`)}
	cs := connect(t, s.addr, r)
	params := &mcp.CallToolParams{Name: "ship", Arguments: map[string]any{"message": "ship it"}, Meta: mcp.Meta{"kortyx/sessionId": "mcp-ship-1"}}
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	require.Equal(t, "waiting", res.Meta["kortyx/status"], text(t, res))
	var f contracts.Failure
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, res.Meta["kortyx/failure"])), &f))
	require.Equal(t, contracts.CodeInvalidResponse, f.Code)
	require.True(t, strings.HasPrefix(text(t, res), "The answer was refused: "+f.Message+" (INVALID_RESPONSE) The run waits for an answer: Where to?"), text(t, res))
	require.Len(t, r.elicits, 1)
	require.Contains(t, jsonOf(t, r.elicits[0].RequestedSchema), "A JSON value matching the schema", "asked as one JSON text field")

	// The question is still open: the next call asks it again, and a valid answer completes the run.
	r.answer = accept(`{"address":{"city":"Oslo"}}`)
	params.Arguments = map[string]any{"message": "again"}
	again, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, again.IsError, text(t, again))
	require.Equal(t, "completed", again.Meta["kortyx/status"])
	require.Equal(t, `Shipping to {"address":{"city":"Oslo"}}.`, text(t, again))
	require.Equal(t, res.Meta["kortyx/runId"], again.Meta["kortyx/runId"], "the same run")
	require.Len(t, r.elicits, 2)
	require.Equal(t, "Where to?", r.elicits[1].Message)
}
