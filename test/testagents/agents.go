// Package testagents holds workflows used by integration, replay and crash tests: they record
// their side effects through an activity so that tests can count them exactly.
package testagents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// EffectsWorkflow asks two questions in one node and records a side effect before, between and
// after them.
const EffectsWorkflow = "effects"

// LoopWorkflow runs its "step" node in a loop, recording each step, as many times as its input
// says ({"steps": n}).
const LoopWorkflow = "loop"

// Chat test workflows.
const (
	// EchoWorkflow counts the session's turns (workflow state carried by the head) and answers
	// "Turn <n>: <input>".
	EchoWorkflow = "echo"
	// SpeakerWorkflow calls the model twice: "Hello" and "world" in two text segments.
	SpeakerWorkflow = "speaker"
	// MultiWorkflow asks a multi-choice question and returns the picks.
	MultiWorkflow = "multi"
	// BackgroundWorkflow completes the response early, then asks a question in a later node.
	BackgroundWorkflow = "background"
	// BoomWorkflow fails in its node.
	BoomWorkflow = "boom"
	// SlowWorkflow publishes a progress chunk, works for SlowFor, then answers "Finished.".
	SlowWorkflow = "slow"
	// FanoutWorkflow calls PartWorkflow three times in parallel (topics "a", "slow" and "ask")
	// in node "fan", then records "after" in node "after".
	FanoutWorkflow = "fanout"
	// PartWorkflow records "part <topic> start", sleeps SlowFor when the topic is "slow", asks
	// "Which <topic>?" when it is "ask", records "part <topic> done" and returns a summary.
	PartWorkflow = "part"
)

var (
	partInput  = contracts.MustCompileSchema(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)
	partOutput = contracts.MustCompileSchema(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`)
)

// SlowFor is how long the slow workflow works between its progress chunk and its answer.
const SlowFor = 3 * time.Second

// CorrectionAgentWorkflow finishes with a return contract whose first two values are invalid:
// it needs both of its schema corrections and all three of its model passes.
const CorrectionAgentWorkflow = "correctionagent"

// ToolAgentWorkflow and ApprovalAgentWorkflow call hooks.Reason with the record_step tool
// (the second with approval); [Responder] plays their model.
const (
	ToolAgentWorkflow     = "toolagent"
	ApprovalAgentWorkflow = "approvalagent"
)

// RecordActivity is the activity that appends one line to the effects file.
const RecordActivity = "kortyx.test.Record"

// Recorder appends side effects to a file, one line each.
type Recorder struct {
	File string
	mu   sync.Mutex
}

// Register registers the record activity.
func (r *Recorder) Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(r.Record, activity.RegisterOptions{Name: RecordActivity})
}

// Record appends line to the file.
func (r *Recorder) Record(ctx context.Context, line string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	return err
}

func record(ctx workflow.Context, line string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteActivity(ctx, RecordActivity, line).Get(ctx, nil)
}

// Register adds the test workflows to reg.
func Register(reg *workflows.Registry) error {
	intake := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "progress", Data: map[string]any{"step": "started"}}); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := record(ctx, "before"); err != nil {
			return workflows.NodeResult{}, err
		}
		name, err := hooks.AskText(ctx, "name", "What is your name?")
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if err := record(ctx, "between "+name); err != nil {
			return workflows.NodeResult{}, err
		}
		plan, err := hooks.Choose(ctx, "plan", "Which plan?",
			contracts.Option{ID: "basic", Label: "Basic"}, contracts.Option{ID: "pro", Label: "Pro"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if err := record(ctx, "after "+plan); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"name": name, "plan": plan},
			UI: &workflows.UI{Message: fmt.Sprintf("Welcome %s, you are on %s.", name, plan)}}, nil
	}
	step := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		var args struct {
			Steps int `json:"steps"`
		}
		if err := in.Decode(&args); err != nil {
			return workflows.NodeResult{}, err
		}
		n, err := hooks.NodeState(ctx, 0)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if err := n.Set(n.Get() + 1); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := record(ctx, fmt.Sprintf("step %d", n.Get())); err != nil {
			return workflows.NodeResult{}, err
		}
		res := workflows.NodeResult{Data: map[string]any{"done": n.Get()}}
		if n.Get() < args.Steps {
			res.Condition = "more"
		}
		return res, nil
	}
	agent := func(approval bool) workflows.NodeFunc {
		return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("fake:test"), Input: in.Text(),
				Tools: []string{"record_step"}, Timeout: 3 * time.Second,
				ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}, Approval: hooks.Switch{On: approval}}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text, "passes": len(res.Steps)}}, nil
		}
	}
	result, err := contracts.NewOutputContract("The result.", "result", "1",
		contracts.MustCompileSchema(`{"type":"object","properties":{"value":{"type":"integer"}},"required":["value"]}`), nil)
	if err != nil {
		return err
	}
	correcting := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("fake:test"), Input: in.Text(),
			Outputs: &hooks.Outputs{Return: map[string]*contracts.OutputContract{"result": result}}, SchemaCorrections: hooks.Corrections(2),
			ToolExecution: hooks.ToolExecution{MaxSteps: 3}, Timeout: 3 * time.Second})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		var v map[string]any
		_ = json.Unmarshal(res.Returned.Data, &v)
		return workflows.NodeResult{Data: map[string]any{"result": v, "passes": len(res.Steps)}}, nil
	}
	one := func(id string, fn workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: fn}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}
	}
	echo := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		n, err := hooks.WorkflowState(ctx, "turns", 0)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if err := n.Set(n.Get() + 1); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"turns": n.Get(), "last": in.Text()},
			UI: &workflows.UI{Message: fmt.Sprintf("Turn %d: %s", n.Get(), in.Text())}}, nil
	}
	speaker := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		for _, word := range []string{"Hello", "world"} {
			if _, err := hooks.Reason(ctx, hooks.ReasonOptions{Model: providers.Model("fake:test"), Input: "say:" + word}); err != nil {
				return workflows.NodeResult{}, err
			}
		}
		return workflows.NodeResult{}, nil
	}
	multi := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "toppings", Question: "Toppings?", Multiple: true,
			Options: []contracts.Option{{ID: "cheese"}, {ID: "olives"}, {ID: "basil"}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"picked": a.Selected}, UI: &workflows.UI{Message: "Picked " + strings.Join(a.Selected, ", ") + "."}}, nil
	}
	background := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if _, err := hooks.CompleteResponse(ctx, hooks.CompleteResponseOptions{Message: "Your report is on its way."}); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{}, nil
	}
	later := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if err := record(ctx, "background work"); err != nil {
			return workflows.NodeResult{}, err
		}
		ok, err := hooks.Choose(ctx, "publish", "Publish the report?", contracts.Option{ID: "yes"}, contracts.Option{ID: "no"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"publish": ok}}, nil
	}
	slow := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "progress", Data: map[string]any{"step": "working"}}); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := hooks.Flush(ctx); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := workflow.Sleep(ctx, SlowFor); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := record(ctx, "slow done"); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "Finished."}}, nil
	}
	part := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		var args struct {
			Topic string `json:"topic"`
		}
		if err := in.Decode(&args); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := record(ctx, "part "+args.Topic+" start"); err != nil {
			return workflows.NodeResult{}, err
		}
		summary := args.Topic
		switch args.Topic {
		case "slow":
			if err := workflow.Sleep(ctx, SlowFor); err != nil {
				return workflows.NodeResult{}, err
			}
		case "ask":
			a, err := hooks.AskText(ctx, "which", "Which ask?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			summary += ":" + a
		}
		if err := record(ctx, "part "+args.Topic+" done"); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"summary": summary}}, nil
	}
	fan := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		var calls []hooks.WorkflowCall
		for _, topic := range []string{"a", "slow", "ask"} {
			calls = append(calls, hooks.WorkflowCall{ID: topic, Workflow: PartWorkflow, Input: map[string]any{"topic": topic}})
		}
		res, err := hooks.Parallel(ctx, calls...)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		var summaries []string
		for _, r := range res {
			summaries = append(summaries, r.Data["summary"].(string))
		}
		return workflows.NodeResult{Data: map[string]any{"summaries": strings.Join(summaries, ",")}}, nil
	}
	after := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		return workflows.NodeResult{}, record(ctx, "after")
	}
	boom := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		return workflows.NodeResult{}, fmt.Errorf("the database is down")
	}
	if err := reg.Add(one(EchoWorkflow, echo), one(SpeakerWorkflow, speaker), one(MultiWorkflow, multi), one(BoomWorkflow, boom), one(SlowWorkflow, slow),
		&workflows.Definition{ID: PartWorkflow, Version: "1", InputSchema: partInput, OutputSchema: partOutput,
			Nodes: map[string]workflows.Node{"part": {Run: part}}, Edges: []workflows.Edge{{From: workflows.Start, To: "part"}}},
		&workflows.Definition{ID: FanoutWorkflow, Version: "1",
			Nodes: map[string]workflows.Node{"fan": {Run: fan}, "after": {Run: after}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "fan"}, {From: "fan", To: "after"}}},
		&workflows.Definition{ID: BackgroundWorkflow, Version: "1",
			Nodes: map[string]workflows.Node{"respond": {Run: background}, "later": {Run: later}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "respond"}, {From: "respond", To: "later"}}}); err != nil {
		return err
	}
	return reg.Add(one(ToolAgentWorkflow, agent(false)), one(ApprovalAgentWorkflow, agent(true)), one(CorrectionAgentWorkflow, correcting), &workflows.Definition{
		ID: EffectsWorkflow, Version: "1",
		Nodes: map[string]workflows.Node{"intake": {Run: intake}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "intake"}},
	}, &workflows.Definition{
		ID: LoopWorkflow, Version: "1",
		Nodes: map[string]workflows.Node{"step": {Run: step}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "step"}, {From: "step", To: "step", When: "more"}},
	})
}

// Tool is the record_step tool: it records "tool <note>" (once per idempotency key, so a
// retried call would still show up twice in Attempts but once in the file's "tool" lines).
func (r *Recorder) Tool() tools.Tool {
	t, err := tools.Func("record_step", "Record a step.", `{"type":"object","properties":{"note":{"type":"string"}},"required":["note"]}`,
		func(ctx context.Context, call tools.Call, in struct {
			Note string `json:"note"`
		}) (map[string]any, error) {
			if err := r.Record(ctx, "tool "+in.Note); err != nil {
				return nil, tools.Retryable(err)
			}
			return map[string]any{"recorded": in.Note}, nil
		})
	if err != nil {
		panic(err) // a literal schema: cannot fail
	}
	return t
}

// Responder plays the model of the test agents. For the tool agents: without a tool result it
// calls record_step, with one it answers "recorded". For the correction agent: it returns an
// invalid value, repairs it into another invalid value, then into a valid one. slow makes the
// tool agents' answer, and the correction agent's first repair, take a minute (to kill a worker
// while the pass runs).
func Responder(slow bool) fake.Responder {
	return func(req providers.Request) fake.Turn {
		if word, ok := strings.CutPrefix(req.Messages[len(req.Messages)-1].Content, "say:"); ok {
			return fake.Text(word)
		}
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "Invalid value: ") {
			// A schema repair of the correction agent.
			if strings.Contains(last.Content, `Invalid value: {"value":"x"}`) {
				t := fake.Text(`{"value":"one"}`)
				if slow {
					t.Delay = time.Minute
				}
				return t
			}
			return fake.Text(`{"value":3}`)
		}
		for _, t := range req.Tools {
			if t.Name == "kortyx_return__result" {
				return fake.Calls(providers.ToolCall{Name: "kortyx_return__result", Arguments: json.RawMessage(`{"value":"x"}`)})
			}
		}
		for _, m := range req.Messages {
			if m.Role == providers.RoleTool {
				t := fake.Text("recorded " + m.Content)
				if slow {
					t.Delay = time.Minute
				}
				return t
			}
		}
		return fake.Call("record_step", `{"note":"n1"}`)
	}
}
