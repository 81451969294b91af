package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// nodes is the number of nodes (plain: steps) per run of the step workloads.
const nodes = 20

// Kortyx workflow ids.
const (
	kortyxActivity  = "bench-activity"
	kortyxPublish   = "bench-publish"
	kortyxPure      = "bench-pure"
	kortyxInterrupt = "bench-interrupt"
)

// Names of the plain workflows, activities, signal and update.
const (
	plainActivity  = "bench.PlainActivity"
	plainPublish   = "bench.PlainPublish"
	plainPure      = "bench.PlainPure"
	plainInterrupt = "bench.PlainInterrupt"

	noopActivity    = "bench.Noop"         // regular activity, shared by both variants
	publishActivity = "bench.PublishChunk" // local activity of the plain workflows
	answerName      = "bench.Answer"       // signal and update of the plain interrupt workflow
)

// definitions returns the Kortyx workflows of the benchmarks.
func definitions() []*workflows.Definition {
	publishNode := func(i int) workflows.NodeFunc {
		return func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"i": i}})
			return workflows.NodeResult{}, err
		}
	}
	pureNode := func(i int) workflows.NodeFunc {
		return func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{Data: map[string]any{"i": i}}, nil
		}
	}
	ask := func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
		answer, err := hooks.AskText(ctx, "q", "Proceed?")
		if err != nil {
			return workflows.NodeResult{}, err
		}
		_, err = hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"answer": answer}})
		return workflows.NodeResult{}, err
	}
	return []*workflows.Definition{
		chain(kortyxActivity, activityNode),
		chain(kortyxPublish, publishNode),
		chain(kortyxPure, pureNode),
		throughputDefinition(),
		{
			ID: kortyxInterrupt, Version: "1",
			Nodes: map[string]workflows.Node{"ask": {Run: ask}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "ask"}, {From: "ask", To: workflows.End}},
		},
	}
}

// activityNode is node i of the activity workloads: one no-op activity, then Data{"i": i}.
func activityNode(i int) workflows.NodeFunc {
	return func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
		if err := noop(ctx); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"i": i}}, nil
	}
}

// chain returns the workflow start → n1 → … → nN → end (N = nodes), node ni running node(i).
func chain(id string, node func(i int) workflows.NodeFunc) *workflows.Definition {
	return chainOf(id, nodes, node)
}

// chainOf is chain with n nodes.
func chainOf(id string, n int, node func(i int) workflows.NodeFunc) *workflows.Definition {
	d := &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{}}
	prev := workflows.Start
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		d.Nodes[name] = workflows.Node{Run: node(i)}
		d.Edges = append(d.Edges, workflows.Edge{From: prev, To: name})
		prev = name
	}
	d.Edges = append(d.Edges, workflows.Edge{From: prev, To: workflows.End})
	return d
}

// noop executes the no-op activity, as both variants of the activity workload do.
func noop(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteActivity(ctx, noopActivity).Get(ctx, nil)
}

// publishInput is the input of the plain workflows' publish local activity.
type publishInput struct {
	RunID string          `json:"runId"`
	Seq   int             `json:"seq"`
	Chunk contracts.Chunk `json:"chunk"`
}

// plainActivities are the activities of the plain workflows.
type plainActivities struct {
	broker stream.Broker
}

// Noop does nothing.
func (a *plainActivities) Noop(context.Context) error { return nil }

// PublishChunk appends one chunk to the run's stream, keyed "p:<seq>".
func (a *plainActivities) PublishChunk(ctx context.Context, in publishInput) error {
	return a.broker.Publish(ctx, in.RunID, stream.Keyed{Key: fmt.Sprintf("p:%d", in.Seq), Chunk: in.Chunk})
}

// registerPlain registers the plain workflows and activities.
func registerPlain(w worker.Registry, broker stream.Broker) {
	a := &plainActivities{broker: broker}
	w.RegisterActivityWithOptions(a.Noop, activity.RegisterOptions{Name: noopActivity})
	w.RegisterActivityWithOptions(a.PublishChunk, activity.RegisterOptions{Name: publishActivity})
	w.RegisterWorkflowWithOptions(PlainActivityWorkflow, workflow.RegisterOptions{Name: plainActivity})
	w.RegisterWorkflowWithOptions(PlainPublishWorkflow, workflow.RegisterOptions{Name: plainPublish})
	w.RegisterWorkflowWithOptions(PlainPureWorkflow, workflow.RegisterOptions{Name: plainPure})
	w.RegisterWorkflowWithOptions(PlainInterruptWorkflow, workflow.RegisterOptions{Name: plainInterrupt})
}

// publish runs the plain publish local activity with the options the Kortyx run uses for its
// own publish local activity.
func publish(ctx workflow.Context, seq int, c contracts.Chunk) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    50 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
		},
	})
	in := publishInput{RunID: workflow.GetInfo(ctx).WorkflowExecution.ID, Seq: seq, Chunk: c}
	return workflow.ExecuteLocalActivity(ctx, publishActivity, in).Get(ctx, nil)
}

// structured returns a structured-data chunk like the one hooks.StructuredData publishes.
func structured(ctx workflow.Context, seq int, node string, data map[string]any) contracts.Chunk {
	return contracts.Chunk{
		Type:     contracts.ChunkStructuredData,
		Kind:     contracts.StructuredFinal,
		StreamID: fmt.Sprintf("%s:structured:%d", workflow.GetInfo(ctx).WorkflowExecution.ID, seq),
		DataType: "generic",
		Node:     node,
		Data:     protocol.RawJSON(data),
	}
}

// PlainActivityWorkflow executes the no-op activity n times, keeping a map of data.
func PlainActivityWorkflow(ctx workflow.Context, n int) (map[string]any, error) {
	data := map[string]any{}
	for i := 1; i <= n; i++ {
		if err := noop(ctx); err != nil {
			return nil, err
		}
		data["i"] = i
	}
	return data, nil
}

// PlainPublishWorkflow publishes n chunks, one local activity each. Like the Kortyx nodes of
// this workload, it keeps no data.
func PlainPublishWorkflow(ctx workflow.Context, n int) (map[string]any, error) {
	for i := 1; i <= n; i++ {
		if err := publish(ctx, i, structured(ctx, i, fmt.Sprintf("n%d", i), map[string]any{"i": i})); err != nil {
			return nil, err
		}
	}
	return map[string]any{}, nil
}

// PlainPureWorkflow updates a map n times.
func PlainPureWorkflow(_ workflow.Context, n int) (map[string]any, error) {
	data := map[string]any{}
	for i := 1; i <= n; i++ {
		data["i"] = i
	}
	return data, nil
}

// PlainInterruptWorkflow publishes a question chunk, waits for an answer (signal or update
// answerName), then publishes one chunk with the answer.
func PlainInterruptWorkflow(ctx workflow.Context) (string, error) {
	var answer string
	answered := false
	if err := workflow.SetUpdateHandler(ctx, answerName, func(ctx workflow.Context, text string) (string, error) {
		answer, answered = text, true
		return "ok", nil
	}); err != nil {
		return "", err
	}
	ch := workflow.GetSignalChannel(ctx, answerName)
	workflow.Go(ctx, func(ctx workflow.Context) {
		var text string
		if ch.Receive(ctx, &text) && !answered {
			answer, answered = text, true
		}
	})
	if err := publish(ctx, 1, contracts.Chunk{Type: contracts.ChunkInterrupt, Node: "ask"}); err != nil {
		return "", err
	}
	if err := workflow.Await(ctx, func() bool { return answered }); err != nil {
		return "", err
	}
	return answer, publish(ctx, 2, structured(ctx, 2, "ask", map[string]any{"answer": answer}))
}
