package kortyxtest

import (
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// Two looks at a waiting run before it has received the answer sent by the first (as when two
// local activities end in one step of the test environment) send one answer: the second look
// neither sends the next queued answer nor reports the question as unanswered.
func TestAnswerInFlightIsNotSentTwice(t *testing.T) {
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{
		ID: "ask", Version: "1",
		Nodes: map[string]workflows.Node{"ask": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			name, err := hooks.AskText(ctx, "name", "What is your name?")
			return workflows.NodeResult{UI: &workflows.UI{Message: "Hello, " + name + "!"}}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "ask"}},
	}))
	env := New(reg, Options{})
	// While this action is due, the question is left waiting; then it is answered and looked at
	// again before the answer arrives.
	env.At(time.Minute, func() {
		env.OnQuestion("name", Text("Ada"), Text("Bo"))
		env.answerPending()
		env.answerPending()
	})
	res, err := env.Run("ask", "")
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", res.State.UI.Message)
	require.Len(t, env.answers["name"], 1, "the second answer is still queued")
}
