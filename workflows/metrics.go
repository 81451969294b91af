package workflows

import (
	"errors"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The run counters, recorded through the worker's Temporal metrics handler
// (workflow.GetMetricsHandler: nothing is recorded while a workflow task replays, so each is
// counted once however often its history is replayed), tagged with metricTagWorkflow.
const (
	// metricRunsStarted counts runs started (not the executions a run continues as new into).
	metricRunsStarted = "kortyx.runs.started"
	// metricRunsCompleted counts runs that ended with done.
	metricRunsCompleted = "kortyx.runs.completed"
	// metricRunsFailed counts runs that ended with an error.
	metricRunsFailed = "kortyx.runs.failed"
	// metricRunsCancelled counts runs that ended cancelled.
	metricRunsCancelled = "kortyx.runs.cancelled"
	// metricTagWorkflow is the tag of the run counters: the workflow (agent) id the run was
	// started with.
	metricTagWorkflow = "kortyx_workflow"
)

// meteredRun is [Runner.Run] counting its start and its end.
func (r *Runner) meteredRun(ctx workflow.Context, in protocol.RunStart) (contracts.RunResult, error) {
	wf := strings.TrimSpace(in.Workflow)
	if wf == "" && in.Snapshot != nil {
		wf = in.Snapshot.State.CurrentWorkflow
	}
	h := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{metricTagWorkflow: wf})
	if workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		h.Counter(metricRunsStarted).Inc(1)
	}
	res, err := r.Run(ctx, in)
	var can *workflow.ContinueAsNewError
	switch {
	case err == nil:
		h.Counter(metricRunsCompleted).Inc(1)
	case errors.As(err, &can):
	case temporal.IsCanceledError(err):
		h.Counter(metricRunsCancelled).Inc(1)
	default:
		h.Counter(metricRunsFailed).Inc(1)
	}
	return res, err
}
