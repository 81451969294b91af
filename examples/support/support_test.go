package support_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

func run(t *testing.T, message, decision string) (*fake.Model, *support.Store, []contracts.Chunk, contracts.RunResult) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	broker := stream.NewMemory()
	store := support.NewStore()
	ts, err := support.Tools(store)
	require.NoError(t, err)
	set, err := tools.NewSet(ts...)
	require.NoError(t, err)
	model := fake.NewResponder(support.FakeModel())
	reg := workflows.NewRegistry()
	require.NoError(t, support.Register(reg))
	workflows.NewRunner(reg).Register(env)
	(&activities.Activities{Stream: broker, Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set}).Register(env)
	if decision != "" {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(contracts.StateQueryName)
			require.NoError(t, err)
			var view contracts.RunView
			require.NoError(t, v.Get(&view))
			require.Equal(t, "Approve refund?", view.Pending.Input.Question)
			env.SignalWorkflow(contracts.RespondName, contracts.Response{Token: view.Pending.Token, RequestID: view.Pending.RequestID, Selected: []string{decision}})
		}, time.Minute)
	}
	input, _ := json.Marshal(message)
	env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: support.WorkflowID, Input: input})
	require.NoError(t, env.GetWorkflowError())
	var res contracts.RunResult
	require.NoError(t, env.GetWorkflowResult(&res))
	entries, err := broker.Read(context.Background(), "default-test-workflow-id", 0, 0)
	require.NoError(t, err)
	chunks := make([]contracts.Chunk, len(entries))
	for i, e := range entries {
		chunks[i] = e.Chunk
	}
	return model, store, chunks, res
}

func kinds(chunks []contracts.Chunk) []string {
	var out []string
	for _, c := range chunks {
		if c.Type == contracts.ChunkTextDelta {
			if n := len(out); n > 0 && out[n-1] == "text-delta…" {
				continue
			}
			out = append(out, "text-delta…")
			continue
		}
		out = append(out, string(c.Type))
	}
	return out
}

func TestRefundApproved(t *testing.T) {
	model, store, chunks, res := run(t, "Please refund order A-1001, it arrived broken.", "approve")
	require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", res.State.Data["answer"])
	require.Equal(t, 3, model.Calls(), "lookup, refund, answer")
	require.Equal(t, 1, store.Refunds())
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "interrupt", "done", "tool-call-start", "tool-call-result",
		"text-start", "text-delta…", "text-end", "done"}, kinds(chunks))
}

func TestRefundDenied(t *testing.T) {
	model, store, _, res := run(t, "Refund A-1003 please", "deny")
	require.Equal(t, "I have not refunded order A-1003: Tool call denied by user.", res.State.Data["answer"])
	require.Equal(t, 3, model.Calls())
	require.Equal(t, 0, store.Refunds())
}

func TestQuestionWithoutRefund(t *testing.T) {
	model, store, chunks, res := run(t, "Where is my order A-1002?", "")
	require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", res.State.Data["answer"])
	require.Equal(t, 2, model.Calls())
	require.Equal(t, 0, store.Refunds())
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta…", "text-end", "done"}, kinds(chunks))
}
