package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// An answer is one update of the session: the session refuses a wrong answer in its validator
// (nothing is written), claims the turn, delivers the answer to the run by signal and returns
// where the response begins; the same answer turn again, from another service (another API
// process), reattaches to it, finds the same offset and runs nothing twice. Counted in the
// histories: one session update per answer, no update on the run.
func TestAnswerIsOneSessionUpdate(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	session := "s-" + taskQueue(t)
	svc := e.service(t)

	t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, after := nextResponse(t, e.follow, t1.RunID, 0)
	name, _ := interruptOf(t, resp)

	ts, err := svc.Answer(ctx, session, answer(name, "Ada"), sessions.AnswerOptions{ClientTurnID: "t2"})
	require.NoError(t, err)
	require.Equal(t, sessions.TurnStarted{SessionID: session, RunID: t1.RunID, TurnIndex: 2, Begin: after, Delivered: true}, ts)
	resp, after = nextResponse(t, e.follow, t1.RunID, ts.Begin)
	require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(resp))
	plan, _ := interruptOf(t, resp)
	eventually(t, 10*time.Second, "the answer turn to end", func() bool { return sessionView(t, e, session).Active == nil })

	// An answer the question does not allow is refused by the session: the question stays open.
	_, err = svc.Answer(ctx, session, answer(plan, "", "gold"), sessions.AnswerOptions{ClientTurnID: "t3x"})
	require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(err), "%v", err)
	v := sessionView(t, e, session)
	require.Nil(t, v.Active)
	require.Equal(t, []string{plan.ResumeToken}, []string{v.Pending[0].Token})
	// So is an answer naming another request.
	wrong := answer(plan, "", "pro")
	wrong.RequestID = name.RequestID
	_, err = svc.Answer(ctx, session, wrong, sessions.AnswerOptions{})
	require.Equal(t, contracts.CodeResumeMismatch, contracts.CodeOf(err), "%v", err)

	ts, err = svc.Answer(ctx, session, answer(plan, "", "pro"), sessions.AnswerOptions{ClientTurnID: "t3"})
	require.NoError(t, err)
	require.Equal(t, sessions.TurnStarted{SessionID: session, RunID: t1.RunID, TurnIndex: 3, Begin: after, Delivered: true}, ts)
	resp, _ = nextResponse(t, e.follow, t1.RunID, ts.Begin)
	require.Equal(t, []string{"message", "checkpoint", "done"}, types(resp))
	eventually(t, 10*time.Second, "the answer turn to end", func() bool { return sessionView(t, e, session).Active == nil })

	// Another process (a service of its own over the same broker, no memory of the first):
	// the reattach finds where the response begins in the run's stream.
	other, err := sessions.New(sessions.Options{Client: e.c, Broker: e.broker})
	require.NoError(t, err)
	again, err := other.Answer(ctx, session, answer(plan, "", "pro"), sessions.AnswerOptions{ClientTurnID: "t3"})
	require.NoError(t, err)
	require.Equal(t, sessions.TurnStarted{SessionID: session, RunID: ts.RunID, TurnIndex: ts.TurnIndex, Reattached: true, Ended: true, Begin: after, Delivered: true}, again)
	_, err = svc.Answer(ctx, session, answer(plan, "", "basic"), sessions.AnswerOptions{ClientTurnID: "t3"})
	require.Equal(t, contracts.CodeClientTurnConflict, contracts.CodeOf(err), "%v", err)
	require.Equal(t, []string{"before", "between Ada", "after pro"}, readLines(t, e.effects))

	sessionHist := history(t, tc, protocol.SessionWorkflowID(session))
	require.Equal(t, []string{protocol.SessionStartTurnByCallerUpdate, protocol.SessionResumeTurnUpdate, protocol.SessionResumeTurnUpdate, protocol.SessionResumeTurnUpdate},
		updates(sessionHist), "one update per answer (the last one the reattach); refused answers write nothing")
	require.Equal(t, []string{contracts.RespondName, contracts.RespondName}, signalsSent(sessionHist), "the session delivered both answers")
	runHist := history(t, tc, t1.RunID)
	require.Empty(t, updates(runHist), "no update on the run")
	require.Equal(t, 2, countSignals(runHist, contracts.RespondName))
	recordHistory(t, tc, "session-answer", protocol.SessionWorkflowID(session))
	recordHistory(t, tc, "effects-session-answer", t1.RunID)
}

// updates are the names of the updates a history accepted, in order.
func updates(h *historypb.History) []string {
	var out []string
	for _, e := range h.Events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED {
			out = append(out, e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName())
		}
	}
	return out
}

// signalsSent are the names of the signals a history sent to other workflows, in order.
func signalsSent(h *historypb.History) []string {
	var out []string
	for _, e := range h.Events {
		if e.GetEventType() == enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED {
			out = append(out, e.GetSignalExternalWorkflowExecutionInitiatedEventAttributes().GetSignalName())
		}
	}
	return out
}

func countSignals(h *historypb.History, name string) int {
	n := 0
	for _, e := range h.Events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == name {
			n++
		}
	}
	return n
}
