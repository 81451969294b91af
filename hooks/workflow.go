package hooks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// WorkflowCall is one call of a registered workflow as a child (spec F3.13).
type WorkflowCall struct {
	// ID is the call id: non-blank, stable, unique within the node activation. A node that
	// runs again (a retry, a restored run) gets the recorded outcome of the call with the
	// same id instead of running the child again.
	ID string
	// Workflow is the id of the registered workflow to call. It must declare an input and an
	// output schema.
	Workflow string
	// Input is the child's input: plain JSON (encoded with encoding/json), validated against
	// the child's input schema before it starts.
	Input any
}

// WorkflowResult is what a child call returns: the child's accumulated data, validated
// against its output schema.
type WorkflowResult struct {
	Data map[string]any `json:"data"`
}

// Decode decodes the child's data into v (a struct or a map).
func (r WorkflowResult) Decode(v any) error {
	b, err := json.Marshal(r.Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Workflow calls a registered workflow as a Temporal child workflow and waits for its result
// (spec F3.13). The child has its own state, node state and workflow state; it inherits the
// runtime context and publishes to the caller's stream. A question the child asks (at any
// depth) is asked by the root run, with the root's stream and resume token; the answer goes
// to the child. Failures:
//
//   - the child failed, or its data does not match its output schema: a WORKFLOW_CALL_FAILED
//     error "Workflow '<id>': <message>" whose cause is the child's failure; the call stays
//     failed for this node activation (a retry of the node gets the same failure — use a new
//     call id to call again);
//   - the input does not match the child's input schema, the workflow is not registered or
//     declares no schemas, the call changed (input, workflow or version) since an earlier
//     attempt recorded it: WORKFLOW_CALL_FAILED before anything starts;
//   - cancellation reaches the node as EXECUTION_CANCELLED: return it.
//
// The child's workflow ID is "<caller's workflow ID>/<node>#<activation>/<call id>".
func Workflow(ctx workflow.Context, call WorkflowCall) (WorkflowResult, error) {
	s, err := execution.From(ctx, "Workflow")
	if err != nil {
		return WorkflowResult{}, err
	}
	outs, err := s.Children(ctx, "", []execution.ChildCall{{ID: call.ID, Workflow: call.Workflow, Input: call.Input}})
	if err != nil {
		return WorkflowResult{}, err
	}
	res, err := outcome(call.Workflow, outs[0])
	return res, err
}

// outcome turns a child outcome into the node's result or WorkflowCallError.
func outcome(target string, o protocol.ChildOutcome) (WorkflowResult, error) {
	if o.Failure == nil {
		return WorkflowResult{Data: o.Data}, nil
	}
	cause := o.Failure.Err()
	if contracts.IsControlFlow(cause) {
		return WorkflowResult{}, cause // cancellation and limit pauses are never call failures
	}
	msg := o.Failure.Message
	if o.Failure.Code == contracts.CodeWorkflowCallFailed && strings.HasPrefix(msg, "Workflow '") {
		// A grandchild's failure keeps its own prefix.
		return WorkflowResult{}, &contracts.Error{Code: contracts.CodeWorkflowCallFailed, Message: fmt.Sprintf("Workflow '%s': %s", target, msg), Err: cause}
	}
	return WorkflowResult{}, &contracts.Error{Code: contracts.CodeWorkflowCallFailed, Message: fmt.Sprintf("Workflow '%s': %s", target, msg),
		Details: map[string]any{"workflow": target, "code": string(o.Failure.Code)}, Err: cause}
}

// Outcome statuses of a [ParallelResult], as the failure descriptor of PARALLEL_FAILED names
// them.
const (
	fulfilled = "fulfilled"
	rejected  = "rejected"
)

// ParallelResult is the outcome of one call of a parallel group: Status "fulfilled" with its
// Value, or "rejected" with its Err (a WORKFLOW_CALL_FAILED error).
type ParallelResult struct {
	Status string
	Value  WorkflowResult
	Err    error
}

// ParallelError is returned by [Parallel] when a call of the group failed, once every call has
// settled: Results hold every outcome, in call order. It unwraps to a *contracts.Error with
// code PARALLEL_FAILED whose failure descriptor lists the ordered results.
type ParallelError struct {
	Results []ParallelResult
	err     *contracts.Error
}

func (e *ParallelError) Error() string { return e.err.Error() }

// Unwrap returns the PARALLEL_FAILED error.
func (e *ParallelError) Unwrap() error { return e.err }

// Parallel calls several workflows as children at once and joins them (spec F3.14): the results
// are in call order whatever the completion order. The join waits until every child has
// completed, failed or is waiting for a human; the waiting children's questions are then asked
// one at a time, in call order, each answer going to its own child, until every call has
// settled. If a call failed, Parallel returns a *[ParallelError] after all have settled (a
// waiting sibling is answered first). Cancellation is returned as is, never as a
// ParallelError. A node awaits one group at a time; children may run groups of their own.
func Parallel(ctx workflow.Context, calls ...WorkflowCall) ([]WorkflowResult, error) {
	s, err := execution.From(ctx, "Parallel")
	if err != nil {
		return nil, err
	}
	cc := make([]execution.ChildCall, len(calls))
	for i, c := range calls {
		cc[i] = execution.ChildCall{ID: c.ID, Workflow: c.Workflow, Input: c.Input}
	}
	outs, err := s.Children(ctx, "parallel", cc)
	if err != nil {
		return nil, err
	}
	results := make([]WorkflowResult, len(calls))
	pe := &ParallelError{Results: make([]ParallelResult, len(calls))}
	failed := 0
	var fr []contracts.FailureResult
	for i, o := range outs {
		res, err := outcome(calls[i].Workflow, o)
		if err != nil && contracts.IsControlFlow(err) {
			return nil, err
		}
		results[i] = res
		if err != nil {
			failed++
			f := contracts.FailureOf(err)
			pe.Results[i] = ParallelResult{Status: rejected, Err: err}
			fr = append(fr, contracts.FailureResult{Status: rejected, Failure: &f})
			continue
		}
		pe.Results[i] = ParallelResult{Status: fulfilled, Value: res}
		fr = append(fr, contracts.FailureResult{Status: fulfilled})
	}
	if failed == 0 {
		return results, nil
	}
	pe.err = &contracts.Error{Code: contracts.CodeParallelFailed,
		Message: fmt.Sprintf("%d of %d workflow calls failed.", failed, len(calls)), Results: fr}
	return nil, pe
}

// Child is a typed handle on a registered workflow (like Kortyx's createWorkflowHooks): In is
// encoded as its input, its data decoded into Out.
type Child[In, Out any] struct {
	// Workflow is the id of the registered workflow.
	Workflow string
}

// ChildWorkflow returns a typed handle on the workflow registered under id.
func ChildWorkflow[In, Out any](id string) Child[In, Out] { return Child[In, Out]{Workflow: id} }

// Call calls the workflow with call id callID (see [Workflow]) and decodes its data.
func (c Child[In, Out]) Call(ctx workflow.Context, callID string, in In) (Out, error) {
	var out Out
	res, err := Workflow(ctx, c.With(callID, in))
	if err != nil {
		return out, err
	}
	if err := res.Decode(&out); err != nil {
		return out, &contracts.Error{Code: contracts.CodeWorkflowCallFailed,
			Message: fmt.Sprintf("Workflow '%s': its data does not decode into %T: %v", c.Workflow, out, err), Err: err}
	}
	return out, nil
}

// With returns the call for [Parallel].
func (c Child[In, Out]) With(callID string, in In) WorkflowCall {
	return WorkflowCall{ID: callID, Workflow: c.Workflow, Input: in}
}

// Result decodes the result of a call made with [Child.With].
func (c Child[In, Out]) Result(r WorkflowResult) (Out, error) {
	var out Out
	err := r.Decode(&out)
	return out, err
}
