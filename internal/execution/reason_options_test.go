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

// TestReasonFailureCaps: a call's own failures are capped at 3 per tool call and 5 per model
// pass by default; -1 removes a cap; a caller's retry policy has none unless it is set; a cap
// below -1 is refused.
func TestReasonFailureCaps(t *testing.T) {
	spec, err := ReasonOptions{Input: "hi"}.spec()
	require.NoError(t, err)
	require.Equal(t, [2]int{5, 3}, [2]int{spec.ModelFailures, spec.ToolFailures})

	spec, err = ReasonOptions{Input: "hi", MaxFailures: -1, ToolExecution: ToolExecution{MaxFailures: 7}}.spec()
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 7}, [2]int{spec.ModelFailures, spec.ToolFailures})

	mine := &temporal.RetryPolicy{MaximumAttempts: 4}
	spec, err = ReasonOptions{Input: "hi", Retry: mine, ToolExecution: ToolExecution{Retry: mine, MaxFailures: 2}}.spec()
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 2}, [2]int{spec.ModelFailures, spec.ToolFailures})

	_, err = ReasonOptions{Input: "hi", ToolExecution: ToolExecution{MaxFailures: -2}}.spec()
	require.EqualError(t, err, "hooks.Reason: ToolExecution.MaxFailures must be -1 (no cap), 0 (the default) or a count of failures, not -2")
}
