package integration_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// childStatus is the Temporal status of a child call of the fanout workflow's "fan" node.
func childStatus(t *testing.T, runID, call string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := tc.DescribeWorkflow(context.Background(), runID+"/fan#1/"+call, "")
	require.NoError(t, err)
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
}

func hasLines(t *testing.T, path string, want ...string) bool {
	got := readLines(t, path)
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// Cancelling a run during a parallel join cancels every child still running; the node after
// the join never runs; the stream ends with cancelled, done.
func TestCancelDuringParallelJoin(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.FanoutWorkflow, "go")
	eventually(t, 10*time.Second, "the children to start and a to complete", func() bool {
		return hasLines(t, e.effects, "part a done", "part slow start", "part ask start") &&
			childStatus(t, run.GetID(), "a") == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
	_, err := result(t, run)
	require.True(t, temporal.IsCanceledError(err), "err: %v", err)

	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, childStatus(t, run.GetID(), "a"))
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, childStatus(t, run.GetID(), "slow"))
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, childStatus(t, run.GetID(), "ask"))
	time.Sleep(testagents.SlowFor)
	require.ElementsMatch(t, []string{"part a start", "part a done", "part slow start", "part ask start"}, readLines(t, e.effects),
		"no child finished its work after the cancel, and the parent's continuation never ran")
	chunks, _ := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"cancelled", "done"}, types(chunks)[len(chunks)-2:])
}

// A worker SIGKILLed in the middle of a join (one child done, one sleeping, one asking): after a
// restart the join completes, the question is answered on the root, and each child's work was
// done once.
func TestParallelJoinSurvivesWorkerKill(t *testing.T) {
	tq := taskQueue(t)
	effects := filepath.Join(t.TempDir(), "effects.txt")
	ctx := context.Background()
	first := startWorkerProcess(t, srv.Address(), tq, effects)
	run := startRun(t, tc, tq, testagents.FanoutWorkflow, "go")
	// Kill only once Temporal has recorded each effect written so far: an activity whose worker
	// dies between its write and its report runs again (at-least-once), which is not what this
	// test is about.
	eventually(t, 10*time.Second, "the children to start and Temporal to record their effects", func() bool {
		return hasLines(t, effects, "part a done", "part slow start", "part ask start") &&
			childStatus(t, run.GetID(), "a") == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED &&
			activityCompleted(t, run.GetID()+"/fan#1/slow", testagents.RecordActivity) &&
			activityCompleted(t, run.GetID()+"/fan#1/ask", testagents.RecordActivity)
	})
	first.kill()

	startWorkerProcess(t, srv.Address(), tq, effects)
	var view contracts.RunView
	eventually(t, 30*time.Second, "the child's question at the root", func() bool {
		var err error
		view, err = kortyx.Query(ctx, tc, run.GetID())
		return err == nil && view.Pending != nil
	})
	require.Equal(t, "Which ask?", view.Pending.Input.Question)
	require.Equal(t, testagents.PartWorkflow, view.Pending.Workflow)
	_, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "", contracts.Response{Token: view.Pending.Token, RequestID: view.Pending.RequestID, Text: "x"})
	require.NoError(t, err)
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "a,slow,ask:x", res.State.Data["summaries"])
	require.ElementsMatch(t, []string{"part a start", "part a done", "part slow start", "part slow done", "part ask start", "part ask done", "after"},
		readLines(t, effects), "each child's work once")
	recordHistory(t, tc, "fanout-worker-killed", run.GetID())
	recordHistory(t, tc, "fanout-child-asks", run.GetID()+"/fan#1/ask")
	// A lean root records its children's start in their input (protocol.RunStart.Start).
	recordHistory(t, tc, "start-fanout-child-asks", run.GetID()+"/fan#1/ask")
	recordHistory(t, tc, "start-fanout-child-a", run.GetID()+"/fan#1/a")
}

// The research example over the chat route: the children's progress and the risks child's
// question stream on the root's response; the answer through metadata.resume reaches the child.
func TestResearchOverChat(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	r := c.send(t, prompt(session, "t1", research.WorkflowID, "AI agents"))
	chunks := r.Chunks(t)
	require.Equal(t, []string{"session", "structured-data", "structured-data", "structured-data", "interrupt", "checkpoint", "done"}, types(chunks))
	ask := chunkOf(t, chunks, contracts.ChunkInterrupt)
	require.Equal(t, research.TopicWorkflowID, ask.Workflow)
	r = c.send(t, resumeBody(session, "t2", ask, "", map[string]any{"selected": "no"}))
	chunks = r.Chunks(t)
	require.Equal(t, []string{"session", "message", "structured-data", "checkpoint", "done"}, types(chunks))
	require.Contains(t, sessions.Buffer(chunks).Text, "risks: failures come from unclear ownership and unchecked automation. (9 sources)")
}

// Limits on a real server: MaxNodeExecutions 2 with three parallel children pauses twice;
// Continue each time; every child ran once.
func TestLimitPauseWithParallelChildren(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: testagents.FanoutWorkflow, Input: []byte(`"go"`),
		Limits: &contracts.Limits{MaxNodeExecutions: 2}}, kortyx.StartOptions{TaskQueue: e.tq})
	require.NoError(t, err)
	var after int64
	var pauses, questions int
	for {
		resp, off := nextResponse(t, e.follow, run.GetID(), after)
		after = off
		if !slices.Contains(types(resp), "interrupt") {
			break // the run's last response
		}
		ask, in := interruptOf(t, resp)
		if in.Question != protocol.LimitQuestion {
			questions++
			require.Equal(t, "Which ask?", in.Question)
			_, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(ask, "y"))
			require.NoError(t, err)
			continue
		}
		pauses++
		require.Equal(t, "limit-reached", string(resp[0].Type))
		_, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(ask, "", protocol.LimitContinue))
		require.NoError(t, err)
	}
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "a,slow,ask:y", res.State.Data["summaries"])
	require.Equal(t, 1, questions)
	require.Equal(t, 2, pauses, "the children's nodes (3rd, 4th) wait for the first Continue; the node after the join for the second")
	require.ElementsMatch(t, []string{"part a start", "part a done", "part slow start", "part slow done", "part ask start", "part ask done", "after"},
		readLines(t, e.effects), "every child ran once")
}

// Rollback and fork of a checkpoint taken while a child asked: the restored root restores the
// waiting child from the state it had (same token after a rollback, a new one in a fork), the
// completed siblings are reused, and each branch completes with its own answer.
func TestRollbackAndForkOfWaitingChild(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "s-" + taskQueue(t)
	chunks := c.send(t, prompt(session, "t1", testagents.FanoutWorkflow, "go")).Chunks(t)
	ask := chunkOf(t, chunks, contracts.ChunkInterrupt)
	cp1 := chunkOf(t, chunks, contracts.ChunkCheckpoint)
	require.Equal(t, testagents.PartWorkflow, ask.Workflow)
	r := c.send(t, resumeBody(session, "t2", ask, "x", nil))
	require.Equal(t, []string{"session", "checkpoint", "done"}, types(r.Chunks(t)))

	var rb sessions.RollbackResult
	require.Equal(t, 200, c.checkpoints(t, map[string]any{"action": "rollback", "sessionId": session, "checkpointId": cp1.ID}, &rb))
	require.Equal(t, ask.ResumeToken, rb.ActivePendingRequests[0].Token)
	var fk sessions.ForkResult
	require.Equal(t, 200, c.checkpoints(t, map[string]any{"action": "fork", "sessionId": session, "checkpointId": cp1.ID}, &fk))
	forkAsk := fk.Checkpoint.ActivePendingRequests[0]
	require.NotEqual(t, ask.ResumeToken, forkAsk.Token)

	r = c.send(t, resumeBody(session, "t3", ask, "r", nil))
	require.Equal(t, 200, r.Status, r.Body)
	require.Equal(t, "done", types(r.Chunks(t))[len(r.Chunks(t))-1])
	r = c.send(t, resumeBody(fk.SessionID, "f1", contracts.Chunk{ResumeToken: forkAsk.Token, RequestID: forkAsk.RequestID}, "f", nil))
	require.Equal(t, 200, r.Status, r.Body)

	eventually(t, 10*time.Second, "both branches to finish", func() bool {
		n := 0
		for _, l := range readLines(t, c.effects) {
			if l == "after" {
				n++
			}
		}
		return n == 3
	})
	require.ElementsMatch(t, []string{
		"part a start", "part a done", "part slow start", "part slow done", // once: reused by the restored runs
		"part ask start", "part ask done", "after", // the original answer
		"part ask start", "part ask done", "after", // rollback: the waiting child's node re-runs from its top
		"part ask start", "part ask done", "after", // fork
	}, readLines(t, c.effects))
}

// In a session, a limit pause commits a checkpoint labelled "Execution limit reached".
func TestLimitPauseCheckpointInSession(t *testing.T) {
	e := startWorker(t, tc)
	session := "s-" + taskQueue(t)
	ts, err := service(tc, e.tq).Start(context.Background(), session, sessions.TurnRequest{Workflow: testagents.EchoWorkflow,
		Input: []byte(`"hi"`), Limits: &contracts.Limits{MaxNodeExecutions: 1}})
	require.NoError(t, err)
	// The echo node is the only node: one execution fits. Turn 2 has its own allowance.
	resp, _ := nextResponse(t, e.follow, ts.RunID, 0)
	require.Equal(t, []string{"message", "checkpoint", "done"}, types(resp))
	eventually(t, 10*time.Second, "the turn to end", func() bool { return sessionView(t, e, session).Active == nil })

	ts, err = service(tc, e.tq).Start(context.Background(), session, sessions.TurnRequest{Workflow: testagents.FanoutWorkflow,
		Input: []byte(`"go"`), Limits: &contracts.Limits{MaxChildInvocations: 1}})
	require.NoError(t, err)
	resp, _ = nextResponse(t, e.follow, ts.RunID, 0)
	require.Equal(t, []string{"limit-reached", "interrupt", "checkpoint", "done"}, types(resp))
	require.Equal(t, protocol.LimitChildInvocations, resp[0].Limit)
	v := sessionView(t, e, session)
	require.Equal(t, protocol.LimitCheckpoint, v.Checkpoints[len(v.Checkpoints)-1].Label)
	require.Equal(t, protocol.LimitQuestion, v.Pending[0].Input.Question)
}
