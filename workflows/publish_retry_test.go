package workflows_test

import (
	"context"
	"testing"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
)

// A stream store that does not answer for longer than the publish local activity retries (a
// minute) loses no chunk: the run publishes again until the chunks are stored, in order. The
// stream is the one of a run whose publishes never failed, chunk for chunk.
func TestPublishRetriedWhileTheStreamStoreIsDown(t *testing.T) {
	run := func(failures int) (chunks []string, calls int) {
		broker := stream.NewMemory(stream.MemoryOptions{})
		acts := &activities.Activities{Stream: broker, Providers: providers.NewSet(fake.New(fake.Text("Hello world"))), DefaultProvider: fake.ID}
		env := newEnv()
		reg := workflows.NewRegistry()
		require.NoError(t, reg.Add(def("agent", map[string]workflows.NodeFunc{"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "status", Data: map[string]any{"step": "start"}}); err != nil {
				return workflows.NodeResult{}, err
			}
			return reasonNode(hooks.ReasonOptions{}, nil)(ctx, in)
		}}, "__start__>chat")))
		workflows.NewRunner(reg).Register(env)
		env.RegisterActivityWithOptions(func(ctx context.Context, in protocol.PublishInput) error {
			calls++
			if calls <= failures {
				return contracts.ToTemporal(&contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true,
					Message: "The stream store (Redis at 127.0.0.1:1) does not answer."})
			}
			return acts.Publish(ctx, in)
		}, activity.RegisterOptions{Name: protocol.PublishActivityName})
		env.RegisterActivityWithOptions(acts.Model, activity.RegisterOptions{Name: protocol.ModelActivityName})
		env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "agent", Input: []byte(`"x"`)})
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		entries, err := broker.Read(context.Background(), testRunID, 0, 0)
		require.NoError(t, err)
		for i, e := range entries {
			require.Equal(t, int64(i+1), e.Offset)
			chunks = append(chunks, string(e.Chunk.Type)+" "+e.Chunk.Delta)
		}
		return chunks, calls
	}
	want, clean := run(0)
	require.Contains(t, want, "structured-data ")
	require.Equal(t, "done ", want[len(want)-1])
	// 40 failures outlast one publish local activity (18 attempts in its minute), and a second.
	got, calls := run(40)
	require.Equal(t, want, got)
	require.Equal(t, clean+40, calls)
}

// A session's run started with its start in its input (protocol.RunStart.Start, version 4)
// sends its checkpoint report with the chunks that follow it: the publish local activity
// carries it (and signals it before it publishes), and the workflow signals nothing. A publish
// that keeps failing longer than the local activity retries has the workflow signal the report,
// once, and then publish: the stream is the same.
func TestReportGoesWithThePublish(t *testing.T) {
	run := func(failures int) (chunks []string, carried, signalled []protocol.CheckpointReport) {
		broker := stream.NewMemory(stream.MemoryOptions{})
		acts := &activities.Activities{Stream: broker}
		env := newEnv()
		reg := workflows.NewRegistry()
		require.NoError(t, reg.Add(def("agent", map[string]workflows.NodeFunc{"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{Data: map[string]any{"said": "hi"}}, nil
		}}, "__start__>chat")))
		workflows.NewRunner(reg).Register(env)
		calls := 0
		env.RegisterActivityWithOptions(func(ctx context.Context, in protocol.PublishInput) error {
			calls++
			if in.Report != nil {
				require.Equal(t, "session-wf", in.Report.WorkflowID)
				carried = append(carried, in.Report.Report)
			}
			if calls <= failures {
				return contracts.ToTemporal(&contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true,
					Message: "The stream store (Redis at 127.0.0.1:1) does not answer."})
			}
			in.Report = nil // the test environment has no client to signal with
			return acts.Publish(ctx, in)
		}, activity.RegisterOptions{Name: protocol.PublishActivityName})
		env.OnSignalExternalWorkflow(mock.Anything, "session-wf", "", protocol.SessionCheckpointSignal, mock.Anything).Return(
			func(namespace, workflowID, runID, signalName string, arg any) error {
				signalled = append(signalled, arg.(protocol.CheckpointReport))
				return nil
			})
		in := protocol.RunStart{RunInput: contracts.RunInput{Workflow: "agent", Input: []byte(`"x"`), SessionID: "s-1"},
			Session: &protocol.SessionBinding{WorkflowID: "session-wf", SessionID: "s-1", TurnIndex: 1}}
		in.Start = reg.StartRecord(in, []byte("0123456789abcdef0123456789abcdef"))
		require.Equal(t, 4, in.Start.Version)
		env.ExecuteWorkflow(contracts.RunWorkflowName, in)
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		entries, err := broker.Read(context.Background(), testRunID, 0, 0)
		require.NoError(t, err)
		for _, e := range entries {
			chunks = append(chunks, string(e.Chunk.Type))
		}
		return chunks, carried, signalled
	}
	chunks, carried, signalled := run(0)
	require.Equal(t, []string{"checkpoint", "done"}, chunks)
	require.Len(t, carried, 1)
	require.True(t, carried[0].TurnEnded)
	require.NotNil(t, carried[0].Checkpoint)
	require.Empty(t, signalled, "the workflow signals nothing")

	// 40 failures outlast one publish local activity (18 attempts in its minute): every attempt
	// carried the report; then the workflow signals it and publishes without it.
	got, carried, signalled := run(40)
	require.Equal(t, chunks, got)
	require.Len(t, carried, 18)
	require.Len(t, signalled, 1)
	require.Equal(t, carried[0], signalled[0])
}
