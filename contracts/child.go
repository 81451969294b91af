package contracts

// Limits bound the work of a run and all its children together (spec F5.7); 0 means no limit.
// Each unit is reserved before the work is dispatched (a failed attempt consumes its unit; a
// result reused from the journal consumes none). Reaching a limit pauses the run with a
// "Limit reached — Continue?" question; Continue gives a fresh allowance.
//
// MaxTokens and MaxCost are the run's budget (docs/budgets.md): the tokens of its model passes
// and its children's, as the providers report them, and their cost in the worker's currency,
// priced by its price table ([Price]). Each pass reserves its estimate first (its input's size
// and its maximum output) and settles with the reported usage after; a pass that cannot be
// granted pauses the run with a "Budget reached — Continue?" question (OnBudgetExhausted
// "ask", the default) or fails it with BUDGET_EXHAUSTED ("fail").
type Limits struct {
	MaxNodeExecutions   int `json:"maxNodeExecutions,omitempty"`
	MaxModelPasses      int `json:"maxModelPasses,omitempty"`
	MaxToolCalls        int `json:"maxToolCalls,omitempty"`
	MaxChildInvocations int `json:"maxChildInvocations,omitempty"`

	// MaxTokens bounds the tokens (input and output) of the run's model passes, children included.
	MaxTokens int `json:"maxTokens,omitempty"`
	// MaxCost bounds what the run's model passes cost, children included, in the worker's
	// currency; a pass of a model the worker's price table has no price for fails with
	// PRICE_MISSING.
	MaxCost float64 `json:"maxCost,omitempty"`
	// BudgetWarnAt is the share of MaxTokens or MaxCost at which the run publishes a budget
	// status chunk, once (0: 0.8; 1 or more: never).
	BudgetWarnAt float64 `json:"budgetWarnAt,omitempty"`
	// AskAtWarn also pauses the run once at BudgetWarnAt with a "Budget almost used — Continue?"
	// question.
	AskAtWarn bool `json:"askAtWarn,omitempty"`
	// OnBudgetExhausted is what a pass that the budget cannot grant does: BudgetAsk ("ask", the
	// default) pauses the run with a question, BudgetFail ("fail") fails it with
	// BUDGET_EXHAUSTED (for runs that no human watches).
	OnBudgetExhausted string `json:"onBudgetExhausted,omitempty"`
}

// The values of [Limits].OnBudgetExhausted.
const (
	BudgetAsk  = "ask"
	BudgetFail = "fail"
)
