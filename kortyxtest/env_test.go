package kortyxtest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/examples/triage"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func helloEnv(t *testing.T) *kortyxtest.Env {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, hello.Register(reg))
	return kortyxtest.New(reg, kortyxtest.Options{})
}

// slowAsker sleeps two minutes (test time), then asks for a name.
func slowAsker(t *testing.T) *kortyxtest.Env {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{
		ID: "slow", Version: "1",
		Nodes: map[string]workflows.Node{"ask": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if err := workflow.Sleep(ctx, 2*time.Minute); err != nil {
				return workflows.NodeResult{}, err
			}
			name, err := hooks.AskText(ctx, "name", "What is your name?")
			return workflows.NodeResult{UI: &workflows.UI{Message: "Hello, " + name + "!"}}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "ask"}},
	}))
	return kortyxtest.New(reg, kortyxtest.Options{})
}

func TestOnQuestionAnswersWhenAsked(t *testing.T) {
	env := helloEnv(t)
	env.OnQuestion("name", kortyxtest.Text("Ada"))
	res, err := env.Run("hello", "")
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", res.State.UI.Message)
	require.Equal(t, []string{"interrupt", "done", "message", "done"}, env.Types())
	require.Len(t, env.Asked(), 1)
	require.Equal(t, "name", env.Asked()[0].HookID)
	require.Equal(t, "What is your name?", env.Asked()[0].Input.Question)
	msgs := chunksOf(env, contracts.ChunkMessage)
	require.Len(t, msgs, 1)
	require.Equal(t, "Hello, Ada!", msgs[0].Content)
}

func TestAnyQuestionAnswer(t *testing.T) {
	env := helloEnv(t)
	env.OnQuestion("other", kortyxtest.Text("not for this question"))
	env.OnQuestion("", kortyxtest.Text("Grace"))
	res, err := env.Run("hello", "")
	require.NoError(t, err)
	require.Equal(t, "Hello, Grace!", res.State.UI.Message)
}

// A forgotten answer ends the test with an error that names the question instead of the test
// environment's timeout.
func TestQuestionWithoutAnswerIsReported(t *testing.T) {
	env := helloEnv(t)
	_, err := env.Run("hello", "")
	require.EqualError(t, err, `kortyxtest: the run asks "name" (node greet: "What is your name?") and no answer is queued for it: `+
		`add env.OnQuestion("name", ...) or answer it with env.AnswerAt; the run was cancelled`)
	require.Equal(t, []string{"interrupt", "done", "cancelled", "done"}, env.Types())
}

// An answer the run rejects by signal is followed by the next one queued for the question.
func TestRejectedAnswerThenTheNext(t *testing.T) {
	reg := workflows.NewRegistry()
	require.NoError(t, triage.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{})
	env.OnQuestion("confirm", kortyxtest.Select("close"), kortyxtest.Select("open"))
	res, err := env.Run(triage.WorkflowID, "I was charged twice on my invoice")
	require.NoError(t, err)
	require.Equal(t, "T-LOW-ID", res.State.Data["ticketId"])
	require.Len(t, env.Asked(), 1, "the same question, asked once")
	require.Equal(t, []string{"interrupt", "done", "resume-rejected", "message", "done"},
		kinds(chunksOf(env, contracts.ChunkInterrupt, contracts.ChunkDone, contracts.ChunkResumeRejected, contracts.ChunkMessage)))
	view, err := env.View()
	require.NoError(t, err)
	require.Equal(t, "default-test-workflow-id", view.RunID, "the run's workflow ID, its run id (docs/running.md)")
}

func TestAnswerAtAndUpdateAt(t *testing.T) {
	env := slowAsker(t)
	var outcomes []string
	env.UpdateAt(3*time.Minute, kortyxtest.Text(""), func(r contracts.RespondResult, err error) {
		outcomes = append(outcomes, string(contracts.CodeOf(err)))
	})
	env.UpdateAt(4*time.Minute, kortyxtest.Text("Ada"), func(r contracts.RespondResult, err error) {
		require.NoError(t, err)
		require.Equal(t, env.Asked()[0].RequestID, r.RequestID)
		outcomes = append(outcomes, "accepted at "+env.Now().Sub(env.Asked()[0].CreatedAt).String())
	})
	res, err := env.Run("slow", "")
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", res.State.UI.Message)
	require.Equal(t, []string{"INVALID_RESPONSE", "accepted at 2m0s"}, outcomes)

	env = slowAsker(t)
	env.AnswerAt(5*time.Minute, kortyxtest.Text("Bo"))
	res, err = env.Run("slow", "")
	require.NoError(t, err)
	require.Equal(t, "Hello, Bo!", res.State.UI.Message)
}

// An answer due while the run is not waiting is reported, and so is the question it then asks.
func TestAnswerAtBeforeTheQuestionIsReported(t *testing.T) {
	env := slowAsker(t)
	env.AnswerAt(time.Minute, kortyxtest.Text("Ada"))
	_, err := env.Run("slow", "")
	require.EqualError(t, err, "kortyxtest: the run is not waiting for an answer at 1m0s (status running)\n"+
		`kortyxtest: the run asks "name" (node ask: "What is your name?") and no answer is queued for it: `+
		`add env.OnQuestion("name", ...) or answer it with env.AnswerAt; the run was cancelled`)
}

func kinds(chunks []contracts.Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = string(c.Type)
	}
	return out
}

// chunksOf returns the published chunks of the given types, in order.
func chunksOf(env *kortyxtest.Env, types ...contracts.ChunkType) []contracts.Chunk {
	var out []contracts.Chunk
	for _, c := range env.Chunks() {
		if slices.Contains(types, c.Type) {
			out = append(out, c)
		}
	}
	return out
}
