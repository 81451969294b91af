package contracts_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
)

const secret = "password authentication failed for user kortyx at 10.0.3.7:5432 (pw hunter2)"

// exhausted is an activity failure as the workflow sees it once Temporal gave up retrying.
func exhausted(activityType string, state enumspb.RetryState, cause *failurepb.Failure) error {
	return temporal.GetDefaultFailureConverter().FailureToError(&failurepb.Failure{Message: "activity error", Cause: cause,
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityType: &commonpb.ActivityType{Name: activityType}, ActivityId: "7", ScheduledEventId: 7, RetryState: state}}})
}

func TestUndeclaredApplicationErrorTypesAreNotCodes(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	for _, typ := range []string{"TOOL_RETRY", "DB_ERROR", "ECONNREFUSED", "someGoType"} {
		t.Run(typ, func(t *testing.T) {
			app := fc.ErrorToFailure(temporal.NewApplicationErrorWithOptions(secret, typ,
				temporal.ApplicationErrorOptions{Cause: errors.New("dial tcp 10.0.3.7:5432: " + secret)}))
			err := exhausted("kortyx.Tool", enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED, app)

			require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(err))
			f := contracts.FailureOf(err)
			b, jerr := json.Marshal(f)
			require.NoError(t, jerr)
			require.JSONEq(t, `{"version":1,"code":"EXECUTION_FAILED","category":"internal","message":"An unexpected error occurred.",
				"retryable":false,"context":{"activity":"kortyx.Tool","retryState":"MaximumAttemptsReached"}}`, string(b))
			require.Contains(t, err.Error(), "hunter2", "the full error stays in the Temporal error")
		})
	}
}

func TestDeclaredCodesStillCrossActivities(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	orig := &contracts.Error{Code: contracts.CodeProviderHTTPError, Message: "The provider returned HTTP 503.", Status: 503, Retryable: true}
	err := exhausted("kortyx.Model", enumspb.RETRY_STATE_TIMEOUT, fc.ErrorToFailure(contracts.ToTemporal(orig)))
	require.Equal(t, contracts.CodeProviderHTTPError, contracts.CodeOf(err))
	f := contracts.FailureOf(err)
	require.Equal(t, "The provider returned HTTP 503.", f.Message)
	require.Equal(t, 503, f.Status)
	require.Equal(t, map[string]any{"activity": "kortyx.Model", "retryState": "Timeout"}, f.Context)

	// A declared type without a descriptor is read from the type and the message.
	plain := exhausted("kortyx.Tool", enumspb.RETRY_STATE_NON_RETRYABLE_FAILURE,
		fc.ErrorToFailure(temporal.NewNonRetryableApplicationError("Tool missing.", string(contracts.CodeUnknownTool), nil)))
	require.Equal(t, contracts.CodeUnknownTool, contracts.CodeOf(plain))
	require.Equal(t, "Tool missing.", contracts.FailureOf(plain).Message)
	require.True(t, contracts.CodeUnknownTool.Declared())
	require.False(t, contracts.Code("TOOL_RETRY").Declared())
}

func TestActivityTimeoutNamesTheActivity(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	to := fc.ErrorToFailure(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil))
	err := exhausted("kortyx.Model", enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED, to)
	require.Equal(t, contracts.CodeActivityTimeout, contracts.CodeOf(err))
	require.False(t, contracts.IsControlFlow(err))
	b, jerr := json.Marshal(contracts.FailureOf(err))
	require.NoError(t, jerr)
	require.JSONEq(t, `{"version":1,"code":"ACTIVITY_TIMEOUT","category":"internal",
		"message":"Activity kortyx.Model did not complete in time (Heartbeat timeout).","retryable":true,
		"context":{"activity":"kortyx.Model","retryState":"MaximumAttemptsReached","timeout":"Heartbeat"}}`, string(b))

	// A timeout whose last attempt failed with a declared code reports that code: it is the
	// reason the activity never completed.
	last := fc.ErrorToFailure(contracts.ToTemporal(&contracts.Error{Code: contracts.CodeProviderTransportError, Message: "Connection reset.", Retryable: true}))
	err = exhausted("kortyx.Model", enumspb.RETRY_STATE_TIMEOUT,
		fc.ErrorToFailure(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, fc.FailureToError(last))))
	require.Equal(t, contracts.CodeProviderTransportError, contracts.CodeOf(err))
	require.Equal(t, "Connection reset.", contracts.FailureOf(err).Message)

	require.Equal(t, "internal", contracts.CodeActivityTimeout.Category())
	for typ, name := range map[enumspb.TimeoutType]string{enumspb.TIMEOUT_TYPE_START_TO_CLOSE: "StartToClose",
		enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE: "ScheduleToClose", enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START: "ScheduleToStart"} {
		f := contracts.FailureOf(exhausted("kortyx.Tool", enumspb.RETRY_STATE_TIMEOUT, fc.ErrorToFailure(temporal.NewTimeoutError(typ, nil))))
		require.Equal(t, name, f.Context["timeout"])
		require.Equal(t, "Timeout", f.Context["retryState"])
	}

	// A timeout outside an activity (a child workflow's, say) is not an activity timeout.
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)))
}
