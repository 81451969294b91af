package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// oneLocalPass runs one model pass as a local activity with retries, as the fast path does.
func oneLocalPass(ctx workflow.Context, in protocol.ModelPassInput) (protocol.ModelPassResult, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 5},
	})
	var resp protocol.ModelPassResult
	err := workflow.ExecuteLocalActivity(ctx, protocol.ModelActivityName, in).Get(ctx, &resp)
	return resp, err
}

// localPass runs oneLocalPass on broker over a model playing turns and returns the chunks of
// the run's stream (as segment:type:delta).
func localPass(t *testing.T, broker stream.Broker, turns ...fake.Turn) []string {
	t.Helper()
	a, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(fake.New(turns...)), DefaultProvider: fake.ID})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(oneLocalPass)
	a.Register(env)
	env.ExecuteWorkflow(oneLocalPass, protocol.ModelPassInput{RunID: "run-1", Node: "chat", OpID: "op-1", SegmentID: "step-0",
		Stream: true, Emit: true, Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	es, err := broker.Read(context.Background(), "run-1", 0, 0)
	require.NoError(t, err)
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Chunk.SegmentID + ":" + string(e.Chunk.Type) + ":" + e.Chunk.Delta
	}
	return out
}

// TestLocalPassRetryInvalidates: a fast-path pass (a local activity: no heartbeat details)
// whose first attempt failed after publishing text invalidates that text and streams its
// retry under a segment of its own, as a regular pass does; a retry after an attempt that
// published nothing keeps the segment.
func TestLocalPassRetryInvalidates(t *testing.T) {
	broken := fake.Fail(contracts.CodeProviderTransportError, true, "broken stream")
	broken.Text, broken.FailAfter = "a b", 1
	got := localPass(t, stream.NewMemory(stream.MemoryOptions{}), broken, fake.Turn{Text: "c d"})
	require.Equal(t, []string{"step-0:text-start:", "step-0:text-delta:a ", "step-0:text-invalidated:",
		"step-0~2:text-start:", "step-0~2:text-delta:c ", "step-0~2:text-delta:d", "step-0~2:text-end:"}, got)

	got = localPass(t, stream.NewMemory(stream.MemoryOptions{}),
		fake.Fail(contracts.CodeProviderHTTPError, true, "slow down"), fake.Turn{Text: "c d"})
	require.Equal(t, []string{"step-0:text-start:", "step-0:text-delta:c ", "step-0:text-delta:d", "step-0:text-end:"}, got)
}

// TestLocalPassAfterCrash: a fast-path pass run again by another worker (its local activity
// starts at attempt 1: the worker that ran it died before its workflow task completed) finds
// the text the dead worker published in the stream, invalidates it and streams under a new
// segment; a third run finds both.
func TestLocalPassAfterCrash(t *testing.T) {
	broker := stream.NewMemory(stream.MemoryOptions{})
	first := localPass(t, broker, fake.Turn{Text: "a b"})
	require.Equal(t, []string{"step-0:text-start:", "step-0:text-delta:a ", "step-0:text-delta:b", "step-0:text-end:"}, first)
	again := localPass(t, broker, fake.Turn{Text: "c"})
	require.Equal(t, []string{"step-0:text-invalidated:", "step-0~2:text-start:", "step-0~2:text-delta:c", "step-0~2:text-end:"}, again[len(first):])
	third := localPass(t, broker, fake.Turn{Text: "e"})
	require.Equal(t, []string{"step-0~2:text-invalidated:", "step-0~3:text-start:", "step-0~3:text-delta:e", "step-0~3:text-end:"}, third[len(again):])
}
