package workflows_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/stretchr/testify/require"
)

// A last pass that still calls tools and cannot finish (no return among its calls) runs none of
// them: no pass is left to read their results. Emissions and questions of that turn are not
// published or asked either.
func TestLastPassWithControlCallsRunsNoTools(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, nil)
	done := output(t, "The outcome.", "done", summarySchema, nil)
	t.Run("emit and tool", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_emit__card", `{"title":"one"}`), call("lookup_order", `{"orderId":"A-1"}`)))
		h, box := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{MaxSteps: 1},
			Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"card": card}}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonMaxSteps, contracts.CodeOf(err), "err: %v", err)
		f := contracts.FailureOf(err)
		require.Contains(t, f.Message, "reached maxSteps (1) before producing a final response")
		require.EqualValues(t, 1, f.Details["maxSteps"])
		require.EqualValues(t, 1, f.Details["modelPasses"])
		require.Equal(t, 0, box.n("lookup_order"), "the tool does not run")
		require.Equal(t, []string{"error", "done"}, h.types(), "the card is not published")
		require.Equal(t, 1, model.Calls())
	})
	t.Run("tool and return", func(t *testing.T) {
		model := fake.New(fake.Calls(call("lookup_order", `{"orderId":"A-1"}`), call("kortyx_return__done", `{"text":"draft"}`)))
		h, box := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{MaxSteps: 1},
			Outputs: &hooks.Outputs{Return: map[string]*contracts.OutputContract{"done": done}}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonOutputBudgetExhausted, contracts.CodeOf(err), "err: %v", err)
		require.Equal(t, 1, box.n("lookup_order"), "the return needs the tool's result: the tool runs, then no pass is left to generate the value")
		require.Empty(t, structuredKinds(h), "no draft of the return is published")
		require.Equal(t, 1, model.Calls())
	})
	t.Run("two returns", func(t *testing.T) {
		model := fake.New(fake.Calls(call("lookup_order", `{"orderId":"A-1"}`), call("kortyx_return__done", `{"text":"a"}`), call("kortyx_return__done", `{"text":"b"}`)))
		h, box := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{MaxSteps: 1},
			Outputs: &hooks.Outputs{Return: map[string]*contracts.OutputContract{"done": done}}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonOutputContractCorrectionExh, contracts.CodeOf(err), "err: %v", err)
		require.EqualValues(t, 1, contracts.FailureOf(err).Details["outputContractCorrections"])
		require.Equal(t, 0, box.n("lookup_order"), "no pass is left for the correction: the tool does not run")
		require.Equal(t, []string{"error", "done"}, h.types())
	})
}
