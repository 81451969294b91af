package research_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

func TestResearchFansOutAndAsksThroughTheRoot(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	broker := stream.NewMemory()
	reg := workflows.NewRegistry()
	require.NoError(t, research.Register(reg))
	workflows.NewRunner(reg).Register(env)
	(&activities.Activities{Stream: broker}).Register(env)

	var asked contracts.PendingRequest
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contracts.StateQueryName)
		require.NoError(t, err)
		var view contracts.RunView
		require.NoError(t, v.Get(&view))
		require.NotNil(t, view.Pending)
		asked = *view.Pending
		env.SignalWorkflow(contracts.RespondName, contracts.Response{Token: asked.Token, RequestID: asked.RequestID, Selected: []string{"yes"}})
	}, time.Minute)
	env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: research.WorkflowID, Input: json.RawMessage(`"AI agents"`)})
	require.NoError(t, env.GetWorkflowError())
	var res contracts.RunResult
	require.NoError(t, env.GetWorkflowResult(&res))

	require.Equal(t, research.Question, asked.Input.Question)
	require.Equal(t, research.TopicWorkflowID, asked.Workflow, "the question is the child's, asked by the root")
	findings := res.State.Data["findings"].([]any)
	require.Len(t, findings, 3)
	for i, angle := range research.Angles {
		require.Equal(t, angle, findings[i].(map[string]any)["angle"], "results in call order")
	}
	require.Equal(t, "Research on AI agents. background: the idea is older than its current popularity. "+
		"practice: teams start small and measure before they scale. "+
		"risks: failures come from unclear ownership and unchecked automation; long-term effects on jobs and trust are still unknown. (10 sources)",
		res.State.UI.Message)
	require.Contains(t, res.State.UI.Message, "long-term effects on jobs and trust are still unknown")
	require.Contains(t, res.State.UI.Message, "(10 sources)")

	entries, err := broker.Read(context.Background(), "default-test-workflow-id", 0, 0)
	require.NoError(t, err)
	var types []string
	progress := 0
	for _, e := range entries {
		types = append(types, string(e.Chunk.Type))
		if e.Chunk.DataType == "research-progress" {
			progress++
		}
	}
	require.Equal(t, 3, progress, "each child reported progress once, on the root's stream")
	require.Equal(t, []string{"interrupt", "done", "message", "structured-data", "done"}, types[3:])
}
