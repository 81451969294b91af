package hooks

import (
	"encoding/json"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"go.temporal.io/sdk/workflow"
)

// State is a durable value returned by [NodeState] and [WorkflowState]. It is JSON-encoded in
// the run's state, so T must survive a JSON round trip.
type State[T any] struct {
	v    T
	save func(json.RawMessage) error
}

// Get returns the current value.
func (s *State[T]) Get() T { return s.v }

// Set stores a new value. It fails if the value cannot be encoded as JSON or if the node that
// created the state has returned.
func (s *State[T]) Set(v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return contracts.Errorf(contracts.CodeInvalidRequest, "kortyx: state value cannot be encoded as JSON: %v", err)
	}
	if err := s.save(b); err != nil {
		return err
	}
	s.v = v
	return nil
}

// Update stores fn(current value).
func (s *State[T]) Update(fn func(T) T) error { return s.Set(fn(s.v)) }

// NodeState returns the node's n-th state slot, n being the call position within the node
// (spec F3.1): initial is stored on first use. The value survives node retries, self-loops and
// waits for answers; a different node running in between resets it.
func NodeState[T any](ctx workflow.Context, initial T) (*State[T], error) {
	s, err := execution.From(ctx, "NodeState")
	if err != nil {
		return nil, err
	}
	init, err := json.Marshal(initial)
	if err != nil {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "kortyx: hooks.NodeState initial value cannot be encoded as JSON: %v", err)
	}
	i, cur := s.NodeSlot(init)
	st := &State[T]{v: initial, save: func(b json.RawMessage) error { return s.SetNodeSlot(i, b) }}
	if err := json.Unmarshal(cur, &st.v); err != nil {
		// Stored state of another shape (code changed): start fresh rather than fail the node.
		st.v = initial
		if err := s.SetNodeSlot(i, init); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// WorkflowState returns the run-wide state value under key (spec F3.1), shared by every node
// and by workflows reached with TransitionTo; initial is stored on first use.
func WorkflowState[T any](ctx workflow.Context, key string, initial T) (*State[T], error) {
	s, err := execution.From(ctx, "WorkflowState")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "kortyx: hooks.WorkflowState needs a non-empty key")
	}
	init, err := json.Marshal(initial)
	if err != nil {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "kortyx: hooks.WorkflowState initial value cannot be encoded as JSON: %v", err)
	}
	cur, _ := s.WorkflowValue(key, init)
	st := &State[T]{v: initial, save: func(b json.RawMessage) error { return s.SetWorkflowValue(key, b) }}
	if err := json.Unmarshal(cur, &st.v); err != nil {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest,
			"kortyx: workflow state %q holds a value that does not decode into %T: %v", key, initial, err)
	}
	return st, nil
}

// RuntimeContext decodes the run's request context (spec F3.2) into T, e.g. a struct or
// map[string]any. A run started without context decodes from {}. Context is supplied by
// whoever starts the run: never treat it as proof of identity.
func RuntimeContext[T any](ctx workflow.Context) (T, error) {
	var out T
	s, err := execution.From(ctx, "RuntimeContext")
	if err != nil {
		return out, err
	}
	b, err := json.Marshal(s.RuntimeContext())
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, contracts.Errorf(contracts.CodeInvalidRequest, "kortyx: runtime context does not decode into %T: %v", out, err)
	}
	return out, nil
}

// Flush publishes the chunks the node emitted so far. Hooks that wait (Interrupt) or call
// activities flush for you, and every node flushes when it returns; call Flush before doing
// long work of your own (a workflow.Sleep, your own activity) so that clients see them first.
// It also lists the run as running again (KortyxStatus) if it took an answer since: a run lists
// "running" after an answer only once it waits for work (an activity, a child, a timer).
func Flush(ctx workflow.Context) error {
	s, err := execution.From(ctx, "Flush")
	if err != nil {
		return err
	}
	s.Run().Flush(ctx)
	s.Run().SettleStatus(ctx)
	return nil
}

func describe(v any) string { return fmt.Sprintf("%T", v) }
