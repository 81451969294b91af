package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPollOptions(t *testing.T) {
	t.Setenv("KORTYX_WORKER_IDENTITY", "w-1")
	for poll, want := range map[string][2]bool{"all": {false, false}, "workflows": {true, false}, "activities": {false, true}} {
		wo, err := PollOptions(poll)
		require.NoError(t, err, poll)
		require.Equal(t, want, [2]bool{wo.LocalActivityWorkerOnly, wo.DisableWorkflowWorker}, poll)
		require.Equal(t, "w-1", wo.Identity)
		require.Equal(t, poll, Polls(wo))
	}
	_, err := PollOptions("both")
	require.EqualError(t, err, `worker: --poll (or KORTYX_WORKER_POLL) is "both"; want all, workflows or activities`)
}
