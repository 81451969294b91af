package a2aserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"
)

var tenv *testenv.Env

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	env, err := testenv.Start("the a2aserver tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	tenv = env
	return m.Run()
}

// proceedSignal lets the slow agent finish.
const proceedSignal = "a2atest.proceed"

// slow publishes its progress as structured data, then waits for proceedSignal (or its
// cancellation) and says "Finished.".
func slow(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
	if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{StreamID: "progress", DataType: "progress", Data: map[string]any{"step": "working"}}); err != nil {
		return workflows.NodeResult{}, err
	}
	if err := hooks.Flush(ctx); err != nil {
		return workflows.NodeResult{}, err
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, proceedSignal), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(ctx)
	if err := ctx.Err(); err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{UI: &workflows.UI{Message: "Finished."}}, nil
}

// pick asks which plan and says it.
func pick(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
	plan, err := hooks.Choose(ctx, "plan", "Which plan?", contracts.Option{ID: "basic", Label: "Basic"}, contracts.Option{ID: "pro", Label: "Pro"})
	if err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{UI: &workflows.UI{Message: "Plan: " + plan}}, nil
}

// shipSchema is the response schema of ship's custom question.
const shipSchema = `{"type":"object","required":["speed"],"properties":{"speed":{"enum":["standard","express"]}}}`

// ship asks a custom question with a response schema and says the answer.
func ship(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
	a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "shipping", Kind: contracts.InterruptCustom, Contract: "shipping",
		Request: map[string]any{"question": "How should we ship it?"}, ResponseSchema: contracts.MustCompileSchema(shipSchema)})
	if err != nil {
		return workflows.NodeResult{}, err
	}
	var v struct {
		Speed string `json:"speed"`
	}
	if err := a.Decode(&v); err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{UI: &workflows.UI{Message: "Shipping " + v.Speed + "."}}, nil
}

// talk answers with its model's streamed text.
func talk(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("a2atext:m"), Input: in.Text()})
	if err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
}

// options are the program options of the tests: the hello example and the slow agent.
func options(t *testing.T) app.Options {
	chosen, err := examples.Parse("hello")
	require.NoError(t, err)
	o := chosen.Options()
	o.Models = []providers.Provider{fake.NewResponder(func(providers.Request) fake.Turn {
		return fake.Turn{Deltas: []string{"Hello", ", ", "world"}}
	}).WithID("a2atext")}
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return reg.Add(&workflows.Definition{ID: "slow", Version: "1", Description: "Works until told to finish.",
			Nodes: map[string]workflows.Node{"n": {Run: slow}}, Edges: []workflows.Edge{{From: workflows.Start, To: "n"}}},
			&workflows.Definition{ID: "pick", Version: "1", Description: "Asks for a plan.",
				Nodes: map[string]workflows.Node{"n": {Run: pick}}, Edges: []workflows.Edge{{From: workflows.Start, To: "n"}}},
			&workflows.Definition{ID: "ship", Version: "1", Description: "Asks how to ship.",
				Nodes: map[string]workflows.Node{"n": {Run: ship}}, Edges: []workflows.Edge{{From: workflows.Start, To: "n"}}},
			&workflows.Definition{ID: "talk", Version: "1", Description: "Streams its model's text.",
				Nodes: map[string]workflows.Node{"n": {Run: talk}}, Edges: []workflows.Edge{{From: workflows.Start, To: "n"}}})
	}
	return o
}

// stack is a worker and an API-only process over one Redis, the API on a fixed address.
type stack struct {
	t       *testing.T
	cfg     app.Config
	o       app.Options
	addr    string
	stopAPI func()
}

func startStack(t *testing.T) *stack {
	redis := redistest.Start(t)
	s := &stack{t: t, o: options(t), addr: freeAddr(t),
		cfg: app.Config{TemporalAddress: tenv.Server.Address(), TaskQueue: "a2a-" + uuid.NewString(), RedisURL: redis.URL(), FakeModels: true}}
	testenv.Run(t, context.Background(), s.cfg, s.o) // the worker: no HTTP
	s.startAPI()
	return s
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startAPI starts the API-only process on s.addr; stopAPI stops it and waits for its end.
func (s *stack) startAPI() {
	cfg := s.cfg
	cfg.HTTPAddr = s.addr
	o := app.Options{APIOnly: true, Register: s.o.Register, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	o.Started = func(app.Running) { close(started) }
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cfg, o) }()
	var once sync.Once
	s.stopAPI = func() {
		once.Do(func() {
			cancel()
			require.NoError(s.t, <-done)
		})
	}
	s.t.Cleanup(s.stopAPI)
	select {
	case <-started:
	case err := <-done:
		done <- nil // reported here, not again at the cleanup
		s.t.Fatalf("the API process ended: %v", err)
	case <-time.After(time.Minute):
		s.t.Fatal("the API process did not start within a minute")
	}
}

// norm replaces the run, session and request ids of raw with RUN1, SESSION1, HUMAN1, ... in
// order of appearance.
type norm map[string]string

var idPattern = regexp.MustCompile(`((run|session|human)-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (m norm) of(raw json.RawMessage) string {
	return idPattern.ReplaceAllStringFunc(string(raw), func(id string) string {
		if _, ok := m[id]; !ok {
			kind, _, _ := strings.Cut(id, "-")
			if len(kind) == 8 {
				kind = "uuid" // an id without a prefix (a model call's)
			}
			n := 1
			for k := range m {
				if strings.HasPrefix(k, kind+"-") {
					n++
				}
			}
			m[id] = fmt.Sprintf("%s%d", strings.ToUpper(kind), n)
		}
		return m[id]
	})
}

// field returns the JSON of the event's field, with its ids normalized.
func (m norm) field(t *testing.T, e nodeclient.Event, name string) string {
	t.Helper()
	var v map[string]json.RawMessage
	e.Decode(t, &v)
	return m.of(v[name])
}

// id is the task id of a result or a2a event.
func id(t *testing.T, e nodeclient.Event) string {
	t.Helper()
	var v struct {
		Result struct{ ID string } `json:"result"`
		A2A    struct{ ID, TaskID string }
	}
	e.Decode(t, &v)
	return v.Result.ID + v.A2A.ID + v.A2A.TaskID
}

// events reads a stream's events up to its "end" or "left": their normalized JSON.
func (m norm) events(t *testing.T, p *nodeclient.Proc) (out []string, last string) {
	t.Helper()
	for {
		e := p.Next(time.Minute)
		if e.Name != "event" {
			return out, e.Name
		}
		out = append(out, m.field(t, e, "a2a"))
	}
}

// The JSON of the parts and messages the tests expect (ids normalized).
func text(s string) string {
	b, _ := json.Marshal(s)
	return `{"kind":"text","text":` + string(b) + `}`
}

func message(id, role, task, session string, parts ...string) string {
	return `{"kind":"message","messageId":"` + id + `","role":"` + role + `","taskId":"` + task + `","contextId":"` + session +
		`","parts":[` + strings.Join(parts, ",") + `]}`
}

// helloAsks is the question part of hello's input-required message.
func helloAsks(request string) string {
	return text("What is your name?") + `,{"kind":"data","data":{"kind":"text","multiple":false,"question":"What is your name?","id":"name",
		"options":[],"requestId":"` + request + `","schema":{"type":"string","minLength":1}}}`
}

const progress = `{"artifactId":"data-progress","name":"progress","parts":[{"kind":"data","data":{"type":"structured-data","node":"n",
	"streamId":"progress","dataType":"progress","kind":"final","data":{"step":"working"}}}]}`

// Issue 21 item 3: the official JS client against the A2A wire of an API-only process, over
// Redis: the card, hello's input-required round trip (send and stream), tasks/get, the errors,
// cancel, and resubscribe after the API process restarted on the same address.
func TestOfficialClient(t *testing.T) {
	s := startStack(t)
	p := nodeclient.Start(t, "a2a.mjs", map[string]string{"A2A_BASE": "http://" + s.addr})
	const wait = time.Minute
	m := norm{}
	call := func(cmd map[string]any, event, want string) nodeclient.Event {
		t.Helper()
		p.Send(cmd)
		e := p.Expect(event, wait)
		var v map[string]json.RawMessage
		e.Decode(t, &v)
		delete(v, "event")
		b, _ := json.Marshal(v)
		if want != "" {
			require.JSONEq(t, want, m.of(b), "%v", cmd)
		}
		return e
	}
	stream := func(cmd map[string]any, end string, want ...string) {
		t.Helper()
		p.Send(cmd)
		got, last := m.events(t, p)
		require.Equal(t, end, last)
		require.Len(t, got, len(want), "%v: %s", cmd, strings.Join(got, "\n"))
		for i := range want {
			require.JSONEq(t, want[i], got[i], "%v: event %d", cmd, i)
		}
	}

	call(map[string]any{"cmd": "card", "agent": "hello"}, "card", `{"card":{"name":"hello","description":"The hello agent.","version":"1",
			"protocolVersion":"0.3.0","url":"http://`+s.addr+`/a2a/hello","preferredTransport":"JSONRPC","capabilities":{"streaming":true},
			"defaultInputModes":["text/plain","application/json"],"defaultOutputModes":["text/plain","application/json"],
			"skills":[{"id":"hello","name":"hello","description":"The hello agent.","tags":["kortyx"]}],
			"supportedInterfaces":[{"url":"http://`+s.addr+`/a2a/hello","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
				{"url":"http://`+s.addr+`/a2a/hello","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
				{"url":"http://`+s.addr+`/a2a/hello","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}}`)

	// message/send: hello asks (input-required: the question as text and data), the answer on
	// the task completes it with the greeting; tasks/get gives the same task.
	asks := message("RUN1/3", "agent", "RUN1", "SESSION1", helloAsks("HUMAN1"))
	prompt := message("RUN1/prompt", "user", "RUN1", "SESSION1", text("Hi"))
	greets := message("RUN1/6", "agent", "RUN1", "SESSION1", text("Hello, Ada!"))
	done := `{"result":{"kind":"task","id":"RUN1","contextId":"SESSION1","status":{"state":"completed","message":` + greets + `},
		"artifacts":[{"artifactId":"message-4","parts":[` + text("Hello, Ada!") + `]}],
		"history":[` + prompt + `,` + asks + `,` + message("RUN1/answer/HUMAN1", "user", "RUN1", "SESSION1", text("Ada")) + `,` + greets + `]}}`
	var hello string
	{ // send
		e := call(map[string]any{"cmd": "send", "agent": "hello", "text": "Hi"}, "result",
			`{"result":{"kind":"task","id":"RUN1","contextId":"SESSION1","status":{"state":"input-required","message":`+asks+`},
			"history":[`+prompt+`,`+asks+`]}}`)
		hello = id(t, e)
		call(map[string]any{"cmd": "send", "agent": "hello", "text": "Ada", "taskId": hello}, "result", done)
		call(map[string]any{"cmd": "get", "agent": "hello", "taskId": hello}, "result", done)
	}

	{ // errors
		msg := "Task RUN1 is completed and cannot be continued: send the message without taskId to start a new task in the same context."
		call(map[string]any{"cmd": "send", "agent": "hello", "text": "Again", "taskId": hello}, "rpc-error",
			`{"code":-32600,"message":"`+msg+`","data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"`+msg+`","retryable":false}}`)
		call(map[string]any{"cmd": "get", "agent": "hello", "taskId": "run-00000000-0000-0000-0000-000000000000"}, "rpc-error",
			`{"code":-32001,"message":"Task \"RUN2\" not found.","data":{"version":1,"code":"NOT_FOUND","category":"request","message":"Task \"RUN2\" not found.","retryable":false}}`)
		call(map[string]any{"cmd": "cancel", "agent": "hello", "taskId": hello}, "rpc-error",
			`{"code":-32002,"message":"Task RUN1 is already completed.","data":{"version":1,"code":"INVALID_REQUEST","category":"request","message":"Task RUN1 is already completed.","retryable":false}}`)
	}

	// message/stream: the task, its input-required status; the answer's stream: working, the
	// greeting as an artifact, completed.
	{ // stream
		asks := message("RUN3/3", "agent", "RUN3", "SESSION2", helloAsks("HUMAN2"))
		stream(map[string]any{"cmd": "stream", "agent": "hello", "text": "Hi"}, "end",
			`{"kind":"task","id":"RUN3","contextId":"SESSION2","status":{"state":"working"},"history":[`+message("RUN3/prompt", "user", "RUN3", "SESSION2", text("Hi"))+`]}`,
			`{"kind":"status-update","taskId":"RUN3","contextId":"SESSION2","final":true,"status":{"state":"input-required","message":`+asks+`}}`)
		stream(map[string]any{"cmd": "stream", "agent": "hello", "text": "Ada", "taskId": key(m, "RUN3")}, "end",
			`{"kind":"status-update","taskId":"RUN3","contextId":"SESSION2","final":false,"status":{"state":"working"}}`,
			`{"kind":"artifact-update","taskId":"RUN3","contextId":"SESSION2","artifact":{"artifactId":"message-4","parts":[`+text("Hello, Ada!")+`]}}`,
			`{"kind":"status-update","taskId":"RUN3","contextId":"SESSION2","final":true,"status":{"state":"completed","message":`+
				message("RUN3/6", "agent", "RUN3", "SESSION2", text("Hello, Ada!"))+`}}`)
	}

	// tasks/cancel of a working task: its run is cancelled (a Temporal cancellation), the task
	// is canceled.
	started := func(run, session string) []string {
		return []string{`{"kind":"task","id":"` + run + `","contextId":"` + session + `","status":{"state":"working"},"history":[` +
			message(run+"/prompt", "user", run, session, text("Go")) + `]}`,
			`{"kind":"artifact-update","taskId":"` + run + `","contextId":"` + session + `","artifact":` + progress + `}`}
	}
	{ // cancel
		stream(map[string]any{"cmd": "stream", "agent": "slow", "text": "Go", "leaveAfter": 2}, "left", started("RUN4", "SESSION3")...)
		task := key(m, "RUN4")
		cancelled := message("RUN4/3", "agent", "RUN4", "SESSION3", text("Execution cancelled."))
		call(map[string]any{"cmd": "cancel", "agent": "slow", "taskId": task}, "result",
			`{"result":{"kind":"task","id":"RUN4","contextId":"SESSION3","status":{"state":"canceled","message":`+cancelled+`},
			"artifacts":[`+progress+`],"history":[`+message("RUN4/prompt", "user", "RUN4", "SESSION3", text("Go"))+`,`+cancelled+`]}}`)
		d, err := tenv.Client.DescribeWorkflow(context.Background(), task, "")
		require.NoError(t, err)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	}

	// tasks/resubscribe after the API process restarted (same address, same Redis): the task as
	// it is, then the rest of its response, live.
	{ // resubscribe
		stream(map[string]any{"cmd": "stream", "agent": "slow", "text": "Go", "leaveAfter": 2}, "left", started("RUN5", "SESSION4")...)
		task := key(m, "RUN5")
		s.stopAPI()
		s.startAPI()
		p.Send(map[string]any{"cmd": "resubscribe", "agent": "slow", "taskId": task})
		first := p.Expect("event", wait)
		require.JSONEq(t, `{"kind":"task","id":"RUN5","contextId":"SESSION4","status":{"state":"working"},"artifacts":[`+progress+`],
			"history":[`+message("RUN5/prompt", "user", "RUN5", "SESSION4", text("Go"))+`]}`, m.field(t, first, "a2a"))
		require.NoError(t, tenv.Client.SignalWorkflow(context.Background(), task, "", proceedSignal, nil))
		finished := message("RUN5/4", "agent", "RUN5", "SESSION4", text("Finished."))
		got, last := m.events(t, p)
		require.Equal(t, "end", last)
		require.Len(t, got, 2, strings.Join(got, "\n"))
		require.JSONEq(t, `{"kind":"artifact-update","taskId":"RUN5","contextId":"SESSION4","artifact":{"artifactId":"message-2","parts":[`+text("Finished.")+`]}}`, got[0])
		require.JSONEq(t, `{"kind":"status-update","taskId":"RUN5","contextId":"SESSION4","final":true,"status":{"state":"completed","message":`+finished+`}}`, got[1])
		call(map[string]any{"cmd": "get", "agent": "slow", "taskId": task}, "result",
			`{"result":{"kind":"task","id":"RUN5","contextId":"SESSION4","status":{"state":"completed","message":`+finished+`},
			"artifacts":[`+progress+`,{"artifactId":"message-2","parts":[`+text("Finished.")+`]}],
			"history":[`+message("RUN5/prompt", "user", "RUN5", "SESSION4", text("Go"))+`,`+finished+`]}}`)
	}

	// tasks/cancel of a task in input-required: its question is answered with a cancel.
	{
		asks := message("RUN6/3", "agent", "RUN6", "SESSION5", helloAsks("HUMAN3"))
		prompt := message("RUN6/prompt", "user", "RUN6", "SESSION5", text("Hi"))
		e := call(map[string]any{"cmd": "send", "agent": "hello", "text": "Hi"}, "result",
			`{"result":{"kind":"task","id":"RUN6","contextId":"SESSION5","status":{"state":"input-required","message":`+asks+`},"history":[`+prompt+`,`+asks+`]}}`)
		cancelled := message("RUN6/5", "agent", "RUN6", "SESSION5", text("Execution cancelled."))
		call(map[string]any{"cmd": "cancel", "agent": "hello", "taskId": id(t, e)}, "result",
			`{"result":{"kind":"task","id":"RUN6","contextId":"SESSION5","status":{"state":"canceled","message":`+cancelled+`},"history":[`+prompt+`,`+asks+`,`+
				message("RUN6/answer/HUMAN3", "user", "RUN6", "SESSION5", `{"kind":"data","data":{"cancel":true}}`)+`,`+cancelled+`]}}`)
	}

	// A choice: its schema is the enum of the option ids; the answer is an id as text, or a
	// data part {"selected": id}; an unknown id is refused (InvalidParams, INVALID_RESPONSE).
	for i, c := range []struct {
		answer map[string]any
		part   string
		plan   string
	}{
		{map[string]any{"text": "pro"}, text("pro"), "pro"},
		{map[string]any{"data": map[string]any{"selected": "basic"}}, `{"kind":"data","data":{"selected":["basic"]}}`, "basic"},
	} {
		run, session, human := fmt.Sprintf("RUN%d", 7+i), fmt.Sprintf("SESSION%d", 6+i), fmt.Sprintf("HUMAN%d", 4+i)
		asks := message(run+"/3", "agent", run, session, text("Which plan?"), `{"kind":"data","data":{"kind":"choice","multiple":false,"question":"Which plan?",
			"id":"plan","options":[{"id":"basic","label":"Basic"},{"id":"pro","label":"Pro"}],"requestId":"`+human+`","schema":{"type":"string","enum":["basic","pro"]}}}`)
		prompt := message(run+"/prompt", "user", run, session, text("Hi"))
		e := call(map[string]any{"cmd": "send", "agent": "pick", "text": "Hi"}, "result",
			`{"result":{"kind":"task","id":"`+run+`","contextId":"`+session+`","status":{"state":"input-required","message":`+asks+`},"history":[`+prompt+`,`+asks+`]}}`)
		cmd := map[string]any{"cmd": "send", "agent": "pick", "taskId": id(t, e)}
		for k, v := range c.answer {
			cmd[k] = v
		}
		says := message(run+"/6", "agent", run, session, text("Plan: "+c.plan))
		call(cmd, "result", `{"result":{"kind":"task","id":"`+run+`","contextId":"`+session+`","status":{"state":"completed","message":`+says+`},
			"artifacts":[{"artifactId":"message-4","parts":[`+text("Plan: "+c.plan)+`]}],
			"history":[`+prompt+`,`+asks+`,`+message(run+"/answer/"+human, "user", run, session, c.part)+`,`+says+`]}}`)
	}
	e := call(map[string]any{"cmd": "send", "agent": "pick", "text": "Hi"}, "result", "")
	msg := `Unknown option \"gold\": choose one of \"basic\", \"pro\".`
	call(map[string]any{"cmd": "send", "agent": "pick", "text": "gold", "taskId": id(t, e)}, "rpc-error", `{"code":-32602,"message":"`+msg+`",
		"data":{"version":1,"code":"INVALID_RESPONSE","category":"request","message":"`+msg+`","retryable":false,"issues":[{"path":[],"code":"enum","message":"`+msg+`"}]}}`)
	var open struct {
		Result struct{ Status struct{ State string } }
	}
	call(map[string]any{"cmd": "get", "agent": "pick", "taskId": id(t, e)}, "result", "").Decode(t, &open)
	require.Equal(t, "input-required", open.Result.Status.State) // the question stays open
	// Model text: one artifact per text segment, its deltas appended; the whole text is the
	// completed status's message.
	delta := func(text string, appended bool) string {
		flag := ""
		if appended {
			flag = `"append":true,`
		}
		return `{"kind":"artifact-update","taskId":"RUN9","contextId":"SESSION8",` + flag + `"artifact":{"artifactId":"text-UUID1/step-0","parts":[` + text + `]}}`
	}
	stream(map[string]any{"cmd": "stream", "agent": "talk", "text": "Hi"}, "end",
		`{"kind":"task","id":"RUN9","contextId":"SESSION8","status":{"state":"working"},"history":[`+message("RUN9/prompt", "user", "RUN9", "SESSION8", text("Hi"))+`]}`,
		delta(text("Hello"), false), delta(text(", "), true), delta(text("world"), true),
		`{"kind":"status-update","taskId":"RUN9","contextId":"SESSION8","final":true,"status":{"state":"completed","message":`+
			message("RUN9/7", "agent", "RUN9", "SESSION8", text("Hello, world"))+`}}`)
	call(map[string]any{"cmd": "get", "agent": "talk", "taskId": key(m, "RUN9")}, "result", `{"result":{"kind":"task","id":"RUN9","contextId":"SESSION8",
		"status":{"state":"completed","message":`+message("RUN9/7", "agent", "RUN9", "SESSION8", text("Hello, world"))+`},
		"artifacts":[{"artifactId":"text-UUID1/step-0","parts":[`+text("Hello, world")+`]}],
		"history":[`+message("RUN9/prompt", "user", "RUN9", "SESSION8", text("Hi"))+`,`+message("RUN9/7", "agent", "RUN9", "SESSION8", text("Hello, world"))+`]}}`)

	p.Wait(wait)
}

// key is the original id normalized as n.
func key(m norm, n string) string {
	for k, v := range m {
		if v == n {
			return k
		}
	}
	return ""
}
