package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/workflow"
)

// Journal entry kinds that the session side reads as well as the run: a fork rewrites the
// questions waiting in a checkpoint's snapshot. Persisted: never change a value.
const (
	JournalPending  = "pending"  // a question asked and not answered yet (Value: the request)
	JournalWorkflow = "workflow" // a child workflow call (Value: its CallState)
)

// CallState is the journaled state of one child workflow call.
type CallState struct {
	Fingerprint string        `json:"fingerprint"`
	Child       string        `json:"child"`
	Outcome     *ChildOutcome `json:"outcome,omitempty"` // set once the call settled
	// Snapshot is the child's state while it waits for an answer (cleared when it settles).
	Snapshot *RunSnapshot `json:"snapshot,omitempty"`
}

// CheckpointFix is what to do about a checkpoint (or a child's question with its state) over
// the payload limit.
const CheckpointFix = "keep large values (tool results, documents, node data) out of the run's state and hook results: store them outside the run and keep a reference"

// RewritePending gives a question waiting in a snapshot — in the run's journal, or in a child's
// snapshot kept there, at any depth — a new token and request id (a fork).
func RewritePending(snap *RunSnapshot, oldToken string, p contracts.PendingRequest) {
	for _, key := range workflow.DeterministicKeys(snap.Hooks.Journal) {
		e := snap.Hooks.Journal[key]
		switch e.Kind {
		case JournalPending:
			var req contracts.PendingRequest
			if json.Unmarshal(e.Value, &req) == nil && req.Token == oldToken {
				req.Token, req.RequestID = p.Token, p.RequestID
				e.Value = RawJSON(req)
			}
		case JournalWorkflow:
			var st CallState
			if json.Unmarshal(e.Value, &st) == nil && st.Snapshot != nil {
				RewritePending(st.Snapshot, oldToken, p)
				e.Value = RawJSON(st)
			}
		}
		snap.Hooks.Journal[key] = e
	}
}

// Clone deep-copies a JSON-like value through its JSON encoding, so node code can never mutate
// run state through what it was given. A value that cannot be encoded (or decoded back) is a
// bug where it was let in: Clone panics rather than hand back the original (which the caller
// would then share) — in workflow code the panic fails the workflow task, which Temporal
// retries once the code is fixed. Values from node code are checked with a typed error first
// (see workflows' node results).
func Clone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kortyx: a %T that cannot be encoded as JSON reached Clone: %v", v, err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("kortyx: a %T cannot be decoded from its own JSON encoding in Clone: %v", v, err))
	}
	return out
}
