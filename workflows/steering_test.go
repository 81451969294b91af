package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/sessionapi"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

func prompt(text, busy, clientTurnID string) sessionapi.TurnRequest {
	b, _ := json.Marshal(text)
	return sessionapi.TurnRequest{Workflow: "echo", Input: b, Busy: busy, ClientTurnID: clientTurnID}
}

// ended is the report that ends run's turn turn with a checkpoint (steered: what it took in).
func ended(run string, turn int, steered ...string) protocol.CheckpointReport {
	return protocol.CheckpointReport{RunID: run, TurnEnded: true, Steered: steered,
		Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp-" + run, SessionID: "s", RunID: run, TurnIndex: turn, Workflow: "echo"}}}
}

// The session's policies for a message sent while a turn runs: reject refuses it, enqueue
// starts it after the turns before it, steer queues it when its run is gone, interrupt cancels
// the running run and starts at once with the stopped prompt in its conversation.
func TestSessionBusyPolicies(t *testing.T) {
	h := newSessionHarness(t) // stand-in runs that end at once: a steering message finds its run gone
	var cancelled []string
	h.env.OnRequestCancelExternalWorkflow(mock.Anything, mock.Anything, mock.Anything).Return(
		func(namespace, workflowID, runID string) error {
			cancelled = append(cancelled, workflowID)
			return nil
		})
	var a, b, c, d, e, f, again sessionapi.TurnStarted
	var errA, errB, errC, errD, errE, errF, errAgain error
	h.update(1*time.Second, protocol.SessionStartTurnUpdate, prompt("a", "", "t-a"), &a, &errA)
	h.update(2*time.Second, protocol.SessionStartTurnUpdate, prompt("c", sessionapi.BusySteer, "t-c"), &c, &errC)
	h.update(3*time.Second, protocol.SessionStartTurnUpdate, prompt("b", sessionapi.BusyEnqueue, "t-b"), &b, &errB)
	h.update(4*time.Second, protocol.SessionStartTurnUpdate, prompt("d", "", "t-d"), &d, &errD)
	h.update(3500*time.Millisecond, protocol.SessionStartTurnUpdate, prompt("f", sessionapi.BusySteer, "t-f"), &f, &errF)
	h.update(4500*time.Millisecond, protocol.SessionStartTurnUpdate, prompt("b", sessionapi.BusyEnqueue, "t-b"), &again, &errAgain)
	var waiting sessionapi.SessionView
	h.view(4800*time.Millisecond, &waiting)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(protocol.SessionCheckpointSignal, ended(a.RunID, 1)) }, 5*time.Second)
	var second sessionapi.SessionView
	h.view(5500*time.Millisecond, &second)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(protocol.SessionCheckpointSignal, ended(c.RunID, 2)) }, 6*time.Second)
	var third sessionapi.SessionView
	h.view(6500*time.Millisecond, &third)
	h.update(7*time.Second, protocol.SessionStartTurnUpdate, prompt("e", sessionapi.BusyInterrupt, "t-e"), &e, &errE)
	var last sessionapi.SessionView
	h.view(8*time.Second, &last)
	var stopped string
	var errStop error
	h.update(9*time.Second, protocol.SessionStopUpdate, "", &stopped, &errStop)
	var afterStop sessionapi.SessionView
	h.view(10*time.Second, &afterStop)
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, time.Minute)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionInput{SessionID: "s"})
	require.True(t, temporal.IsCanceledError(h.env.GetWorkflowError()), "%v", h.env.GetWorkflowError())

	for _, err := range []error{errA, errB, errC, errE, errF, errAgain, errStop} {
		require.NoError(t, err)
	}
	require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(errD), "%v", errD)
	require.Empty(t, a.Kind)

	// The run of turn 1 is gone (the stand-in ended): "c" is queued, before "b"; "f", a
	// steering message sent while messages are queued, waits after them.
	require.Len(t, waiting.Queued, 3)
	require.Equal(t, "t-c", waiting.Queued[0].ClientTurnID)
	require.Equal(t, "steer", waiting.Queued[0].Kind)
	require.Equal(t, "t-b", waiting.Queued[1].ClientTurnID)
	require.Equal(t, "t-f", waiting.Queued[2].ClientTurnID)
	require.Equal(t, "steer", waiting.Queued[2].Kind)
	require.Empty(t, waiting.Steering)

	// Turn 1 ended: "c" runs as the next turn, then "b".
	require.Equal(t, sessionapi.BusyEnqueue, c.Kind)
	require.Equal(t, 2, c.TurnIndex)
	require.Equal(t, c.RunID, second.Active.RunID)
	require.Len(t, second.Queued, 2)
	require.Equal(t, sessionapi.BusyEnqueue, b.Kind)
	require.Equal(t, 3, b.TurnIndex)
	require.Equal(t, b, again, "a retry of a queued message gets its turn")
	require.Equal(t, b.RunID, third.Active.RunID)

	// "e" interrupts the turn of "b": it starts at once, with "b" in its input before it.
	require.Equal(t, []string{b.RunID, e.RunID}, cancelled, "the interrupted turn's run, then the stopped one's")
	require.Equal(t, sessionapi.BusyInterrupt, e.Kind)
	require.Equal(t, b.RunID, e.Interrupted)
	require.Equal(t, 3, e.TurnIndex, "the stopped turn committed nothing")
	require.Equal(t, e.RunID, last.Active.RunID)
	require.Len(t, last.Queued, 1, `"f" still waits`)

	// Stop stops the running turn only: the queued "f" starts after it.
	require.Equal(t, e.RunID, stopped)
	require.Equal(t, f.RunID, afterStop.Active.RunID)
	require.Equal(t, sessionapi.BusyEnqueue, f.Kind)
	require.Empty(t, afterStop.Queued)
	require.Len(t, h.runs, 5)
	require.JSONEq(t, `"f"`, string(h.runs[4].Input))
	require.JSONEq(t, `"c"`, string(h.runs[1].Input))
	require.JSONEq(t, `"b"`, string(h.runs[2].Input))
	require.JSONEq(t, `"b\n\ne"`, string(h.runs[3].Input), "the stopped prompt, then the new one")
	require.Empty(t, h.runs[3].Messages)
}

// A run takes in the steering messages of its turn before its next model pass, as user
// messages after the conversation so far; a status chunk shows where, and the turn's checkpoint
// and report record it. A message sent to an earlier turn is dropped (the session queued it).
func TestRunTakesSteeringMessagesIn(t *testing.T) {
	model := fake.New(fake.Turn{Text: "Using the EU store."})
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if err := workflow.Sleep(ctx, 10*time.Second); err != nil { // the steering message arrives meanwhile
				return workflows.NodeResult{}, err
			}
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "Order a lamp."})
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, err
		},
	}, "__start__>chat")
	var reports []protocol.CheckpointReport
	h.env.OnSignalExternalWorkflow(mock.Anything, "session-wf", "", protocol.SessionCheckpointSignal, mock.Anything).Return(
		func(namespace, workflowID, runID, signalName string, arg any) error {
			reports = append(reports, arg.(protocol.CheckpointReport))
			return nil
		})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(protocol.SteerSignal, protocol.SteerMessage{Steer: contracts.Steer{ID: "steer-old", Content: "stale"}, TurnIndex: 0})
		h.env.SignalWorkflow(protocol.SteerSignal, protocol.SteerMessage{Steer: contracts.Steer{ID: "steer-1", ClientTurnID: "t-2", Content: "Use the EU store."}, TurnIndex: 1})
		h.env.SignalWorkflow(protocol.SteerSignal, protocol.SteerMessage{Steer: contracts.Steer{ID: "steer-1", ClientTurnID: "t-2", Content: "Use the EU store."}, TurnIndex: 1})
	}, 5*time.Second)
	in, _ := json.Marshal("go")
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, protocol.RunStart{RunInput: contracts.RunInput{Workflow: "agent", Input: in, SessionID: "s-1"},
		Session: &protocol.SessionBinding{WorkflowID: "session-wf", SessionID: "s-1", TurnIndex: 1}})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "Using the EU store.", res.State.Data["answer"])

	require.Equal(t, 1, model.Calls())
	msgs := model.Requests()[0].Messages
	require.Equal(t, providers.Message{Role: providers.RoleUser, Content: "Order a lamp."}, msgs[len(msgs)-2])
	require.Equal(t, providers.Message{Role: providers.RoleUser, Content: "Use the EU store."}, msgs[len(msgs)-1], "once, though signalled twice")

	taken := contracts.Steer{ID: "steer-1", ClientTurnID: "t-2", Content: "Use the EU store.", Node: "chat", Step: 0}
	st := chunkOf(t, h, contracts.ChunkStatus)
	require.Equal(t, "Steering message taken in", st.Message)
	require.Equal(t, &taken, st.Steer)
	require.Less(t, indexOfType(h, contracts.ChunkStatus), indexOfType(h, contracts.ChunkTextDelta), "shown before the pass's text")

	require.Len(t, reports, 1)
	require.Equal(t, []string{"steer-1"}, reports[0].Steered)
	require.Equal(t, []contracts.Steer{taken}, reports[0].Checkpoint.Effects.Steered)
	require.Empty(t, reports[0].Checkpoint.Snapshot.Steers)
	require.Empty(t, reports[0].Checkpoint.Snapshot.Steered)
}

func indexOfType(h *harness, typ contracts.ChunkType) int {
	for i, c := range h.chunks() {
		if c.Type == typ {
			return i
		}
	}
	return -1
}
