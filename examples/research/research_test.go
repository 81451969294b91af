package research_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

func TestResearchFansOutAndAsksThroughTheRoot(t *testing.T) {
	reg := workflows.NewRegistry()
	require.NoError(t, research.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{})

	env.OnQuestion("speculative", kortyxtest.Select("yes")) // the child topic workflow asks it
	res, err := env.Run(research.WorkflowID, "AI agents")
	require.NoError(t, err)

	require.Len(t, env.Asked(), 1)
	asked := env.Asked()[0]
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

	types := env.Types()
	progress := 0
	for _, c := range env.Chunks() {
		if c.DataType == "research-progress" {
			progress++
		}
	}
	require.Equal(t, 3, progress, "each child reported progress once, on the root's stream")
	require.Equal(t, []string{"interrupt", "done", "message", "structured-data", "done"}, types[3:])
}
