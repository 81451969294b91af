package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
)

// signalReport signals a run's checkpoint report to its session before the report's chunks are
// published (protocol.PublishReport). A session that is gone is logged and the chunks are
// published (as a report the run signals itself is given up after its attempts); any other
// failure fails the activity, which is retried, and the run reports by a signal of its own
// when it keeps failing.
func signalReport(ctx context.Context, r protocol.PublishReport) error {
	c := activity.GetClient(ctx)
	if c == nil {
		return contracts.ToTemporal(contracts.Errorf(contracts.CodeExecutionFailed, "the worker has no Temporal client to reach the run's session"))
	}
	err := c.SignalWorkflow(ctx, r.WorkflowID, "", protocol.SessionCheckpointSignal, r.Report)
	var gone *serviceerror.NotFound
	if errors.As(err, &gone) {
		activity.GetLogger(ctx).Warn("kortyx: the run's session is gone; its report is dropped", "session", r.WorkflowID, "run", r.Report.RunID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reporting to the session %s: %w", r.WorkflowID, err)
	}
	return nil
}
