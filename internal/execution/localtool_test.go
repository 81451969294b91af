package execution

import (
	"errors"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
)

// regularActivityError is what a regular kortyx.Tool call returns for cause: the server's
// activity failure around it, as the SDK decodes it.
func regularActivityError(cause error, name string) error {
	fc := temporal.GetDefaultFailureConverter()
	return fc.FailureToError(&failurepb.Failure{Message: "activity error", Cause: fc.ErrorToFailure(cause),
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityType: &commonpb.ActivityType{Name: name}}}})
}

// TestLocalToolErrorIsTheRegularOne: whatever shape the SDK gives a local tool's failure (the
// bare cause on a worker, an activity error named after the Go function in the test
// environment), clients get the descriptor of a regular call's failure.
func TestLocalToolErrorIsTheRegularOne(t *testing.T) {
	coded := contracts.ToTemporal(contracts.Errorf(contracts.CodePayloadTooLarge, "the result of tool %q is too large", "calc"))
	causes := map[string]error{
		"coded":   coded,
		"plain":   temporal.NewApplicationError("warehouse offline", "TOOL_RETRY"),
		"timeout": temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil),
		"panic":   temporal.NewApplicationError("tool bug", "PanicError"),
	}
	want := map[string]contracts.Code{"coded": contracts.CodePayloadTooLarge, "plain": contracts.CodeExecutionFailed,
		"timeout": contracts.CodeActivityTimeout, "panic": contracts.CodeExecutionFailed}
	for name, cause := range causes {
		t.Run(name, func(t *testing.T) {
			regular := contracts.FailureOf(regularActivityError(cause, protocol.ToolActivityName))
			require.Equal(t, want[name], regular.Code)
			require.Equal(t, protocol.ToolActivityName, regular.Context["activity"])
			for shape, err := range map[string]error{
				"worker":      cause,
				"testsuite":   regularActivityError(cause, "func1"),
				"already set": regularActivityError(cause, protocol.ToolActivityName),
			} {
				got := localActivityError(err, protocol.ToolActivityName)
				require.Equal(t, regular, contracts.FailureOf(got), shape)
				var ae *temporal.ActivityError
				require.True(t, errors.As(got, &ae), shape)
				require.Equal(t, protocol.ToolActivityName, ae.ActivityType().GetName(), shape)
			}
		})
	}
	f := contracts.FailureOf(localActivityError(causes["timeout"], protocol.ToolActivityName))
	require.Equal(t, "Activity kortyx.Tool did not complete in time (StartToClose timeout).", f.Message)
	cancelled := temporal.NewCanceledError()
	require.Same(t, cancelled, localActivityError(cancelled, protocol.ToolActivityName), "a cancellation stays what it is")
}
