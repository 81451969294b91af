package workflows_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// sessionHarness runs the session workflow with stand-in runs: the test sends their reports.
type sessionHarness struct {
	*harness
	runs []protocol.RunStart // the inputs of the runs the session started, in order
}

func newSessionHarness(t *testing.T) *sessionHarness {
	h := &sessionHarness{harness: newHarness(t, def("echo", map[string]workflows.NodeFunc{"n": returns(workflows.NodeResult{})}, "__start__>n"))}
	h.env.OnWorkflow(contracts.RunWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in protocol.RunStart) (contracts.RunResult, error) {
			h.runs = append(h.runs, in)
			return contracts.RunResult{}, nil
		})
	return h
}

// update sends a session update at d and keeps its outcome.
func (h *sessionHarness) update(d time.Duration, name string, arg any, out any, refused *error) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(name, name+d.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { *refused = err },
			OnComplete: func(res any, err error) {
				if err != nil {
					*refused = err
					return
				}
				b, _ := json.Marshal(res)
				require.NoError(h.t, json.Unmarshal(b, out))
			},
		}, arg)
	}, d)
}

func (h *sessionHarness) view(d time.Duration, out *sessionapi.SessionView) {
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(protocol.SessionQueryName)
		require.NoError(h.t, err)
		require.NoError(h.t, v.Get(out))
	}, d)
}

var question1 = contracts.PendingRequest{RequestID: "req-1", Token: "tok-1", Workflow: "echo", Node: "n"}

// firstTurnAsks starts a prompt turn at 1 s whose run reports, at reportAt, a checkpoint that
// leaves question1 open; it returns the turn (filled in once started) and the update's refusal.
func (h *sessionHarness) firstTurnAsks(reportAt time.Duration) (*sessionapi.TurnStarted, *error) {
	b, _ := json.Marshal("hi")
	started, refused := new(sessionapi.TurnStarted), new(error)
	h.update(time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Workflow: "echo", Input: b}, started, refused)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: started.RunID, TurnEnded: true,
			Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp-1", SessionID: "s", RunID: started.RunID, TurnIndex: 1, Workflow: "echo", ActivePendingRequests: []contracts.PendingRequest{question1}}}})
	}, reportAt)
	return started, refused
}

// The shell starts a prompt turn's run as a child with the machine's input, commits the run's
// report, and continues as new with the machine's state once the turn ended.
func TestSessionShellStartsTheRunAndCommitsItsReport(t *testing.T) {
	h := newSessionHarness(t)
	b, _ := json.Marshal("hi")
	var started sessionapi.TurnStarted
	var refused error
	h.update(time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Workflow: "echo", Input: b, Owner: "alice"}, &started, &refused)
	var busy sessionapi.SessionView
	h.view(2*time.Second, &busy)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: started.RunID, TurnEnded: true,
			Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp-1", SessionID: "s", RunID: started.RunID, TurnIndex: 1, Workflow: "echo", ActivePendingRequests: []contracts.PendingRequest{question1}}}})
	}, 3*time.Second)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s"}, ContinueAsNewAfter: 2})

	require.NoError(t, refused)
	require.Regexp(t, `^run-`, started.RunID)
	require.Equal(t, sessionapi.TurnStarted{SessionID: "s", RunID: started.RunID, TurnIndex: 1}, started)
	require.Len(t, h.runs, 1)
	in := h.runs[0]
	require.Equal(t, "echo", in.Workflow)
	require.Equal(t, "s", in.SessionID)
	require.Equal(t, 1, in.Session.TurnIndex)
	require.Regexp(t, `^cp-`, in.Session.ParentCheckpointID, "the session start checkpoint")
	require.Equal(t, started.RunID, busy.Active.RunID)
	require.Equal(t, "alice", busy.Owner)

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "%v", h.env.GetWorkflowError())
	require.Equal(t, protocol.SessionWorkflowName, can.WorkflowType.Name)
	var next protocol.SessionStart
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "cp-1", next.State.Head)
	require.Nil(t, next.State.Active)
	require.Equal(t, "alice", next.State.Owner)
	require.Equal(t, protocol.PendingTurn{Request: question1, RunID: started.RunID, CheckpointID: "cp-1"}, next.State.Pending["tok-1"])
	require.Len(t, next.State.Checkpoints, 2)
}

// The shell's validators refuse a wrong token (nothing reaches the handler); a claimed answer
// turn that is aborted gives its question back.
func TestSessionShellReleasesAnAbortedAnswerTurn(t *testing.T) {
	h := newSessionHarness(t)
	started, refused := h.firstTurnAsks(2 * time.Second)
	var wrong error
	var none sessionapi.TurnStarted
	h.update(3*time.Second, protocol.SessionResumeTurnUpdate, protocol.ResumeTurnRequest{Token: "tok-x", RequestID: "req-1"}, &none, &wrong)
	var claimed sessionapi.TurnStarted
	h.update(4*time.Second, protocol.SessionResumeTurnUpdate, protocol.ResumeTurnRequest{Token: "tok-1", RequestID: "req-1"}, &claimed, refused)
	var during sessionapi.SessionView
	h.view(5*time.Second, &during)
	var aborted bool
	h.env.RegisterDelayedCallback(func() {
		h.update(0, protocol.SessionAbortTurnUpdate, claimed.RunID, &aborted, refused)
	}, 6*time.Second)
	var after sessionapi.SessionView
	h.view(7*time.Second, &after)
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, time.Minute)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionInput{SessionID: "s"})

	require.True(t, temporal.IsCanceledError(h.env.GetWorkflowError()), "%v", h.env.GetWorkflowError())
	require.NoError(t, *refused)
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(wrong), "%v", wrong)
	require.Empty(t, none.RunID)
	require.Equal(t, sessionapi.TurnStarted{SessionID: "s", RunID: started.RunID, TurnIndex: 2}, claimed)
	require.Empty(t, during.Pending)
	require.Equal(t, "interrupt-response", during.Active.Kind)
	require.True(t, aborted)
	require.Nil(t, after.Active)
	require.Equal(t, []contracts.PendingRequest{question1}, after.Pending)
	require.Len(t, h.runs, 1, "an answer turn starts no run")
}
