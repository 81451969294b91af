package integration_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/internal/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
)

// Issue 10 item 3: every model pass and tool call activity carries a summary (the model, the
// tool) that the Temporal UI and CLI show; it is the UserMetadata of its scheduled event.
func TestModelAndToolActivitiesHaveSummaries(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.ToolAgentWorkflow, "record something")
	_, err := result(t, run)
	require.NoError(t, err)
	var got []string
	for _, ev := range history(t, tc, run.GetID()).Events {
		if ev.GetEventType() != enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			continue
		}
		var summary string
		if p := ev.GetUserMetadata().GetSummary(); p != nil {
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &summary))
		}
		got = append(got, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()+": "+summary)
	}
	require.Equal(t, []string{
		"kortyx.Model: model fake:test",
		"kortyx.Tool: tool record_step",
		"kortyx.Model: model fake:test",
	}, got)
}
