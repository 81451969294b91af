package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/sessionstate"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Runner executes the definitions of a [Registry] as Temporal workflows: one workflow execution
// of type [contracts.RunWorkflowName] per run. Register it on a worker together with the
// activities (activities.Activities), which publish the run's stream.
type Runner struct {
	reg *Registry
}

// NewRunner returns a runner for the definitions and node functions of reg.
func NewRunner(reg *Registry) *Runner { return &Runner{reg: reg} }

// Register registers the run workflow, the session workflow and the budget ledger under their
// wire names, and each definition of the registry as a workflow type of its own id (see
// agents.go): register the definitions before.
func (r *Runner) Register(w worker.WorkflowRegistry) {
	w.RegisterWorkflowWithOptions(r.meteredRun, workflow.RegisterOptions{Name: contracts.RunWorkflowName})
	w.RegisterWorkflowWithOptions(r.Session, workflow.RegisterOptions{Name: protocol.SessionWorkflowName})
	w.RegisterWorkflowWithOptions(Ledger, workflow.RegisterOptions{Name: protocol.LedgerWorkflowName})
	r.registerAgents(w)
}

// Run is the run workflow. It executes nodes in graph order, applies their results (spec
// F1.3), routes (F2.2), hands over to other workflows (F2.4), answers the state query and
// accepts answers to interrupts by signal and update. It continues as new between nodes when
// Temporal suggests it, carrying state, hook state and journal in a [protocol.RunSnapshot].
func (r *Runner) Run(ctx workflow.Context, in protocol.RunStart) (contracts.RunResult, error) {
	var snap protocol.RunSnapshot
	if in.Snapshot != nil {
		snap = *in.Snapshot
	}
	run := execution.NewRun(ctx, in.SessionID, snap)
	if in.Session != nil {
		run.Bind(sessionstate.NewRunSide(*in.Session))
	}
	run.BindChild(in.Child)
	run.Resolve = r.resolve
	run.LocalTools = r.reg.localTools()
	var limitsErr error
	if in.Child == nil {
		if in.Limits != nil {
			limitsErr = protocol.CheckLimits(*in.Limits)
		}
		// The budget is applied after the run's start record, which holds the worker's.
		run.SetLimits(protocol.UnitLimits(protocol.LimitsOver(r.reg.Limits(), in.Limits)))
		run.WorkerBudget, run.WorkerLedgers, run.WorkerPricing = r.reg.workerBudget(in)
	}
	if err := run.Install(ctx); err != nil {
		return contracts.RunResult{}, err
	}
	run.Record = r.reg.startRecord
	// Runs started before pinning replay without it (and with the SDK's activity ids).
	// Version 1: the run pins its definition; 2: it is also lean (execution.LeanVersion); 3: its
	// status after an answer is quiet (execution.QuietStatusVersion); 4, only from a starter's
	// record: its reports to its session go with its chunks (execution.ReportWithPublishVersion).
	// One change id for all:
	// one marker (and one TemporalChangeVersion upsert) per run — none for a run whose starter
	// recorded its start in its input (in.Start: a session's turn, a workflow call).
	var pinVersion workflow.Version
	if in.Start != nil {
		pinVersion = workflow.Version(in.Start.Version)
	} else {
		pinVersion = workflow.GetVersion(ctx, pinChangeID, workflow.DefaultVersion, execution.QuietStatusVersion)
	}
	run.QuietStatus = pinVersion >= execution.QuietStatusVersion
	run.ReportWithPublish = in.Start != nil && pinVersion >= execution.ReportWithPublishVersion
	pinning := pinVersion >= 1
	run.NodeActivityIDs = pinning
	// In the run's first workflow task, which records markers anyway: no task of its own.
	run.StartLean(ctx, pinVersion >= execution.LeanVersion, in.IDs, in.Start)
	if in.Child == nil && limitsErr == nil {
		run.ApplyBudget(in.Limits, in.SessionBudget, in.IDs != nil)
	}
	run.StartChildLedgers(in.IDs != nil)
	var def *Definition
	var err error
	if in.Snapshot == nil {
		def, err = r.reg.Workflow(in.Workflow)
		if pinning {
			def, err = r.pinStart(ctx, run, def, err, in.Start)
		}
		if err == nil {
			run.Snap.State, err = initialState(in, def)
			run.Snap.NextNode = def.startNode()
			if p := in.Prior; p != nil && p.Hooks.WorkflowState != nil {
				run.Snap.Hooks.WorkflowState = protocol.Clone(p.Hooks.WorkflowState)
			}
		}
	} else if p := run.Snap.Pinned; pinning && p != nil && p.ID == run.Snap.State.CurrentWorkflow {
		def = r.pinAt(run, p) // continue-as-new, rollback, fork: the definition it ran
	} else {
		run.Snap.Pinned = nil
		def, err = r.reg.Workflow(run.Snap.State.CurrentWorkflow)
		if pinning {
			def, err = r.pinStart(ctx, run, def, err, in.Start)
		}
	}
	if def != nil {
		run.Snap.State.CurrentWorkflow = def.ID
	} else {
		run.Snap.State.CurrentWorkflow = strings.TrimSpace(in.Workflow)
	}
	if in.Snapshot != nil && in.SessionID != "" && run.Snap.State.Config.SessionID != in.SessionID &&
		run.Version(ctx, versionSnapshotSession) {
		// A run restored from another session's snapshot (a fork, or a child it restores)
		// belongs to the session it was started in.
		run.Snap.State.Config.SessionID = in.SessionID
	}
	run.InitSearchAttributes(ctx)
	if err == nil {
		err = limitsErr
	}
	if err != nil {
		return r.fail(ctx, run, err)
	}

	executed := 0
	for next := run.Snap.NextNode; next != End && next != ""; next = run.Snap.NextNode {
		if executed > 0 && (workflow.GetInfo(ctx).GetContinueAsNewSuggested() ||
			(in.ContinueAsNewAfterNodes > 0 && executed >= in.ContinueAsNewAfterNodes)) {
			return r.continueAsNew(ctx, run, in)
		}
		// Only runs that pin their definition read FastPath from it (older runs never had one).
		run.FastPath = pinning && def != nil && def.FastPath
		res, err := r.execNode(ctx, run, def, next)
		executed++
		if isCancel(ctx, run, err) {
			return r.cancel(ctx, run)
		}
		if err != nil {
			return r.fail(ctx, run, err)
		}
		if def, err = r.apply(ctx, run, def, next, res); err != nil {
			return r.fail(ctx, run, err)
		}
		if run.Snap.NextNode != End {
			run.Flush(ctx)
		}
	}
	return r.complete(ctx, run, def)
}

// versionSnapshotSession is the workflow.GetVersion change id behind which a run started from
// a snapshot of another session (a fork) takes its own session id into its state
// (config.sessionId); runs started before it keep the snapshot's. Persisted in histories.
const versionSnapshotSession = "kortyx.snapshot-session"

// resolve finds a workflow a node calls as a child (spec F3.13): registered under exactly that
// id (no fallback).
func (r *Runner) resolve(id string) (execution.ChildTarget, error) {
	def, ok := r.reg.Lookup(strings.TrimSpace(id))
	if !ok {
		return execution.ChildTarget{}, contracts.Errorf(contracts.CodeUnknownWorkflow, "no workflow %q is registered on this worker", id)
	}
	return execution.ChildTarget{ID: def.ID, Version: def.Version, InputSchema: def.InputSchema, OutputSchema: def.OutputSchema}, nil
}

// initialState builds the state of a fresh run (spec F2.1).
func initialState(in protocol.RunStart, def *Definition) (contracts.GraphState, error) {
	st := contracts.GraphState{
		LastNode:            Start,
		CurrentWorkflow:     def.ID,
		Data:                map[string]any{},
		ConversationHistory: []contracts.HistoryEntry{},
		Config:              contracts.RunConfig{SessionID: in.SessionID},
		Runtime:             contracts.Runtime{PriorMessages: in.Messages},
	}
	if len(in.Input) > 0 {
		if err := json.Unmarshal(in.Input, &st.Input); err != nil {
			return st, contracts.Errorf(contracts.CodeInvalidInput, "run input is not valid JSON: %v", err)
		}
		if s, ok := st.Input.(string); ok {
			st.Input = strings.TrimSpace(s)
		}
	}
	if p := in.Prior; p != nil {
		// A new turn of a session continues from the head's state (spec F5.3).
		prior := protocol.Clone(p.State)
		if prior.Data != nil {
			st.Data = prior.Data
		}
		st.ConversationHistory = append(st.ConversationHistory, prior.ConversationHistory...)
		st.Runtime.TokenUsage = prior.Runtime.TokenUsage
		st.UI = prior.UI
	}
	if len(in.Context) > 0 && string(in.Context) != "null" {
		if err := json.Unmarshal(in.Context, &st.Config.Context); err != nil {
			return st, contracts.Errorf(contracts.CodeInvalidInput, "run context must be a JSON object: %v", err)
		}
	}
	if def.InputSchema != nil {
		if issues := def.InputSchema.Validate(st.Input); len(issues) > 0 {
			return st, &contracts.Error{Code: contracts.CodeInvalidInput,
				Message: "input does not match the input schema of workflow " + def.ID, Issues: issues}
		}
	}
	return st, nil
}

// execNode runs one node with its retry behaviour (spec F1.4). Every attempt gets a fresh
// scope over the same journal, so completed hook results of a failed attempt are reused.
func (r *Runner) execNode(ctx workflow.Context, run *execution.Run, def *Definition, id string) (NodeResult, error) {
	node, ok := def.Nodes[id]
	if !ok || node.Run == nil {
		return NodeResult{}, contracts.Errorf(contracts.CodeInvalidDefinition,
			"workflow %q has no runnable node %q; was the definition changed while runs were open?", def.ID, id)
	}
	attempts, delay := 1, time.Duration(0)
	if node.Retry != nil {
		attempts = max(node.Retry.MaxAttempts, 1)
		delay = time.Duration(node.Retry.DelayMs) * time.Millisecond
	}
	run.BeginNode(id)
	for attempt := 1; ; attempt++ {
		if err := run.Reserve(ctx, protocol.LimitNodeExecutions); err != nil {
			return NodeResult{}, err
		}
		run.Snap.NodeExecutions++
		nctx, scope := run.Enter(ctx, id, def.ID)
		params := protocol.Clone(node.Params)
		if params == nil {
			params = map[string]any{}
		}
		res, err := node.Run(nctx, NodeInput{Input: protocol.Clone(run.Snap.State.Input), Params: params})
		scope.Close()
		if err == nil && !run.Cancelled() {
			run.EndNode()
			return res, nil
		}
		if err == nil || isCancel(ctx, run, err) || contracts.CodeOf(err) == contracts.CodeExecutionLimitReached {
			return res, err
		}
		if attempt >= attempts {
			return res, err
		}
		workflow.GetLogger(ctx).Info("kortyx: node failed; retrying", "node", id, "attempt", attempt, "error", err)
		if delay > 0 {
			run.SettleStatus(ctx)
			if err := workflow.Sleep(ctx, delay); err != nil {
				return res, err
			}
		}
	}
}

func isCancel(ctx workflow.Context, run *execution.Run, err error) bool {
	if run.Cancelled() || ctx.Err() != nil {
		return true
	}
	return err != nil && (temporal.IsCanceledError(err) || contracts.CodeOf(err) == contracts.CodeExecutionCancelled)
}

// apply applies a node result in the order of spec F1.3 and chooses the next node; it returns
// the definition to continue with (another one after a transition).
func (r *Runner) apply(ctx workflow.Context, run *execution.Run, def *Definition, id string, res NodeResult) (*Definition, error) {
	if res.TransitionTo != "" && run.Child != nil {
		return nil, contracts.Errorf(contracts.CodeWorkflowCallFailed,
			"Transition to '%s' rejected: a workflow called as a child cannot hand off (transitionTo).", res.TransitionTo)
	}
	if err := checkEncodable(id, res); err != nil {
		return nil, err
	}
	st := &run.Snap.State
	st.LastNode = id
	if res.UI != nil && strings.TrimSpace(res.UI.Message) != "" {
		run.Emit(contracts.Chunk{Type: contracts.ChunkMessage, Content: res.UI.Message, Node: id})
		st.ConversationHistory = append(st.ConversationHistory, contracts.HistoryEntry{
			Node: id, Message: res.UI.Message, Timestamp: workflow.Now(ctx).UTC().Format(time.RFC3339Nano)})
	}
	if res.TransitionTo != "" {
		payload := res.Data
		if payload == nil {
			payload = map[string]any{}
		}
		run.Emit(contracts.Chunk{Type: contracts.ChunkTransition, TransitionTo: res.TransitionTo, Payload: protocol.RawJSON(payload)})
	}
	// Deliberate difference from Kortyx: routing uses only what this node returned, so a
	// condition set by an earlier node never routes a later one.
	st.LastCondition, st.LastIntent = res.Condition, res.Intent
	if res.Data != nil {
		data := protocol.Clone(res.Data)
		st.Input = execution.DeepMerge(execution.ToRecord(st.Input), data)
		st.Data = execution.DeepMerge(st.Data, data)
	}
	if res.UI != nil {
		ui := contracts.UIState{}
		if st.UI != nil {
			ui = *st.UI
		}
		if strings.TrimSpace(res.UI.Message) != "" {
			ui.Message = res.UI.Message
		}
		if res.UI.Structured != nil {
			structured := protocol.Clone(res.UI.Structured)
			ui.Structured = execution.DeepMerge(ui.Structured, structured)
			run.Emit(contracts.Chunk{Type: contracts.ChunkStructuredData, Kind: contracts.StructuredFinal,
				StreamID: run.NewStreamID(), DataType: inferDataType(structured), Node: id, Data: protocol.RawJSON(structured)})
		}
		st.UI = &ui
	}
	if res.TransitionTo != "" {
		return r.transition(ctx, run, res)
	}
	cond := res.Condition
	if cond == "" {
		cond = res.Intent
	}
	run.Snap.NextNode = def.next(id, cond)
	return def, nil
}

// checkEncodable refuses a node result whose data cannot be stored as JSON (a channel, a
// function, a NaN…): it would otherwise be lost from the run's state and snapshots.
func checkEncodable(node string, res NodeResult) error {
	values := map[string]any{"data": res.Data}
	if res.UI != nil {
		values["ui.structured"] = res.UI.Structured
	}
	for _, field := range []string{"data", "ui.structured"} {
		if v, ok := values[field]; ok {
			if _, err := json.Marshal(v); err != nil {
				return &contracts.Error{Code: contracts.CodeInvalidOutput, Err: err,
					Message: fmt.Sprintf("Node %q returned %s that cannot be encoded as JSON: return maps, slices, strings, numbers, booleans or nil.", node, field),
					Details: map[string]any{"node": node, "field": field}}
			}
		}
	}
	return nil
}

// transition hands the run over to another workflow in the same run and stream (spec F2.4).
// The target must be registered under that id: a hand-off never falls back silently.
func (r *Runner) transition(ctx workflow.Context, run *execution.Run, res NodeResult) (*Definition, error) {
	target, ok := r.reg.Lookup(res.TransitionTo)
	var err error
	if !ok {
		target, err = nil, contracts.Errorf(contracts.CodeUnknownWorkflow,
			"Transition failed to '%s': no workflow with that id is registered on this worker.", res.TransitionTo)
	}
	if run.Snap.Pinned != nil { // a pinned run pins the workflow it hands over to
		target, err = r.pinStart(ctx, run, target, err, nil)
	}
	if err != nil {
		return nil, err
	}
	st := &run.Snap.State
	data := map[string]any{}
	for _, k := range workflow.DeterministicKeys(st.Data) {
		data[k] = st.Data[k]
	}
	for _, k := range workflow.DeterministicKeys(res.Data) {
		data[k] = protocol.Clone(res.Data[k])
	}
	st.Data = data
	if raw, ok := res.Data["rawInput"].(string); ok {
		st.Input = raw
	}
	if target.InputSchema != nil {
		if issues := target.InputSchema.Validate(st.Input); len(issues) > 0 {
			return nil, &contracts.Error{Code: contracts.CodeInvalidInput,
				Message: "Transition failed to '" + res.TransitionTo + "': input does not match its input schema", Issues: issues}
		}
	}
	st.UI = nil
	st.LastCondition, st.LastIntent = "", ""
	st.CurrentWorkflow = target.ID
	run.SetWorkflow(ctx, target.ID)
	run.Snap.Hooks.NodeID, run.Snap.Hooks.NodeSlots, run.Snap.Hooks.Journal = "", nil, nil
	run.Snap.NextNode = target.startNode()
	return target, nil
}

// inferDataType follows spec F1.3 for ui.structured.
func inferDataType(m map[string]any) string {
	if _, ok := m["jobs"]; ok {
		return "jobs"
	}
	if _, ok := m["summary"].(string); ok {
		return "summary"
	}
	if _, ok := m["topJobs"]; ok {
		return "summary"
	}
	return "generic"
}

func (r *Runner) complete(ctx workflow.Context, run *execution.Run, def *Definition) (contracts.RunResult, error) {
	st := &run.Snap.State
	if def != nil && def.OutputSchema != nil {
		if issues := def.OutputSchema.Validate(st.Data); len(issues) > 0 {
			return r.fail(ctx, run, &contracts.Error{Code: contracts.CodeInvalidOutput,
				Message: "run data does not match the output schema of workflow " + def.ID, Issues: issues})
		}
	}
	res := contracts.RunResult{Status: contracts.StatusCompleted, State: *st}
	if err := protocol.CheckPayload("the run's result (its final state)", res, stateFix); err != nil {
		return r.fail(ctx, run, err)
	}
	if !run.Completed() && run.Child == nil {
		if _, err := run.Checkpoint(ctx, nil, true); err != nil {
			return r.fail(ctx, run, err)
		}
		run.Emit(contracts.Chunk{Type: contracts.ChunkDone, Data: protocol.RawJSON(st)})
	} else {
		run.ReportSpend(ctx) // what it spent after its response ended early, for its session's budget
	}
	run.Flush(ctx)
	run.SettleLedgers(ctx)
	run.SetStatus(ctx, contracts.StatusCompleted)
	return res, nil
}

// stateFix is what to do about a run state over the payload limit.
const stateFix = "keep large values (documents, tool results) out of the run's data: store them outside the run and keep a reference"

// fail ends the run with a typed failure: an error chunk, done, and a non-retryable
// ApplicationError whose type is the code. Clients get the safe message of the failure
// descriptor (a *contracts.Error's own message; "An unexpected error occurred." for any other
// error); the full error text goes to the Temporal failure and the state, for operators.
func (r *Runner) fail(ctx workflow.Context, run *execution.Run, err error) (contracts.RunResult, error) {
	f := contracts.FailureOf(err)
	f.Details = run.FailureDetails(f.Details) // a child's spend, for its root's budget
	msg := err.Error()
	if ke := (*contracts.Error)(nil); errors.As(err, &ke) {
		msg = ke.Error()
	}
	run.Snap.State.LastError = &contracts.ErrorInfo{Message: msg, Code: f.Code}
	run.EndTurn(ctx)
	if !run.Completed() && run.Child == nil { // a child's failure is its caller's to report
		run.Emit(contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f})
		run.Emit(contracts.Chunk{Type: contracts.ChunkDone})
	}
	run.Flush(ctx)
	run.SettleLedgers(ctx)
	run.SetStatus(ctx, contracts.StatusFailed)
	return contracts.RunResult{Status: contracts.StatusFailed, State: run.Snap.State},
		temporal.NewNonRetryableApplicationError(msg, string(f.Code), nil, f)
}

// cancel ends the run cancelled: cancelled and done chunks, then a Temporal cancellation.
func (r *Runner) cancel(ctx workflow.Context, run *execution.Run) (contracts.RunResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	const reason = "Execution cancelled."
	run.EndTurn(dctx)
	if run.Child == nil {
		run.Emit(contracts.Chunk{Type: contracts.ChunkCancelled, RunID: run.ID, Reason: reason})
		run.Emit(contracts.Chunk{Type: contracts.ChunkDone})
	}
	run.Flush(dctx)
	run.SettleLedgers(dctx)
	run.SetStatus(dctx, contracts.StatusCancelled)
	return contracts.RunResult{Status: contracts.StatusCancelled, State: run.Snap.State}, temporal.NewCanceledError(reason)
}

// continueAsNew continues the run in a new execution with the same workflow ID, between nodes.
func (r *Runner) continueAsNew(ctx workflow.Context, run *execution.Run, in protocol.RunStart) (contracts.RunResult, error) {
	run.Flush(ctx)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return r.cancel(ctx, run)
	}
	snap := run.Snap
	next := protocol.RunStart{
		RunInput: contracts.RunInput{
			Workflow:                in.Workflow,
			SessionID:               in.SessionID,
			ContinueAsNewAfterNodes: in.ContinueAsNewAfterNodes,
		},
		Snapshot: &snap,
		Session:  run.Binding(),
		Child:    in.Child, // a child stays its parent's (Temporal follows the chain)
		IDs:      run.IDs(),
	}
	if in.Start != nil {
		// The version it started with, without a marker (the rest comes with the snapshot and
		// the ids).
		next.Start = &protocol.StartRecord{Version: in.Start.Version}
	}
	if err := protocol.CheckPayload("the run's state carried into continue-as-new", next, stateFix); err != nil {
		return r.fail(ctx, run, err)
	}
	// The same workflow type: kortyx.Run, or the agent's own (see agents.go).
	return contracts.RunResult{}, workflow.NewContinueAsNewError(ctx, workflow.GetInfo(ctx).WorkflowType.Name, next)
}
