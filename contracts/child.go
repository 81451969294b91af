package contracts

import "encoding/json"

// Limits on child workflow calls (spec F3.13).
const (
	// MaxWorkflowCallsPerActivation bounds the child calls of one node activation.
	MaxWorkflowCallsPerActivation = 64
	// MaxWorkflowDepth bounds the nesting of child calls (the root run is depth 0).
	MaxWorkflowDepth = 16
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
	Limits Limits `json:"limits,omitempty"`
}

// ChildQuestion is a question a child run (at any depth below) asks through its parent: the
// parent presents it as its own (the root as its interrupt) and sends the answer down.
type ChildQuestion struct {
	// Child is the workflow ID of the parent's direct child the question comes through.
	Child   string         `json:"child"`
	Request PendingRequest `json:"request"`
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
	Failure *Failure `json:"failure,omitempty"`
}

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

// Budget is the durable state of a root run's limits.
type Budget struct {
	Limits   Limits         `json:"limits"`
	Consumed map[string]int `json:"consumed,omitempty"`
	// Seq numbers a child run's reservations.
	Seq int `json:"seq,omitempty"`
}

// Reservation asks the root for one unit of Kind for the run From.
type Reservation struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Kind string `json:"kind"`
}

// Grant answers a reservation (a run cancelled at a pause cancels its children instead).
type Grant struct {
	ID string `json:"id"`
}
