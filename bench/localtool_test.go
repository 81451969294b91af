package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The local-tool workloads: the tool loop of BenchmarkToolLoopStep (loopCalls tool calls, one
// per model pass, then an answer; silent) with a tool that runs as a local activity.
const (
	kortyxLocalToolLoop = "bench-toolloop-local"
	plainLocalToolLoop  = "bench.PlainLocalToolLoop"
	localProvider       = "bench-local"      // localModel
	localTool           = "bench_echo_local" // bench_echo as a tools.Local tool
)

// How the plain local-tool loop runs its tool calls.
const (
	toolLocal  = "local"  // kortyx.Tool as a local activity
	toolInline = "inline" // no activity: the workflow computes the echo itself (a model step alone)
)

// localModel is loopModel asking for the local tool.
var localModel = fake.NewResponder(func(req providers.Request) fake.Turn {
	t := loopTurn(req)
	for i := range t.ToolCalls {
		t.ToolCalls[i].Name = localTool
	}
	return t
}).WithID(localProvider)

// registerLocalTool adds the local tool, its model and its workflows to the benchmark worker:
// acts.Tools becomes the tools of registerReason plus bench_echo_local (tools.Local), which
// reg runs as a local activity. Call it after registerReason, before the worker starts.
func registerLocalTool(reg *workflows.Registry, acts *activities.Activities, w worker.Registry) error {
	echo, ok := acts.Tools.Get(loopTool)
	if !ok {
		return fmt.Errorf("bench: registerLocalTool needs the tool %s of registerReason", loopTool)
	}
	local := echo
	local.Name = localTool
	all := []tools.Tool{tools.Local(local)}
	for _, name := range acts.Tools.Names() {
		t, _ := acts.Tools.Get(name)
		all = append(all, t)
	}
	set, err := tools.NewSet(all...)
	if err != nil {
		return err
	}
	acts.Tools = set
	acts.Providers = providers.NewSet(loopModel, firstModel, historyModel, localModel)
	reg.SetToolNames(set.Names()...)
	reg.SetLocalTools(set.LocalNames()...)
	loop := func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{
			ID: loopHookID, Model: providers.ModelRef{Provider: localProvider}, Input: loopPrompt,
			Tools: []string{localTool}, Silent: true, ToolExecution: hooks.ToolExecution{MaxSteps: loopCalls + 1},
		})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
	if err := reg.Add(&workflows.Definition{ID: kortyxLocalToolLoop, Version: "1",
		Nodes: map[string]workflows.Node{reasonNode: {Run: loop}},
		Edges: []workflows.Edge{{From: workflows.Start, To: reasonNode}, {From: reasonNode, To: workflows.End}},
	}); err != nil {
		return err
	}
	w.RegisterWorkflowWithOptions(PlainLocalToolLoopWorkflow, workflow.RegisterOptions{Name: plainLocalToolLoop})
	return nil
}

// PlainLocalToolLoopWorkflow is PlainToolLoopWorkflow (silent) with the local tool, written by
// hand: the same kortyx.Model passes and messages; each tool call runs kortyx.Tool as a local
// activity with the tool options of hooks.Reason (mode toolLocal), or is answered by the
// workflow itself without any activity (mode toolInline: what the model passes alone cost).
func PlainLocalToolLoopWorkflow(ctx workflow.Context, mode string) (toolLoopResult, error) {
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	const opID = "op"
	mctx := workflow.WithActivityOptions(ctx, modelOptions())
	to := toolOptions()
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: to.StartToCloseTimeout,
		ScheduleToCloseTimeout: 10 * time.Minute, RetryPolicy: to.RetryPolicy})
	msgs := []providers.Message{{Role: providers.RoleUser, Content: loopPrompt}}
	var out toolLoopResult
	for step := 0; ; step++ {
		if step > loopCalls {
			return out, fmt.Errorf("no answer after %d model passes", step)
		}
		pass := protocol.ModelPassInput{
			RunID: runID, Node: reasonNode, HookID: loopHookID, OpID: opID, SegmentID: "step-" + strconv.Itoa(step),
			Model: providers.ModelRef{Provider: localProvider}, Messages: msgs, Tools: []string{localTool}, Stream: true,
		}
		var resp providers.Response
		if err := workflow.ExecuteActivity(mctx, protocol.ModelActivityName, pass).Get(mctx, &resp); err != nil {
			return out, err
		}
		out.Passes++
		out.Usage = protocol.AddUsage(out.Usage, resp.Usage)
		if len(resp.ToolCalls) == 0 {
			out.Text = resp.Text
			return out, nil
		}
		msgs = append(msgs, providers.Message{Role: providers.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation})
		for _, call := range resp.ToolCalls {
			var res providers.ToolResult
			if mode == toolInline {
				var in struct {
					I int `json:"i"`
				}
				if err := json.Unmarshal(call.Arguments, &in); err != nil {
					return out, err
				}
				b, _ := json.Marshal(map[string]int{"i": in.I})
				res = providers.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: string(b), StructuredContent: b}
			} else {
				tin := protocol.ToolCallInput{RunID: runID, Tool: call.Name, ToolCallID: call.ID, Input: call.Arguments,
					IdempotencyKey: runID + ":" + opID + ":" + call.ID}
				if err := workflow.ExecuteLocalActivity(lctx, protocol.ToolActivityName, tin).Get(lctx, &res); err != nil {
					return out, err
				}
				out.ToolCalls++
			}
			msgs = append(msgs, providers.Message{Role: providers.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError})
		}
	}
}

// localToolVariants are the variants of BenchmarkLocalToolStep, in report order.
func (e *env) localToolVariants() []struct {
	name string
	run  func(ctx context.Context) (string, error)
} {
	kortyxRun := func(wf string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			id, _, err := e.runKortyx(ctx, wf)
			return id, err
		}
	}
	plainRun := func(wf string, args ...any) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			var out toolLoopResult
			return e.runPlain(ctx, wf, &out, args...)
		}
	}
	return []struct {
		name string
		run  func(ctx context.Context) (string, error)
	}{
		{"kortyx-local", kortyxRun(kortyxLocalToolLoop)},
		{"kortyx-regular", kortyxRun(kortyxToolLoop)},
		{"plain-local", plainRun(plainLocalToolLoop, toolLocal)},
		{"plain-regular", plainRun(plainToolLoop, toolLoopInput{})},
		{"model-only", plainRun(plainLocalToolLoop, toolInline)},
	}
}

// localToolRatios are the ratios BenchmarkLocalToolStep reports, as pairs of variants.
var localToolRatios = [][2]string{
	{"kortyx-local", "model-only"}, {"kortyx-local", "plain-local"}, {"kortyx-local", "kortyx-regular"},
	{"kortyx-regular", "plain-regular"}, {"plain-local", "model-only"},
}

// BenchmarkLocalToolStep: a tool-loop step (one model pass and one tool call, silent; a run's
// time ÷ loopCalls) with the tool local and regular, in Kortyx and in plain Temporal, and the
// model pass alone (model-only: the plain loop answering the tool calls itself). Every
// iteration runs each variant once, in an order rotated per iteration, so that the variants
// share the machine's load; metrics: ms/step-<variant> (mean over the iterations),
// events/run-<variant> (the last run's history), and for each pair of localToolRatios the
// median of the per-iteration ratios (x-<a>/<b>), also printed as a Ratio line with their min
// and max (except for the testing package's first run with b.N = 1).
func BenchmarkLocalToolStep(b *testing.B) {
	e := setup(b)
	variants := e.localToolVariants()
	steps := make([][]float64, len(variants)) // ms/step per iteration, by variant
	last := make([]string, len(variants))
	b.ResetTimer()
	for i := range b.N {
		for k := range variants {
			j := (i + k) % len(variants)
			ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
			t0 := time.Now()
			id, err := variants[j].run(ctx)
			d := time.Since(t0)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			steps[j] = append(steps[j], ms(d)/loopCalls)
			last[j] = id
		}
	}
	b.StopTimer()
	index := map[string]int{}
	for j, v := range variants {
		index[v.name] = j
		var sum float64
		for _, x := range steps[j] {
			sum += x
		}
		b.ReportMetric(sum/float64(len(steps[j])), "ms/step-"+v.name)
		ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
		s, err := e.history(ctx, last[j])
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(s.events), "events/run-"+v.name)
	}
	for _, r := range localToolRatios {
		a, c := steps[index[r[0]]], steps[index[r[1]]]
		ratios := make([]float64, len(a))
		for i := range a {
			ratios[i] = a[i] / c[i]
		}
		slices.Sort(ratios)
		med := ratios[len(ratios)/2]
		if len(ratios)%2 == 0 {
			med = (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
		}
		b.ReportMetric(med, "x-"+r[0]+"/"+r[1])
		if b.N == 1 {
			continue // the testing package's probe run
		}
		fmt.Printf("Ratio %s %s/%s median %.2f (min %.2f, max %.2f) over %d paired runs\n",
			b.Name(), r[0], r[1], med, ratios[0], ratios[len(ratios)-1], len(ratios))
	}
}

// localMarkers counts the local activity markers of an activity type in a closed workflow's
// history.
func (e *env) localMarkers(ctx context.Context, id, activityType string) (int, error) {
	n := 0
	it := e.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return 0, err
		}
		m := ev.GetMarkerRecordedEventAttributes()
		if m == nil || m.GetMarkerName() != "LocalActivity" {
			continue
		}
		var data struct{ ActivityType string }
		if err := converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &data); err != nil {
			return 0, err
		}
		if data.ActivityType == activityType {
			n++
		}
	}
	return n, nil
}

// TestLocalToolBaselinesAgree runs every variant of BenchmarkLocalToolStep once and checks that
// they do the work they claim: loopCalls+1 model passes each, with the same last request (but
// the tool's name); loopCalls tool executions, as scheduled kortyx.Tool activities (regular) or
// local activity markers (local), none for model-only.
func TestLocalToolBaselinesAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type msg struct{ Role, Content, Calls string }
	shape := func(msgs []providers.Message) []msg {
		out := make([]msg, len(msgs))
		for i, m := range msgs {
			out[i] = msg{Role: m.Role, Content: m.Content}
			for _, c := range m.ToolCalls {
				out[i].Calls += string(c.Arguments) + ";"
			}
		}
		return out
	}
	var reference []msg
	for _, v := range e.localToolVariants() {
		t.Run(v.name, func(t *testing.T) {
			model := localModel
			if v.name == "kortyx-regular" || v.name == "plain-regular" {
				model = loopModel
			}
			before := model.Calls()
			id, err := v.run(ctx)
			require.NoError(t, err)
			require.Equal(t, loopCalls+1, model.Calls()-before, "model passes")
			reqs := model.Requests()
			last := shape(reqs[len(reqs)-1].Messages)
			require.Len(t, last, 2*loopCalls+1, "last request: prompt + 10 × (assistant, tool)")
			if reference == nil {
				reference = last
			}
			require.Equal(t, reference, last, "the last model request")

			acts, err := e.activityTypes(ctx, id)
			require.NoError(t, err)
			markers, err := e.localMarkers(ctx, id, protocol.ToolActivityName)
			require.NoError(t, err)
			wantTools, wantScheduled, wantMarkers := loopCalls, 0, loopCalls
			switch v.name {
			case "kortyx-regular", "plain-regular":
				wantScheduled, wantMarkers = loopCalls, 0
			case "model-only":
				wantTools, wantMarkers = 0, 0
			}
			require.Equal(t, wantTools, toolRuns.get(id), "tool executions")
			require.Equal(t, loopCalls+1, acts[protocol.ModelActivityName], "model activities")
			require.Equal(t, wantScheduled, acts[protocol.ToolActivityName], "scheduled kortyx.Tool activities")
			require.Equal(t, wantMarkers, markers, "kortyx.Tool local activity markers")
			s, err := e.history(ctx, id)
			require.NoError(t, err)
			logHistory(t, v.name, s)
		})
	}
}
