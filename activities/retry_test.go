package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// onePass is a workflow that runs one model pass with retries, as the Reason loop schedules it.
func onePass(ctx workflow.Context, in protocol.ModelPassInput) (protocol.ModelPassResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 5},
	})
	var resp protocol.ModelPassResult
	err := workflow.ExecuteActivity(ctx, protocol.ModelActivityName, in).Get(ctx, &resp)
	return resp, err
}

// runPass runs onePass over a model playing turns and returns its response and the chunks of
// the run's stream.
func runPass(t *testing.T, turns ...fake.Turn) (protocol.ModelPassResult, []contracts.Chunk, *fake.Model) {
	t.Helper()
	broker := stream.NewMemory(stream.MemoryOptions{})
	model := fake.New(turns...)
	a, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(model), DefaultProvider: fake.ID})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(onePass)
	a.Register(env)
	env.ExecuteWorkflow(onePass, protocol.ModelPassInput{RunID: "run-1", Node: "chat", OpID: "op-1", SegmentID: "step-0",
		Stream: true, Emit: true, Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var resp protocol.ModelPassResult
	require.NoError(t, env.GetWorkflowResult(&resp))
	es, err := broker.Read(context.Background(), "run-1", 0, 0)
	require.NoError(t, err)
	chunks := make([]contracts.Chunk, len(es))
	for i, e := range es {
		chunks[i] = e.Chunk
	}
	return resp, append(chunks, contracts.Chunk{Type: contracts.ChunkDone}), model
}

type seen struct {
	Type      contracts.ChunkType
	SegmentID string
	Delta     string
}

func seenOf(chunks []contracts.Chunk) []seen {
	out := make([]seen, len(chunks))
	for i, c := range chunks {
		out[i] = seen{c.Type, c.SegmentID, c.Delta}
	}
	return out
}

var cut = &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Message: "connection reset"}

// A pass cut midway is retried: the retry voids the text the failed attempt streamed and
// streams under a new segment, so the finalized message holds the answer once.
func TestRetriedPassInvalidatesItsTextAndTheMessageHasNoDuplicate(t *testing.T) {
	resp, chunks, model := runPass(t,
		fake.Turn{Text: "Hello brave world", FailAfter: 2, Err: cut},
		fake.Text("Hello brave world"))
	require.Equal(t, "Hello brave world", resp.Text)
	require.Equal(t, 2, model.Calls())
	require.Equal(t, []seen{
		{contracts.ChunkTextStart, "step-0", ""},
		{contracts.ChunkTextDelta, "step-0", "Hello "},
		{contracts.ChunkTextDelta, "step-0", "brave "},
		{contracts.ChunkTextInvalidated, "step-0", ""},
		{contracts.ChunkTextStart, "step-0~2", ""},
		{contracts.ChunkTextDelta, "step-0~2", "Hello "},
		{contracts.ChunkTextDelta, "step-0~2", "brave "},
		{contracts.ChunkTextDelta, "step-0~2", "world"},
		{contracts.ChunkTextEnd, "step-0~2", ""},
		{contracts.ChunkDone, "", ""},
	}, seenOf(chunks))
	msg, status := sessions.Finalize("turn-1", chunks)
	require.Equal(t, sessions.Status("completed"), status)
	require.Equal(t, "Hello brave world", msg.Content)
	require.Len(t, msg.ContentPieces, 1)
	require.Equal(t, "Hello brave world", sessions.Buffer(chunks).Text)
}

// A retry after an attempt that streamed nothing (a 429 before the first token, a stream cut
// before its first delta) invalidates nothing and keeps the segment.
func TestRetryAfterNothingStreamedInvalidatesNothing(t *testing.T) {
	resp, chunks, model := runPass(t,
		fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429, Retryable: true, Message: "slow down"}},
		fake.Turn{Text: "Hello world", Err: cut}, // cut before its first delta
		fake.Text("Hello world"))
	require.Equal(t, "Hello world", resp.Text)
	require.Equal(t, 3, model.Calls())
	require.Equal(t, []seen{
		{contracts.ChunkTextStart, "step-0", ""},
		{contracts.ChunkTextDelta, "step-0", "Hello "},
		{contracts.ChunkTextDelta, "step-0", "world"},
		{contracts.ChunkTextEnd, "step-0", ""},
		{contracts.ChunkDone, "", ""},
	}, seenOf(chunks))
}
