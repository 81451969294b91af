package contracts

// Price is what a model's tokens cost, per million, in the operator's currency. No price is
// built in: prices change, the table is the operator's (a worker's
// workflows.Registry.SetPrices, the file KORTYX_PRICES names).
type Price struct {
	Input      float64 `json:"input" yaml:"input"`
	Output     float64 `json:"output" yaml:"output"`
	CacheRead  float64 `json:"cacheRead,omitempty" yaml:"cacheRead,omitempty"`
	CacheWrite float64 `json:"cacheWrite,omitempty" yaml:"cacheWrite,omitempty"`
}

// Cost is what u costs at p, per million tokens: the input tokens read from or written to the
// provider's cache at their prices, the rest of the input (Input counts them all, as the
// providers normalize it) at the input price, and the output at the output price, with
// reasoning tokens a provider reports apart from its output (Total above Input+Output).
func (p Price) Cost(u Usage) float64 {
	in := max(u.Input-u.CacheRead-u.CacheWrite, 0)
	out := u.Output
	if u.Total > u.Input+u.Output {
		out = u.Total - u.Input
	}
	return (float64(in)*p.Input + float64(out)*p.Output + float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

// Spend is what a run's model passes spent, its children's included: tokens, and their cost
// in Currency when the run has a money budget ([Limits].MaxCost); and the budget it ran under
// (MaxTokens, MaxCost, with the allowances Continue gave; 0: none).
type Spend struct {
	Tokens    int     `json:"tokens"`
	Cost      float64 `json:"cost,omitempty"`
	Currency  string  `json:"currency,omitempty"`
	MaxTokens int     `json:"maxTokens,omitempty"`
	MaxCost   float64 `json:"maxCost,omitempty"`
	// Scopes are the run's spend under the shared budgets it ran under (an agent's, a
	// tenant's): what this run (without its children, which count their own) took from each.
	Scopes []ScopeSpend `json:"scopes,omitempty"`
}

// ScopeSpend is what one run spent under a shared budget ([ScopeBudget]), and what its
// ledger granted it.
type ScopeSpend struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	// Window is the budget's period the spend counts in ("2026-12", "2026-12-06"; "": the
	// budget has no period).
	Window string `json:"window,omitempty"`
	// Ledger is the workflow id of the ledger that keeps the budget.
	Ledger        string  `json:"ledger"`
	Tokens        int     `json:"tokens"`
	Cost          float64 `json:"cost,omitempty"`
	GrantedTokens int     `json:"grantedTokens,omitempty"`
	GrantedCost   float64 `json:"grantedCost,omitempty"`
}

// The shared budget scopes.
const (
	ScopeAgent  = "agent"
	ScopeTenant = "tenant"
)

// Budget periods of a [ScopeBudget].
const (
	PeriodNone  = ""
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// ScopeBudget is a budget many runs share (docs/budgets.md): an agent's (every run of one
// agent, its children included) or a tenant's (every run of one tenant: a session's runs
// count under its owner). A ledger workflow per agent or tenant (and per period) keeps it;
// each run reserves from it in batches, inside a model pass's activity, and settles what it
// spent when it ends.
type ScopeBudget struct {
	// MaxTokens and MaxCost bound the tokens, and their cost in the worker's currency, of the
	// scope's passes (0: no bound).
	MaxTokens int     `json:"maxTokens,omitempty" yaml:"maxTokens,omitempty"`
	MaxCost   float64 `json:"maxCost,omitempty" yaml:"maxCost,omitempty"`
	// Period starts the budget again each "day" or "month" (UTC); "": never.
	Period string `json:"period,omitempty" yaml:"period,omitempty"`
	// BatchTokens and BatchCost are what a run reserves from the ledger at once, when its
	// pass needs less (0: a tenth of MaxTokens, of MaxCost). A larger batch costs fewer
	// Temporal actions and lets a run hold more than it spends until it ends.
	BatchTokens int     `json:"batchTokens,omitempty" yaml:"batchTokens,omitempty"`
	BatchCost   float64 `json:"batchCost,omitempty" yaml:"batchCost,omitempty"`
	// OnBudgetExhausted is "ask" (default: the run asks whether to go on past the budget) or
	// "fail" (the run fails with BUDGET_EXHAUSTED).
	OnBudgetExhausted string `json:"onBudgetExhausted,omitempty" yaml:"onBudgetExhausted,omitempty"`
	// BudgetWarnAt is the share at which a run publishes the budget's status chunk, once per
	// run (0: 0.8; 1 or more: never).
	BudgetWarnAt float64 `json:"budgetWarnAt,omitempty" yaml:"budgetWarnAt,omitempty"`
	// AskAtWarn also asks, once per run, "Agent budget almost used — Continue?" (or "Tenant
	// …") before the run's next pass once its warning share is reached.
	AskAtWarn bool `json:"askAtWarn,omitempty" yaml:"askAtWarn,omitempty"`
}

// On reports whether b bounds anything.
func (b ScopeBudget) On() bool { return b.MaxTokens > 0 || b.MaxCost > 0 }

// Validate checks b, naming what to fix.
func (b ScopeBudget) Validate() error {
	switch {
	case b.MaxTokens < 0 || b.MaxCost < 0 || b.BatchTokens < 0 || b.BatchCost < 0:
		return Errorf(CodeInvalidInput, "a budget cannot be negative (maxTokens %d, maxCost %g, batchTokens %d, batchCost %g)", b.MaxTokens, b.MaxCost, b.BatchTokens, b.BatchCost)
	case b.Period != PeriodNone && b.Period != PeriodDay && b.Period != PeriodMonth:
		return Errorf(CodeInvalidInput, "budget period %q is not one of \"day\", \"month\" or \"\" (no period)", b.Period)
	case b.OnBudgetExhausted != "" && b.OnBudgetExhausted != BudgetAsk && b.OnBudgetExhausted != BudgetFail:
		return Errorf(CodeInvalidInput, "onBudgetExhausted %q is not \"ask\" or \"fail\"", b.OnBudgetExhausted)
	case b.BudgetWarnAt < 0:
		return Errorf(CodeInvalidInput, "budgetWarnAt %g is negative: give a share such as 0.8", b.BudgetWarnAt)
	}
	return nil
}

// BudgetStatus is a run's spend against its budget, as a budget chunk (a status chunk at the
// warning share, a limit-reached chunk when a pass cannot be granted) and the budget question's
// meta show it.
type BudgetStatus struct {
	// Scope is "run" (the run and its children), "session" (a session's turns), "agent" or
	// "tenant" (a [ScopeBudget]).
	Scope string `json:"scope"`
	// Key names the agent or the tenant of an agent or tenant budget; Window its period
	// ("2026-12"; "": none).
	Key    string `json:"key,omitempty"`
	Window string `json:"window,omitempty"`
	// Limit is the budget a pass could not be granted under ("maxTokens" or "maxCost"), or the
	// one that reached its warning share.
	Limit string `json:"limit,omitempty"`
	// Tokens and Cost are what the settled passes spent; MaxTokens and MaxCost the budget
	// (with the allowances Continue gave).
	Tokens    int     `json:"tokens"`
	MaxTokens int     `json:"maxTokens,omitempty"`
	Cost      float64 `json:"cost"`
	MaxCost   float64 `json:"maxCost,omitempty"`
	Currency  string  `json:"currency,omitempty"`
	// Reserve is the least the pass that could not be granted needs (its input and one output
	// token), in the limit's unit (tokens, or money).
	Reserve float64 `json:"reserve,omitempty"`
}
