package integration_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// statusSteps lists, in history order, the KortyxStatus values a run upserted and the
// activities it scheduled ("activity:<type>").
func statusSteps(t *testing.T, h *historypb.History) []string {
	t.Helper()
	var out []string
	for _, ev := range h.Events {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			p := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeStatus]
			if p == nil {
				continue
			}
			var s string
			require.NoError(t, json.Unmarshal(p.GetData(), &s))
			out = append(out, s)
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			out = append(out, "activity:"+ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		}
	}
	return out
}

// Issue 31: a run lists "running" after an answer only when it then waits for work. Hello ends
// in the workflow task that takes its answer: it goes from "waiting" straight to "completed"
// (two status upserts, not three). The refund approval is followed by the refund tool: the run
// is listed "running" before that activity is scheduled, and is no longer listed as waiting
// while it runs.
func TestQuietStatusAfterAnswer(t *testing.T) {
	redis := redistest.Start(t)
	p := startProcess(t, taskQueue(t), nil, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0")
	api := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	ask, _, last := askHello(t, api, "quiet-hello")
	run := runOfSession(t, "quiet-hello")
	eventually(t, 10*time.Second, "hello listed as waiting", func() bool { return isWaiting(t, tc, run) })
	answerHello(t, api, "quiet-hello", "t2", ask, last, "Ada")
	eventually(t, 10*time.Second, "hello completed", func() bool { return statusAttribute(t, tc, run) == "completed" })
	require.Equal(t, []string{"waiting", "completed"}, statusSteps(t, history(t, tc, run)))

	refund, refundLast := askRefund(t, api, "quiet-refund", "A-1001")
	refundRun := runOfSession(t, "quiet-refund")
	answerRefund(t, api, "quiet-refund", "A-1001", refund, refundLast, true)
	eventually(t, 10*time.Second, "refund completed", func() bool { return statusAttribute(t, tc, refundRun) == "completed" })
	steps := statusSteps(t, history(t, tc, refundRun))
	i := slices.Index(steps, "waiting")
	require.True(t, i >= 0 && i+2 < len(steps), "%v", steps)
	require.Equal(t, []string{"waiting", "running", "activity:kortyx.Tool"}, steps[i:i+3],
		"after the approval: running before the next activity: %v", steps)
	require.Equal(t, []string{"waiting", "running", "completed"}, slices.DeleteFunc(slices.Clone(steps[i:]), func(s string) bool {
		return strings.HasPrefix(s, "activity:")
	}), "then completed: %v", steps)
}
