package app

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPollOptions(t *testing.T) {
	t.Setenv("KORTYX_WORKER_IDENTITY", "w-1")
	for poll, want := range map[string][2]bool{"all": {false, false}, "workflows": {true, false}, "activities": {false, true}} {
		wo, err := pollOptions(poll)
		require.NoError(t, err, poll)
		require.Equal(t, want, [2]bool{wo.LocalActivityWorkerOnly, wo.DisableWorkflowWorker}, poll)
		require.Equal(t, "w-1", wo.Identity)
		require.Equal(t, poll, polls(wo))
	}
	wo, err := pollOptions("")
	require.NoError(t, err)
	require.Equal(t, "all", polls(wo), "the zero value polls everything")
	_, err = pollOptions("both")
	require.EqualError(t, err, `worker: --poll (or KORTYX_WORKER_POLL) is "both"; want all, workflows or activities`)
	require.ErrorIs(t, err, ErrUsage)
}

// A bad Poll is a usage error before anything else, a bad configuration the configuration's.
func TestRunRefusesBadOptionsFirst(t *testing.T) {
	bad := Config{err: errors.New("kortyx: KORTYX_LOG_FORMAT=\"xml\": use text or json")}
	err := Run(context.Background(), bad, Options{Poll: "both"})
	require.ErrorIs(t, err, ErrUsage)
	err = Run(context.Background(), bad, Options{})
	require.EqualError(t, err, `kortyx: KORTYX_LOG_FORMAT="xml": use text or json`)
	require.NotErrorIs(t, err, ErrUsage)
}
