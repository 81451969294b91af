package testagents

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// SweepWorkflow is the agent of the kill sweep: a tool loop of SweepSteps calls of the
// record_key tool, each behind a human approval, then an answer ([Recorder.SweepResponder]
// plays its model). It uses the default timeouts and retry policies of hooks.Reason.
const SweepWorkflow = "sweepagent"

// SweepFastWorkflow is the sweep agent with Definition.FastPath: its model passes are local
// activities (its tool stays a regular activity). Start its runs with
// workflows.FastPathTaskTimeout.
const SweepFastWorkflow = "sweepagent-fast"

// SweepChildWorkflow is the sweep agent with the input and output schemas a workflow called
// as a child declares.
const SweepChildWorkflow = "sweepagent-child"

// SweepTreeWorkflow is the agent of the budget sweep: a root that calls two SweepChildWorkflow
// runs in parallel (inputs "<input>-a" and "<input>-b"), under the budget the sweep starts it with;
// its data is {"answer": "done", "toolCalls": the children's tool calls}.
const SweepTreeWorkflow = "sweepagent-tree"

// SweepTreeTokens is the tokens a SweepTreeWorkflow run spends when every pass is counted once:
// two children of SweepSteps+1 passes, the fake model's usage (10 input tokens a pass, one
// output token for the answer's one delta).
const SweepTreeTokens = 2 * ((SweepSteps+1)*10 + 1)

// SweepSteps is the number of tool calls (and approvals) of one sweep run; it makes
// SweepSteps+1 model passes.
const SweepSteps = 2

// SweepWork is how long the sweep agent's tool works after its effect, and each of its model
// passes takes.
const SweepWork = 200 * time.Millisecond

// SweepTool is the name of the tool of the sweep agent.
const SweepTool = "record_key"

// Lines of the effects file written by the sweep agent's tool and model.
const (
	// KeyLine prefixes "key <idempotency key>": one execution of record_key.
	KeyLine = "key "
	// ModelLine prefixes "model <input> <pass>": one execution of a model pass that reached
	// the provider, pass counting from 0.
	ModelLine = "model "
)

// RegisterSweep adds the sweep agent, its fast-path twin and the budget sweep's tree to reg.
func RegisterSweep(reg *workflows.Registry) error {
	agent := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("fake:test"), Input: in.Text(),
			Tools: []string{SweepTool}, ToolExecution: hooks.ToolExecution{MaxSteps: SweepSteps + 1, Emit: hooks.Switch{On: true}, Approval: hooks.Switch{On: true}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text, "passes": len(res.Steps), "toolCalls": len(res.ToolCalls)}}, nil
	}
	tree := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Parallel(ctx,
			hooks.WorkflowCall{ID: "a", Workflow: SweepChildWorkflow, Input: in.Text() + "-a"},
			hooks.WorkflowCall{ID: "b", Workflow: SweepChildWorkflow, Input: in.Text() + "-b"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		calls := 0
		for _, r := range res {
			if r.Data["answer"] != "done" {
				return workflows.NodeResult{}, fmt.Errorf("a child answered %v", r.Data["answer"])
			}
			n, _ := r.Data["toolCalls"].(float64)
			calls += int(n)
		}
		return workflows.NodeResult{Data: map[string]any{"answer": "done", "toolCalls": calls}}, nil
	}
	if err := reg.Add(&workflows.Definition{ID: SweepTreeWorkflow, Version: "1",
		Nodes: map[string]workflows.Node{"fan": {Run: tree, Children: []string{SweepChildWorkflow}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "fan"}}}); err != nil {
		return err
	}
	in, err := contracts.CompileSchema([]byte(`{"type":"string"}`))
	if err != nil {
		return err
	}
	out, err := contracts.CompileSchema([]byte(`{"type":"object","properties":{"answer":{"type":"string"},"passes":{"type":"integer"},"toolCalls":{"type":"integer"}},"required":["answer","toolCalls"]}`))
	if err != nil {
		return err
	}
	if err := reg.Add(&workflows.Definition{ID: SweepChildWorkflow, Version: "1", InputSchema: in, OutputSchema: out,
		Nodes: map[string]workflows.Node{"agent": {Run: agent}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}); err != nil {
		return err
	}
	for _, fast := range []bool{false, true} {
		id := SweepWorkflow
		if fast {
			id = SweepFastWorkflow
		}
		if err := reg.Add(&workflows.Definition{ID: id, Version: "1", FastPath: fast,
			Nodes: map[string]workflows.Node{"agent": {Run: agent}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}); err != nil {
			return err
		}
	}
	return nil
}

// KeyTool is the record_key tool: every execution appends "key <idempotency key>", so that a
// sweep counts executions per key (the tool deliberately does not de-duplicate).
func (r *Recorder) KeyTool() tools.Tool {
	t, err := tools.Func(SweepTool, "Record a step.", `{"type":"object","properties":{"step":{"type":"integer"}},"required":["step"]}`,
		func(ctx context.Context, call tools.Call, in struct {
			Step int `json:"step"`
		}) (map[string]any, error) {
			if err := r.Record(ctx, KeyLine+call.IdempotencyKey); err != nil {
				return nil, tools.Retryable(err)
			}
			// Work after the effect: a worker killed now has made the effect without Temporal
			// recording the call's completion.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(SweepWork):
			}
			return map[string]any{"recorded": in.Step}, nil
		})
	if err != nil {
		panic(err) // a literal schema: cannot fail
	}
	return t
}

// SweepResponder plays the sweep agent's model (a request that offers record_key): pass n < SweepSteps
// calls record_key {"step": n+1} (call id "k<n+1>"), the last pass answers "done"; every pass
// appends "model <input> <n>". Other requests go to next.
func (r *Recorder) SweepResponder(next fake.Responder) fake.Responder {
	return func(req providers.Request) fake.Turn {
		if !slices.ContainsFunc(req.Tools, func(d providers.ToolDefinition) bool { return d.Name == SweepTool }) {
			return next(req)
		}
		var input string
		n := 0
		for _, m := range req.Messages {
			switch m.Role {
			case providers.RoleUser:
				input = m.Content
			case providers.RoleTool:
				n++
			}
		}
		if err := r.Record(context.Background(), fmt.Sprintf("%s%s %d", ModelLine, strings.ReplaceAll(input, " ", "_"), n)); err != nil {
			return fake.Fail(contracts.CodeProviderTransportError, true, "recording the pass: "+err.Error())
		}
		turn := fake.Text("done")
		if n < SweepSteps {
			args, _ := json.Marshal(map[string]int{"step": n + 1})
			turn = fake.Calls(providers.ToolCall{ID: fmt.Sprintf("k%d", n+1), Name: SweepTool, Arguments: args})
		}
		turn.Delay = SweepWork
		return turn
	}
}
