package workflows

import (
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// Ledger is the workflow that keeps a shared budget (an agent's or a tenant's, for one period:
// docs/budgets.md). Runs reserve from it in batches with the [protocol.LedgerReserveUpdate]
// update, which a model pass's activity sends (starting the ledger when it does not exist),
// deduplicated by each run's reservation number; a run settles what it spent with the
// [protocol.LedgerSettleSignal] signal when it ends. The state query returns
// [protocol.LedgerView]. A ledger of a period ends when its period is over and no run holds a
// grant of it; one without a period runs until it is terminated, continuing as new when
// Temporal suggests it.
func Ledger(ctx workflow.Context, in protocol.LedgerStart) error {
	s := in.State
	if s == nil {
		s = &protocol.LedgerState{}
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	if err := workflow.SetQueryHandler(ctx, protocol.LedgerStateQuery, func() (protocol.LedgerView, error) {
		return s.View(in), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, protocol.LedgerReserveUpdate,
		func(_ workflow.Context, q protocol.LedgerReserve) (protocol.LedgerGrant, error) {
			return s.Reserve(id, q), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(q protocol.LedgerReserve) error {
			switch {
			case q.RunID == "" || q.Seq < 1:
				return contracts.Errorf(contracts.CodeInvalidInput, "a ledger reservation names its run and its number (runId, seq ≥ 1)")
			case q.Tokens < 0 || q.Cost < 0:
				return contracts.Errorf(contracts.CodeInvalidInput, "a ledger reservation cannot be negative")
			}
			return q.Budget.Validate()
		}}); err != nil {
		return err
	}
	settle := workflow.GetSignalChannel(ctx, protocol.LedgerSettleSignal)
	settled := 0 // in this execution
	receive := func(c workflow.ReceiveChannel, _ bool) {
		var q protocol.LedgerSettle
		c.Receive(ctx, &q)
		s.Settle(q)
		settled++
	}
	end := windowEnd(in.Window)
	over := !end.IsZero() && !workflow.Now(ctx).Before(end)
	var timer workflow.Future
	if !end.IsZero() && !over {
		timer = workflow.NewTimer(ctx, end.Sub(workflow.Now(ctx)))
	}
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(settle, receive)
		if timer != nil && !over {
			sel.AddFuture(timer, func(workflow.Future) { over = true })
		}
		// Blocked here, the ledger takes its reservations (the update that started it first).
		sel.Select(ctx)
		if over && len(s.Runs) == 0 && settle.Len() == 0 {
			// The period is over and every run that held a grant settled: the ledger ends
			// once its update handlers have finished.
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			if len(s.Runs) == 0 && settle.Len() == 0 {
				return nil
			}
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || (in.ContinueAsNewAfter > 0 && settled >= in.ContinueAsNewAfter) {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			for settle.Len() > 0 {
				receive(settle, true)
			}
			in.State = s
			return workflow.NewContinueAsNewError(ctx, protocol.LedgerWorkflowName, in)
		}
	}
}

// windowEnd is when a ledger's window ends (zero: it has none, or it does not parse).
func windowEnd(window string) time.Time {
	if t, err := time.Parse("2006-01-02", window); err == nil {
		return t.AddDate(0, 0, 1)
	}
	if t, err := time.Parse("2006-01", window); err == nil {
		return t.AddDate(0, 1, 0)
	}
	return time.Time{}
}
