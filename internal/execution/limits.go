package execution

import (
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// SetLimits gives a root run its execution limits (none when all are 0). A run continued as
// new keeps the budget it carries.
func (r *Run) SetLimits(l contracts.Limits) {
	if r.Snap.Budget != nil || l == (contracts.Limits{}) {
		return
	}
	r.Snap.Budget = &protocol.Budget{Limits: l}
}

// limits returns the limits that bind the run (a child is bound by its root's).
func (r *Run) limits() contracts.Limits {
	if r.Child != nil {
		return r.Child.Limits
	}
	if r.Snap.Budget == nil {
		return contracts.Limits{}
	}
	return r.Snap.Budget.Limits
}

// Reserve takes one unit of a limit before the work is dispatched (spec F5.7). The budget is the
// root run's, shared by all its children: a child asks the root. When the limit is used up, the
// root pauses with a "Limit reached — Continue?" question; Continue gives a fresh allowance and
// Reserve returns once the unit is granted. It returns an error only when the run is cancelled.
func (r *Run) Reserve(ctx workflow.Context, kind string) error {
	if protocol.LimitMax(r.limits(), kind) <= 0 {
		return nil
	}
	if r.Child != nil {
		return r.reserveAtRoot(ctx, kind)
	}
	for !r.tryReserve(kind) {
		if err := r.pauseForLimit(ctx, kind); err != nil {
			return err
		}
		r.serveReservations(ctx)
	}
	return nil
}

// tryReserve takes one unit if the root's budget has one.
func (r *Run) tryReserve(kind string) bool {
	b := r.Snap.Budget
	if b == nil || protocol.LimitMax(b.Limits, kind) <= 0 {
		return true
	}
	if b.Consumed[kind] >= protocol.LimitMax(b.Limits, kind) {
		return false
	}
	if b.Consumed == nil {
		b.Consumed = map[string]int{}
	}
	b.Consumed[kind]++
	return true
}

// reserveAtRoot asks the root for a unit and waits for the grant.
func (r *Run) reserveAtRoot(ctx workflow.Context, kind string) error {
	if r.Snap.Budget == nil {
		r.Snap.Budget = &protocol.Budget{}
	}
	r.Snap.Budget.Seq++
	id := fmt.Sprintf("%s:%d", r.ID, r.Snap.Budget.Seq)
	if err := workflow.SignalExternalWorkflow(ctx, r.Child.RootID, "", protocol.BudgetReserveSignal,
		protocol.Reservation{ID: id, From: r.ID, Kind: kind}).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { _, ok := r.grants[id]; return ok }); err != nil {
		return err
	}
	delete(r.grants, id)
	return nil
}

// serveReservations grants the children's queued reservations, in arrival order, while the
// budget lasts; what is left waits for a Continue.
func (r *Run) serveReservations(ctx workflow.Context) {
	for len(r.reservations) > 0 {
		q := r.reservations[0]
		g := protocol.Grant{ID: q.ID}
		if q.Kind == protocol.LimitBudget {
			var ok bool
			if g, ok = r.grantBudget(q); !ok {
				return
			}
		} else if !r.tryReserve(q.Kind) {
			return
		}
		r.reservations = r.reservations[1:]
		if err := workflow.SignalExternalWorkflow(ctx, q.From, "", protocol.BudgetGrantSignal, g).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Info("kortyx: granting a reservation failed (the child may have ended)", "child", q.From, "error", err)
		}
	}
}

// limitBlocked reports the limit a child waits for when the root's budget is used up.
func (r *Run) limitBlocked() (string, bool) {
	if r.Child != nil || len(r.reservations) == 0 {
		return "", false
	}
	return r.reservations[0].Kind, true
}

// pauseForLimit pauses the root run at a used-up limit: a limit-reached chunk, the question
// "Limit reached — Continue?", a checkpoint labelled "Execution limit reached", then done.
// Continue resets the consumed counts (a fresh allowance; completed work is kept).
func (r *Run) pauseForLimit(ctx workflow.Context, kind string) error {
	if kind == protocol.LimitBudget {
		return r.pauseForBudget(ctx, r.reservations[0])
	}
	b := r.Snap.Budget
	r.Emit(contracts.Chunk{Type: contracts.ChunkLimitReached, RunID: r.ID, Limit: kind, Maximum: protocol.LimitMax(b.Limits, kind), Consumed: b.Consumed[kind]})
	token, requestID := r.requestIDs(ctx)
	req := contracts.PendingRequest{RequestID: requestID, Token: token, Workflow: r.Snap.State.CurrentWorkflow, Node: r.Node,
		HookID: "execution-limit", CreatedAt: workflow.Now(ctx), Input: contracts.InterruptInput{
			Kind: contracts.InterruptChoice, Question: protocol.LimitQuestion, ID: "execution-limit",
			Options: []contracts.Option{{ID: protocol.LimitContinue, Label: "Continue"}}}}
	if r.session != nil {
		r.session.Label(protocol.LimitCheckpoint)
	}
	workflow.GetLogger(ctx).Info("kortyx: execution limit reached; asking to continue", "limit", kind, "maximum", protocol.LimitMax(b.Limits, kind))
	if _, err := r.Ask(ctx, req, nil); err != nil {
		return err
	}
	b.Consumed = nil
	return nil
}
