package aisdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start("the aisdk tests"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Close()
	os.Exit(code)
}

// The agents of these tests, besides the examples hello, support and triage.
const (
	aiPlan = "aiplan" // asks a custom question {plan} and answers "Plan: <plan>"
	aiBoom = "aiboom" // fails with INVALID_INPUT
	aiSlow = "aislow" // publishes {step: working}, waits for the signal "aisdk-go", says "Finished."
	aiWait = "aiwait" // waits 3 s, then one Reason call on its input
)

// goSignal lets the aislow run finish.
const goSignal = "aisdk-go"

var taskQueues atomic.Int64

// options are the program options of the examples and the test agents.
func options(t *testing.T) (app.Options, *examples.Set) {
	t.Helper()
	chosen, err := examples.Parse("hello,support,triage")
	require.NoError(t, err)
	o := chosen.Options()
	one := func(id string, run workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"n": {Run: run}},
			Edges: []workflows.Edge{{From: protocol.StartNode, To: "n"}}}
	}
	defs := []*workflows.Definition{
		one(aiPlan, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
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
		one(aiBoom, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, contracts.Errorf(contracts.CodeInvalidInput, "aiboom refuses %q", in.Text())
		}),
		one(aiSlow, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "progress", Data: map[string]any{"step": "working"}}); err != nil {
				return workflows.NodeResult{}, err
			}
			if err := hooks.Flush(ctx); err != nil {
				return workflows.NodeResult{}, err
			}
			workflow.GetSignalChannel(ctx, goSignal).Receive(ctx, nil)
			return workflows.NodeResult{UI: &workflows.UI{Message: "Finished."}}, nil
		}),
	}
	defs = append(defs, one(aiWait, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if err := workflow.Sleep(ctx, 3*time.Second); err != nil {
			return workflows.NodeResult{}, err
		}
		_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "answer", Input: in.Text()})
		return workflows.NodeResult{}, err
	}))
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

func config(tq, redisURL string) app.Config {
	return app.Config{TemporalAddress: env.Server.Address(), TaskQueue: tq, Namespace: "default", HTTPAddr: "127.0.0.1:0",
		FakeModels: true, RedisURL: redisURL}
}

func taskQueue() string { return fmt.Sprintf("aisdk-%d-%d", time.Now().UnixNano(), taskQueues.Add(1)) }

// client is the Node script with the AI SDK's chat.
type client struct {
	t *testing.T
	p *nodeclient.Proc
}

func startClient(t *testing.T) *client {
	return &client{t: t, p: nodeclient.Start(t, "aisdk.mjs", nil)}
}

// done is the "done" event of an op: the chat's state when it ended.
type done struct {
	Name         string
	Op           string
	Status       string
	FinishReason *string
	Error        *struct {
		Message      string
		StatusCode   *int
		ResponseBody *string
	}
	Messages []message
	// Requests is the number of chat requests the chat has sent, the automatic ones included.
	Requests int
}

type message struct {
	ID    string
	Role  string
	Parts []map[string]any
}

// do sends one op and returns its done event (the next event must be it).
func (c *client) do(cmd map[string]any) done {
	c.t.Helper()
	c.p.Send(cmd)
	e := c.p.Next(time.Minute)
	for e.Name == "data" { // data parts as they arrive (onData): the state has them
		e = c.p.Next(time.Minute)
	}
	require.Equal(c.t, "done", e.Name, "%s", e.Raw)
	var d done
	e.Decode(c.t, &d)
	require.Equal(c.t, cmd["name"], d.Name)
	return d
}

func (c *client) chat(name, api, id, agent string) {
	c.t.Helper()
	c.do(map[string]any{"op": "chat", "name": name, "api": api, "id": id, "agent": agent})
}

// lastParts is the parts of the last message, each reduced to the fields that say what it is.
func lastParts(t *testing.T, d done) []string {
	t.Helper()
	require.NotEmpty(t, d.Messages)
	m := d.Messages[len(d.Messages)-1]
	require.Equal(t, "assistant", m.Role)
	var out []string
	for _, p := range m.Parts {
		typ := p["type"].(string)
		switch {
		case typ == "text":
			out = append(out, "text "+p["text"].(string))
		case typ == "step-start":
			out = append(out, typ)
		case strings.HasPrefix(typ, "data-"):
			b, _ := json.Marshal(p["data"])
			out = append(out, typ+" "+string(b))
		case strings.HasPrefix(typ, "tool-"):
			s := typ + " " + p["state"].(string)
			if out, ok := p["output"]; ok {
				b, _ := json.Marshal(out)
				s += " " + string(b)
			}
			out = append(out, s)
		default:
			out = append(out, typ)
		}
	}
	return out
}

// part is the last part of the last message of type typ.
func part(t *testing.T, d done, typ string) map[string]any {
	t.Helper()
	m := d.Messages[len(d.Messages)-1]
	for i := len(m.Parts) - 1; i >= 0; i-- {
		if m.Parts[i]["type"] == typ {
			return m.Parts[i]
		}
	}
	t.Fatalf("no %s part in %v", typ, m.Parts)
	return nil
}

func ok(t *testing.T, d done, reason string) {
	t.Helper()
	require.Nil(t, d.Error)
	require.Equal(t, "ready", d.Status)
	require.NotNil(t, d.FinishReason)
	require.Equal(t, reason, *d.FinishReason)
}

// TestChat drives every scenario of one API process with the AI SDK's chat.
func TestChat(t *testing.T) {
	o, chosen := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue(), ""), o)
	api := "http://" + st.HTTPAddr + "/api/ui/chat"
	c := startClient(t)

	t.Run("text turn", func(t *testing.T) {
		c.chat("text", api, uuid.NewString(), "support")
		d := c.do(map[string]any{"op": "send", "name": "text", "text": "Where is my order A-1002?"})
		ok(t, d, "stop")
		require.Equal(t, []string{"step-start",
			`tool-lookup_order output-available {"item":"coffee grinder","orderId":"A-1002","status":"shipped","total":89.5}`,
			"step-start", "text Order A-1002 (coffee grinder) is shipped."}, lastParts(t, d))
		require.Len(t, d.Messages, 2)
	})

	t.Run("text question", func(t *testing.T) {
		c.chat("hello", api, uuid.NewString(), "hello")
		d := c.do(map[string]any{"op": "send", "name": "hello", "text": "hi"})
		ok(t, d, "tool-calls")
		ask := part(t, d, "tool-kortyx_ask")
		require.Equal(t, "input-available", ask["state"])
		require.Equal(t, map[string]any{"question": "What is your name?", "kind": "text", "schema": map[string]any{"type": "string", "minLength": 1.0},
			"node": "greet"}, ask["input"])
		d = c.do(map[string]any{"op": "answer", "name": "hello", "output": "Ada"})
		ok(t, d, "stop")
		require.Equal(t, []string{"step-start", `tool-kortyx_ask output-available "Ada"`, "step-start", "text Hello, Ada!"}, lastParts(t, d))
	})

	t.Run("approval approved", func(t *testing.T) {
		before := chosen.Store.Refunds()
		c.chat("approve", api, uuid.NewString(), "support")
		d := c.do(map[string]any{"op": "send", "name": "approve", "text": "Please refund order A-1001, it arrived broken."})
		ok(t, d, "tool-calls")
		refund := part(t, d, "tool-refund")
		require.Equal(t, "approval-requested", refund["state"])
		require.Equal(t, map[string]any{"orderId": "A-1001", "reason": "customer request: delivered"}, refund["input"])
		require.Equal(t, before, chosen.Store.Refunds(), "nothing is refunded before the approval")
		d = c.do(map[string]any{"op": "approve", "name": "approve", "approved": true})
		ok(t, d, "stop")
		require.Equal(t, []string{"step-start",
			`tool-lookup_order output-available {"item":"espresso machine","orderId":"A-1001","status":"delivered","total":249}`,
			"step-start", `tool-refund output-available {"amount":249,"orderId":"A-1001","refundId":"R-5001"}`,
			"step-start", "text Done: order A-1001 is refunded (R-5001, full amount)."}, lastParts(t, d))
		require.Equal(t, before+1, chosen.Store.Refunds(), "the refund ran once")
	})

	t.Run("approval denied", func(t *testing.T) {
		before := chosen.Store.Refunds()
		c.chat("deny", api, uuid.NewString(), "support")
		d := c.do(map[string]any{"op": "send", "name": "deny", "text": "Refund A-1003 please"})
		ok(t, d, "tool-calls")
		d = c.do(map[string]any{"op": "approve", "name": "deny", "approved": false})
		ok(t, d, "stop")
		require.Equal(t, []string{"step-start",
			`tool-lookup_order output-available {"item":"milk frother","orderId":"A-1003","status":"damaged","total":39}`,
			"step-start", "tool-refund output-denied", "step-start", "text I have not refunded order A-1003: Tool call denied by user."}, lastParts(t, d))
		require.Equal(t, before, chosen.Store.Refunds(), "the refund never ran")
	})

	t.Run("triage questions", func(t *testing.T) {
		id := uuid.NewString()
		c.chat("triage", api, id, "triage")
		d := c.do(map[string]any{"op": "send", "name": "triage", "text": "I was charged twice on my bill"})
		ok(t, d, "tool-calls")
		ticket := `data-ticket {"summary":"I was charged twice on my bill","tags":["billing","from-chat"],"title":"Billing question","topic":"billing"}`
		require.Equal(t, []string{"step-start", ticket, "tool-kortyx_ask input-available"}, lastParts(t, d))
		confirm := part(t, d, "tool-kortyx_ask")["input"].(map[string]any)
		require.Equal(t, "choice", confirm["kind"])
		require.Equal(t, map[string]any{"type": "string", "enum": []any{"open", "revise"}}, confirm["schema"])
		d = c.do(map[string]any{"op": "answer", "name": "triage", "output": "revise"})
		ok(t, d, "tool-calls")
		require.Equal(t, "What should the ticket say?", part(t, d, "tool-kortyx_ask")["input"].(map[string]any)["question"])
		d = c.do(map[string]any{"op": "answer", "name": "triage", "output": "Refund the second charge."})
		ok(t, d, "tool-calls")
		d = c.do(map[string]any{"op": "answer", "name": "triage", "output": "open"})
		ok(t, d, "stop")
		runID := lastRun(t, st, id)
		ticketID := "T-" + strings.ToUpper(runID[len(runID)-6:])
		revised := `data-ticket {"summary":"Refund the second charge.","tags":["billing","from-chat"],"title":"Billing question","topic":"billing"}`
		require.Equal(t, []string{"step-start", ticket, `tool-kortyx_ask output-available "revise"`,
			"step-start", `tool-kortyx_ask output-available "Refund the second charge."`,
			"step-start", revised, `tool-kortyx_ask output-available "open"`,
			"step-start", "text Opened billing ticket " + ticketID + ": Refund the second charge."}, lastParts(t, d))
	})

	t.Run("custom question", func(t *testing.T) {
		c.chat("plan", api, uuid.NewString(), aiPlan)
		d := c.do(map[string]any{"op": "send", "name": "plan", "text": "which plan?"})
		ok(t, d, "tool-calls")
		require.Equal(t, map[string]any{"question": "Pick a plan", "kind": "custom", "request": map[string]any{"choices": []any{"basic", "pro"}},
			"contract": "plan", "node": "n", "schema": map[string]any{"type": "object", "properties": map[string]any{"plan": map[string]any{"enum": []any{"basic", "pro"}}},
				"required": []any{"plan"}}}, part(t, d, "tool-kortyx_ask")["input"], "the schema the session keeps")
		// An answer the response schema refuses: 400 before any stream; the question stays open.
		d = c.do(map[string]any{"op": "answer", "name": "plan", "output": map[string]any{"plan": "gold"}})
		require.Equal(t, "error", d.Status)
		require.Equal(t, 400, *d.Error.StatusCode)
		require.Equal(t, string(contracts.CodeInvalidResponse), code(t, *d.Error.ResponseBody))
		d = c.do(map[string]any{"op": "answer", "name": "plan", "output": map[string]any{"plan": "pro"}})
		ok(t, d, "stop")
		require.Equal(t, []string{"step-start", `tool-kortyx_ask output-available {"plan":"pro"}`, "step-start", "text Plan: pro"}, lastParts(t, d))
	})

	t.Run("question cancelled", func(t *testing.T) {
		id := uuid.NewString()
		c.chat("cancel", api, id, "hello")
		ok(t, c.do(map[string]any{"op": "send", "name": "cancel", "text": "hi"}), "tool-calls")
		d := c.do(map[string]any{"op": "answer", "name": "cancel", "errorText": "not telling"})
		// The run is cancelled: its response ends the question in a step of its own, then abort
		// and finish "other". sendAutomaticallyWhen (lastAssistantMessageIsCompleteWithToolCalls)
		// finds no tool call in the last step and sends nothing more: the prompt and the cancel
		// were the chat's only requests, and the chat is ready, without error.
		ok(t, d, "other")
		require.Equal(t, 2, d.Requests, "the cancel is sent once")
		require.Equal(t, []string{"step-start", "tool-kortyx_ask output-error", "step-start"}, lastParts(t, d))
		require.Equal(t, "not telling", part(t, d, "tool-kortyx_ask")["errorText"])
		cancelled(t, st, id)
	})

	t.Run("unknown agent", func(t *testing.T) {
		c.chat("unknown", api, uuid.NewString(), "nope")
		d := c.do(map[string]any{"op": "send", "name": "unknown", "text": "hi"})
		require.Equal(t, "error", d.Status)
		require.Equal(t, 404, *d.Error.StatusCode)
		require.Equal(t, string(contracts.CodeUnknownWorkflow), code(t, *d.Error.ResponseBody))
	})

	t.Run("error in the stream", func(t *testing.T) {
		c.chat("boom", api, uuid.NewString(), aiBoom)
		d := c.do(map[string]any{"op": "send", "name": "boom", "text": "go"})
		require.Equal(t, "error", d.Status)
		require.Equal(t, `INVALID_INPUT: aiboom refuses "go"`, d.Error.Message)
	})

	t.Run("nothing to resume", func(t *testing.T) {
		c.chat("idle", api, uuid.NewString(), "")
		d := c.do(map[string]any{"op": "resume", "name": "idle"})
		require.Nil(t, d.Error)
		require.Equal(t, "ready", d.Status)
		require.Nil(t, d.FinishReason)
		require.Empty(t, d.Messages)
	})
	c.p.Wait(time.Minute)
}

// code is the failure code of an error response's body.
func code(t *testing.T, body string) string {
	t.Helper()
	var b struct {
		Failure contracts.Failure `json:"failure"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &b), body)
	return string(b.Failure.Code)
}

// cancelled checks that the run of the session's last question was cancelled: its Temporal
// execution is closed as cancelled, and the session has no turn running and no question open.
func cancelled(t *testing.T, st app.Running, session string) {
	t.Helper()
	run := lastRun(t, st, session)
	svc, err := sessions.New(sessions.Options{Client: st.Client})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the response ends before the run's execution closes
		d, err := st.Client.DescribeWorkflow(context.Background(), run, "")
		if err != nil {
			return false
		}
		v, err := svc.View(context.Background(), session)
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED && v.Active == nil && len(v.Pending) == 0
	}, time.Minute, 50*time.Millisecond, "run %s is cancelled and the session ends its turn", run)
}

// lastRun is the run of the session's last checkpoint.
func lastRun(t *testing.T, st app.Running, session string) string {
	t.Helper()
	svc, err := sessions.New(sessions.Options{Client: st.Client})
	require.NoError(t, err)
	v, err := svc.View(context.Background(), session)
	require.NoError(t, err)
	require.NotEmpty(t, v.Checkpoints)
	cp, err := svc.Checkpoint(context.Background(), session, v.Checkpoints[len(v.Checkpoints)-1].ID)
	require.NoError(t, err)
	return cp.RunID
}

// TestResumeFromAnotherProcess: a chat streams a turn through one API process and leaves
// mid-turn (stop()); another chat of the same id (a reloaded page) calls resumeStream on a
// second API process, over the same Redis, while the run still waits, and gets the whole
// response once the run goes on.
func TestResumeFromAnotherProcess(t *testing.T) {
	rs := redistest.Start(t)
	o, _ := options(t)
	tq := taskQueue()
	worker := config(tq, rs.URL())
	worker.HTTPAddr = ""
	st := testenv.Run(t, context.Background(), worker, o)
	apiOnly := o
	apiOnly.APIOnly = true
	api1 := testenv.Run(t, context.Background(), config(tq, rs.URL()), apiOnly)
	api2 := testenv.Run(t, context.Background(), config(tq, rs.URL()), apiOnly)
	require.NotEqual(t, api1.HTTPAddr, api2.HTTPAddr)

	c := startClient(t)
	id := uuid.NewString()
	c.chat("first", "http://"+api1.HTTPAddr+"/api/ui/chat", id, aiSlow)
	c.chat("reloaded", "http://"+api2.HTTPAddr+"/api/ui/chat", id, "")
	c.p.Send(map[string]any{"op": "send", "name": "first", "text": "start"})
	progress := `{"data":{"step":"working"},"id":"%s","type":"data-progress"}`
	var ev struct {
		Name string
		Part map[string]any
	}
	c.p.Expect("data", time.Minute).Decode(t, &ev)
	require.Equal(t, "first", ev.Name)
	stream := ev.Part["id"].(string)
	b, _ := json.Marshal(ev.Part)
	require.JSONEq(t, fmt.Sprintf(progress, stream), string(b))

	// The first page leaves (stop() aborts its request): the turn goes on.
	c.p.Send(map[string]any{"op": "stop", "name": "first"})
	ops := map[string]done{}
	for range 2 {
		var d done
		c.p.Expect("done", time.Minute).Decode(t, &d)
		require.Equal(t, "first", d.Name)
		ops[d.Op] = d
	}
	require.Equal(t, []string{"step-start", `data-progress {"step":"working"}`}, lastParts(t, ops["stop"]))
	require.Nil(t, ops["stop"].Error)

	// The run waits for the signal: its turn is active, and the reloaded page reattaches on the
	// other API process.
	c.p.Send(map[string]any{"op": "resume", "name": "reloaded"})
	c.p.Expect("data", time.Minute).Decode(t, &ev)
	require.Equal(t, "reloaded", ev.Name)
	b, _ = json.Marshal(ev.Part)
	require.JSONEq(t, fmt.Sprintf(progress, stream), string(b))

	svc, err := sessions.New(sessions.Options{Client: st.Client})
	require.NoError(t, err)
	v, err := svc.View(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, v.Active)
	require.NoError(t, st.Client.SignalWorkflow(context.Background(), v.Active.RunID, "", goSignal, nil))

	var d done
	c.p.Expect("done", time.Minute).Decode(t, &d)
	require.Equal(t, "reloaded", d.Name)
	ok(t, d, "stop")
	require.Equal(t, []string{"step-start", `data-progress {"step":"working"}`, "text Finished."}, lastParts(t, d))
	require.Len(t, d.Messages, 1, "the reloaded chat has only the resumed message")
	c.p.Wait(time.Minute)
}

// Issue 35: the AI SDK's own chat sends a steering message ({busy: "steer"} in sendMessage's
// body) to a chat whose turn is streaming in another chat object on the same id (another tab):
// its response is the running turn's from where the run took the message in — the
// data-kortyx-steer part first — and the first chat's message shows it too.
func TestSteerWithTheAISDK(t *testing.T) {
	o, _ := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue(), ""), o)
	api := "http://" + st.HTTPAddr + "/api/ui/chat"
	c := startClient(t)
	id := uuid.NewString()
	c.chat("tab1", api, id, aiWait)
	c.chat("tab2", api, id, aiWait)
	c.p.Send(map[string]any{"op": "send", "name": "tab1", "text": "Order a lamp."})
	time.Sleep(time.Second) // the turn waits in its 3 s timer
	c.p.Send(map[string]any{"op": "send", "name": "tab2", "text": "Use the EU store.", "body": map[string]any{"busy": "steer"}})
	got := map[string]done{}
	for len(got) < 2 {
		e := c.p.Next(time.Minute)
		if e.Name != "done" {
			continue
		}
		var d done
		e.Decode(t, &d)
		got[d.Name] = d
	}
	steerPart := func(d done) map[string]any {
		t.Helper()
		require.Nil(t, d.Error)
		last := d.Messages[len(d.Messages)-1]
		require.Equal(t, "assistant", last.Role)
		for _, p := range last.Parts {
			if p["type"] == "data-kortyx-steer" {
				return p["data"].(map[string]any)
			}
		}
		t.Fatalf("no data-kortyx-steer part in %v", last.Parts)
		return nil
	}
	for _, name := range []string{"tab1", "tab2"} {
		s := steerPart(got[name])
		require.Equal(t, "Use the EU store.", s["content"], name)
		require.Equal(t, "n", s["node"], name)
	}
	var types []string
	for _, p := range got["tab2"].Messages[len(got["tab2"].Messages)-1].Parts {
		types = append(types, p["type"].(string))
	}
	require.Equal(t, "data-kortyx-steer", types[0], "the steering response begins where the run took the message in: %v", types)
	require.Contains(t, types, "text")
}
