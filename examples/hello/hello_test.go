package hello_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

func TestHello(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	broker := stream.NewMemory()
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	workflows.NewRunner(reg).Register(env)
	(&activities.Activities{Stream: broker}).Register(env)

	// A minute after the run starts waiting, answer its question by signal.
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contracts.StateQueryName)
		require.NoError(t, err)
		var view contracts.RunView
		require.NoError(t, v.Get(&view))
		env.SignalWorkflow(contracts.RespondName, contracts.Response{
			Token: view.Pending.Token, RequestID: view.Pending.RequestID, Text: "Ada"})
	}, time.Minute)
	env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "hello", Input: json.RawMessage(`""`)})
	require.NoError(t, env.GetWorkflowError())

	entries, err := broker.Read(context.Background(), "default-test-workflow-id", 0, 0)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, string(e.Chunk.Type)+" "+e.Chunk.Content)
	}
	require.Equal(t, []string{"interrupt ", "done ", "message Hello, Ada!", "done "}, got)
}
