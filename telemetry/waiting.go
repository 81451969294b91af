package telemetry

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// WaitingRunsMetric is the gauge of [Telemetry.ObserveWaitingRuns].
const WaitingRunsMetric = "kortyx.runs.waiting"

// WaitingRunsQuery is the visibility query the waiting-runs gauge counts.
var WaitingRunsQuery = fmt.Sprintf("%s = '%s' AND ExecutionStatus = 'Running'", contracts.SearchAttributeStatus, contracts.StatusWaiting)

// ObserveWaitingRuns registers the gauge kortyx.runs.waiting ({run}): at each collection it
// counts the running executions of c's namespace whose KortyxStatus is "waiting"
// ([WaitingRunsQuery], Temporal visibility's CountWorkflow). The count is the server's, so it
// is the same whichever process reports it (register it in one process only, or aggregate with
// max, not sum); it is as fresh as visibility, which lags the workflows by a moment. A failed
// count reports nothing for that collection. With metrics disabled it does nothing.
func (t *Telemetry) ObserveWaitingRuns(c client.Client) error {
	if t == nil || t.mp == nil {
		return nil
	}
	_, err := t.mp.Meter(ScopeName).Int64ObservableGauge(WaitingRunsMetric,
		metric.WithUnit("{run}"),
		metric.WithDescription("Runs waiting for an answer (KortyxStatus=waiting), counted by Temporal visibility."),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: WaitingRunsQuery})
			if err != nil {
				return nil //nolint:nilerr // a failed count reports no value for this collection
			}
			o.Observe(resp.GetCount())
			return nil
		}))
	if err != nil {
		return fmt.Errorf("kortyx telemetry: the %s gauge: %w", WaitingRunsMetric, err)
	}
	return nil
}
