package protocol

import "github.com/kortyx-go/kortyx/contracts"

// The kinds of execution limits ([contracts.Limits], spec F5.7), as limit-reached chunks name them.
const (
	LimitNodeExecutions   = "maxNodeExecutions"
	LimitModelPasses      = "maxModelPasses"
	LimitToolCalls        = "maxToolCalls"
	LimitChildInvocations = "maxChildInvocations"
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
	return l
}

// CheckLimits reports a negative limit.
func CheckLimits(l contracts.Limits) error {
	if l.MaxNodeExecutions < 0 || l.MaxModelPasses < 0 || l.MaxToolCalls < 0 || l.MaxChildInvocations < 0 {
		return contracts.Errorf(contracts.CodeInvalidInput, "execution limits must be positive (0 means no limit)")
	}
	return nil
}
