package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// failingToolCall runs one attempt of a call of a tool that always fails retryably, with the
// heartbeat details an earlier attempt left (nil: none), and returns the status chunks the
// attempt published and its error.
func failingToolCall(t *testing.T, details any) ([]contracts.Chunk, error) {
	t.Helper()
	failing, err := tools.Func("db_query", "Queries.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			return "", tools.Retryable(errors.New("connection refused"))
		})
	require.NoError(t, err)
	set, err := tools.NewSet(failing)
	require.NoError(t, err)
	broker := stream.NewMemory(stream.MemoryOptions{})
	a, err := activities.New(activities.Config{Stream: broker, Tools: set, Providers: providers.NewSet(fake.New())})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)
	if details != nil {
		env.SetHeartbeatDetails(details)
	}
	_, err = env.ExecuteActivity(protocol.ToolActivityName, protocol.ToolCallInput{RunID: "run-1", Tool: "db_query",
		ToolCallID: "call-1", Input: json.RawMessage(`{}`), IdempotencyKey: "run-1:op:call-1", Node: "agent", MaxFailures: 3})
	entries, rerr := broker.Read(context.Background(), "run-1", 0, 0)
	require.NoError(t, rerr)
	var chunks []contracts.Chunk
	for _, e := range entries {
		chunks = append(chunks, e.Chunk)
	}
	return chunks, err
}

// The count of a tool call's own failures comes from the heartbeat details of the earlier
// attempts, not from Temporal's attempt number: an attempt lost to a dead worker heartbeats
// the count it started with (here: one failure before it), so the next failure is the second
// of three; the third is final (non-retryable, the tool's type).
func TestToolFailuresCountFromHeartbeatDetails(t *testing.T) {
	chunks, err := failingToolCall(t, nil)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.False(t, ae.NonRetryable())
	require.Equal(t, time.Second, ae.NextRetryDelay())
	require.Equal(t, []contracts.Chunk{{Type: contracts.ChunkStatus, Node: "agent", Tool: "db_query", ToolCallID: "call-1",
		Message: "db_query failed (attempt 1 of 3), retrying in 1 s"}}, chunks)

	chunks, err = failingToolCall(t, map[string]int{"failures": 1})
	require.ErrorAs(t, err, &ae)
	require.False(t, ae.NonRetryable())
	require.Equal(t, 2*time.Second, ae.NextRetryDelay())
	require.Len(t, chunks, 1)
	require.Equal(t, "db_query failed (attempt 2 of 3), retrying in 2 s", chunks[0].Message)

	chunks, err = failingToolCall(t, map[string]int{"failures": 2})
	require.ErrorAs(t, err, &ae)
	require.True(t, ae.NonRetryable())
	require.Equal(t, "TOOL_RETRY", ae.Type())
	require.Empty(t, chunks, "the final failure announces no retry")
}
