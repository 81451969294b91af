package protocol

import (
	"encoding/json"
	"slices"

	"github.com/kortyx-go/kortyx/contracts"
)

// ChildBinding ties a run to the parent run that called it (hooks.Workflow, hooks.Parallel).
type ChildBinding struct {
	// ParentID is the parent run's workflow ID; RootID the root run's (the one clients see).
	ParentID string `json:"parentId"`
	RootID   string `json:"rootId"`
	// Stream is the stream the child publishes to: the root run's.
	Stream string `json:"stream"`
	// Depth is 1 for a child of the root, 2 for a grandchild, …
	Depth int `json:"depth"`
	// Node and CallID are the calling node and the call id.
	Node   string `json:"node"`
	CallID string `json:"callId"`
	// Limits are the root's execution limits: the child reserves their units at the root.
	Limits contracts.Limits `json:"limits,omitempty"`
	// Pricing is the root's price table, when it has a money budget: the child prices its
	// passes' reservations and usage with it.
	Pricing *Pricing `json:"pricing,omitempty"`
	// Budgeted says the root's passes are under a token or money budget that is not in Limits
	// (its session's): the child reserves its passes at the root.
	Budgeted bool `json:"budgeted,omitempty"`
	// Ledgers are the shared budgets (an agent's, a tenant's) the root runs under: the child
	// reserves its passes at their ledgers itself, and settles when it ends.
	Ledgers []LedgerConfig `json:"ledgers,omitempty"`
}

// BudgetStart is what a root run records of the worker's budget at its start, with its id seed
// (the lean run's start record, a SideEffect marker whose value has it as "budget"): the
// worker's default budget and, where a money budget may need them, its prices; so that a worker
// restarted with other defaults replays the run as it ran, and the Studio reads the budget from
// the history.
type BudgetStart struct {
	Default contracts.Limits `json:"default"`
	Pricing *Pricing         `json:"pricing,omitempty"`
	// Ledgers are the shared budgets (the run's agent's, its tenant's) the worker puts the
	// run under.
	Ledgers []LedgerConfig `json:"ledgers,omitempty"`
}

// SessionBudget is a session's budget across its turns (docs/budgets.md), as the session gives
// it to a turn's run: its limits (MaxTokens, MaxCost, OnBudgetExhausted), what the session's
// other runs spent, and the allowances Continue gave.
type SessionBudget struct {
	Limits contracts.Limits `json:"limits"`
	Spent  contracts.Spend  `json:"spent"`
	More   contracts.Spend  `json:"more,omitempty"`
	// Warned: a run of the session published the session budget's warning already.
	Warned bool `json:"warned,omitempty"`
}

// SessionRunBudget is a run's state of its session's budget: the budget it was given, its own
// spend when it started (a run restored from a checkpoint starts with the checkpoint's), and
// the allowances its budget questions gave (reported to the session).
type SessionRunBudget struct {
	SessionBudget
	StartTokens int     `json:"startTokens,omitempty"`
	StartCost   float64 `json:"startCost,omitempty"`
	MoreTokens  int     `json:"moreTokens,omitempty"`
	MoreCost    float64 `json:"moreCost,omitempty"`
	// WarnedHere: this run published the session budget's warning; WarnAsked: it asked the
	// session budget's warning question (AskAtWarn).
	WarnedHere bool `json:"warnedHere,omitempty"`
	WarnAsked  bool `json:"warnAsked,omitempty"`
}

// RunSpendReport is what a run of a session with a budget reports with each checkpoint: what it
// spent under the session's budget (since it started) and the allowances its questions gave.
type RunSpendReport struct {
	Tokens     int     `json:"tokens"`
	Cost       float64 `json:"cost,omitempty"`
	MoreTokens int     `json:"moreTokens,omitempty"`
	MoreCost   float64 `json:"moreCost,omitempty"`
	// Warned: the run published the session budget's warning (once per session).
	Warned bool `json:"warned,omitempty"`
}

// Pricing is what a run with a money budget prices its model passes with: the worker's price
// table ([contracts.Price] by "provider:model"), its default model (the one a pass that names
// none calls) and default provider, and its currency. A root run records it at its start.
type Pricing struct {
	Prices          map[string]contracts.Price `json:"prices,omitempty"`
	DefaultProvider string                     `json:"defaultProvider,omitempty"`
	DefaultModel    string                     `json:"defaultModel,omitempty"`
	Currency        string                     `json:"currency,omitempty"`
}

// Key is the price table key ("provider:model") of the model ref calls ("" when the worker's
// default cannot name it: a provider without a model, whose default model is the provider's).
func (p *Pricing) Key(provider, model string) string {
	switch {
	case provider == "" && model == "":
		provider, model = p.DefaultProvider, p.DefaultModel
	case provider == "":
		provider = p.DefaultProvider
	case model == "" && provider == p.DefaultProvider:
		model = p.DefaultModel
	}
	if provider == "" || model == "" {
		return ""
	}
	return provider + ":" + model
}

// ChildQuestion is a question a child run (at any depth below) asks through its parent: the
// parent presents it as its own (the root as its interrupt) and sends the answer down.
type ChildQuestion struct {
	// Child is the workflow ID of the parent's direct child the question comes through.
	Child   string                   `json:"child"`
	Request contracts.PendingRequest `json:"request"`
	// Schema is the response schema of a custom question, if any.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Snapshot is the child's state while it asks: the parent keeps it in its journal, so that
	// a run restored from a checkpoint (rollback, fork) restores the child too.
	Snapshot *RunSnapshot `json:"snapshot,omitempty"`
}

// ChildOutcome is the outcome of one child call as a node sees it.
type ChildOutcome struct {
	// Data is the child's accumulated data, validated by its output schema.
	Data map[string]any `json:"data,omitempty"`
	// Failure describes a failed call (nil on success).
	Failure *contracts.Failure `json:"failure,omitempty"`
}

// Budget is the durable state of a root run's limits (and a child's token and money spend).
type Budget struct {
	Limits   contracts.Limits `json:"limits"`
	Consumed map[string]int   `json:"consumed,omitempty"`
	// Seq numbers a child run's reservations.
	Seq int `json:"seq,omitempty"`

	// Pricing prices the passes of a run with a money budget.
	Pricing *Pricing `json:"pricing,omitempty"`
	// Tokens and Cost are what the settled passes spent: a root's, with its children's; a
	// child's own and its ended children's.
	Tokens int     `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
	// Ended is what the run's ended children spent (their totals).
	Ended *contracts.Spend `json:"ended,omitempty"`
	// HeldTokens and HeldCost are the root's own pass in flight.
	HeldTokens int     `json:"heldTokens,omitempty"`
	HeldCost   float64 `json:"heldCost,omitempty"`
	// MoreTokens and MoreCost are the allowances Continue gave beyond the limits.
	MoreTokens int     `json:"moreTokens,omitempty"`
	MoreCost   float64 `json:"moreCost,omitempty"`
	// Warned: the warning share was reached (its chunk published); WarnAsked: its question
	// (AskAtWarn) was asked.
	Warned    bool `json:"warned,omitempty"`
	WarnAsked bool `json:"warnAsked,omitempty"`
	// Descendants are the root's live descendant runs that reserved budget, by workflow id.
	Descendants map[string]DescendantSpend `json:"descendants,omitempty"`
	// Session is the budget of the run's session, for a root run of a session that has one.
	Session *SessionRunBudget `json:"session,omitempty"`
	// Ledgers are the run's shares of the shared budgets it runs under (a root's and a
	// child's own).
	Ledgers []LedgerHold `json:"ledgers,omitempty"`
}

// DescendantIDs returns the ids of b's Descendants, sorted (workflow code sums and settles
// them in this order, never the map's).
func (b *Budget) DescendantIDs() []string {
	ids := make([]string, 0, len(b.Descendants))
	for id := range b.Descendants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// DescendantSpend is a descendant run's spend as the root knows it: what it reported spent
// (its own passes and its ended children's) and the reservation it holds.
type DescendantSpend struct {
	Tokens     int     `json:"tokens,omitempty"`
	Cost       float64 `json:"cost,omitempty"`
	HeldTokens int     `json:"heldTokens,omitempty"`
	HeldCost   float64 `json:"heldCost,omitempty"`
}

// Reservation asks the root for one unit of Kind for the run From; for Kind LimitBudget, for
// a model pass's estimate (Input tokens, at most Output tokens out, priced at Price when the
// run has a money budget), reporting what From spent so far (Spent).
type Reservation struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Kind string `json:"kind"`

	Input  int              `json:"input,omitempty"`
	Output int              `json:"output,omitempty"`
	Price  *contracts.Price `json:"price,omitempty"`
	Spent  *contracts.Spend `json:"spent,omitempty"`
}

// Grant answers a reservation (a run cancelled at a pause cancels its children instead). For
// a budget reservation, Output is the output tokens granted (fewer than asked when the budget
// has less left), and Denied says the budget is exhausted and the run fails
// (OnBudgetExhausted "fail", or the question answered "stop").
type Grant struct {
	ID     string `json:"id"`
	Output int    `json:"output,omitempty"`
	Denied bool   `json:"denied,omitempty"`
}
