package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
)

const nodeWait = time.Minute

// nodeResult is the "result" event of test/npmclients/mcp.mjs.
type nodeResult struct {
	Result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Meta              map[string]any  `json:"_meta"`
	} `json:"result"`
	Progress []string `json:"progress"`
}

type nodeElicit struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            map[string]any  `json:"meta"`
}

func nodeCall(p *nodeclient.Proc, name, message string, meta map[string]any, progress bool) {
	nodeCallArgs(p, name, map[string]any{"message": message}, meta, progress)
}

func nodeCallArgs(p *nodeclient.Proc, name string, args, meta map[string]any, progress bool) {
	p.Send(map[string]any{"op": "call", "name": name, "arguments": args, "meta": meta, "progress": progress})
}

func expectElicit(t *testing.T, p *nodeclient.Proc) nodeElicit {
	t.Helper()
	var e nodeElicit
	p.Expect("elicit", nodeWait).Decode(t, &e)
	return e
}

func expectResult(t *testing.T, p *nodeclient.Proc) nodeResult {
	t.Helper()
	var r nodeResult
	p.Expect("result", nodeWait).Decode(t, &r)
	require.Len(t, r.Result.Content, 1)
	return r
}

// TestNodeClient drives the server with the official TypeScript client
// (@modelcontextprotocol/sdk): the tools, hello's question, support's approval with progress,
// and a cancel.
func TestNodeClient(t *testing.T) {
	s := startStack(t)
	p := nodeclient.Start(t, "mcp.mjs", nil, "http://"+s.addr+"/mcp")
	p.Expect("ready", nodeWait)

	p.Send(map[string]any{"op": "list"})
	var tools struct {
		Tools []struct {
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	p.Expect("tools", nodeWait).Decode(t, &tools)
	require.Len(t, tools.Tools, 7)
	for i, want := range []struct{ name, description, input, output string }{
		{"hello", "Runs the Kortyx agent hello.", messageSchema, ""},
		{"order", "Takes an order: colors, then a size.", messageSchema, ""},
		{"score", "Scores a name.", scoreInput, scoreOutput},
		{"ship", "Ships to an address.", messageSchema, ""},
		{"shout", "Runs the Kortyx agent shout.", `{"type":"object","properties":{"input":` + shoutInput + `},"required":["input"]}`, ""},
		{"slow", "Takes an hour.", messageSchema, ""},
		{"support", "Answer order questions; refund orders after a human approves.", messageSchema, ""}} {
		require.Equal(t, want.name, tools.Tools[i].Name)
		require.Equal(t, want.description, tools.Tools[i].Description)
		require.JSONEq(t, want.input, string(tools.Tools[i].InputSchema))
		if want.output == "" {
			require.Empty(t, tools.Tools[i].OutputSchema)
		} else {
			require.JSONEq(t, want.output, string(tools.Tools[i].OutputSchema))
		}
	}

	// structuredContent, which the client checks against the tool's output schema.
	nodeCallArgs(p, "score", map[string]any{"name": "Grace"}, nil, false)
	r := expectResult(t, p)
	require.False(t, r.Result.IsError)
	require.Equal(t, "Scored Grace.", r.Result.Content[0].Text)
	require.JSONEq(t, `{"score":5}`, string(r.Result.StructuredContent))

	// hello: the question is an elicitation; the answer resumes the run.
	nodeCall(p, "hello", "hi", map[string]any{"kortyx/sessionId": "node-hello-1"}, false)
	e := expectElicit(t, p)
	require.Equal(t, "What is your name?", e.Message)
	require.JSONEq(t, textElicit, string(e.RequestedSchema))
	require.Equal(t, "node-hello-1", e.Meta["kortyx/sessionId"])
	p.Send(map[string]any{"op": "reply", "action": "accept", "content": map[string]any{"answer": "Ada"}})
	r = expectResult(t, p)
	require.False(t, r.Result.IsError)
	require.Equal(t, "Hello, Ada!", r.Result.Content[0].Text)
	require.Equal(t, "completed", r.Result.Meta["kortyx/status"])
	require.Equal(t, e.Meta["kortyx/runId"], r.Result.Meta["kortyx/runId"])

	// support: the approval is an elicitation of approve/deny; the refund runs once.
	nodeCall(p, "support", "Please refund order A-1001, it arrived broken.", nil, true)
	e = expectElicit(t, p)
	require.Equal(t, "Approve refund?", e.Message)
	require.JSONEq(t, approveElicit, string(e.RequestedSchema))
	p.Send(map[string]any{"op": "reply", "action": "accept", "content": map[string]any{"answer": "approve"}})
	r = expectResult(t, p)
	want := "Done: order A-1001 is refunded (R-5001, full amount)."
	require.Equal(t, want, r.Result.Content[0].Text)
	require.Equal(t, 1, s.set.Store.Refunds())
	require.GreaterOrEqual(t, len(r.Progress), 3, "%q", r.Progress)
	require.Equal(t, []string{"Calling lookup_order.", "Calling refund."}, r.Progress[:2])
	joined := ""
	for _, m := range r.Progress[2:] {
		joined += m
	}
	require.Equal(t, want, joined)

	// Cancel: the client aborts the call while the question is open; the run ends cancelled.
	nodeCall(p, "hello", "hi", nil, false)
	e = expectElicit(t, p)
	run, _ := e.Meta["kortyx/runId"].(string)
	require.NotEmpty(t, run)
	p.Send(map[string]any{"op": "reply", "action": "abort"})
	var ce struct {
		Message string `json:"message"`
	}
	p.Expect("callError", nodeWait).Decode(t, &ce)
	require.Contains(t, ce.Message, "the user cancelled")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflow(ctx, run, "")
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
	}, 30*time.Second, 100*time.Millisecond, "run %s ends cancelled", run)
	p.Wait(nodeWait)
}

// forwarder listens on an address and forwards each connection to a backend; Close cuts every
// connection, as the death of the process behind the address would.
type forwarder struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func forward(t *testing.T, addr, backend string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	f := &forwarder{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				_ = c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, b)
			f.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
			go func() { _, _ = io.Copy(c, b); _ = c.Close() }()
		}
	}()
	t.Cleanup(f.Close)
	return f
}

func (f *forwarder) Close() {
	_ = f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
}

// TestNodeClientAfterAPIRestart: the TypeScript client's call waits on hello's question when
// the API process at its address goes away (a worker and API-only processes over Redis); the
// client reconnects to the API process now at the same address, calls again naming the
// session, gets the question again and its answer finishes the same run.
func TestNodeClientAfterAPIRestart(t *testing.T) {
	rs := redistest.Start(t)
	set, err := examples.Parse("support,hello")
	require.NoError(t, err)
	cfg := app.Config{TemporalAddress: env.Server.Address(), TaskQueue: fmt.Sprintf("mcp-node-%d", time.Now().UnixNano()), Namespace: "default",
		RedisURL: rs.URL(), FakeModels: true}
	testenv.Run(t, context.Background(), cfg, set.Options()) // the worker
	apiOnly := set.Options()
	apiOnly.APIOnly = true
	api1 := cfg
	api1.HTTPAddr = "127.0.0.1:0"
	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	a1 := testenv.Run(t, ctx1, api1, apiOnly)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	f := forward(t, addr, a1.HTTPAddr) // the address the client knows serves the first API process

	p := nodeclient.Start(t, "mcp.mjs", nil, "http://"+addr+"/mcp")
	p.Expect("ready", nodeWait)
	nodeCall(p, "hello", "hi", map[string]any{"kortyx/sessionId": "node-restart-1"}, false)
	first := expectElicit(t, p)
	run := first.Meta["kortyx/runId"]

	stop1()
	f.Close() // the first API process is gone, with its connections
	api2 := cfg
	api2.HTTPAddr = addr
	testenv.Run(t, context.Background(), api2, apiOnly)     // another one, at the same address
	p.Send(map[string]any{"op": "reply", "action": "drop"}) // the old question's handler gives up
	p.Send(map[string]any{"op": "reconnect"})               // the host reconnects: its old call fails
	got := []string{p.Next(nodeWait).Name, p.Next(nodeWait).Name}
	require.ElementsMatch(t, []string{"callError", "reconnected"}, got)
	nodeCall(p, "hello", "back", map[string]any{"kortyx/sessionId": "node-restart-1"}, false)
	e := expectElicit(t, p)
	require.Equal(t, "What is your name?", e.Message)
	require.Equal(t, run, e.Meta["kortyx/runId"], "the same run asks")
	p.Send(map[string]any{"op": "reply", "action": "accept", "content": map[string]any{"answer": "Ada"}})
	r := expectResult(t, p)
	require.Equal(t, "Hello, Ada!", r.Result.Content[0].Text)
	require.Equal(t, run, r.Result.Meta["kortyx/runId"])
	p.Wait(nodeWait)
}
