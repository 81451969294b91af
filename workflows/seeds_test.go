package workflows_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

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
		require.Equal(t, contracts.CodeReasonOutputContractCorrectionExhausted, contracts.CodeOf(err), "err: %v", err)
		require.EqualValues(t, 1, contracts.FailureOf(err).Details["outputContractCorrections"])
		require.Equal(t, 0, box.n("lookup_order"), "no pass is left for the correction: the tool does not run")
		require.Equal(t, []string{"error", "done"}, h.types())
	})
}

// SchemaCorrections is one allowance per Reason call, shared by all its output values, and what
// is left of it survives a node retry (seed: "retains … the remaining repair allowance").
func TestSchemaCorrectionsAreOnePoolPerCall(t *testing.T) {
	accounts := output(t, "Account list.", "accounts", `{"type":"object","properties":{"accounts":{"type":"array"}},"required":["accounts"]}`, nil)
	outs := &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"accounts": accounts}}
	t.Run("two invalid values in one turn", func(t *testing.T) {
		model := fake.New(
			fake.Calls(call("kortyx_emit__accounts", `{"accounts":3}`), call("kortyx_emit__accounts", `{"accounts":4}`)),
			fake.Text(`{"accounts":["a"]}`), // the repair of the first value
		)
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, ToolExecution: hooks.ToolExecution{MaxSteps: 5}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonOutputSchemaCorrectionExhausted, contracts.CodeOf(err), "err: %v", err)
		f := contracts.FailureOf(err)
		require.Equal(t, "accounts", f.Details["contract"])
		require.EqualValues(t, 1, f.Details["attempts"])
		require.Equal(t, string(contracts.CodeModelOutputSchema), f.Details["terminalReason"])
		require.Equal(t, 2, model.Calls(), "one pass and one repair: the second value finds the allowance used")
		require.Equal(t, []string{"final"}, structuredKinds(h), "the repaired first value only")
	})

	retried := func(t *testing.T, model *fake.Model, out *hooks.ReasonResult) *harness {
		d := def("agent", map[string]workflows.NodeFunc{
			"chat": reasonNode(hooks.ReasonOptions{ID: "r", Outputs: outs, ToolExecution: hooks.ToolExecution{MaxSteps: 5}}, out),
		}, "__start__>chat")
		d.Nodes["chat"] = workflows.Node{Run: d.Nodes["chat"].Run, Retry: &workflows.Retry{MaxAttempts: 2}}
		h := newHarness(t, d)
		h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
		return h
	}
	t.Run("the rest of the allowance survives a node retry", func(t *testing.T) {
		model := fake.New(
			fake.Calls(call("kortyx_emit__accounts", `{"accounts":3}`)),
			fake.Text(`{"accounts":["a"]}`),
			fake.Fail(contracts.CodeProviderHTTPError, false, "bad request"), // fails the node: it is retried
			fake.Calls(call("kortyx_emit__accounts", `{"accounts":5}`)),
		)
		h := retried(t, model, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeReasonOutputSchemaCorrectionExhausted, contracts.CodeOf(err), "err: %v", err)
		require.EqualValues(t, 1, contracts.FailureOf(err).Details["attempts"])
		require.Equal(t, 4, model.Calls())
		require.Equal(t, []string{"final"}, structuredKinds(h), "the first value is published once")
	})
	t.Run("a node retry counts the passes of recorded values", func(t *testing.T) {
		model := fake.New(
			fake.Calls(call("kortyx_emit__accounts", `{"accounts":3}`)),
			fake.Text(`{"accounts":["a"]}`),
			fake.Fail(contracts.CodeProviderHTTPError, false, "bad request"),
			fake.Text("Listed."),
		)
		var res hooks.ReasonResult
		h := retried(t, model, &res)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, "Listed.", res.Text, "pass 2 is asked again, not read from the repair's record")
		require.Equal(t, 4, model.Calls())
		require.Equal(t, []string{"", "output", ""}, []string{res.Steps[0].Kind, res.Steps[1].Kind, res.Steps[2].Kind})
		require.Equal(t, []int{0, 1, 2}, []int{res.Steps[0].Index, res.Steps[1].Index, res.Steps[2].Index})
		require.Len(t, res.Emissions, 1)
		require.Equal(t, 10+11+11, res.Usage.Total, "the usage of the reused repair pass is included; the failed pass has none")
	})
}

// A retried pass invalidates only text that an earlier attempt published, and renames its
// segment only when an earlier attempt used the name.
func TestRetriedPassInvalidatesOnlyPublishedText(t *testing.T) {
	rateLimited := fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Retryable: true, Message: "429 too many requests"}}
	segments := func(h *harness) []string {
		var out []string
		for _, c := range h.chunks() {
			if c.SegmentID != "" {
				out = append(out, string(c.Type)+" "+c.SegmentID)
			}
		}
		return out
	}
	t.Run("failed before any text", func(t *testing.T) {
		model := fake.New(rateLimited, fake.Text("Hello brave world"))
		h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{"chat": reasonNode(hooks.ReasonOptions{}, nil)}, "__start__>chat")
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, 2, model.Calls())
		require.Equal(t, []string{"text-start step-0", "text-delta step-0", "text-delta step-0", "text-delta step-0", "text-end step-0"}, segments(h))
		require.Equal(t, []string{"status", "text-start", "text-delta", "text-delta", "text-delta", "text-end", "done"}, h.types())
	})
	t.Run("text, then a failure before any text", func(t *testing.T) {
		model := fake.New(
			fake.Turn{Text: "Hello brave world", FailAfter: 2, Err: &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Message: "connection reset"}},
			rateLimited,
			fake.Text("Hello brave world"),
		)
		h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{"chat": reasonNode(hooks.ReasonOptions{}, nil)}, "__start__>chat")
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, 3, model.Calls())
		require.Equal(t, []string{"text-start step-0", "text-delta step-0", "text-delta step-0", "text-invalidated step-0",
			"text-start step-0~3", "text-delta step-0~3", "text-delta step-0~3", "text-delta step-0~3", "text-end step-0~3"}, segments(h),
			"the first attempt's text is invalidated once; the third attempt does not reuse its name")
	})
}

// The same for the provisional fields of a streamed output pass.
func TestRetriedOutputPassInvalidatesOnlyPublishedFields(t *testing.T) {
	letter := output(t, "A letter.", "letter", letterSchema, map[string]contracts.StructuredKind{"subject": contracts.StructuredSet, "body": contracts.StructuredTextDelta})
	outs := &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"letter": letter}}
	full := fake.Turn{Deltas: []string{`{"subject":"Hi",`, `"body":"Hello",`, `"bullets":[]}`}}
	for _, tc := range []struct {
		name   string
		failed fake.Turn
		kinds  []string
	}{
		{"failed before any field", fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Retryable: true, Message: "429"}},
			[]string{"set", "text-delta", "final"}},
		{"failed after a field", fake.Turn{Deltas: full.Deltas, FailAfter: 2, Err: &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Message: "reset"}},
			[]string{"set", "text-delta", "invalidated", "set", "text-delta", "final"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := fake.New(fake.Calls(call("kortyx_stream_emit__letter", `{"instruction":"write"}`)), tc.failed, full, fake.Text("Done."))
			h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs}, nil)
			h.run("agent", "x")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, 4, model.Calls())
			require.Equal(t, tc.kinds, structuredKinds(h))
		})
	}
}

// issueList renders the issues of a definition error as "path code".
func issueList(t *testing.T, err error) []string {
	t.Helper()
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err), "err: %v", err)
	var out []string
	for _, is := range contracts.FailureOf(err).Issues {
		out = append(out, issuePath(is)+" "+is.Code)
	}
	return out
}

const reasonProblems = `
id: bad
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      maxSteps: 0
      tools: [lookup_order, no_such_tool, kortyx_emit__x]
      stream: false
      outputSchema: {type: object}
      outputs:
        emit:
          letter: {description: d, schemaId: l, schemaVersion: "1", schema: {type: object}, stream: {fields: {body: text-delta}}}
edges:
  - [__start__, agent]
`

// A kortyx.reason node that would fail every run is refused when its workflow is added, with
// every problem at once: a params range error does not hide the semantic ones.
func TestReasonNodeProblemsAreReportedAtLoad(t *testing.T) {
	def, err := workflows.Load([]byte(reasonProblems))
	require.NoError(t, err)
	common := []string{
		"nodes.agent.params.maxSteps minimum",
		"nodes.agent.params.outputSchema invalid_value",
		"nodes.agent.params.outputs.emit.letter.stream invalid_value",
		"nodes.agent.params.tools[2] invalid_value",
	}
	t.Run("tool names unknown to the registry", func(t *testing.T) {
		require.Equal(t, common, issueList(t, workflows.NewRegistry().Add(def)))
	})
	t.Run("tool names known", func(t *testing.T) {
		r := workflows.NewRegistry()
		r.SetToolNames("lookup_order", "refund")
		err := r.Add(def)
		want := append(append(append([]string(nil), common[:3]...), "nodes.agent.params.tools[1] unknown_tool"), common[3:]...)
		require.Equal(t, want, issueList(t, err))
		var msgs []string
		for _, is := range contracts.FailureOf(err).Issues {
			msgs = append(msgs, is.Message)
		}
		require.Contains(t, msgs, `tool "no_such_tool" is not one of the worker's tools (lookup_order, refund): register it on the worker or fix the name`)
		require.Contains(t, msgs, "outputSchema cannot be combined with outputs: return the final value through a return contract (outputs.return), or drop outputs")
		require.Empty(t, r.Workflows())
	})
	t.Run("outputs without a contract", func(t *testing.T) {
		def, err := workflows.Load([]byte("id: x\nversion: \"1\"\nnodes: {agent: {run: kortyx.reason, params: {outputs: {maxEmissions: 2}}}}\nedges: [[__start__, agent]]\n"))
		require.NoError(t, err)
		require.Equal(t, []string{"nodes.agent.params.outputs invalid_value"}, issueList(t, workflows.NewRegistry().Add(def)))
	})
	t.Run("a file: format and params problems together", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.workflow.yaml")
		require.NoError(t, os.WriteFile(path, []byte(reasonProblems+"colour: blue\n"), 0o600))
		r := workflows.NewRegistry()
		r.SetToolNames("lookup_order")
		for _, add := range []func() error{func() error { return r.AddFile(path) }, func() error { return r.AddDir(filepath.Dir(path)) }} {
			err := add()
			want := append(append(append([]string{"colour unrecognized_keys"}, common[:3]...), "nodes.agent.params.tools[1] unknown_tool"), common[3:]...)
			require.Equal(t, want, issueList(t, err))
			require.Contains(t, err.Error(), path+": ")
			require.Equal(t, path, contracts.FailureOf(err).Details["file"])
		}
		require.Empty(t, r.Workflows())
	})
	t.Run("a file with params problems only", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "desk.workflow.yaml")
		require.NoError(t, os.WriteFile(path, []byte("id: desk\nversion: \"1\"\nnodes: {agent: {run: kortyx.reason, params: {tools: [refund]}}}\nedges: [[__start__, agent]]\n"), 0o600))
		r := workflows.NewRegistry()
		r.SetToolNames("lookup_order")
		err := r.AddFile(path)
		require.Equal(t, []string{"nodes.agent.params.tools[0] unknown_tool"}, issueList(t, err))
		require.Equal(t, path, contracts.FailureOf(err).Details["file"])
		r.SetToolNames("lookup_order", "refund")
		require.NoError(t, r.AddFile(path))
	})
}

// A retry of a pass whose failed attempt ran on an older worker (whose heartbeats carried a
// count of deltas) assumes that attempt published, as the older worker would have.
func TestRetryAfterAnOlderWorkerInvalidatesItsSegment(t *testing.T) {
	broker := stream.NewMemory(stream.MemoryOptions{})
	model := fake.New(fake.Text("Hello world"))
	acts := &activities.Activities{Stream: broker, Providers: providers.NewSet(model), DefaultProvider: fake.ID}
	env := newEnv()
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(def("agent", map[string]workflows.NodeFunc{"chat": reasonNode(hooks.ReasonOptions{}, nil)}, "__start__>chat")))
	workflows.NewRunner(reg).Register(env)
	env.RegisterActivityWithOptions(acts.Publish, activity.RegisterOptions{Name: protocol.PublishActivityName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in protocol.ModelPassInput) (protocol.ModelPassResult, error) {
		if activity.GetInfo(ctx).Attempt == 1 { // the older worker: one delta, then a reset
			err := broker.Publish(ctx, in.RunID,
				stream.Keyed{Key: "m:" + in.OpID + ":step-0:start", Chunk: contracts.Chunk{Type: contracts.ChunkTextStart, OpID: in.OpID, SegmentID: "step-0"}},
				stream.Keyed{Key: "m:" + in.OpID + ":step-0:1", Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, OpID: in.OpID, SegmentID: "step-0", Delta: "Hel"}})
			require.NoError(t, err)
			activity.RecordHeartbeat(ctx, 1)
			return protocol.ModelPassResult{}, temporal.NewApplicationError("connection reset", string(contracts.CodeProviderTransportError))
		}
		return acts.Model(ctx, in)
	}, activity.RegisterOptions{Name: protocol.ModelActivityName})
	env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "agent", Input: []byte(`"x"`), SessionID: "s-1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	entries, err := broker.Read(context.Background(), testRunID, 0, 0)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		if e.Chunk.SegmentID != "" {
			got = append(got, string(e.Chunk.Type)+" "+e.Chunk.SegmentID)
		}
	}
	require.Equal(t, []string{"text-start step-0", "text-delta step-0", "text-invalidated step-0",
		"text-start step-0~2", "text-delta step-0~2", "text-delta step-0~2", "text-end step-0~2"}, got)
}

// A streamed output whose pass published no field is not invalidated: there is nothing to void.
func TestInvalidStreamedOutputWithoutFieldsIsNotInvalidated(t *testing.T) {
	letter := output(t, "A letter.", "letter", letterSchema, map[string]contracts.StructuredKind{"subject": contracts.StructuredSet, "body": contracts.StructuredTextDelta})
	outs := &hooks.Outputs{Emit: map[string]*contracts.OutputContract{"letter": letter}}
	emit := fake.Calls(call("kortyx_stream_emit__letter", `{"instruction":"x"}`))
	t.Run("no corrections", func(t *testing.T) {
		model := fake.New(emit, fake.Text("Sorry, no letter."))
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, SchemaCorrections: hooks.Corrections(0)}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeInvalidModelJSON, contracts.CodeOf(err), "err: %v", err)
		require.Empty(t, structuredKinds(h))
	})
	t.Run("repaired", func(t *testing.T) {
		model := fake.New(emit, fake.Text("Sorry, no letter."), fake.Text(`{"subject":"Hi","body":"Hello","bullets":[]}`), fake.Text("Sent."))
		h, _ := outputsHarness(t, model, hooks.ReasonOptions{Outputs: outs, ToolExecution: hooks.ToolExecution{MaxSteps: 4}}, nil)
		h.run("agent", "x")
		_, err := h.result()
		require.NoError(t, err)
		require.Equal(t, []string{"final"}, structuredKinds(h))
	})
}
