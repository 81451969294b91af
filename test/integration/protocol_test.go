package integration_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// answerTurn answers an open question of a session the way the chat route does: claim the
// turn, then send the answer to the run by update.
func answerTurn(t *testing.T, e *inproc, session string, p contracts.PendingRequest, text string, selected ...string) sessions.TurnStarted {
	t.Helper()
	ctx := context.Background()
	ts, err := claimTurn(ctx, e.c, session, protocol.ResumeTurnRequest{Token: p.Token, RequestID: p.RequestID})
	require.NoError(t, err)
	_, err = kortyx.RespondAndWait(ctx, e.c, ts.RunID, "", contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: text, Selected: selected})
	require.NoError(t, err)
	return ts
}

// checkpointedResponse returns the first response of a run that ends with a checkpoint (a
// restored run answered at once may or may not have asked its question again before).
func checkpointedResponse(t *testing.T, e *inproc, runID string) []contracts.Chunk {
	t.Helper()
	var after int64
	for range 3 {
		resp, last := nextResponse(t, e.follow, runID, after)
		for _, c := range resp {
			if c.Type == contracts.ChunkCheckpoint {
				return resp
			}
		}
		after = last
	}
	t.Fatalf("no response of %s ends with a checkpoint", runID)
	return nil
}

// A repeated update id deduplicates only the same answer: a different second answer, sent
// with the default id, reaches the run and is refused; after the run completed, a different
// answer is not reported as accepted either.
func TestRespondUpdateRefusesADifferentSecondAnswer(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hi")
	first, _ := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, first)

	res1, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(ask, "Grace"))
	require.NoError(t, err)
	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(ask, "Ada"))
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(err), "a different answer to an answered request: %v", err)
	res2, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(ask, "Grace"))
	require.NoError(t, err, "the same answer again is deduplicated")
	require.Equal(t, res1, res2)

	// Two different answers at once: exactly one is accepted, the other refused.
	_, after := nextResponse(t, e.follow, run.GetID(), 0)
	second, _ := nextResponse(t, e.follow, run.GetID(), after)
	plan, _ := interruptOf(t, second)
	picks := []string{"basic", "pro"}
	errs := make([]error, len(picks))
	var wg sync.WaitGroup
	for i, pick := range picks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(plan, "", pick))
		}()
	}
	wg.Wait()
	var won string
	for i, err := range errs {
		if err == nil {
			require.Empty(t, won, "both answers were reported accepted")
			won = picks[i]
		} else {
			require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(err), "%v", err)
		}
	}
	require.NotEmpty(t, won)
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Grace", res.State.Data["name"])
	require.Equal(t, won, res.State.Data["plan"])

	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(plan, "", "basic", "pro"))
	require.Error(t, err, "a different answer after the run completed is not accepted")
	require.Equal(t, contracts.CodeNotFound, contracts.CodeOf(err), "%v", err)
	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(plan, "", won))
	require.NoError(t, err, "the answer that was applied is still deduplicated")
	require.Equal(t, []string{"before", "between Grace", "after " + won}, readLines(t, e.effects))
}

// starter respond --update: a different second answer fails with its code, and a token given
// on the command line is used as is (never replaced by the run's own).
func TestStarterRespondUsesItsTokenAndRefusesASecondAnswer(t *testing.T) {
	tq := taskQueue(t)
	w := startWorkerProcess(t, srv.Address(), tq, filepath.Join(t.TempDir(), "effects.txt"))
	env := []string{"TEMPORAL_ADDRESS=" + srv.Address(), "KORTYX_TASK_QUEUE=" + tq, "KORTYX_STREAM_URL=http://" + w.addr}
	out, errOut, err := starter(t, env, "", "run", "effects", "hi", "--detach")
	require.NoError(t, err, errOut)
	m := runIDPattern.FindStringSubmatch(out + errOut)
	require.NotNil(t, m, errOut)
	runID := m[1]
	eventually(t, 10*time.Second, "the run to wait", func() bool {
		v, err := kortyx.Query(context.Background(), tc, runID)
		return err == nil && v.Pending != nil
	})

	// A forged token without --request-id: refused, not replaced by the real one.
	_, errOut, err = starter(t, env, "", "respond", runID, "--update", "--token", "forged", "--text", "Mallory")
	require.Error(t, err)
	require.Contains(t, errOut, "[INVALID_RESUME]")
	v, err := kortyx.Query(context.Background(), tc, runID)
	require.NoError(t, err)
	require.NotNil(t, v.Pending, "the run still waits")
	require.Equal(t, "name", v.Pending.HookID)

	out, errOut, err = starter(t, env, "", "respond", runID, "--update", "--token", v.Pending.Token, "--request-id", v.Pending.RequestID, "--text", "Grace")
	require.NoError(t, err, errOut)
	require.Contains(t, out, "accepted")
	_, errOut, err = starter(t, env, "", "respond", runID, "--update", "--token", v.Pending.Token, "--request-id", v.Pending.RequestID, "--text", "Ada")
	require.Error(t, err, "a different answer to the same question must not be reported accepted")
	require.Contains(t, errOut, "[INVALID_RESUME]")
	eventually(t, 10*time.Second, "the second question", func() bool {
		v, err := kortyx.Query(context.Background(), tc, runID)
		return err == nil && v.Pending != nil && v.Pending.HookID == "plan"
	})
	out, errOut, err = starter(t, env, "", "respond", runID, "--update", "--select", "pro")
	require.NoError(t, err, errOut)
	require.Contains(t, out, "accepted")
	var res contracts.RunResult
	require.NoError(t, tc.GetWorkflow(context.Background(), runID, "").Get(context.Background(), &res))
	require.Equal(t, "Grace", res.State.Data["name"])
	require.Equal(t, "pro", res.State.Data["plan"])
}

// The question of a fork, and of a rollback, is answerable as soon as the call returns.
func TestForkAndRollbackQuestionsAnswerableAtOnce(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	session := "s-" + taskQueue(t)
	t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, _ := nextResponse(t, e.follow, t1.RunID, 0)
	require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp))
	cp1 := resp[2].ID

	for i := range 3 {
		fk, err := service(e.c, "").Fork(ctx, session, sessions.ForkRequest{CheckpointID: cp1})
		require.NoError(t, err)
		p := fk.Checkpoint.ActivePendingRequests[0]
		ts := answerTurn(t, e, fk.SessionID, p, "Fork"+string(rune('A'+i)))
		require.Equal(t, fk.RunID, ts.RunID)
		require.Equal(t, 2, ts.TurnIndex)
		dst := checkpointedResponse(t, e, ts.RunID)
		require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(dst))
		require.Equal(t, "plan", dst[0].ID)
		require.Equal(t, 2, *dst[1].TurnIndex)
	}

	// Rollback: answer turn 1 in the source, then roll back to it and answer again at once.
	src := answerTurn(t, e, session, sessionView(t, e, session).Pending[0], "Ada")
	nextResponse(t, e.follow, src.RunID, lastOffset(t, e, src.RunID, contracts.ChunkDone, 1))
	for range 3 {
		rb, err := service(e.c, "").Rollback(ctx, session, cp1)
		require.NoError(t, err)
		ts := answerTurn(t, e, session, rb.ActivePendingRequests[0], "Grace")
		require.Equal(t, rb.RunID, ts.RunID)
		again := checkpointedResponse(t, e, ts.RunID)
		require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(again))
		require.Equal(t, "plan", again[0].ID)
		require.Equal(t, 2, *again[1].TurnIndex)
	}
}

// A session's question answered outside the chat route (kortyx.Respond by signal,
// kortyx.RespondAndWait by update, as starter respond does) still moves the session: its
// checkpoint is committed, the next answer goes through the session, and the next prompt takes
// the next turn index.
func TestSessionQuestionAnsweredOnTheRun(t *testing.T) {
	e := startWorker(t, tc)
	for _, by := range []string{"signal", "update"} {
		t.Run(by, func(t *testing.T) {
			ctx := context.Background()
			session := "s-" + by + "-" + taskQueue(t)
			t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
			resp, _ := nextResponse(t, e.follow, t1.RunID, 0)
			ask, _ := interruptOf(t, resp)
			if by == "signal" {
				require.NoError(t, kortyx.Respond(ctx, e.c, t1.RunID, answer(ask, "Grace")))
			} else {
				_, err := kortyx.RespondAndWait(ctx, e.c, t1.RunID, "", answer(ask, "Grace"))
				require.NoError(t, err)
			}
			second, _ := nextResponse(t, e.follow, t1.RunID, lastOffset(t, e, t1.RunID, contracts.ChunkDone, 1))
			require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(second))
			require.Equal(t, 2, *second[1].TurnIndex)
			var v sessions.SessionView
			eventually(t, 10*time.Second, "the session to commit the answered turn", func() bool {
				v = sessionView(t, e, session)
				return v.Head == second[1].ID
			})
			require.Len(t, v.Checkpoints, 3, "session start, the first question, the second")
			require.Nil(t, v.Active)
			require.Len(t, v.Pending, 1)
			require.Equal(t, second[0].ResumeToken, v.Pending[0].Token, "only the second question is open")

			ts := answerTurn(t, e, session, v.Pending[0], "", "pro")
			require.Equal(t, 3, ts.TurnIndex)
			third, _ := nextResponse(t, e.follow, t1.RunID, lastOffset(t, e, t1.RunID, contracts.ChunkDone, 2))
			require.Equal(t, []string{"message", "checkpoint", "done"}, types(third))
			require.Equal(t, 3, *third[1].TurnIndex)
			eventually(t, 10*time.Second, "the answer turn to end", func() bool { return sessionView(t, e, session).Active == nil })

			t4 := turn(t, e, session, testagents.EchoWorkflow, "next")
			require.Equal(t, 4, t4.TurnIndex)
			fourth, _ := nextResponse(t, e.follow, t4.RunID, 0)
			require.Equal(t, []string{"message", "checkpoint", "done"}, types(fourth))
			require.Equal(t, 4, *fourth[1].TurnIndex)
			require.Len(t, sessionView(t, e, session).Checkpoints, 5)
		})
	}
}

// A prompt that reaches the session in the same workflow task as the report ending the
// previous turn starts the next turn (no SESSION_BUSY). The session's worker is stopped while
// the turn's run reports and the prompt arrives, so that a new worker gets both in one task.
func TestSessionPromptInTheTaskOfThePreviousReport(t *testing.T) {
	ctx := context.Background()
	runs := startWorker(t, tc) // runs and activities
	sessionWorker := workerOn(t, runs.tq+"-sessions")
	session := "s-" + taskQueue(t)
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: protocol.SessionWorkflowID(session), TaskQueue: sessionWorker.tq,
		TypedSearchAttributes: temporal.NewSearchAttributes(protocol.SessionKey.ValueSet(session))},
		protocol.SessionWorkflowName, protocol.SessionInput{SessionID: session, RunTaskQueue: runs.tq})
	require.NoError(t, err)
	b, _ := json.Marshal("x")
	t1, err := service(tc, sessionWorker.tq).Start(ctx, session, sessions.TurnRequest{Workflow: testagents.SlowWorkflow, Input: b})
	require.NoError(t, err)
	sessionWorker.stop()

	// The run ends (its report is in the session's history) while no session worker runs.
	_, err = result(t, tc.GetWorkflow(ctx, t1.RunID, ""))
	require.NoError(t, err)
	type outcome struct {
		ts  sessions.TurnStarted
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: protocol.SessionWorkflowID(session), UpdateID: "t2",
			UpdateName: protocol.SessionStartTurnUpdate, Args: []any{sessions.TurnRequest{Workflow: testagents.EchoWorkflow, Input: b}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		var o outcome
		if o.err = err; err == nil {
			o.err = h.Get(ctx, &o.ts)
		}
		done <- o
	}()
	waitAdmitted(t, protocol.SessionWorkflowID(session), "t2")
	workerOn(t, sessionWorker.tq)
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the prompt got no answer")
	}
	require.NoError(t, o.err)
	require.Equal(t, 2, o.ts.TurnIndex)
	resp, _ := nextResponse(t, runs.follow, o.ts.RunID, 0)
	require.Equal(t, []string{"message", "checkpoint", "done"}, types(resp))
}

// waitAdmitted waits until the server has admitted the update (it waits for a worker).
func waitAdmitted(t *testing.T, workflowID, updateID string) {
	t.Helper()
	eventually(t, 20*time.Second, "update "+updateID+" to be admitted", func() bool {
		_, err := tc.WorkflowService().PollWorkflowExecutionUpdate(context.Background(), &workflowservice.PollWorkflowExecutionUpdateRequest{
			Namespace:  "default",
			UpdateRef:  &updatepb.UpdateRef{WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID}, UpdateId: updateID},
			WaitPolicy: &updatepb.WaitPolicy{LifecycleStage: enums.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED}})
		return err == nil
	})
}

// sessionWorker is a worker of session workflows only.
type sessionWorker struct {
	tq   string
	stop func()
}

func workerOn(t *testing.T, tq string) sessionWorker {
	t.Helper()
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	w := worker.New(tc, tq, worker.Options{})
	workflows.NewRunner(reg).Register(w)
	require.NoError(t, w.Start())
	var once sync.Once
	stop := func() { once.Do(w.Stop) }
	t.Cleanup(stop)
	return sessionWorker{tq: tq, stop: stop}
}
