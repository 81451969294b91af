package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func usage(in, out int) providers.Usage {
	return providers.Usage{Input: in, Output: out, Total: in + out}
}

func TestMixedTurnReturnRunsLast(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, map[string]contracts.StructuredKind{"title": contracts.StructuredSet})
	answer := output(t, "The answer.", "answer", summarySchema, map[string]contracts.StructuredKind{"text": contracts.StructuredTextDelta})
	model := fake.New(
		fake.Turn{Usage: usage(3, 4), ToolCalls: []providers.ToolCall{
			call("kortyx_stream_return__answer", `{"instruction":"answer from the evidence"}`),
			call("lookup_order", `{"orderId":"A-1"}`),
			call("lookup_order", `{"orderId":"A-2"}`),
			call("kortyx_stream_emit__card", `{"instruction":"card of the evidence"}`),
		}},
		fake.Turn{Usage: usage(3, 4), Deltas: []string{`{"title":"Verified `, `evidence"}`}},
		fake.Turn{Usage: usage(3, 4), Deltas: []string{`{"text":"Both `, `orders shipped."}`}},
	)
	var res hooks.ReasonResult
	h, box := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}},
		Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"card": card}, Return: map[string]*contracts.OutputContract{"answer": answer}}}, &res)
	h.run("agent", "check A-1 and A-2")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, 3, model.Calls(), "one pass, then one streamed generation per output")
	require.Equal(t, 2, box.n("lookup_order"))
	types := h.types()
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "tool-call-start", "tool-call-result"}, types[:4], "tools run before any structured chunk")
	require.Equal(t, []string{"set", "final", "text-delta", "text-delta", "final"}, structuredKinds(h))
	require.JSONEq(t, `{"title":"Verified evidence"}`, string(res.Emissions[0].Data))
	require.JSONEq(t, `{"text":"Both orders shipped."}`, string(res.Returned.Data))
	require.Equal(t, []int{0, 1, 2}, []int{res.Steps[0].Index, res.Steps[1].Index, res.Steps[2].Index})
	require.Equal(t, providers.Usage{Input: 9, Output: 12, Total: 21}, res.Usage)
	var order []string
	for _, r := range res.Steps[0].ToolResults {
		order = append(order, r.Name)
	}
	require.Equal(t, []string{"lookup_order", "lookup_order", "kortyx_stream_emit__card", "kortyx_stream_return__answer"}, order)
	gen := model.Requests()[1].Messages
	last := gen[len(gen)-1]
	require.Contains(t, last.Content, `Generate output contract "card": A card.`)
	require.Contains(t, gen[len(gen)-2].Content, "not completed yet", "calls without a result yet are reported as such")
}

func TestMixedTurnPausesAndResumes(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, nil)
	done := output(t, "The outcome.", "done", summarySchema, nil)
	ask := interruptContract(t)
	model := fake.New(
		fake.Calls(
			call("kortyx_return__done", `{"text":"draft"}`),
			call("refund", `{"orderId":"A-1"}`),
			call("kortyx_request_input__ask", `{"question":"Account for A-1?"}`),
			call("refund", `{"orderId":"A-2"}`),
			call("kortyx_request_input__ask", `{"question":"Account for A-2?"}`),
			call("kortyx_emit__card", `{"title":"draft"}`),
		),
		fake.Text(`{"title":"Two refunds"}`),
		fake.Text(`{"text":"Completed using both choices"}`),
	)
	var res hooks.ReasonResult
	h, box := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"refund"},
		Interrupts: &hooks.Interrupts{MaxRequests: 2, Contracts: map[string]*contracts.InterruptContract{"ask": ask}},
		Outputs:    &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"card": card}, Return: map[string]*contracts.OutputContract{"done": done}}}, &res)
	var atFirst, atSecond int
	var chunksAtFirst []string
	h.env.RegisterDelayedCallback(func() { atFirst = box.n("refund"); chunksAtFirst = h.types() }, 30*time.Second)
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"A"}`)}
	})
	h.env.RegisterDelayedCallback(func() { atSecond = box.n("refund") }, 90*time.Second)
	h.signalAt(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"B"}`)}
	})
	h.run("agent", "refund both")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, 1, atFirst, "the first pause comes after one mutation")
	require.Equal(t, []string{"interrupt", "done"}, chunksAtFirst, "nothing emitted before the first question")
	require.Equal(t, 2, atSecond)
	require.Equal(t, 2, box.n("refund"), "each mutation once")
	require.Equal(t, 3, model.Calls())
	require.JSONEq(t, `{"text":"Completed using both choices"}`, string(res.Returned.Data))
	require.Len(t, res.InterruptHistory, 2)
	require.Equal(t, []string{"final", "final"}, structuredKinds(h))
}

func TestMixedTurnBudget(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, nil)
	done := output(t, "The outcome.", "done", summarySchema, nil)
	for _, maxSteps := range []int{3, 4} {
		model := fake.New(
			fake.Calls(call("lookup_order", `{"orderId":"A-1"}`), call("kortyx_emit__card", `{"title":"d"}`), call("kortyx_return__done", `{"text":"d"}`)),
			fake.Text(`{"title":"Saved"}`),
			fake.Text(`Saved, all done.`), // the second generation is not JSON: a repair can fix it
			fake.Text(`{"text":"Saved and done"}`),
		)
		model2 := model
		var res hooks.ReasonResult
		h, box := outputsHarness(t, model2, hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{MaxSteps: maxSteps},
			Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"card": card}, Return: map[string]*contracts.OutputContract{"done": done}}}, &res)
		h.run("agent", "save")
		_, err := h.result()
		require.Equal(t, 1, box.n("lookup_order"))
		if maxSteps == 3 {
			require.Equal(t, contracts.CodeReasonOutputBudgetExhausted, contracts.CodeOf(err), "err: %v", err)
			f := contracts.FailureOf(err)
			require.False(t, f.Retryable)
			require.EqualValues(t, 3, f.Details["maxSteps"])
			require.EqualValues(t, 3, f.Details["modelPasses"])
			require.Contains(t, f.Message, "increase maxSteps")
			require.Equal(t, []string{"final", "error", "done"}[0:1], structuredKinds(h), "the emit was published; no draft of the return")
		} else {
			require.NoError(t, err)
			require.JSONEq(t, `{"text":"Saved and done"}`, string(res.Returned.Data))
			require.Equal(t, 4, model.Calls())
		}
	}
}

func TestMultipleReturns(t *testing.T) {
	a := output(t, "Outcome A.", "a", summarySchema, nil)
	b := output(t, "Outcome B.", "b", summarySchema, nil)
	outs := &hooks.Outputs{Return: map[string]*contracts.OutputContract{"a": a, "b": b}}
	t.Run("corrected on the next pass", func(t *testing.T) {
		model := fake.New(
			fake.Calls(call("kortyx_return__a", `{"text":"x"}`), call("kortyx_return__b", `{"text":"y"}`)),
			fake.Calls(call("kortyx_return__b", `{"text":"y"}`)),
		)
		var res hooks.ReasonResult
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs}, &res)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, "b", res.Returned.Contract)
		msgs := model.Requests()[1].Messages
		for _, m := range msgs[2:4] {
			require.True(t, m.IsError)
			require.Contains(t, m.Content, "MULTIPLE_TERMINAL_OUTPUTS: No terminal output was published. Select exactly one return contract")
		}
		require.Equal(t, []string{"final"}, structuredKinds(h), "nothing published for the conflicting returns")
	})
	t.Run("exhausted", func(t *testing.T) {
		both := fake.Calls(call("kortyx_return__a", `{"text":"x"}`), call("kortyx_return__b", `{"text":"y"}`))
		model := fake.New(both, both)
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, ToolExecution: hooks.ToolExecution{MaxSteps: 2}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonOutputContractCorrectionExhausted, contracts.CodeOf(err), "err: %v", err)
		require.EqualValues(t, 2, contracts.FailureOf(err).Details["outputContractCorrections"])
	})
}

func TestSchemaCorrections(t *testing.T) {
	accounts := output(t, "Account list.", "accounts", `{"type":"object","properties":{"accounts":{"type":"array"}},"required":["accounts"]}`, nil)
	outs := &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"accounts": accounts}}
	t.Run("default repairs once", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_emit__accounts", `{"accounts":3}`)), fake.Text(`{"accounts":["a","b","c"]}`), fake.Text("Listed."))
		var res hooks.ReasonResult
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs}, &res)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, 3, model.Calls())
		require.Len(t, res.Emissions, 1)
		require.JSONEq(t, `{"accounts":["a","b","c"]}`, string(res.Emissions[0].Data))
		require.Equal(t, []string{"final"}, structuredKinds(h), "nothing published for the invalid value")
		repair := model.Requests()[1]
		require.Empty(t, repair.Tools, "business and human-input tools are disabled during repair")
		prompt := repair.Messages[len(repair.Messages)-1].Content
		require.Contains(t, prompt, `"accounts" is invalid`)
		require.Contains(t, prompt, `Invalid value: {"accounts":3}`)
		require.Contains(t, prompt, "Schema: ")
		require.Equal(t, "output", res.Steps[1].Kind)
	})
	t.Run("disabled keeps the validation failure", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_emit__accounts", `{"accounts":3}`)))
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, SchemaCorrections: hooks.Corrections(0)}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeModelOutputSchema, contracts.CodeOf(err))
		require.Equal(t, []any{"accounts"}, contracts.FailureOf(err).Issues[0].Path)
		require.Empty(t, structuredKinds(h))
		require.Equal(t, 1, model.Calls())
	})
	t.Run("exhausted", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_emit__accounts", `{"accounts":3}`)), fake.Text(`{"accounts":"still not"}`))
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonOutputSchemaCorrectionExhausted, contracts.CodeOf(err))
		f := contracts.FailureOf(err)
		require.Equal(t, "accounts", f.Details["contract"])
		require.EqualValues(t, 1, f.Details["attempts"])
		require.Equal(t, string(contracts.CodeModelOutputSchema), f.Details["terminalReason"])
		require.Equal(t, 2, model.Calls())
	})
	t.Run("out of range", func(t *testing.T) {
		h, _ := outputsHarness(t, fake.New(), hooks.ReasonOptions{Outputs: outs, SchemaCorrections: hooks.Corrections(11)}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err))
	})
	t.Run("truncated output is not repaired", func(t *testing.T) {
		model := fake.New(fake.Turn{Text: `{"text":"cut off`, FinishReason: providers.FinishLength})
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{OutputSchema: contracts.MustCompileSchema(summarySchema)}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeOutputTruncated, contracts.CodeOf(err))
		require.Equal(t, 1, model.Calls())
	})
}

func TestStreamedContractInvalidated(t *testing.T) {
	letter := output(t, "A letter.", "letter", letterSchema, map[string]contracts.StructuredKind{"subject": contracts.StructuredSet, "body": contracts.StructuredTextDelta})
	outs := &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"letter": letter}}
	partial := fake.Turn{Deltas: []string{`{"subject":"Hi",`, `"body":"Hel`, `lo"}`}} // no bullets: invalid
	t.Run("no corrections", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_stream_emit__letter", `{"instruction":"x"}`)), partial)
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, SchemaCorrections: hooks.Corrections(0)}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeModelOutputSchema, contracts.CodeOf(err))
		require.Equal(t, []string{"set", "text-delta", "text-delta", "invalidated"}, structuredKinds(h), "invalidated, and no final")
		var inv contracts.Chunk
		for _, c := range h.chunks() {
			if c.Type == contracts.ChunkStructuredInvalidated {
				inv = c
			}
		}
		require.Empty(t, inv.CheckpointID, "no checkpoint id for a failed provisional output")
		require.Equal(t, h.chunks()[0].StreamID, inv.StreamID)
	})
	t.Run("repaired", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_stream_emit__letter", `{"instruction":"x"}`)), partial,
			fake.Text(`{"subject":"Hi","body":"Hello","bullets":[]}`), fake.Text("Sent."))
		// Four passes: the turn, the streamed generation, its repair, the final answer.
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, ToolExecution: hooks.ToolExecution{MaxSteps: 4}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, []string{"set", "text-delta", "text-delta", "invalidated", "final"}, structuredKinds(h),
			"the provisional fields are invalidated before the validated final")
	})
}

func TestMissingReturn(t *testing.T) {
	done := output(t, "The outcome.", "done", summarySchema, nil)
	script := func() *fake.Model {
		return fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Text("It shipped."), fake.Calls(call("kortyx_return__done", `{"text":"shipped"}`)))
	}
	t.Run("one correction", func(t *testing.T) {
		model := script()
		var res hooks.ReasonResult
		h, box := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"lookup_order"}, Outputs: &hooks.Outputs{Return: map[string]*contracts.OutputContract{"done": done}},
			ToolExecution: hooks.ToolExecution{MaxSteps: 4, MissingReturnCorrections: 1}}, &res)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.JSONEq(t, `{"text":"shipped"}`, string(res.Returned.Data))
		require.Equal(t, 1, box.n("lookup_order"), "business tools are not run again")
		require.Equal(t, 3, model.Calls())
		correction := model.Requests()[2]
		require.Len(t, correction.Tools, 1, "only the return tools are offered")
		require.Equal(t, "kortyx_return__done", correction.Tools[0].Name)
	})
	t.Run("no corrections by default", func(t *testing.T) {
		model := script()
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Tools: []string{"lookup_order"}, Outputs: &hooks.Outputs{Return: map[string]*contracts.OutputContract{"done": done}},
			ToolExecution: hooks.ToolExecution{MaxSteps: 4}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonTerminalOutputMissing, contracts.CodeOf(err))
		require.Equal(t, 2, model.Calls())
	})
}

func TestOutputSchemaAnswer(t *testing.T) {
	schema := contracts.MustCompileSchema(summarySchema)
	model := fake.New(fake.Text("```json\n{\"text\":\"hi\"}\n```"))
	var res hooks.ReasonResult
	h, _ := outputsHarness(t, model, hooks.ReasonOptions{OutputSchema: schema}, &res)
	h.run("agent", "x")
	_, err := h.result()
	require.NoError(t, err)
	require.JSONEq(t, `{"text":"hi"}`, string(res.Output))
	require.Equal(t, []string{"done"}, h.types(), "text chunks are suppressed with OutputSchema")

	model = fake.New(fake.Text("hi there"), fake.Text(`{"text":"hi"}`))
	h, _ = outputsHarness(t, model, hooks.ReasonOptions{OutputSchema: schema}, &res)
	h.run("agent", "x")
	_, err = h.result()
	require.NoError(t, err, "non-JSON output is repaired")
	require.Equal(t, 2, model.Calls())
}

func interruptContract(t *testing.T) *contracts.InterruptContract {
	c, err := contracts.NewInterruptContract("Ask which account.", "ask", "1",
		contracts.MustCompileSchema(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
		contracts.MustCompileSchema(`{"type":"object","properties":{"account":{"enum":["A","B"]}},"required":["account"]}`))
	require.NoError(t, err)
	return c
}

func TestFiveSequentialSuspensionsInOneNode(t *testing.T) {
	review := interruptContract(t)
	model := fake.New(
		fake.Calls(call("refund", `{"orderId":"A-1"}`), call("kortyx_request_input__ask", `{"question":"Rollout?"}`), call("kortyx_request_input__ask", `{"question":"Notify?"}`)),
		fake.Text("Checked."),
	)
	box := &toolbox{}
	d := def("agent", map[string]workflows.NodeFunc{
		"flow": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.AskText(ctx, "before", "Before?"); err != nil {
				return workflows.NodeResult{}, err
			}
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "check", Tools: []string{"refund"},
				ToolExecution: hooks.ToolExecution{Approval: hooks.Switch{On: true}},
				Interrupts:    &hooks.Interrupts{MaxRequests: 2, Contracts: map[string]*contracts.InterruptContract{"ask": review}}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			after, err := hooks.AskText(ctx, "after", "After?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"text": res.Text, "after": after}}, nil
		},
	}, "__start__>flow")
	h := newHarness(t, d)
	h.acts.Providers, h.acts.DefaultProvider, h.acts.Tools = providers.NewSet(model), fake.ID, box.set(t)
	var questions []string
	for i := 1; i <= 5; i++ {
		h.signalAt(time.Duration(i)*time.Minute, func(p contracts.PendingRequest) contracts.Response {
			questions = append(questions, p.Input.Question)
			r := contracts.Response{Token: p.Token, RequestID: p.RequestID}
			switch p.Input.Kind {
			case contracts.InterruptText:
				r.Text = "ok"
			case contracts.InterruptChoice:
				r.Selected = []string{"approve"}
			default:
				r.Value = json.RawMessage(`{"account":"A"}`)
			}
			return r
		})
	}
	h.run("agent", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"Before?", "Approve refund?", "Rollout?", "Notify?", "After?"}, questions)
	require.Equal(t, 2, model.Calls())
	require.Equal(t, 1, box.n("refund"))
	require.Equal(t, "Checked.", res.State.Data["text"])
}
