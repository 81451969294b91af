package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

const declarativeAgent = `
id: desk
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      id: desk
      system: You help with orders.
      input: "Customer {{context.customer}} asks: {{input.message}}"
      tools: [lookup_order, refund]
      maxSteps: 4
      emitTools: true
      approval: [refund]
      output: reply
edges:
  - [__start__, agent]
`

func TestDeclarativeReasonAgent(t *testing.T) {
	def, err := workflows.Load([]byte(declarativeAgent))
	require.NoError(t, err)
	box := &toolbox{}
	model := fake.New(
		fake.Call("lookup_order", `{"orderId":"A-7"}`),
		fake.Call("refund", `{"orderId":"A-7"}`),
		fake.Text("Refunded A-7."),
	)
	h := newHarness(t, def)
	h.acts.Providers, h.acts.DefaultProvider, h.acts.Tools = providers.NewSet(model), fake.ID, box.set(t)
	h.updateAt(time.Minute, selected("approve"), func(_ contracts.RespondResult, err error) { require.NoError(t, err) })
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "desk",
		Input: []byte(`{"message":"refund A-7 please"}`), Context: []byte(`{"customer":"Ada"}`)})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "Refunded A-7.", res.State.Data["reply"])
	require.Equal(t, 3, model.Calls())
	require.Equal(t, 1, box.n("lookup_order"))
	require.Equal(t, 1, box.n("refund"))
	first := model.Requests()[0]
	require.Equal(t, []providers.Message{{Role: "system", Content: "You help with orders."},
		{Role: "user", Content: "Customer Ada asks: refund A-7 please"}}, first.Messages)
	require.Len(t, first.Tools, 2)
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "interrupt", "done", "tool-call-start", "tool-call-result",
		"text-start", "text-delta", "text-delta", "text-end", "done"}, h.types())
}

func TestDeclarativeReasonParamsAreValidatedAtLoad(t *testing.T) {
	def, err := workflows.Load([]byte(`
id: bad
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      maxSteps: 0
      approval: "refund"
      tools: [a, a]
      colour: blue
edges:
  - [__start__, agent]
`))
	require.NoError(t, err, "the file itself is well-formed")
	err = workflows.NewRegistry().Add(def)
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
	var paths []string
	for _, is := range contracts.FailureOf(err).Issues {
		paths = append(paths, issuePath(is))
	}
	require.Contains(t, paths, "nodes.agent.params.maxSteps")
	require.Contains(t, paths, "nodes.agent.params.approval")
	require.Contains(t, paths, "nodes.agent.params.tools")
	require.Contains(t, paths, "nodes.agent.params", "unknown key colour")
}

func TestRender(t *testing.T) {
	vars := map[string]any{"input": map[string]any{"message": "hi", "n": 2.0, "list": []any{"a", "b"}, "obj": map[string]any{"k": true}}, "context": map[string]any{}}
	tests := []struct {
		tpl, want string
		fails     bool
	}{
		{tpl: "plain", want: "plain"},
		{tpl: "say {{ input.message }}!", want: "say hi!"},
		{tpl: "{{input.n}} {{input.list.1}} {{input.obj}}", want: `2 b {"k":true}`},
		{tpl: "[{{input.missing}}]", want: "[]"},
		{tpl: "{{ inptu.message }}", fails: true},
		{tpl: "{{ input.message", fails: true},
	}
	for _, tc := range tests {
		got, err := workflows.Render(tc.tpl, vars)
		if tc.fails {
			require.Error(t, err, tc.tpl)
			continue
		}
		require.NoError(t, err, tc.tpl)
		require.Equal(t, tc.want, got)
	}
}

const declarativeContracts = `
id: planner
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      outputs:
        emit:
          card:
            description: A card for the UI.
            schemaId: card
            schemaVersion: "1"
            schema: {type: object, properties: {title: {type: string}}, required: [title]}
        return:
          plan:
            description: The final plan.
            schemaId: plan
            schemaVersion: "2"
            schema: {type: object, properties: {steps: {type: array, items: {type: string}}}, required: [steps]}
            stream: {fields: {steps: append}}
      interrupts:
        contracts:
          budget:
            description: Ask for the budget.
            schemaId: budget
            schemaVersion: "1"
            requestSchema: {type: object, properties: {question: {type: string}}, required: [question]}
            responseSchema: {type: object, properties: {amount: {type: number}}, required: [amount]}
      schemaCorrections: 2
      missingReturnCorrections: 1
      maxSteps: 5
      output: plan
edges:
  - [__start__, agent]
`

func TestDeclarativeContracts(t *testing.T) {
	def, err := workflows.Load([]byte(declarativeContracts))
	require.NoError(t, err)
	model := fake.New(
		fake.Calls(call("kortyx_emit__card", `{"title":"Trip"}`), call("kortyx_request_input__budget", `{"question":"Budget?"}`)),
		fake.Text("Planning now."), // no return: one missing-return correction
		fake.Calls(call("kortyx_stream_return__plan", `{"instruction":"plan within budget"}`)),
		fake.Turn{Deltas: []string{`{"steps":["fly",`, `"hike"]}`}},
	)
	h := newHarness(t, def)
	h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"amount":900}`)}
	})
	h.run("planner", "Plan a trip")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, map[string]any{"steps": []any{"fly", "hike"}}, res.State.Data["planReturned"])
	require.Equal(t, []any{map[string]any{"contract": "card", "data": map[string]any{"title": "Trip"}}}, res.State.Data["planEmissions"])
	require.Equal(t, "Planning now.", res.State.Data["plan"])
	require.Equal(t, 4, model.Calls())
}

func TestDeclarativeContractSchemasAreCheckedAtLoad(t *testing.T) {
	def, err := workflows.Load([]byte(`
id: bad
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      outputs:
        emit:
          card: {description: d, schemaId: c, schemaVersion: "1", schema: {type: array}}
          "9lives": {description: d, schemaId: c, schemaVersion: "1", schema: {type: object}}
      outputSchema: {type: 12}
edges:
  - [__start__, agent]
`))
	require.NoError(t, err)
	err = workflows.NewRegistry().Add(def)
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
	var paths []string
	for _, is := range contracts.FailureOf(err).Issues {
		paths = append(paths, issuePath(is))
	}
	require.Contains(t, paths, "nodes.agent.params.outputs.emit.card", "an object-root schema is required")
	require.Contains(t, paths, "nodes.agent.params.outputSchema", "a schema that does not compile")
	require.Contains(t, paths, "nodes.agent.params.outputs.emit.9lives", "contract names are checked")
}

// A declarative agent picks its provider by the model's prefix ("anthropic:claude-…"): the pass
// goes to the provider of that id with the model id after the colon; an agent without a prefix
// runs on the worker's default provider.
func TestDeclarativeAgentPicksTheProviderByPrefix(t *testing.T) {
	for _, tc := range []struct{ model, provider, modelID string }{
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
		{"google:gemini-2.5-flash", "google", "gemini-2.5-flash"},
		{"gpt-4.1-mini", "openai", "gpt-4.1-mini"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			def, err := workflows.Load([]byte(`
id: pick
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      model: "` + tc.model + `"
      output: reply
edges:
  - [__start__, agent]
`))
			require.NoError(t, err)
			models := map[string]*fake.Model{}
			var set []providers.Provider
			for _, id := range []string{"openai", "anthropic", "google"} {
				models[id] = fake.New(fake.Text("from " + id)).WithID(id)
				set = append(set, models[id])
			}
			h := newHarness(t, def)
			h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(set...), "openai"
			h.env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "pick", Input: []byte(`"hi"`)})
			res, err := h.result()
			require.NoError(t, err)
			require.Equal(t, "from "+tc.provider, res.State.Data["reply"])
			for id, m := range models {
				if id != tc.provider {
					require.Zero(t, m.Calls(), id)
					continue
				}
				require.Equal(t, 1, m.Calls())
				require.Equal(t, tc.modelID, m.Requests()[0].Model)
			}
		})
	}
}

// The caps of a call's own failures are params of kortyx.reason: maxFailures for a model pass,
// maxToolFailures for a tool call (-1: no cap; below -1 is refused at load).
func TestDeclarativeFailureCaps(t *testing.T) {
	def, err := workflows.Load([]byte(`
id: capped
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      maxFailures: 2
      maxToolFailures: -1
edges:
  - [__start__, agent]
`))
	require.NoError(t, err)
	overloaded := fake.Fail(contracts.CodeProviderHTTPError, true, "overloaded")
	model := fake.New(overloaded, overloaded, overloaded)
	h := newHarness(t, def)
	h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
	h.run("capped", "hi")
	_, err = h.result()
	require.Equal(t, contracts.CodeProviderHTTPError, contracts.CodeOf(err))
	require.Equal(t, 2, model.Calls(), "the second failure is final")
	require.Equal(t, []string{"status", "error", "done"}, h.types())
	require.Equal(t, "model fake failed (attempt 1 of 2), retrying in 1 s", h.chunks()[0].Message)

	bad, err := workflows.Load([]byte(`
id: bad
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      maxToolFailures: -2
edges:
  - [__start__, agent]
`))
	require.NoError(t, err)
	err = workflows.NewRegistry().Add(bad)
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err), "err: %v", err)
	require.Contains(t, err.Error(), "maxToolFailures")
}

// issuePath is the rendered path of an issue ("a.b[2].c", "(root)"): the part of its String
// before the message.
func issuePath(is contracts.Issue) string {
	path, _, _ := strings.Cut(is.String(), ": ")
	return path
}
