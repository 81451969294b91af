package contracts

import "encoding/json"

// Wire names of child workflow calls.
const (
	// ChildQuestionSignal carries a question of a child run to its parent ([ChildQuestion]).
	ChildQuestionSignal = "kortyx.Child.Question"
)

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
}

// ChildQuestion is a question a child run (at any depth below) asks through its parent: the
// parent presents it as its own (the root as its interrupt) and sends the answer down.
type ChildQuestion struct {
	// Child is the workflow ID of the parent's direct child the question comes through.
	Child   string         `json:"child"`
	Request PendingRequest `json:"request"`
	// Schema is the response schema of a custom question, if any.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// ChildOutcome is the outcome of one child call as a node sees it.
type ChildOutcome struct {
	// Data is the child's accumulated data, validated by its output schema.
	Data map[string]any `json:"data,omitempty"`
	// Failure describes a failed call (nil on success).
	Failure *Failure `json:"failure,omitempty"`
}
