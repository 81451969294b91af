package sessionstate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// RollbackPlan is a rollback found possible by [Machine.PlanRollback]: its result, and the
// runs of the discarded checkpoints to cancel before it is committed.
type RollbackPlan struct {
	Result sessionapi.RollbackResult
	// Cancel are the runs of the discarded checkpoints, in checkpoint order, each once.
	Cancel []string
	// Noop is set when the checkpoint is the last one: nothing is discarded or committed.
	Noop      bool
	idx       int
	target    protocol.Checkpoint
	cancelled map[string]bool
}

// PlanRollback plans making checkpoint id the head (spec F5.4): later checkpoints are deleted,
// their runs cancelled, their effects reported as invalidated. The shell cancels plan.Cancel,
// then [Machine.PendingCancels], then commits with [Machine.CommitRollback].
func (m *Machine) PlanRollback(id string) (RollbackPlan, error) {
	idx, err := m.CheckTarget(id)
	if err != nil {
		return RollbackPlan{}, err
	}
	target := m.State.Checkpoints[idx]
	plan := RollbackPlan{idx: idx, target: target, cancelled: map[string]bool{},
		Result: sessionapi.RollbackResult{SessionID: m.In.SessionID, Head: target.Summary(),
			InvalidatedStructuredStreamIDs: []string{}, InvalidatedInterruptTokens: []string{}, ActivePendingRequests: []contracts.PendingRequest{}}}
	removed := m.State.Checkpoints[idx+1:]
	if len(removed) == 0 {
		for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
			plan.Result.ActivePendingRequests = append(plan.Result.ActivePendingRequests, m.State.Pending[tok].Request)
		}
		plan.Noop = true
		return plan, nil
	}
	res := &plan.Result
	for _, cp := range removed {
		res.InvalidatedStructuredStreamIDs = appendNew(res.InvalidatedStructuredStreamIDs, cp.Effects.StructuredStreamIDs...)
		res.InvalidatedInterruptTokens = appendNew(res.InvalidatedInterruptTokens, cp.Effects.InterruptTokens...)
		for _, p := range cp.ActivePendingRequests {
			res.InvalidatedInterruptTokens = appendNew(res.InvalidatedInterruptTokens, p.Token)
		}
		if cp.RunID != "" && !plan.cancelled[cp.RunID] {
			plan.cancelled[cp.RunID] = true
			plan.Cancel = append(plan.Cancel, cp.RunID)
		}
	}
	return plan, nil
}

// PendingCancels are the runs of the open questions that plan does not cancel already, each
// once (read after plan.Cancel ran: the open questions can change meanwhile).
func (m *Machine) PendingCancels(plan *RollbackPlan) []string {
	var runs []string
	for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
		if p := m.State.Pending[tok]; !plan.cancelled[p.RunID] {
			plan.cancelled[p.RunID] = true
			runs = append(runs, p.RunID)
		}
	}
	return runs
}

// CommitRollback commits a planned rollback: the open questions are forgotten, the later
// checkpoints and the turns they ended are dropped (their clientTurnIds may run again). It
// returns the head when it holds open questions, which a run restored from it asks again
// ([Machine.RestoreInput]).
func (m *Machine) CommitRollback(plan RollbackPlan) *protocol.Checkpoint {
	target := plan.target
	m.State.Pending = map[string]protocol.PendingTurn{}
	m.State.Checkpoints = append([]protocol.Checkpoint(nil), m.State.Checkpoints[:plan.idx+1]...)
	m.State.Head, m.State.NextTurn = target.ID, target.TurnIndex+1
	kept := m.State.Recent[:0]
	for _, t := range m.State.Recent {
		if t.TurnIndex <= target.TurnIndex {
			kept = append(kept, t)
		}
	}
	m.State.Recent = kept
	if len(target.ActivePendingRequests) > 0 {
		return &target
	}
	return nil
}

// CanRestore checks that cp still holds the state to restore its open questions from.
func CanRestore(cp protocol.Checkpoint) error {
	if cp.Snapshot == nil {
		return contracts.Errorf(contracts.CodeResumeFailed, "Checkpoint %q no longer holds the state to restore its open question.", cp.ID)
	}
	return nil
}

// RestoreInput is the input of run that restores cp (taken while a question was open): it asks
// the question again, with the tokens cp holds, and waits.
func (m *Machine) RestoreInput(cp protocol.Checkpoint, sessionWorkflowID string) protocol.RunStart {
	return protocol.RunStart{RunInput: contracts.RunInput{Workflow: cp.Workflow, SessionID: m.In.SessionID, Tenant: m.State.Owner}, Snapshot: cp.Snapshot,
		Session: &protocol.SessionBinding{WorkflowID: sessionWorkflowID, SessionID: m.In.SessionID,
			TurnIndex: cp.TurnIndex + 1, ParentCheckpointID: cp.ID, Restore: true, Expect: cp.ActivePendingRequests},
		SessionBudget: m.RunBudget()}
}

// Reopen opens cp's questions again, asked by run (restored from cp).
func (m *Machine) Reopen(cp protocol.Checkpoint, run string) {
	for i, p := range cp.ActivePendingRequests {
		m.State.Pending[p.Token] = cp.Pending(i, run)
	}
}

// CheckFork checks a fork request: the checkpoint exists (a busy session may fork), and the new
// session id, if any, is usable.
func (m *Machine) CheckFork(req sessionapi.ForkRequest) error {
	if _, err := m.CheckTarget(req.CheckpointID); err != nil && contracts.CodeOf(err) == contracts.CodeNotFound {
		return err
	}
	if req.NewSessionID != "" && (strings.TrimSpace(req.NewSessionID) != req.NewSessionID || req.NewSessionID == m.In.SessionID) {
		return contracts.Errorf(contracts.CodeInvalidSession, "newSessionId %q cannot be used: give another id, or none", req.NewSessionID)
	}
	return nil
}

// ForkSource is the checkpoint a checked fork request copies.
func (m *Machine) ForkSource(id string) protocol.Checkpoint {
	var src protocol.Checkpoint
	for _, cp := range m.State.Checkpoints {
		if cp.ID == id {
			src = cp
		}
	}
	return src
}

// ForkIDs are the ids a fork gives its copy, generated by the shell.
type ForkIDs struct {
	Session    string
	Checkpoint string
	// Requests are the new token and request id of each open question of the source, in order.
	Requests []sessionapi.ReissuedRequest
	// Run is the run that asks the copied questions again ("" when there are none).
	Run string
}

// Fork copies src into a new session (spec F5.5): every open question gets the new token and
// request id of ids.Requests (their From fields are filled in here), and is asked again in the
// new session by run ids.Run, restored from the copy. It returns the new session's input and
// the reissued questions.
func (m *Machine) Fork(src protocol.Checkpoint, ids ForkIDs, now time.Time) (protocol.SessionStart, []sessionapi.ReissuedRequest) {
	cp := protocol.Clone(src)
	cp.ID, cp.SessionID, cp.ParentCheckpointID = ids.Checkpoint, ids.Session, ""
	cp.ParentSessionID, cp.ForkedFrom, cp.CreatedAt = m.In.SessionID, src.ID, now
	cp.Effects.InterruptTokens = []string{}
	var reissued []sessionapi.ReissuedRequest
	for i, p := range cp.ActivePendingRequests {
		r := ids.Requests[i]
		old := p.Token
		reissued = append(reissued, sessionapi.ReissuedRequest{FromToken: p.Token, FromRequestID: p.RequestID, Token: r.Token, RequestID: r.RequestID})
		p.Token, p.RequestID = r.Token, r.RequestID
		cp.ActivePendingRequests[i] = p
		cp.Effects.InterruptTokens = append(cp.Effects.InterruptTokens, p.Token)
		if cp.Snapshot != nil {
			protocol.RewritePending(cp.Snapshot, old, p)
		}
	}
	return protocol.SessionStart{
		SessionInput:    protocol.SessionInput{SessionID: ids.Session, MaxCheckpoints: m.In.MaxCheckpoints, RunTaskQueue: m.In.RunTaskQueue},
		ParentSessionID: m.In.SessionID, ForkedFrom: src.ID, Initial: &cp, InitialRunID: ids.Run, Owner: m.State.Owner}, reissued
}

// ContinueAsNewDue reports whether the session continues as new now: Temporal suggests it or
// the session has seen In.ContinueAsNewAfter events, and no turn runs (the active run's report
// must reach this execution).
func (m *Machine) ContinueAsNewDue(suggested bool, events int) bool {
	due := suggested || (m.In.ContinueAsNewAfter > 0 && events >= m.In.ContinueAsNewAfter)
	return due && m.State.Active == nil && len(m.State.Queue) == 0 && len(m.State.Steers) == 0
}

// Carry is the input the session continues as new with: its state, under [MaxPayload] by
// dropping the snapshots of the oldest checkpoints (never the head's).
func (m *Machine) Carry() protocol.SessionStart {
	next := m.In
	next.Initial, next.InitialRunID = nil, ""
	st := protocol.Clone(m.State)
	for i := 0; i < len(st.Checkpoints); i++ {
		b, err := json.Marshal(st)
		if err != nil {
			panic(fmt.Sprintf("kortyx: the session state cannot be encoded: %v", err))
		}
		if len(b) <= MaxPayload {
			break
		}
		if st.Checkpoints[i].ID != st.Head {
			st.Checkpoints[i].Snapshot = nil
		}
	}
	next.State = &st
	return next
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		dup := false
		for _, have := range list {
			dup = dup || have == it
		}
		if !dup {
			list = append(list, it)
		}
	}
	return list
}
