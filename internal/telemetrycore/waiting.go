package telemetrycore

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// WaitingRunsMetric is the gauge of [Telemetry.ObserveWaitingRuns].
const WaitingRunsMetric = "kortyx.runs.waiting"

// waitingRunsQuery is the visibility query the waiting-runs gauge counts.
const waitingRunsQuery = contracts.SearchAttributeStatus + " = '" + string(contracts.StatusWaiting) + "' AND ExecutionStatus = 'Running'"

// DefaultWaitingRunsInterval is how often the waiting runs are counted by default.
const DefaultWaitingRunsInterval = 15 * time.Second

// ObserveWaitingRuns registers the gauge kortyx.runs.waiting ({run}): the number of running
// executions of c's namespace whose KortyxStatus is "waiting" (Temporal visibility's
// CountWorkflow of KortyxStatus = 'waiting' AND ExecutionStatus = 'Running'), counted every
// [Options.WaitingRunsInterval] (default 15 s) by a goroutine that [Telemetry.Shutdown] stops. The count is
// never made inside a collection: a Temporal call there would record its own SDK metrics on
// the meter being collected, which deadlocks the OpenTelemetry SDK (seen in a test: every later
// Temporal call of the process blocked), and a slow count would hold up the scrape. The count
// is the server's, so it is the same whichever process reports it (register it in one process
// only, or aggregate with max, not sum); it is as fresh as the interval and visibility. Until a
// count succeeds, and after one fails, the gauge reports nothing. With metrics disabled it does
// nothing.
func (t *Telemetry) ObserveWaitingRuns(c client.Client) error {
	if t == nil || t.mp == nil {
		return nil
	}
	var last atomic.Int64 // the latest count, -1 when there is none
	last.Store(-1)
	_, err := t.mp.Meter(ScopeName).Int64ObservableGauge(WaitingRunsMetric,
		metric.WithUnit("{run}"),
		metric.WithDescription("Runs waiting for an answer (KortyxStatus=waiting), counted by Temporal visibility."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if n := last.Load(); n >= 0 {
				o.Observe(n)
			}
			return nil
		}))
	if err != nil {
		return fmt.Errorf("kortyx telemetry: the %s gauge: %w", WaitingRunsMetric, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := c.CountWorkflow(cctx, &workflowservice.CountWorkflowExecutionsRequest{Query: waitingRunsQuery})
			ccancel()
			if err != nil {
				last.Store(-1)
			} else {
				last.Store(resp.GetCount())
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(t.waitingEvery):
			}
		}
	}()
	t.shutdown = append(t.shutdown, func(context.Context) error {
		cancel()
		<-done
		return nil
	})
	return nil
}
