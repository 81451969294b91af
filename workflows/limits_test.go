package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// runLimited runs wf with limits.
func (h *harness) runLimited(wf string, input any, l contracts.Limits) {
	h.t.Helper()
	b, err := json.Marshal(input)
	require.NoError(h.t, err)
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: wf, Input: b, SessionID: "s-1", Limits: &l})
	require.True(h.t, h.env.IsWorkflowCompleted())
}

func continueLimit(p contracts.PendingRequest) contracts.Response {
	return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: []string{protocol.LimitContinue}}
}

// MaxNodeExecutions 2 with a parallel group of two children: the parent's node and child a's
// node use the allowance, child b waits; the run pauses; Continue lets b run. Each child ran
// once, results in order.
func TestNodeLimitPausesParallelChildren(t *testing.T) {
	var aRuns, bRuns int
	var got []string
	counting := func(summary string, runs *int) workflows.NodeFunc {
		return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			*runs++
			return workflows.NodeResult{Data: map[string]any{"summary": summary}}, nil
		}
	}
	parent := def("parent", map[string]workflows.NodeFunc{
		"fan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Parallel(ctx,
				hooks.WorkflowCall{ID: "a", Workflow: "a", Input: map[string]any{"topic": "a"}},
				hooks.WorkflowCall{ID: "b", Workflow: "b", Input: map[string]any{"topic": "b"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			for _, r := range res {
				got = append(got, r.Data["summary"].(string))
			}
			return workflows.NodeResult{}, nil
		},
	}, "__start__>fan")
	h := newHarness(t, parent,
		child("a", map[string]workflows.NodeFunc{"n": counting("A", &aRuns)}, "__start__>n"),
		child("b", map[string]workflows.NodeFunc{"n": counting("B", &bRuns)}, "__start__>n"))
	var asked contracts.PendingRequest
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		asked = p
		return continueLimit(p)
	})
	h.runLimited("parent", "go", contracts.Limits{MaxNodeExecutions: 2})
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"A", "B"}, got)
	require.Equal(t, []int{1, 1}, []int{aRuns, bRuns})
	require.Equal(t, []string{"limit-reached", "interrupt", "done", "done"}, h.types())
	lr := h.chunks()[0]
	require.Equal(t, protocol.LimitNodeExecutions, lr.Limit)
	require.Equal(t, 2, lr.Maximum)
	require.Equal(t, 2, lr.Consumed)
	require.Equal(t, testRunID, lr.RunID)
	require.Equal(t, protocol.LimitQuestion, asked.Input.Question)
	require.Equal(t, []contracts.Option{{ID: "continue", Label: "Continue"}}, asked.Input.Options)
}

// MaxModelPasses 1 with a tool loop of two passes: the run pauses before the second pass;
// after Continue, the tool is not run again and usage is counted once.
func TestModelPassLimitPausesAndContinues(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Text("It shipped."))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}}, nil),
	}, "__start__>chat")
	h.signalAt(time.Minute, continueLimit)
	h.runLimited("agent", "Where is A-1?", contracts.Limits{MaxModelPasses: 1})
	out, err := h.result()
	require.NoError(t, err)
	require.Equal(t, 2, model.Calls())
	require.Equal(t, 1, box.n("lookup_order"))
	require.Equal(t, 10+0+10+2, out.State.Runtime.TokenUsage.Total)
	types := h.types()
	require.Equal(t, []string{"limit-reached", "interrupt", "done"}, types[:3])
	require.Equal(t, protocol.LimitModelPasses, h.chunks()[0].Limit)
}

// Cancelling at a limit pause cancels the run; a tool limit counts tool calls.
func TestToolLimitCancelled(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Call("lookup_order", `{"orderId":"A-2"}`), fake.Text("Both shipped."))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}}, nil),
	}, "__start__>chat")
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Cancel: true}
	})
	h.runLimited("agent", "Where are A-1 and A-2?", contracts.Limits{MaxToolCalls: 1})
	_, err := h.result()
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
	require.Equal(t, 1, box.n("lookup_order"))
	require.Equal(t, []string{"limit-reached", "interrupt", "done", "cancelled", "done"}, h.types())
}

// MaxChildInvocations 1: the second child of a group waits for a Continue.
func TestChildInvocationLimit(t *testing.T) {
	parent := def("parent", map[string]workflows.NodeFunc{
		"fan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Parallel(ctx,
				hooks.WorkflowCall{ID: "1", Workflow: "upper", Input: map[string]any{"topic": "a"}},
				hooks.WorkflowCall{ID: "2", Workflow: "upper", Input: map[string]any{"topic": "b"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"got": res[0].Data["summary"].(string) + res[1].Data["summary"].(string)}}, nil
		},
	}, "__start__>fan")
	h := newHarness(t, parent, child("upper", map[string]workflows.NodeFunc{"up": upper}, "__start__>up"))
	h.signalAt(time.Minute, continueLimit)
	h.runLimited("parent", "go", contracts.Limits{MaxChildInvocations: 1})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "AB", res.State.Data["got"])
	require.Equal(t, protocol.LimitChildInvocations, h.chunks()[0].Limit)
	require.Equal(t, []string{"limit-reached", "interrupt", "done", "done"}, h.types())
}

func TestNegativeLimitsAreRefused(t *testing.T) {
	h := newHarness(t, def("w", map[string]workflows.NodeFunc{"n": returns(workflows.NodeResult{})}, "__start__>n"))
	h.runLimited("w", "go", contracts.Limits{MaxToolCalls: -1})
	_, err := h.result()
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))
	require.NoError(t, workflows.NewRegistry().SetLimits(contracts.Limits{MaxModelPasses: 3}))
	require.Error(t, workflows.NewRegistry().SetLimits(contracts.Limits{MaxModelPasses: -3}))
}
