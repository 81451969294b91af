package support_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

func run(t *testing.T, message, decision string) (*fake.Model, *support.Store, []contracts.Chunk, contracts.RunResult) {
	t.Helper()
	store := support.NewStore()
	ts, err := support.Tools(store)
	require.NoError(t, err)
	set, err := tools.NewSet(ts...)
	require.NoError(t, err)
	model := fake.NewResponder(support.FakeModel())
	reg := workflows.NewRegistry()
	require.NoError(t, support.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{Model: model, Tools: set})
	if decision != "" {
		env.OnQuestion("", kortyxtest.Select(decision)) // the refund's approval
	}
	res, err := env.Run(support.WorkflowID, message)
	require.NoError(t, err)
	if decision != "" {
		require.Len(t, env.Asked(), 1)
		require.Equal(t, "Approve refund?", env.Asked()[0].Input.Question)
	}
	return model, store, env.Chunks(), res
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
