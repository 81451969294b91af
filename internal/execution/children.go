package execution

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ChildTarget is what a run needs to know of a workflow it calls as a child.
type ChildTarget struct {
	ID, Version  string
	InputSchema  *contracts.Schema
	OutputSchema *contracts.Schema
}

// ChildCall is one child workflow call of a node.
type ChildCall struct {
	// ID is the call id: stable, unique per node activation.
	ID string
	// Workflow is the id of the registered workflow to call.
	Workflow string
	// Input is the child's input (plain JSON).
	Input any
}

// liveChild is a child call in flight.
type liveChild struct {
	cancel workflow.CancelFunc
	done   bool
	res    contracts.RunResult
	err    error
}

// callState is the journal entry of a child call.
type callState = protocol.CallState

// childID is the workflow ID of a call of this run: "<run>/<node>#<activation>/<call id>".
func (r *Run) childID(node, call string) string {
	return fmt.Sprintf("%s/%s#%d/%s", r.ID, node, r.Snap.Activations, call)
}

// errWorkflowCall is a WorkflowCallError: "Workflow '<id>': <msg>".
func errWorkflowCall(target, msg string, cause error, details map[string]any) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeWorkflowCallFailed, Message: fmt.Sprintf("Workflow '%s': %s", target, msg),
		Details: details, Err: cause}
}

// fingerprint is the canonical JSON of a call: workflow, input and version.
func fingerprint(target ChildTarget, input json.RawMessage) string {
	var norm any
	_ = json.Unmarshal(input, &norm)
	b, _ := json.Marshal(map[string]any{"workflow": target.ID, "version": target.Version, "input": norm})
	return string(b)
}

// plainInput encodes a call input as plain JSON (no functions, channels, NaN…).
func plainInput(target string, v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errWorkflowCall(target, "input is not plain JSON: "+err.Error(), err, nil)
	}
	return b, nil
}

// Children runs child workflow calls and joins them (spec F3.13, F3.14): they start together,
// the join waits until each has completed, failed or is waiting for a human; then the waiting
// questions are presented one at a time, in call order, each answer going to its own child,
// until every call has settled. Outcomes are in call order. A call already settled in this
// node activation (an earlier attempt, a restored run) returns its recorded outcome without
// running again. group names a parallel group ("" for a single call).
func (s *Scope) Children(ctx workflow.Context, group string, calls []ChildCall) ([]protocol.ChildOutcome, error) {
	r := s.run
	if s.joining {
		return nil, contracts.Errorf(contracts.CodeWorkflowCallFailed,
			"Await each parallel group before starting another in the same node (node %q).", s.node)
	}
	depth := 0
	if r.Child != nil {
		depth = r.Child.Depth
	}
	if depth+1 > protocol.MaxWorkflowDepth {
		return nil, contracts.Errorf(contracts.CodeWorkflowCallFailed,
			"Workflow calls nest at most %d levels deep.", protocol.MaxWorkflowDepth)
	}
	if r.Resolve == nil {
		return nil, contracts.Errorf(contracts.CodeWorkflowCallFailed, "kortyx: this run cannot call workflows")
	}
	if group != "" {
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = strings.TrimSpace(c.ID)
		}
		key, err := s.key(entryParallel, "")
		if err != nil {
			return nil, err
		}
		members := protocol.RawJSON(ids)
		if e, ok := s.journal(key); ok && string(e.Value) != string(members) {
			return nil, contracts.Errorf(contracts.CodeWorkflowCallFailed, "Parallel call membership changed during replay.")
		}
		s.record(key, protocol.JournalEntry{Kind: entryParallel, Value: members, At: workflow.Now(ctx)})
	}

	type slot struct {
		call  ChildCall
		key   string
		state callState
		live  *liveChild
	}
	slots := make([]*slot, len(calls))
	seen := map[string]bool{}
	// Check every call before starting any.
	for i, c := range calls {
		c.ID = strings.TrimSpace(c.ID)
		if c.ID == "" {
			return nil, errWorkflowCall(c.Workflow, fmt.Sprintf("a workflow call needs a non-blank, stable id (node %q)", s.node), nil, nil)
		}
		if seen[c.ID] || s.used["workflow:"+c.ID] {
			return nil, errWorkflowCall(c.Workflow, fmt.Sprintf("Duplicate workflow call id %q in node %q.", c.ID, s.node), nil, nil)
		}
		seen[c.ID] = true
		s.calls++
		if s.calls > protocol.MaxWorkflowCallsPerActivation {
			return nil, errWorkflowCall(c.Workflow, fmt.Sprintf("node %q made more than %d workflow calls in one activation", s.node, protocol.MaxWorkflowCallsPerActivation), nil, nil)
		}
		target, err := r.Resolve(c.Workflow)
		if err != nil {
			return nil, errWorkflowCall(c.Workflow, err.Error(), err, nil)
		}
		if target.InputSchema == nil || target.OutputSchema == nil {
			return nil, errWorkflowCall(c.Workflow, "a workflow called as a child must declare inputSchema and outputSchema", nil, nil)
		}
		input, err := plainInput(c.Workflow, c.Input)
		if err != nil {
			return nil, err
		}
		key, err := s.key(entryWorkflow, c.ID)
		if err != nil {
			return nil, err
		}
		fp := fingerprint(target, input)
		sl := &slot{call: c, key: key}
		if e, ok := s.journal(key); ok {
			_ = json.Unmarshal(e.Value, &sl.state)
			if sl.state.Fingerprint != fp {
				return nil, errWorkflowCall(c.Workflow, "call input or target changed during replay", nil,
					map[string]any{"callId": c.ID})
			}
		} else {
			if issues := target.InputSchema.ValidateJSON(input); len(issues) > 0 {
				return nil, &contracts.Error{Code: contracts.CodeWorkflowCallFailed,
					Message: fmt.Sprintf("Workflow '%s': input does not match its input schema", c.Workflow), Issues: issues}
			}
			sl.state = callState{Fingerprint: fp, Child: r.childID(s.node, c.ID)}
			s.record(key, protocol.JournalEntry{Kind: entryWorkflow, Value: protocol.RawJSON(sl.state), At: workflow.Now(ctx)})
		}
		sl.call.Input = input
		slots[i] = sl
	}

	cancelAll := func() {
		// Cancel the children still running and wait until they have stopped: a cancelled
		// run ends after its whole tree.
		var running []*liveChild
		for _, sl := range slots {
			if sl.live != nil && !sl.live.done {
				sl.live.cancel()
				running = append(running, sl.live)
			}
		}
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.Await(dctx, func() bool {
			for _, lc := range running {
				if !lc.done {
					return false
				}
			}
			return true
		})
		for _, sl := range slots {
			if sl.live != nil {
				r.dropReservations(sl.state.Child) // a cancelled subtree's queued reservations
			}
		}
	}
	s.joining = true
	defer func() { s.joining = false }()
	r.Flush(ctx) // what the node published so far comes before the children's chunks
	for _, sl := range slots {
		if sl.state.Outcome != nil {
			continue // settled in an earlier attempt: reused, not run again
		}
		if lc := r.children[sl.state.Child]; lc != nil {
			sl.live = lc // started by an earlier attempt of this activation, still known
			continue
		}
		var from *protocol.RunSnapshot
		if !strings.HasPrefix(sl.state.Child, r.ID+"/") {
			// Recorded by the run this one was restored from (rollback, fork): the call gets a
			// child of this run, restored from the state the old child had while it waited
			// (whose spend it reports again under its new id: the old id's is forgotten).
			r.forgetDescendants(sl.state.Child)
			sl.state.Child, from = r.childID(s.node, sl.call.ID), sl.state.Snapshot
			s.record(sl.key, protocol.JournalEntry{Kind: entryWorkflow, Value: protocol.RawJSON(sl.state), At: workflow.Now(ctx)})
		} else if err := r.Reserve(ctx, protocol.LimitChildInvocations); err != nil {
			cancelAll()
			return nil, err
		}
		sl.live = r.startChild(ctx, s.node, sl.call, sl.state.Child, depth, from)
	}
	settle := func(sl *slot) {
		if sl.state.Outcome != nil || sl.live == nil || !sl.live.done {
			return
		}
		out := protocol.ChildOutcome{}
		spend := sl.live.res.State.Runtime.Spend
		if sl.live.err != nil {
			spend = FailedChildSpend(sl.live.err)
		}
		r.ChildEnded(sl.state.Child, spend, sl.live.err != nil)
		if sl.live.err != nil {
			f := contracts.FailureOf(sl.live.err)
			out.Failure = &f
		} else {
			out.Data = sl.live.res.State.Data
			if out.Data == nil {
				out.Data = map[string]any{}
			}
			r.addTokenUsage(sl.live.res.State.Runtime.TokenUsage)
		}
		sl.state.Outcome, sl.state.Snapshot = &out, nil
		s.record(sl.key, protocol.JournalEntry{Kind: entryWorkflow, Value: protocol.RawJSON(sl.state), At: workflow.Now(ctx)})
		delete(r.children, sl.state.Child)
	}
	for {
		err := workflow.Await(ctx, func() bool {
			if _, blocked := r.limitBlocked(); blocked {
				return true
			}
			for _, sl := range slots {
				if sl.live != nil && !sl.live.done && r.questions[sl.state.Child] == nil {
					return false
				}
			}
			return true
		})
		if err != nil {
			cancelAll()
			return nil, err
		}
		if kind, blocked := r.limitBlocked(); blocked {
			// A child waits for a unit of a used-up limit: pause the whole tree here.
			if err := r.pauseForLimit(ctx, kind); err != nil {
				cancelAll()
				return nil, err
			}
			r.serveReservations(ctx)
			continue
		}
		for _, sl := range slots {
			settle(sl)
			// Keep the state of every waiting child in the journal before any question is asked:
			// the checkpoint taken then lets a restored run restore them all.
			if q := r.questions[sl.state.Child]; q != nil && q.Snapshot != nil && sl.state.Snapshot != q.Snapshot {
				sl.state.Snapshot = q.Snapshot
				s.record(sl.key, protocol.JournalEntry{Kind: entryWorkflow, Value: protocol.RawJSON(sl.state), At: workflow.Now(ctx)})
			}
		}
		var asking *slot
		for _, sl := range slots {
			if sl.live != nil && !sl.live.done && r.questions[sl.state.Child] != nil {
				asking = sl
				break
			}
		}
		if asking == nil {
			break
		}
		q := r.questions[asking.state.Child]
		delete(r.questions, asking.state.Child)
		if err := r.relay(ctx, asking.state.Child, q); err != nil {
			cancelAll()
			return nil, err
		}
	}
	out := make([]protocol.ChildOutcome, len(slots))
	for i, sl := range slots {
		out[i] = *sl.state.Outcome
	}
	return out, nil
}

// relay presents a child's question as this run's own and sends the answer down to the child.
func (r *Run) relay(ctx workflow.Context, child string, q *protocol.ChildQuestion) error {
	var schema *contracts.Schema
	if len(q.Schema) > 0 {
		sc, err := contracts.CompileSchema(q.Schema)
		if err != nil {
			return contracts.Errorf(contracts.CodeWorkflowCallFailed, "kortyx: the response schema of a child question does not compile: %v", err)
		}
		schema = sc
	}
	ans, err := r.Ask(ctx, q.Request, schema)
	if err != nil {
		return err
	}
	resp := contracts.Response{Token: q.Request.Token, RequestID: q.Request.RequestID, Text: ans.Text, Selected: ans.Selected}
	if q.Request.Input.Kind == contracts.InterruptCustom {
		resp.Value = ans.Value
	}
	if err := protocol.CheckPayload("the answer to a question of child workflow "+child, resp, "give a shorter answer"); err != nil {
		return err
	}
	return workflow.SignalExternalWorkflow(ctx, child, "", contracts.RespondName, resp).Get(ctx, nil)
}

// startChild starts one child call as a Temporal child workflow.
func (r *Run) startChild(ctx workflow.Context, node string, c ChildCall, childID string, depth int, from *protocol.RunSnapshot) *liveChild {
	cctx, cancel := workflow.WithCancel(ctx)
	root, stream := r.ID, r.stream
	if r.Child != nil {
		root = r.Child.RootID
	}
	sa := []temporal.SearchAttributeUpdate{protocol.WorkflowKey.ValueSet(c.Workflow), protocol.StatusKey.ValueSet(string(contracts.StatusRunning))}
	if r.SessionID != "" {
		sa = append(sa, protocol.SessionKey.ValueSet(r.SessionID))
	}
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:            childID,
		TaskQueue:             workflow.GetInfo(ctx).TaskQueueName,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation:   true,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(sa...),
	})
	var runtimeCtx json.RawMessage
	if r.Snap.State.Config.Context != nil {
		runtimeCtx = protocol.RawJSON(r.Snap.State.Config.Context)
	}
	input, _ := c.Input.(json.RawMessage)
	in := protocol.RunStart{RunInput: contracts.RunInput{Workflow: c.Workflow, Input: input, SessionID: r.SessionID, Context: runtimeCtx}, Snapshot: from,
		Child: &protocol.ChildBinding{ParentID: r.ID, RootID: root, Stream: stream, Depth: depth + 1, Node: node, CallID: c.ID,
			Limits: r.limits(), Pricing: r.pricing(), Budgeted: r.budgetedOn(), Ledgers: r.ledgerConfigs()}}
	lc := &liveChild{cancel: cancel}
	r.children[childID] = lc
	if err := r.startRecord(&in, childID, fmt.Sprintf("the input of workflow call %q", c.ID),
		"pass the child less input, or keep large values outside the run and pass a reference"); err != nil {
		lc.err, lc.done = err, true // never started: settled as a failed call
		return lc
	}
	r.SettleStatus(ctx)
	fut := workflow.ExecuteChildWorkflow(cctx, contracts.RunWorkflowName, in)
	workflow.Go(ctx, func(gctx workflow.Context) {
		lc.err = fut.Get(gctx, &lc.res)
		lc.done = true
	})
	return lc
}
