package execution

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TestReasonActivityOptions: by default model passes and tool calls have no attempt limit and a
// retry window of max(6 × timeout, 10 min); a caller's policy is used as it is, unbounded.
func TestReasonActivityOptions(t *testing.T) {
	spec, err := ReasonOptions{Input: "hi"}.spec()
	require.NoError(t, err)
	require.Equal(t, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute, ScheduleToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout: 10 * time.Second, RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute}}, spec.ModelOptions)
	require.Equal(t, workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute, ScheduleToCloseTimeout: 12 * time.Minute,
		HeartbeatTimeout: 10 * time.Second, RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second}}, spec.ToolOptions)

	mine := &temporal.RetryPolicy{MaximumAttempts: 2}
	spec, err = ReasonOptions{Input: "hi", Timeout: 3 * time.Second, Retry: mine,
		ToolExecution: ToolExecution{Timeout: 30 * time.Second}}.spec()
	require.NoError(t, err)
	require.Equal(t, workflow.ActivityOptions{StartToCloseTimeout: 3 * time.Second, HeartbeatTimeout: 10 * time.Second, RetryPolicy: mine},
		spec.ModelOptions, "a caller's policy is used as given")
	require.Equal(t, 10*time.Minute, spec.ToolOptions.ScheduleToCloseTimeout, "at least 10 minutes")
	require.Zero(t, spec.ToolOptions.RetryPolicy.MaximumAttempts)
}
