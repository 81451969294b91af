package contracts

// Limits on child workflow calls (spec F3.13).
const (
	// MaxWorkflowCallsPerActivation bounds the child calls of one node activation.
	MaxWorkflowCallsPerActivation = 64
	// MaxWorkflowDepth bounds the nesting of child calls (the root run is depth 0).
	MaxWorkflowDepth = 16
)

// Execution limits (spec F5.7).
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

// Limits bound the work of a run and all its children together (spec F5.7); 0 means no limit.
// Each unit is reserved before the work is dispatched (a failed attempt consumes its unit; a
// result reused from the journal consumes none). Reaching a limit pauses the run with a
// "Limit reached — Continue?" question; Continue gives a fresh allowance.
type Limits struct {
	MaxNodeExecutions   int `json:"maxNodeExecutions,omitempty"`
	MaxModelPasses      int `json:"maxModelPasses,omitempty"`
	MaxToolCalls        int `json:"maxToolCalls,omitempty"`
	MaxChildInvocations int `json:"maxChildInvocations,omitempty"`
}

// Max returns the maximum of a limit kind (0: none).
func (l Limits) Max(kind string) int {
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

// Over returns l with the positive fields of o.
func (l Limits) Over(o *Limits) Limits {
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

// Check reports a negative limit.
func (l Limits) Check() error {
	if l.MaxNodeExecutions < 0 || l.MaxModelPasses < 0 || l.MaxToolCalls < 0 || l.MaxChildInvocations < 0 {
		return Errorf(CodeInvalidInput, "execution limits must be positive (0 means no limit)")
	}
	return nil
}
