package integration_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// A client learns a question's token and its checkpoint's id from the response that follows
// the run's report to the session. An answer or a rollback sent at once can reach the session
// in the same workflow task as that report, before it is applied: the session must take it
// (its validator used to refuse it with INVALID_RESUME or NOT_FOUND).
func TestSessionActsOnAReportOfTheSameTask(t *testing.T) {
	for _, action := range []string{"resume", "rollback"} {
		t.Run(action, func(t *testing.T) {
			ctx := context.Background()
			runs := startWorker(t, tc)
			sessionWorker := workerOn(t, runs.tq+"-sessions")
			session := "s-" + taskQueue(t)
			_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: protocol.SessionWorkflowID(session), TaskQueue: sessionWorker.tq,
				TypedSearchAttributes: temporal.NewSearchAttributes(protocol.SessionKey.ValueSet(session))},
				protocol.SessionWorkflowName, protocol.SessionInput{SessionID: session, RunTaskQueue: runs.tq})
			require.NoError(t, err)
			b, _ := json.Marshal("hello")
			t1, err := service(tc, sessionWorker.tq).Start(ctx, session, sessions.TurnRequest{Workflow: testagents.EffectsWorkflow, Input: b})
			require.NoError(t, err)
			sessionWorker.stop()

			// The run asks its question and reports it while no session worker runs.
			resp, _ := nextResponse(t, runs.follow, t1.RunID, 0)
			ask, _ := interruptOf(t, resp)
			cp := chunkOf(t, resp, contracts.ChunkCheckpoint)

			name, arg := protocol.SessionResumeTurnUpdate, any(protocol.ResumeTurnRequest{Token: ask.ResumeToken, RequestID: ask.RequestID})
			if action == "rollback" {
				name, arg = protocol.SessionRollbackUpdate, cp.ID
			}
			done := make(chan error, 1)
			go func() {
				h, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: protocol.SessionWorkflowID(session), UpdateID: action,
					UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
				if err == nil {
					var out json.RawMessage
					err = h.Get(ctx, &out)
				}
				done <- err
			}()
			waitAdmitted(t, protocol.SessionWorkflowID(session), action)
			workerOn(t, sessionWorker.tq)
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("the request got no answer")
			}
			v, err := service(tc, "").View(ctx, session)
			require.NoError(t, err)
			if action == "resume" {
				require.NotNil(t, v.Active, "the answer turn is active")
				require.Equal(t, t1.RunID, v.Active.RunID)
			} else {
				require.Equal(t, cp.ID, v.Head)
			}
		})
	}
}

// Stop with a run id (what a disconnected reader's turn is cancelled with) cancels only its own run: a
// reader of an earlier turn that leaves late never stops the next one.
func TestStopTurnStopsOnlyItsRun(t *testing.T) {
	ctx := context.Background()
	e := startWorker(t, tc)
	session := "s-" + taskQueue(t)
	b, _ := json.Marshal("x")
	ts, err := service(tc, e.tq).Start(ctx, session, sessions.TurnRequest{Workflow: testagents.SlowWorkflow, Input: b})
	require.NoError(t, err)
	stopped, err := service(tc, "").Stop(ctx, session, "run-of-an-earlier-turn")
	require.NoError(t, err)
	require.Empty(t, stopped)
	v, err := service(tc, "").View(ctx, session)
	require.NoError(t, err)
	require.NotNil(t, v.Active)
	require.Equal(t, ts.RunID, v.Active.RunID)

	stopped, err = service(tc, "").Stop(ctx, session, ts.RunID)
	require.NoError(t, err)
	require.Equal(t, ts.RunID, stopped)
	res, err := result(t, tc.GetWorkflow(ctx, ts.RunID, ""))
	require.Error(t, err, "the run is cancelled")
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err), "%v %v", res, err)
}
