package workflows

import (
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
)

// A run records in its first workflow task what it starts with: the version of its first change
// id, an id seed, the worker's local tools and budget, and its pinned definition — a marker task,
// one billed action per run. A session that starts a turn's run, and a run that calls a workflow,
// record the same in the new run's input instead ([protocol.RunStart].Start), in a command they
// send anyway: the run's history holds it as its input, and the run starts without a marker.

// workerBudget returns the worker's default budget, the shared budgets and, where a money budget
// may need them, the prices that a new root run of in records at its start.
func (r *Registry) workerBudget(in protocol.RunStart) (contracts.Limits, []protocol.LedgerConfig, *protocol.Pricing) {
	budget := protocol.BudgetOf(r.Limits())
	ledgers := r.scopeBudgets(in.Workflow, in.Tenant)
	var pricing *protocol.Pricing
	if budget.MaxCost > 0 || protocol.LedgersCost(ledgers) || (in.Limits != nil && in.Limits.MaxCost > 0) ||
		(in.SessionBudget != nil && in.SessionBudget.Limits.MaxCost > 0) {
		pricing = r.pricingOf()
	}
	return budget, ledgers, pricing
}

// startRecord returns what a run of in records at its start on this worker (see above), with
// seed as its id seed: what [Runner.Run] would record itself.
func (r *Registry) startRecord(in protocol.RunStart, seed []byte) *protocol.StartRecord {
	rec := &protocol.StartRecord{Version: int(execution.ReportWithPublishVersion), Seed: seed, Local: r.localTools()}
	if in.Child == nil {
		budget, ledgers, pricing := r.workerBudget(in)
		if protocol.HasBudget(budget) || pricing != nil || len(ledgers) > 0 {
			rec.Budget = &protocol.BudgetStart{Default: protocol.BudgetOf(budget), Pricing: pricing, Ledgers: ledgers}
		}
	}
	name := in.Workflow
	if s := in.Snapshot; s != nil {
		if s.Pinned != nil && s.Pinned.ID == s.State.CurrentWorkflow {
			return rec // the run takes its definition from the snapshot
		}
		name = s.State.CurrentWorkflow
	}
	if d, err := r.Workflow(name); err == nil {
		rec.Pinned = d.pin
	}
	return rec
}
