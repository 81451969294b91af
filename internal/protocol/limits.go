package protocol

import (
	"math"

	"github.com/kortyx-go/kortyx/contracts"
)

// The kinds of execution limits ([contracts.Limits], spec F5.7), as limit-reached chunks name them.
const (
	LimitNodeExecutions   = "maxNodeExecutions"
	LimitModelPasses      = "maxModelPasses"
	LimitToolCalls        = "maxToolCalls"
	LimitChildInvocations = "maxChildInvocations"
	// The budget's kinds: a limit-reached chunk of a budget names the one a pass could not be
	// granted under; a child's budget reservation has kind LimitBudget.
	LimitTokens = "maxTokens"
	LimitCost   = "maxCost"
	LimitBudget = "budget"
	// The session's budget (across its turns), as a run's pass that cannot be granted names it
	// inside the run; its chunks say "maxTokens" or "maxCost" with the budget's scope "session".
	LimitSessionTokens = "sessionMaxTokens"
	LimitSessionCost   = "sessionMaxCost"
)

// The limit pause.
const (
	// LimitQuestion is the question of a limit pause; LimitContinue its only option.
	LimitQuestion   = "Limit reached — Continue?"
	LimitContinue   = "continue"
	LimitCheckpoint = "Execution limit reached"
)

// LimitMax returns the maximum of a limit kind (0: none).
func LimitMax(l contracts.Limits, kind string) int {
	switch kind {
	case LimitNodeExecutions:
		return l.MaxNodeExecutions
	case LimitModelPasses:
		return l.MaxModelPasses
	case LimitToolCalls:
		return l.MaxToolCalls
	case LimitChildInvocations:
		return l.MaxChildInvocations
	}
	return 0
}

// LimitsOver returns l with the positive fields of o.
func LimitsOver(l contracts.Limits, o *contracts.Limits) contracts.Limits {
	if o == nil {
		return l
	}
	if o.MaxNodeExecutions > 0 {
		l.MaxNodeExecutions = o.MaxNodeExecutions
	}
	if o.MaxModelPasses > 0 {
		l.MaxModelPasses = o.MaxModelPasses
	}
	if o.MaxToolCalls > 0 {
		l.MaxToolCalls = o.MaxToolCalls
	}
	if o.MaxChildInvocations > 0 {
		l.MaxChildInvocations = o.MaxChildInvocations
	}
	return BudgetOver(l, o)
}

// BudgetOver returns l with the budget fields of o that are set (MaxTokens, MaxCost,
// BudgetWarnAt, AskAtWarn, OnBudgetExhausted).
func BudgetOver(l contracts.Limits, o *contracts.Limits) contracts.Limits {
	if o == nil {
		return l
	}
	if o.MaxTokens > 0 {
		l.MaxTokens = o.MaxTokens
	}
	if o.MaxCost > 0 {
		l.MaxCost = o.MaxCost
	}
	if o.BudgetWarnAt > 0 {
		l.BudgetWarnAt = o.BudgetWarnAt
	}
	if o.AskAtWarn {
		l.AskAtWarn = true
	}
	if o.OnBudgetExhausted != "" {
		l.OnBudgetExhausted = o.OnBudgetExhausted
	}
	return l
}

// BudgetOf is the budget part of l (its other limits zero).
func BudgetOf(l contracts.Limits) contracts.Limits {
	return contracts.Limits{MaxTokens: l.MaxTokens, MaxCost: l.MaxCost, BudgetWarnAt: l.BudgetWarnAt,
		AskAtWarn: l.AskAtWarn, OnBudgetExhausted: l.OnBudgetExhausted}
}

// UnitLimits is l without its budget (the limits counted in units).
func UnitLimits(l contracts.Limits) contracts.Limits {
	return contracts.Limits{MaxNodeExecutions: l.MaxNodeExecutions, MaxModelPasses: l.MaxModelPasses,
		MaxToolCalls: l.MaxToolCalls, MaxChildInvocations: l.MaxChildInvocations}
}

// HasBudget reports whether l bounds tokens or money.
func HasBudget(l contracts.Limits) bool { return l.MaxTokens > 0 || l.MaxCost > 0 }

// CheckLimits reports a negative limit or a budget setting that is not one.
func CheckLimits(l contracts.Limits) error {
	if l.MaxNodeExecutions < 0 || l.MaxModelPasses < 0 || l.MaxToolCalls < 0 || l.MaxChildInvocations < 0 {
		return contracts.Errorf(contracts.CodeInvalidInput, "execution limits must be positive (0 means no limit)")
	}
	if l.MaxTokens < 0 || l.MaxCost < 0 || math.IsNaN(l.MaxCost) || math.IsInf(l.MaxCost, 0) {
		return contracts.Errorf(contracts.CodeInvalidInput, "budgets (maxTokens, maxCost) must be positive numbers (0 means no budget)")
	}
	if l.BudgetWarnAt < 0 || math.IsNaN(l.BudgetWarnAt) || math.IsInf(l.BudgetWarnAt, 0) {
		return contracts.Errorf(contracts.CodeInvalidInput, "budgetWarnAt must be a share between 0 and 1 (0: 0.8; 1 or more: no warning)")
	}
	switch l.OnBudgetExhausted {
	case "", contracts.BudgetAsk, contracts.BudgetFail:
	default:
		return contracts.Errorf(contracts.CodeInvalidInput, "onBudgetExhausted must be %q or %q, not %q", contracts.BudgetAsk, contracts.BudgetFail, l.OnBudgetExhausted)
	}
	return nil
}
