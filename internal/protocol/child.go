package protocol

import (
	"encoding/json"

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

// Budget is the durable state of a root run's limits.
type Budget struct {
	Limits   contracts.Limits `json:"limits"`
	Consumed map[string]int   `json:"consumed,omitempty"`
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
