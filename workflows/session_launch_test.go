package workflows_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/sessionapi"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// delegated is a prompt the session service sends with protocol.SessionStartTurnByCallerUpdate
// (byCaller), whose caller starts the run.
func delegated(clientTurnID string) sessionapi.TurnRequest {
	b, _ := json.Marshal("hi")
	return sessionapi.TurnRequest{Workflow: "echo", Input: b, ClientTurnID: clientTurnID}
}

const byCaller = protocol.SessionStartTurnByCallerUpdate

// runSession runs the session until the test cancels it at one minute.
func (h *sessionHarness) runSession() {
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, time.Minute)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionInput{SessionID: "s", RunTaskQueue: "runs"})
	require.True(h.t, temporal.IsCanceledError(h.env.GetWorkflowError()), "%v", h.env.GetWorkflowError())
}

// failFirstCancel makes the first cancellation of a run fail as for a run that does not exist
// (its caller never started it), and counts the cancellations.
func (h *sessionHarness) failFirstCancel() *int {
	cancels := new(int)
	h.env.OnRequestCancelExternalWorkflow(mock.Anything, mock.Anything, mock.Anything).Return(func(_, _, _ string) error {
		if *cancels++; *cancels == 1 {
			return errors.New("not found")
		}
		return nil
	})
	return cancels
}

// A prompt sent by a caller that starts runs (protocol.SessionStartTurnByCallerUpdate) gets its
// run's launch instead of a child: the run the session would have started, with the same
// input. A prompt sent with protocol.SessionStartTurnUpdate (a caller or a recorded history
// from before) gets a child, as before.
func TestSessionLeavesThePromptsRunToItsCaller(t *testing.T) {
	h := newSessionHarness(t)
	var out protocol.StartedTurn
	var refused error
	h.update(time.Second, byCaller, delegated(""), &out, &refused)
	var during sessionapi.SessionView
	h.view(2*time.Second, &during)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: out.RunID, TurnEnded: true,
			Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp-1", SessionID: "s", RunID: out.RunID, TurnIndex: 1, Workflow: "echo"}}})
	}, 3*time.Second)
	var old sessionapi.TurnStarted
	b, _ := json.Marshal("again")
	h.update(4*time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Input: b}, &old, &refused)
	h.runSession()

	require.NoError(t, refused)
	require.Equal(t, sessionapi.TurnStarted{SessionID: "s", RunID: out.RunID, TurnIndex: 1}, out.TurnStarted)
	l := out.Launch
	require.NotNil(t, l)
	require.Equal(t, out.RunID, l.RunID)
	require.Equal(t, "s", l.SessionID)
	require.Equal(t, "runs", l.TaskQueue)
	require.Equal(t, "echo", l.Workflow)
	require.Equal(t, 1, l.Input.Session.TurnIndex)
	require.Equal(t, json.RawMessage(`"hi"`), l.Input.Input)
	require.Equal(t, out.RunID, during.Active.RunID)
	require.Len(t, h.runs, 1, "only the second turn's run is the session's child")
	require.Equal(t, 2, h.runs[0].Session.TurnIndex)
	require.Equal(t, json.RawMessage(`"again"`), h.runs[0].Input)
}

// A caller that died between the update and the start leaves a turn whose run does not exist.
// The session starts it at the next request that needs it: here the same prompt again (the
// client's retry), which reattaches to the turn.
func TestSessionStartsTheRunItsCallerDidNotStartOnARetry(t *testing.T) {
	h := newSessionHarness(t)
	var first, retry protocol.StartedTurn
	var refused error
	h.update(time.Second, byCaller, delegated("ct-1"), &first, &refused)
	h.update(2*time.Second, byCaller, delegated("ct-1"), &retry, &refused)
	h.runSession()

	require.NoError(t, refused)
	require.NotNil(t, first.Launch)
	require.True(t, retry.Reattached)
	require.Equal(t, first.RunID, retry.RunID)
	require.Nil(t, retry.Launch, "the session started the run itself")
	require.Len(t, h.runs, 1)
	require.Equal(t, first.Launch.Input.Session, h.runs[0].Session)
	require.Equal(t, first.Launch.Input.Input, h.runs[0].Input)
}

// A message refused with SESSION_BUSY while the running turn's run has not reported, more than
// the grace (5 s) after the turn started, is let through the validator, so that the session
// starts the run before refusing it; a stop does the same before it cancels. Once the run has
// reported, nothing is started again.
func TestSessionStartsTheRunItsCallerDidNotStartBeforeBusyOrStop(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		h := newSessionHarness(t)
		var first, second protocol.StartedTurn
		var refused, early, busy, busyAgain error
		h.update(time.Second, byCaller, delegated(""), &first, &refused)
		h.update(2*time.Second, byCaller, delegated(""), &second, &early)
		var startedEarly int
		h.env.RegisterDelayedCallback(func() { startedEarly = len(h.runs) }, 3*time.Second)
		h.update(8*time.Second, byCaller, delegated(""), &second, &busy)
		h.update(9*time.Second, byCaller, delegated(""), &second, &busyAgain)
		h.runSession()

		require.NoError(t, refused)
		require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(early), "%v", early)
		require.Zero(t, startedEarly, "within the grace the validator refuses the message: nothing is started")
		require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(busy), "%v", busy)
		require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(busyAgain), "%v", busyAgain)
		require.Len(t, h.runs, 1, "started once, by the first message refused after the grace")
		require.Equal(t, first.Launch.Input.Session, h.runs[0].Session)
	})
	t.Run("stop", func(t *testing.T) {
		h := newSessionHarness(t)
		cancels := h.failFirstCancel()
		var first protocol.StartedTurn
		var refused error
		h.update(time.Second, byCaller, delegated(""), &first, &refused)
		var stopped string
		h.update(2*time.Second, protocol.SessionStopUpdate, "", &stopped, &refused)
		var after sessionapi.SessionView
		h.view(3*time.Second, &after)
		h.runSession()

		require.NoError(t, refused)
		require.Equal(t, first.RunID, stopped)
		require.Nil(t, after.Active)
		require.Len(t, h.runs, 1, "started, so that a late start by the caller is refused, and cancelled")
		require.Equal(t, 2, *cancels)
	})
	t.Run("reported", func(t *testing.T) {
		h := newSessionHarness(t)
		var first protocol.StartedTurn
		var refused, busy error
		h.update(time.Second, byCaller, delegated(""), &first, &refused)
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: first.RunID,
				Spend: &protocol.RunSpendReport{}})
		}, 2*time.Second)
		var second protocol.StartedTurn
		h.update(8*time.Second, byCaller, delegated(""), &second, &busy)
		h.runSession()

		require.NoError(t, refused)
		require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(busy), "%v", busy)
		require.Empty(t, h.runs, "the run reported: it exists")
	})
}

// The other requests that need the running turn's run start it first when its caller did not:
// an enqueued message (the queue moves when that run ends), and an interrupt whose
// cancellation the run did not take (started, then cancelled).
func TestSessionStartsTheRunItsCallerDidNotStartForTheQueueAndInterrupt(t *testing.T) {
	t.Run("enqueue", func(t *testing.T) {
		h := newSessionHarness(t)
		var first, queued protocol.StartedTurn
		var refused error
		h.update(time.Second, byCaller, delegated(""), &first, &refused)
		next := delegated("")
		next.Busy = sessionapi.BusyEnqueue
		h.update(2*time.Second, byCaller, next, &queued, &refused)
		var healed int
		h.env.RegisterDelayedCallback(func() {
			healed = len(h.runs)
			h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: first.RunID, TurnEnded: true,
				Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp-1", SessionID: "s", RunID: first.RunID, TurnIndex: 1, Workflow: "echo"}}})
		}, 3*time.Second)
		h.runSession()

		require.NoError(t, refused)
		require.Equal(t, 1, healed, "the running turn's run, started before the message was queued")
		require.Equal(t, first.Launch.Input.Session, h.runs[0].Session)
		require.Len(t, h.runs, 2, "then the queued turn's run, the session's child")
		require.Equal(t, sessionapi.BusyEnqueue, queued.Kind)
		require.Nil(t, queued.Launch, "a queued turn's run is the session's")
	})
	t.Run("interrupt", func(t *testing.T) {
		h := newSessionHarness(t)
		cancels := h.failFirstCancel()
		var first, second protocol.StartedTurn
		var refused error
		h.update(time.Second, byCaller, delegated(""), &first, &refused)
		msg := delegated("")
		msg.Busy = sessionapi.BusyInterrupt
		h.update(2*time.Second, byCaller, msg, &second, &refused)
		h.runSession()

		require.NoError(t, refused)
		require.Equal(t, 2, *cancels)
		require.Equal(t, first.RunID, second.Interrupted)
		require.Len(t, h.runs, 2, "the interrupted run (started, then cancelled) and the new turn's, both the session's")
		require.Nil(t, second.Launch)
	})
}
