package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

func toolLines(t *testing.T, path string) []string {
	var out []string
	for _, l := range readLines(t, path) {
		if strings.HasPrefix(l, "tool ") {
			out = append(out, l)
		}
	}
	return out
}

// scheduled counts the scheduled activities of a type in the run's history.
func scheduled(t *testing.T, runID, activityType string) int {
	n := 0
	for _, e := range history(t, tc, runID).Events {
		if e.GetEventType() == enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
			e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activityType {
			n++
		}
	}
	return n
}

// activityCompleted reports whether the run's history has a completed activity of that type.
func activityCompleted(t *testing.T, runID, activityType string) bool {
	h := history(t, tc, runID)
	scheduled := map[int64]string{}
	for _, e := range h.Events {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if scheduled[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] == activityType {
				return true
			}
		}
	}
	return false
}

func TestWorkerKilledAfterToolBeforeNextPass(t *testing.T) {
	tq := taskQueue(t)
	effects := filepath.Join(t.TempDir(), "effects.txt")
	t.Setenv("KORTYX_TEST_SLOW_MODEL", "1") // the first worker's second model pass hangs
	first := startWorkerProcess(t, srv.Address(), tq, effects)
	run := startRun(t, tc, tq, testagents.ToolAgentWorkflow, "record something")
	eventually(t, 20*time.Second, "the tool call to complete", func() bool { return activityCompleted(t, run.GetID(), protocol.ToolActivityName) })
	eventually(t, 20*time.Second, "the next model pass to be scheduled", func() bool { return scheduled(t, run.GetID(), protocol.ModelActivityName) == 2 })
	require.Equal(t, []string{"tool n1"}, toolLines(t, effects))
	first.kill() // during the second model pass

	os.Unsetenv("KORTYX_TEST_SLOW_MODEL")
	second := startWorkerProcess(t, srv.Address(), tq, effects)
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, `recorded {"recorded":"n1"}`, res.State.Data["answer"])
	require.Equal(t, []string{"tool n1"}, toolLines(t, effects), "the completed tool is not run again")
	require.Equal(t, float64(2), res.State.Data["passes"])
	// The new worker streams only the retried pass, which first publishes the chunk queued
	// before it (the tool's result: a pass carries them, ModelPassInput.Chunks; a broker that
	// has it already, shared by the workers, ignores it by its key — this worker's memory
	// broker is new). The killed attempt published no text: nothing is invalidated, and the
	// retry streams under the pass's own segment.
	tail, _ := nextResponse(t, httpFollower(second.addr), run.GetID(), 0)
	require.Equal(t, []string{"tool-call-result", "text-start", "text-delta", "text-delta", "text-end", "done"}, types(tail))
	require.Equal(t, "step-1", tail[1].SegmentID)
	recordHistory(t, tc, "toolagent-worker-killed", run.GetID())
}

func TestApprovalAnsweredBySignalAfterWorkerRestart(t *testing.T) {
	tq := taskQueue(t)
	effects := filepath.Join(t.TempDir(), "effects.txt")
	first := startWorkerProcess(t, srv.Address(), tq, effects)
	run := startRun(t, tc, tq, testagents.ApprovalAgentWorkflow, "record something")
	resp, _ := nextResponse(t, httpFollower(first.addr), run.GetID(), 0)
	ask, in := interruptOf(t, resp)
	require.Equal(t, "Approve record_step?", in.Question)
	require.True(t, strings.HasPrefix(in.ID, "tool:"))
	eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, run.GetID()) == "waiting" })
	first.kill()
	require.Empty(t, toolLines(t, effects))

	second := startWorkerProcess(t, srv.Address(), tq, effects)
	require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), answer(ask, "", "approve")))
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, `recorded {"recorded":"n1"}`, res.State.Data["answer"])
	require.Equal(t, []string{"tool n1"}, toolLines(t, effects))
	tail, _ := nextResponse(t, httpFollower(second.addr), run.GetID(), 0)
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-end", "done"}, types(tail))
	recordHistory(t, tc, "approvalagent-restart", run.GetID())
}

func TestWorkerKilledDuringSchemaCorrections(t *testing.T) {
	tq := taskQueue(t)
	effects := filepath.Join(t.TempDir(), "effects.txt")
	t.Setenv("KORTYX_TEST_SLOW_MODEL", "1") // the first repair pass hangs on the first worker
	first := startWorkerProcess(t, srv.Address(), tq, effects)
	run := startRun(t, tc, tq, testagents.CorrectionAgentWorkflow, "compute")
	eventually(t, 20*time.Second, "the first repair pass to be scheduled", func() bool { return scheduled(t, run.GetID(), protocol.ModelActivityName) == 2 })
	first.kill() // in the middle of the correction sequence

	os.Unsetenv("KORTYX_TEST_SLOW_MODEL")
	startWorkerProcess(t, srv.Address(), tq, effects)
	res, err := result(t, run)
	require.NoError(t, err, "MaxSteps 3 and SchemaCorrections 2 are exactly enough: nothing was double-counted or lost")
	require.Equal(t, map[string]any{"value": float64(3)}, res.State.Data["result"])
	require.Equal(t, float64(3), res.State.Data["passes"], "the pass, then two repairs")
	require.Equal(t, 3, scheduled(t, run.GetID(), protocol.ModelActivityName), "the interrupted repair was retried, not scheduled again")
	recordHistory(t, tc, "correctionagent-worker-killed", run.GetID())

}
