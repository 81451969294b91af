package agui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start("the agui tests"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Close()
	os.Exit(code)
}

// The agents of these tests, besides the examples hello, support and triage.
const (
	aguiBoom = "aguiboom" // fails with INVALID_INPUT
	aguiSlow = "aguislow" // publishes {step: working}, waits for the signal "agui-go", says "Finished."
	aguiPlan = "aguiplan" // asks a custom question {plan} and answers "Plan: <plan>"
)

// goSignal lets the aguislow run finish.
const goSignal = "agui-go"

// slowRuns counts the executions of aguislow's node that reached its signal (replays aside).
var slowRuns atomic.Int64

var taskQueues atomic.Int64

// options are the program options of the examples and the test agents.
func options(t *testing.T) (app.Options, *examples.Set) {
	t.Helper()
	chosen, err := examples.Parse("hello,support,triage")
	require.NoError(t, err)
	o := chosen.Options()
	one := func(id string, run workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"n": {Run: run}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "n"}}}
	}
	defs := []*workflows.Definition{
		one(aguiBoom, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, contracts.Errorf(contracts.CodeInvalidInput, "aguiboom refuses %q", in.Text())
		}),
		one(aguiPlan, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "plan", Kind: contracts.InterruptCustom, Question: "Pick a plan",
				Contract: "plan", Request: map[string]any{"choices": []string{"basic", "pro"}},
				ResponseSchema: contracts.MustCompileSchema(`{"type":"object","properties":{"plan":{"enum":["basic","pro"]}},"required":["plan"]}`)})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			var v struct{ Plan string }
			if err := json.Unmarshal(a.Value, &v); err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: "Plan: " + v.Plan}}, nil
		}),
		one(aguiSlow, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "progress", Data: map[string]any{"step": "working"}}); err != nil {
				return workflows.NodeResult{}, err
			}
			if err := hooks.Flush(ctx); err != nil {
				return workflows.NodeResult{}, err
			}
			if !workflow.IsReplaying(ctx) {
				slowRuns.Add(1)
			}
			workflow.GetSignalChannel(ctx, goSignal).Receive(ctx, nil)
			return workflows.NodeResult{UI: &workflows.UI{Message: "Finished."}}, nil
		}),
	}
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		for _, d := range defs {
			if err := reg.Add(d); err != nil {
				return err
			}
		}
		return nil
	}
	return o, chosen
}

func config(tq string) app.Config {
	return app.Config{TemporalAddress: env.Server.Address(), TaskQueue: tq, Namespace: "default", HTTPAddr: "127.0.0.1:0", FakeModels: true}
}

func taskQueue() string { return fmt.Sprintf("agui-%d-%d", time.Now().UnixNano(), taskQueues.Add(1)) }

// client is the Node script with AG-UI's HttpAgent.
type client struct {
	t *testing.T
	p *nodeclient.Proc
}

// done is the "done" event of a run: the events' types and the agent's state after it.
type done struct {
	Name  string
	Types []string
	Error *struct {
		Message string
		Status  *int
		Payload *struct {
			Failure contracts.Failure
		}
	}
	PendingInterrupts []struct {
		ID             string
		Reason         string
		Message        string
		ToolCallID     string
		ResponseSchema map[string]any
		Metadata       map[string]any
	}
	Messages []map[string]any
	State    map[string]any
}

func (c *client) agent(name, url, thread string) {
	c.t.Helper()
	c.p.Send(map[string]any{"op": "agent", "name": name, "url": url, "threadId": thread})
	c.p.Expect("done", time.Minute)
}

// do sends one run and returns its done event, skipping the events as they arrive.
func (c *client) do(cmd map[string]any) done {
	c.t.Helper()
	c.p.Send(cmd)
	e := c.p.Next(time.Minute)
	for e.Name == "event" {
		e = c.p.Next(time.Minute)
	}
	require.Equal(c.t, "done", e.Name, "%s", e.Raw)
	var d done
	e.Decode(c.t, &d)
	require.Equal(c.t, cmd["name"], d.Name)
	return d
}

// lastText is the content of the agent's last message.
func lastText(t *testing.T, d done) string {
	t.Helper()
	require.NotEmpty(t, d.Messages)
	m := d.Messages[len(d.Messages)-1]
	require.Equal(t, "assistant", m["role"], "%v", m)
	return m["content"].(string)
}

// TestHttpAgent drives the route with AG-UI's own client: every response passes its event
// verifier, and the runs' exact event sequences are asserted.
func TestHttpAgent(t *testing.T) {
	o, chosen := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue()), o)
	base := "http://" + st.HTTPAddr + "/api/agui/"
	c := &client{t: t, p: nodeclient.Start(t, "agui.mjs", nil)}

	t.Run("text turn", func(t *testing.T) {
		c.agent("text", base+"support", uuid.NewString())
		d := c.do(map[string]any{"op": "run", "name": "text", "runId": "r1", "text": "Where is my order A-1002?"})
		require.Nil(t, d.Error)
		require.Equal(t, seq("RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", n(6, "TEXT_MESSAGE_CONTENT"), "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"), d.Types)
		require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", lastText(t, d))
		require.Empty(t, d.PendingInterrupts)
	})

	t.Run("question answered by resume", func(t *testing.T) {
		c.agent("hello", base+"hello", uuid.NewString())
		d := c.do(map[string]any{"op": "run", "name": "hello", "runId": "r1", "text": "hi"})
		require.Nil(t, d.Error)
		require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "STEP_FINISHED", "RUN_FINISHED"}, d.Types)
		require.Len(t, d.PendingInterrupts, 1)
		q := d.PendingInterrupts[0]
		require.Equal(t, "input_required", q.Reason)
		require.Equal(t, "What is your name?", q.Message)
		require.Equal(t, map[string]any{"type": "string", "minLength": 1.0}, q.ResponseSchema)
		require.Equal(t, map[string]any{"kind": "text", "node": "greet"}, q.Metadata)
		d = c.do(map[string]any{"op": "resume", "name": "hello", "runId": "r2", "status": "resolved", "payload": "Ada"})
		require.Nil(t, d.Error)
		require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
			"STEP_FINISHED", "RUN_FINISHED"}, d.Types)
		require.Equal(t, "Hello, Ada!", lastText(t, d))
		require.Empty(t, d.PendingInterrupts)
	})

	t.Run("tool approval approved", func(t *testing.T) {
		before := chosen.Store.Refunds()
		c.agent("approve", base+"support", uuid.NewString())
		d := c.do(map[string]any{"op": "run", "name": "approve", "runId": "r1", "text": "Please refund order A-1001, it arrived broken."})
		require.Nil(t, d.Error)
		require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "STEP_FINISHED", "RUN_FINISHED"}, d.Types)
		require.Len(t, d.PendingInterrupts, 1)
		q := d.PendingInterrupts[0]
		require.Equal(t, "tool_approval", q.Reason)
		require.NotEmpty(t, q.ToolCallID)
		require.Equal(t, map[string]any{"kind": "approval", "node": "agent", "tool": "refund",
			"input": map[string]any{"orderId": "A-1001", "reason": "customer request: delivered"}}, q.Metadata)
		require.Equal(t, before, chosen.Store.Refunds(), "nothing is refunded before the approval")
		d = c.do(map[string]any{"op": "resume", "name": "approve", "runId": "r2", "status": "resolved", "payload": map[string]any{"approved": true}})
		require.Nil(t, d.Error)
		// The approved call runs: its call again, its result, then the answer's text, word by word.
		require.Equal(t, seq("RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", n(8, "TEXT_MESSAGE_CONTENT"), "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"), d.Types)
		require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", lastText(t, d))
		require.Equal(t, before+1, chosen.Store.Refunds(), "the refund ran once")
	})

	t.Run("reattach after a dropped connection", func(t *testing.T) {
		thread := uuid.NewString()
		before := slowRuns.Load()
		c.agent("slow", base+aguiSlow, thread)
		d := c.do(map[string]any{"op": "run", "name": "slow", "runId": "r1", "text": "start", "abortOn": "STATE_SNAPSHOT"})
		// The client aborted its request: its own RUN_ERROR (code "abort") ends its run; the
		// turn goes on.
		require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"}, d.Types)

		// The same runId again reads the same turn from its beginning, while it still waits.
		c.p.Send(map[string]any{"op": "run", "name": "slow", "runId": "r1"})
		var ev struct {
			Type string
			Data struct{ Snapshot map[string]any }
		}
		for ev.Type != "STATE_SNAPSHOT" {
			c.p.Expect("event", time.Minute).Decode(t, &ev)
		}
		require.Len(t, ev.Data.Snapshot, 1)
		svc, err := sessions.New(sessions.Options{Client: st.Client})
		require.NoError(t, err)
		v, err := svc.View(context.Background(), thread)
		require.NoError(t, err)
		require.NotNil(t, v.Active)
		require.NoError(t, st.Client.SignalWorkflow(context.Background(), v.Active.RunID, "", goSignal, nil))
		e := c.p.Next(time.Minute)
		for e.Name == "event" {
			e = c.p.Next(time.Minute)
		}
		e.Decode(t, &d)
		require.Nil(t, d.Error)
		require.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
			"TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"}, d.Types)
		require.Equal(t, "Finished.", lastText(t, d))
		for _, value := range d.State {
			require.Equal(t, map[string]any{"step": "working"}, value)
		}
		require.Equal(t, before+1, slowRuns.Load(), "the turn ran once")
		v, err = svc.View(context.Background(), thread)
		require.NoError(t, err)
		require.Len(t, v.Checkpoints, 2, "the session's start and one turn")
	})
	c.p.Wait(time.Minute)
}

// n is n times typ, for [seq].
func n(count int, typ string) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = typ
	}
	return out
}

// seq is a sequence of event types: strings and the lists of [n].
func seq(items ...any) []string {
	var out []string
	for _, it := range items {
		switch v := it.(type) {
		case string:
			out = append(out, v)
		case []string:
			out = append(out, v...)
		}
	}
	return out
}

// mustJSON is v as JSON.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
