package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func output(t *testing.T, desc, id, schema string, fields map[string]contracts.StructuredKind) *contracts.OutputContract {
	t.Helper()
	c, err := contracts.NewOutputContract(desc, id, "1", contracts.MustCompileSchema(schema), fields)
	require.NoError(t, err)
	return c
}

const (
	cardSchema    = `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`
	summarySchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`
	letterSchema  = `{"type":"object","properties":{"subject":{"type":"string"},"body":{"type":"string"},"bullets":{"type":"array","items":{"type":"string"}}},"required":["subject","body","bullets"]}`
)

func call(name, args string) providers.ToolCall {
	return providers.ToolCall{Name: name, Arguments: json.RawMessage(args)}
}

// outputsHarness runs one node calling Reason with opts against model and the test tools.
func outputsHarness(t *testing.T, model *fake.Model, opts hooks.ReasonOptions, out *hooks.ReasonResult) (*harness, *toolbox) {
	box := &toolbox{}
	h := newHarness(t, def("agent", map[string]workflows.NodeFunc{"chat": reasonNode(opts, out)}, "__start__>chat"))
	h.acts.Providers, h.acts.DefaultProvider, h.acts.Tools = providers.NewSet(model), fake.ID, box.set(t)
	return h, box
}

// structured lists the structured-data chunks as "kind" (or "invalidated") strings.
func structuredKinds(h *harness) []string {
	var out []string
	for _, c := range h.chunks() {
		switch c.Type {
		case contracts.ChunkStructuredData:
			out = append(out, string(c.Kind))
		case contracts.ChunkStructuredInvalidated:
			out = append(out, "invalidated")
		}
	}
	return out
}

func TestStreamedEmitBetweenTexts(t *testing.T) {
	letter := output(t, "A letter.", "letter", letterSchema, map[string]contracts.StructuredKind{"subject": contracts.StructuredSet, "body": contracts.StructuredTextDelta, "bullets": contracts.StructuredAppend})
	model := fake.New(
		fake.Turn{Text: "I found matches.", ToolCalls: []providers.ToolCall{call("kortyx_stream_emit__letter", `{"instruction":"write it"}`)}},
		fake.Turn{Deltas: []string{`{"subject":"Hi",`, `"body":"Hello `, `there","bul`, `lets":["a",`, `"b"]}`}},
		fake.Text("Done."),
	)
	var res hooks.ReasonResult
	h, _ := outputsHarness(t, model, hooks.ReasonOptions{ID: "r", Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"letter": letter}}}, &res)
	h.run("agent", "write")
	_, err := h.result()
	require.NoError(t, err)
	var seq []string
	streamIDs := map[string]bool{}
	for _, c := range h.chunks() {
		switch c.Type {
		case contracts.ChunkStructuredData:
			seq = append(seq, "sd:"+string(c.Kind))
			streamIDs[c.StreamID] = true
			require.Equal(t, "letter", c.DataType)
		case contracts.ChunkTextDelta:
			seq = append(seq, "text")
		}
	}
	require.Equal(t, []string{"text", "text", "text", "sd:set", "sd:text-delta", "sd:text-delta", "sd:append", "sd:append", "sd:final", "text"}, seq)
	require.Len(t, streamIDs, 1, "one stream id for the partial chunks and the final")
	require.Equal(t, []string{"", "output", ""}, []string{res.Steps[0].Kind, res.Steps[1].Kind, res.Steps[2].Kind})
	require.Equal(t, "I found matches.\nDone.", res.Text)
	require.Len(t, res.Emissions, 1)
	require.JSONEq(t, `{"subject":"Hi","body":"Hello there","bullets":["a","b"]}`, string(res.Emissions[0].Data))
	require.Empty(t, res.ToolCalls, "control calls are not tool calls")
	require.Equal(t, 3, model.Calls())
	require.Empty(t, model.Requests()[1].Tools, "the generation pass offers no tools")
	require.Equal(t, "json-schema", model.Requests()[1].Options.ResponseFormat.Type)
}

func TestEmitsAndReturnAcrossPasses(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, nil)
	done := output(t, "The final summary.", "summary", summarySchema, nil)
	model := fake.New(
		fake.Calls(call("kortyx_emit__card", `{"title":"one"}`)),
		fake.Calls(call("kortyx_emit__card", `{"title":"two"}`)),
		fake.Calls(call("kortyx_return__completed", `{"text":"all done"}`)),
	)
	var res hooks.ReasonResult
	h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: &hooks.Outputs{
		Emit: map[string]*contracts.OutputContract{"card": card}, Return: map[string]*contracts.OutputContract{"completed": done}}}, &res)
	h.run("agent", "go")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, 3, model.Calls(), "a return completes the call: no further pass")
	require.Len(t, res.Emissions, 2)
	require.JSONEq(t, `{"title":"one"}`, string(res.Emissions[0].Data))
	require.JSONEq(t, `{"title":"two"}`, string(res.Emissions[1].Data))
	require.Equal(t, "completed", res.Returned.Contract)
	require.JSONEq(t, `{"text":"all done"}`, string(res.Returned.Data))
	require.Empty(t, res.ToolCalls)
	require.Equal(t, []string{"final", "final", "final"}, structuredKinds(h))
	c := h.chunks()
	require.Equal(t, res.OpID+":emit:card:0", c[0].StreamID)
	require.Equal(t, res.OpID+":emit:card:1", c[1].StreamID)
	require.Equal(t, res.OpID+":return:completed:return", c[2].StreamID)
	require.Equal(t, "card", c[0].SchemaID)
	require.Equal(t, "1", c[0].SchemaVersion)
	tools := model.Requests()[0].Tools
	require.Equal(t, []string{"kortyx_emit__card", "kortyx_return__completed"}, []string{tools[0].Name, tools[1].Name})
	require.JSONEq(t, cardSchema, string(tools[0].InputSchema))
}

func TestStreamedReturn(t *testing.T) {
	letter := output(t, "A letter.", "letter", letterSchema, map[string]contracts.StructuredKind{"body": contracts.StructuredTextDelta})
	model := fake.New(
		fake.Calls(call("kortyx_stream_return__letter", `{"instruction":"finish"}`)),
		fake.Turn{Deltas: []string{`{"subject":"S","body":"ab`, `cd","bullets":[]}`}},
	)
	var res hooks.ReasonResult
	h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: &hooks.Outputs{Return: map[string]*contracts.OutputContract{"letter": letter}}}, &res)
	h.run("agent", "go")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, 2, model.Calls(), "one pass and one streamed generation, no further pass")
	require.Equal(t, []string{"text-delta", "text-delta", "final"}, structuredKinds(h))
	require.Equal(t, "letter", res.Returned.Contract)
}

func TestInterruptContract(t *testing.T) {
	approval, err := contracts.NewInterruptContract("Ask which account to use.", "approval", "1",
		contracts.MustCompileSchema(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
		contracts.MustCompileSchema(`{"type":"object","properties":{"account":{"enum":["A","B"]}},"required":["account"]}`))
	require.NoError(t, err)
	t.Run("answered", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_request_input__approval", `{"question":"Which account?"}`)), fake.Text("Using B."))
		var res hooks.ReasonResult
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{ID: "pay", Interrupts: &hooks.Interrupts{Contracts: map[string]*contracts.InterruptContract{"approval": approval}}}, &res)
		var asked contracts.PendingRequest
		h.updateAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
			asked = p
			return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"C"}`)}
		}, func(_ contracts.RespondResult, err error) {
			require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(err), "human answers are validated strictly")
		})
		h.signalAt(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
			return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"B"}`)}
		})
		h.run("agent", "pay")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, []protocol.InterruptRecord{{Contract: "approval", Request: json.RawMessage(`{"question":"Which account?"}`), Response: json.RawMessage(`{"account":"B"}`)}}, res.InterruptHistory)
		require.Equal(t, contracts.InterruptCustom, asked.Input.Kind)
		require.Equal(t, "pay:approval:0", asked.Input.ID)
		require.Equal(t, "Which account?", asked.Input.Question)
		require.Equal(t, "approval", asked.Input.Contract)
		require.Equal(t, `{"account":"B"}`, model.Requests()[1].Messages[2].Content, "the answer is the tool result")
	})
	t.Run("two asks in one turn with maxRequests 2", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_request_input__approval", `{"question":"First?"}`), call("kortyx_request_input__approval", `{"question":"Second?"}`)), fake.Text("ok"))
		var res hooks.ReasonResult
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Interrupts: &hooks.Interrupts{MaxRequests: 2, Contracts: map[string]*contracts.InterruptContract{"approval": approval}}}, &res)
		answerB := func(p contracts.PendingRequest) contracts.Response {
			return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"B"}`)}
		}
		h.signalAt(time.Minute, answerB)
		h.signalAt(2*time.Minute, answerB)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Len(t, res.InterruptHistory, 2)
		require.Equal(t, 2, model.Calls())
	})
	t.Run("maxRequests exceeded", func(t *testing.T) {
		model := fake.New(fake.Calls(call("kortyx_request_input__approval", `{"question":"First?"}`), call("kortyx_request_input__approval", `{"question":"Second?"}`)))
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Interrupts: &hooks.Interrupts{Contracts: map[string]*contracts.InterruptContract{"approval": approval}}}, nil)
		h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
			return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"A"}`)}
		})
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonMaxRequests, contracts.CodeOf(err))
	})
	t.Run("malformed request corrected on the next pass", func(t *testing.T) {
		model := fake.New(
			fake.Calls(call("kortyx_request_input__approval", `{"q":"Which?"}`)),
			fake.Calls(call("kortyx_request_input__approval", `{"question":"Which account?"}`)),
			fake.Text("Using A."),
		)
		var res hooks.ReasonResult
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Interrupts: &hooks.Interrupts{Contracts: map[string]*contracts.InterruptContract{"approval": approval}}}, &res)
		var questions int
		h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
			questions++
			return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"A"}`)}
		})
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err, "MaxRequests 1 is not consumed by the malformed request")
		require.Equal(t, 1, questions, "one human question")
		require.Equal(t, 3, model.Calls(), "the malformed request consumed a model pass")
		bad := model.Requests()[1].Messages[2]
		require.True(t, bad.IsError)
		require.Contains(t, bad.Content, "does not match its schema")
		require.Len(t, res.InterruptHistory, 1)
		require.Equal(t, []string{"interrupt", "done", "text-start", "text-delta", "text-delta", "text-end", "done"}, h.types())
	})
	t.Run("required mode", func(t *testing.T) {
		for _, mode := range []string{"required", "optional"} {
			model := fake.New(fake.Text("No question needed."))
			h, _ := outputsHarness(t, model, hooks.ReasonOptions{Interrupts: &hooks.Interrupts{Mode: mode, Contracts: map[string]*contracts.InterruptContract{"approval": approval}}}, nil)
			h.run("agent", "x")
			_, err := h.result()
			if mode == "required" {
				require.Equal(t, contracts.CodeReasonInterruptRequired, contracts.CodeOf(err))
				require.Contains(t, err.Error(), "interrupts.mode is required, but the model returned a final answer without requesting human input")
			} else {
				require.NoError(t, err)
			}
		}
	})
}

func TestStructuredDataContractForm(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, nil)
	var errs []error
	d := def("w", map[string]workflows.NodeFunc{
		"a": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Contract: card, Data: map[string]any{"title": "T"}}); err != nil {
				return workflows.NodeResult{}, err
			}
			_, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Contract: card, Data: map[string]any{"title": 1}})
			errs = append(errs, err)
			_, err = hooks.StructuredData(ctx, hooks.StructuredDataOptions{Contract: card, Kind: contracts.StructuredSet, Path: "title", Value: "x"})
			errs = append(errs, err)
			return workflows.NodeResult{}, nil
		},
	}, "__start__>a")
	h := newHarness(t, d)
	h.run("w", "x")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, contracts.CodeSchemaValidation, contracts.CodeOf(errs[0]), "data is validated by the contract's schema")
	require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(errs[1]), "partial kinds need an explicit stream id")
	c := h.chunks()[0]
	require.Equal(t, []string{"structured-data", "done"}, h.types())
	require.Equal(t, "card", c.DataType)
	require.Equal(t, "card", c.SchemaID)
	require.Equal(t, "1", c.SchemaVersion)
}

func TestReasonContractOptionsAreChecked(t *testing.T) {
	card := output(t, "A card.", "card", cardSchema, nil)
	long := "x"
	for len(long) < 60 {
		long += "x"
	}
	tests := []struct {
		name string
		opts hooks.ReasonOptions
	}{
		{name: "bad contract name", opts: hooks.ReasonOptions{Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"1card": card}}}},
		{name: "tool name too long", opts: hooks.ReasonOptions{Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{long: card}}}},
		{name: "empty outputs", opts: hooks.ReasonOptions{Outputs: &hooks.Outputs{}}},
		{name: "outputs with output schema", opts: hooks.ReasonOptions{Outputs: &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"card": card}}, OutputSchema: card.Schema}},
		{name: "bad mode", opts: hooks.ReasonOptions{Interrupts: &hooks.Interrupts{Mode: "sometimes", Contracts: map[string]*contracts.InterruptContract{"ask": interruptContract(t)}}}},
		{name: "reserved tool name", opts: hooks.ReasonOptions{Tools: []string{"kortyx_emit__x"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := outputsHarness(t, fake.New(), tc.opts, nil)
			h.run("agent", "x")
			_, err := h.result()
			require.Contains(t, []contracts.Code{contracts.CodeInvalidRequest, contracts.CodeInvalidDefinition}, contracts.CodeOf(err), "err: %v", err)
		})
	}
	_, err := contracts.NewOutputContract("d", "s", "1", contracts.MustCompileSchema(`{"type":"array"}`), nil)
	require.Error(t, err, "an output contract's schema has an object root")
	_, err = contracts.NewOutputContract("d", "s", "1", contracts.MustCompileSchema(cardSchema), map[string]contracts.StructuredKind{"a..b": contracts.StructuredSet})
	require.Error(t, err)
}
