package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

func turn(t *testing.T, e *inproc, session, wf, input string) sessions.TurnStarted {
	t.Helper()
	b, _ := json.Marshal(input)
	ts, err := service(e.c, e.tq).Start(context.Background(), session, sessions.TurnRequest{Workflow: wf, Input: b})
	require.NoError(t, err)
	return ts
}

// service is the session service of client c for sessions on task queue tq (no broker).
func service(c client.Client, tq string) *sessions.Service {
	svc, err := sessions.New(sessions.Options{Client: c, TaskQueue: tq})
	if err != nil {
		panic(err)
	}
	return svc
}

// service is the session service of the worker, with its broker.
func (e *inproc) service(t *testing.T) *sessions.Service {
	t.Helper()
	svc, err := sessions.New(sessions.Options{Client: e.c, Broker: e.broker, TaskQueue: e.tq})
	require.NoError(t, err)
	return svc
}

// claimTurn claims an answer turn without its answer, as clients did before answers were
// carried in the update (the session still serves such requests: recorded histories have them).
func claimTurn(ctx context.Context, c client.Client, sessionID string, req protocol.ResumeTurnRequest) (sessions.TurnStarted, error) {
	var out sessions.TurnStarted
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: protocol.SessionWorkflowID(sessionID),
		UpdateName: protocol.SessionResumeTurnUpdate, Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return out, err
	}
	return out, h.Get(ctx, &out)
}

func sessionView(t *testing.T, e *inproc, session string) sessions.SessionView {
	t.Helper()
	v, err := service(e.c, "").View(context.Background(), session)
	require.NoError(t, err)
	return v
}

func TestSessionTurnsCheckpointsRollbackFork(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	session := "s-" + taskQueue(t)

	// Turn 1: the effects agent asks its first question: the response ends with a checkpoint.
	t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, _ := nextResponse(t, e.follow, t1.RunID, 0)
	require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp))
	ask, _ := interruptOf(t, resp)
	cp1 := resp[2]
	require.Equal(t, 1, *cp1.TurnIndex)
	v := sessionView(t, e, session)
	require.Len(t, v.Checkpoints, 2, "session start + the interrupted turn")
	require.Equal(t, "session start", v.Checkpoints[0].Label)
	require.Equal(t, cp1.ID, v.Head)
	require.Nil(t, v.Active)
	require.Equal(t, ask.ResumeToken, v.Pending[0].Token)

	// A prompt while a turn is active is refused.
	b, _ := json.Marshal("x")
	_, err := service(e.c, e.tq).Start(ctx, session, sessions.TurnRequest{Input: b, Workflow: testagents.SlowWorkflow})
	require.NoError(t, err, "no turn is active while the run waits for an answer")
	// ...that prompt superseded the question (its run was cancelled): roll back to cp1 to ask it again.
	v = sessionView(t, e, session)
	require.NotNil(t, v.Active)
	_, err = service(e.c, e.tq).Start(ctx, session, sessions.TurnRequest{Input: b})
	require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(err))
	eventually(t, 10*time.Second, "the superseding turn to end", func() bool { return sessionView(t, e, session).Active == nil })

	rb, err := service(e.c, "").Rollback(ctx, session, cp1.ID)
	require.NoError(t, err)
	require.Equal(t, cp1.ID, rb.Head.ID)
	require.NotEmpty(t, rb.RunID)
	require.Equal(t, ask.ResumeToken, rb.ActivePendingRequests[0].Token, "the question open at the checkpoint is answerable again, same token")
	again, _ := nextResponse(t, e.follow, rb.RunID, 0)
	require.Equal(t, []string{"interrupt", "done"}, types(again))
	require.Equal(t, ask.ResumeToken, again[0].ResumeToken)
	v = sessionView(t, e, session)
	require.Len(t, v.Checkpoints, 2)

	// Fork the interrupted checkpoint: the copy asks with a new token, in a new session.
	fk, err := service(e.c, "").Fork(ctx, session, sessions.ForkRequest{CheckpointID: cp1.ID})
	require.NoError(t, err)
	require.Regexp(t, `^session-`, fk.SessionID)
	require.Equal(t, cp1.ID, fk.ForkedFrom)
	forkTok := fk.Checkpoint.ActivePendingRequests[0]
	require.NotEqual(t, ask.ResumeToken, forkTok.Token)
	require.NotEqual(t, ask.RequestID, forkTok.RequestID)

	// The original token does not work in the fork (bound to its session).
	_, err = claimTurn(ctx, e.c, fk.SessionID, protocol.ResumeTurnRequest{Token: ask.ResumeToken, RequestID: ask.RequestID})
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(err))

	// Answer the source and the fork differently: they evolve independently.
	answerIn := func(sess string, p contracts.PendingRequest, name string) sessions.TurnStarted {
		ts, err := claimTurn(ctx, e.c, sess, protocol.ResumeTurnRequest{Token: p.Token, RequestID: p.RequestID})
		require.NoError(t, err)
		_, err = kortyx.RespondAndWait(ctx, e.c, ts.RunID, "", contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: name})
		require.NoError(t, err)
		return ts
	}
	src := answerIn(session, rb.ActivePendingRequests[0], "Ada")
	dst := answerIn(fk.SessionID, forkTok, "Grace")
	srcResp, _ := nextResponse(t, e.follow, src.RunID, lastOffset(t, e, src.RunID, contracts.ChunkDone, 1))
	dstResp, _ := nextResponse(t, e.follow, dst.RunID, lastOffset(t, e, dst.RunID, contracts.ChunkDone, 1))
	require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(srcResp))
	require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(dstResp))
	// "before" ran in turn 1, and again when the rollback and the fork
	// restored the waiting node: a restored node re-runs from the top against its journal, so
	// side effects outside hooks run again (Kortyx's replay rule; hooks and tools do not).
	readLinesSorted(t, e.effects, []string{"before", "slow done", "before", "before", "between Ada", "between Grace"})
	require.Len(t, sessionView(t, e, session).Checkpoints, 3)
	require.Len(t, sessionView(t, e, fk.SessionID).Checkpoints, 2)
	recordHistory(t, tc, "session-rollback-fork", protocol.SessionWorkflowID(session))
	recordHistory(t, tc, "session-forked", protocol.SessionWorkflowID(fk.SessionID))
}

// lastOffset returns the offset of the n-th chunk of type typ in the run's stream.
func lastOffset(t *testing.T, e *inproc, runID string, typ contracts.ChunkType, n int) int64 {
	t.Helper()
	entries, err := e.broker.Read(context.Background(), runID, 0, 0)
	require.NoError(t, err)
	seen := 0
	for _, en := range entries {
		if en.Chunk.Type == typ {
			seen++
			if seen == n {
				return en.Offset
			}
		}
	}
	t.Fatalf("no %d-th %s chunk in %s", n, typ, runID)
	return 0
}

// readLinesSorted returns the effect lines if they are a permutation of want (runs interleave).
func readLinesSorted(t *testing.T, path string, want []string) []string {
	got := readLines(t, path)
	require.ElementsMatch(t, want, got)
	return want
}

func TestConcurrentResumesWithOneTokenOneWins(t *testing.T) {
	e := startWorker(t, tc)
	session := "s-" + taskQueue(t)
	t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, _ := nextResponse(t, e.follow, t1.RunID, 0)
	ask, _ := interruptOf(t, resp)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = claimTurn(context.Background(), e.c, session, protocol.ResumeTurnRequest{Token: ask.ResumeToken, RequestID: ask.RequestID})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		require.Contains(t, []contracts.Code{contracts.CodeSessionBusy, contracts.CodeInvalidResume}, contracts.CodeOf(err), "err: %v", err)
	}
	require.Equal(t, 1, wins)
}

// A session continues as new (here after every 3 events) keeping its checkpoints, head,
// workflow state, open question and recent turns, and keeps at most MaxCheckpoints.
func TestSessionContinuesAsNewAndPrunes(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	session := "s-" + taskQueue(t)
	first, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: protocol.SessionWorkflowID(session), TaskQueue: e.tq},
		protocol.SessionWorkflowName, protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: session, MaxCheckpoints: 3}, ContinueAsNewAfter: 3})
	require.NoError(t, err)

	var last contracts.Chunk
	for i := 1; i <= 4; i++ {
		b, _ := json.Marshal(fmt.Sprintf("m%d", i))
		ts, err := service(e.c, e.tq).Start(ctx, session, sessions.TurnRequest{ClientTurnID: fmt.Sprintf("t%d", i), Workflow: testagents.EchoWorkflow, Input: b})
		require.NoError(t, err)
		resp, _ := nextResponse(t, e.follow, ts.RunID, 0)
		if resp[0].Content != fmt.Sprintf("Turn %d: m%d", i, i) {
			dumpSession(t, session, ts.RunID)
		}
		require.Equal(t, fmt.Sprintf("Turn %d: m%d", i, i), resp[0].Content, "workflow state carried from the head")
		last = resp[1]
		ended := func() bool { return sessionView(t, e, session).Active == nil }
		deadline := time.Now().Add(10 * time.Second)
		for !ended() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !ended() {
			dumpSession(t, session, ts.RunID)
			t.Fatalf("turn %d did not end", i)
		}
	}
	v := sessionView(t, e, session)
	require.Len(t, v.Checkpoints, 3, "session start and turn 1 were pruned")
	require.Equal(t, []int{2, 3, 4}, []int{v.Checkpoints[0].TurnIndex, v.Checkpoints[1].TurnIndex, v.Checkpoints[2].TurnIndex})
	require.Equal(t, last.ID, v.Head)

	// A question left open across continue-as-new is still answerable; a repeated clientTurnId
	// still reattaches.
	ts := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, _ := nextResponse(t, e.follow, ts.RunID, 0)
	ask, _ := interruptOf(t, resp)
	eventually(t, 10*time.Second, "the turn to end", func() bool { return sessionView(t, e, session).Active == nil })
	b, _ := json.Marshal("m4")
	again, err := service(e.c, e.tq).Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t4", Input: b})
	require.NoError(t, err)
	require.True(t, again.Reattached)
	require.True(t, again.Ended)
	// The turn's content digest is carried across continue-as-new too: the same clientTurnId
	// with another message is a conflict, not a retry.
	other, _ := json.Marshal("m2")
	_, err = service(e.c, e.tq).Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t4", Input: other})
	require.Equal(t, contracts.CodeClientTurnConflict, contracts.CodeOf(err), "%v", err)
	_, err = claimTurn(ctx, e.c, session, protocol.ResumeTurnRequest{Token: ask.ResumeToken, RequestID: ask.RequestID})
	require.NoError(t, err)

	desc, err := tc.DescribeWorkflow(ctx, protocol.SessionWorkflowID(session), "")
	require.NoError(t, err)
	require.NotEqual(t, first.GetRunID(), desc.RawResponse.WorkflowExecutionInfo.Execution.RunId, "the session continued as new")
	require.Len(t, sessionView(t, e, session).Checkpoints, 3)
}

// dumpSession logs a session's histories and a run's status (to diagnose a stuck session).
func dumpSession(t *testing.T, session, runID string) {
	t.Helper()
	ctx := context.Background()
	if d, err := tc.DescribeWorkflow(ctx, runID, ""); err == nil {
		t.Logf("run %s: %s", runID, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	}
	v := sessionView(t, &inproc{c: tc}, session)
	t.Logf("view: active=%+v checkpoints=%d", v.Active, len(v.Checkpoints))
	runs := []string{""}
	for i := 0; i < len(runs) && i < 5; i++ {
		it := tc.GetWorkflowHistory(ctx, protocol.SessionWorkflowID(session), runs[i], false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Logf("history: %v", err)
				break
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil && a.GetContinuedExecutionRunId() != "" {
				runs = append(runs, a.GetContinuedExecutionRunId())
			}
			detail := ""
			if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
				detail = string(a.GetInput().GetPayloads()[0].GetData())
			}
			if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
				detail = a.GetCause().String() + " " + a.GetFailure().GetMessage()
			}
			if a := ev.GetChildWorkflowExecutionCompletedEventAttributes(); a != nil {
				detail = a.GetWorkflowExecution().GetWorkflowId()
			}
			if a := ev.GetChildWorkflowExecutionStartedEventAttributes(); a != nil {
				detail = a.GetWorkflowExecution().GetWorkflowId()
			}
			if len(detail) > 300 {
				detail = detail[:300]
			}
			t.Logf("session run %q event %d %s %s", runs[i], ev.GetEventId(), ev.GetEventType(), detail)
		}
	}
}
