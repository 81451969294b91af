package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// toolbox is a set of test tools that count their executions.
type toolbox struct {
	mu    sync.Mutex
	calls map[string]int
	keys  []string
}

func (b *toolbox) count(name, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls == nil {
		b.calls = map[string]int{}
	}
	b.calls[name]++
	b.keys = append(b.keys, key)
}

func (b *toolbox) n(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[name]
}

func (b *toolbox) set(t *testing.T) *tools.Set {
	type orderIn struct {
		OrderID string `json:"orderId"`
	}
	lookup, err := tools.Func("lookup_order", "Look up an order.", `{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`,
		func(ctx context.Context, call tools.Call, in orderIn) (map[string]any, error) {
			b.count("lookup_order", call.IdempotencyKey)
			return map[string]any{"orderId": in.OrderID, "status": "shipped"}, nil
		})
	require.NoError(t, err)
	refund, err := tools.Func("refund", "Refund an order.", `{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`,
		func(ctx context.Context, call tools.Call, in orderIn) (map[string]any, error) {
			b.count("refund", call.IdempotencyKey)
			return map[string]any{"refunded": in.OrderID}, nil
		})
	require.NoError(t, err)
	broken, err := tools.Func("broken", "Always fails.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			b.count("broken", call.IdempotencyKey)
			return "", errors.New("warehouse offline")
		})
	require.NoError(t, err)
	set, err := tools.NewSet(lookup, refund, broken)
	require.NoError(t, err)
	return set
}

// reasonNode calls hooks.Reason with opts and keeps the result in data.
func reasonNode(opts hooks.ReasonOptions, out *hooks.ReasonResult) workflows.NodeFunc {
	return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if opts.Input == "" {
			opts.Input = in.Text()
		}
		res, err := hooks.Reason(ctx, opts)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if out != nil {
			*out = res
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
}

func reasonHarness(t *testing.T, model *fake.Model, box *toolbox, nodes map[string]workflows.NodeFunc, edges ...string) *harness {
	h := newHarness(t, def("agent", nodes, edges...))
	h.acts.Providers = providers.NewSet(model)
	h.acts.DefaultProvider = fake.ID
	if box != nil {
		h.acts.Tools = box.set(t)
	}
	return h
}

func TestReasonStreamsText(t *testing.T) {
	model := fake.New(fake.Turn{Text: "Hello there world", Usage: providers.Usage{Input: 7, Output: 3, Total: 10}})
	var res hooks.ReasonResult
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{ID: "answer", System: "Be brief."}, &res),
	}, "__start__>chat")
	h.run("agent", "Say hello")
	out, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"text-start", "text-delta", "text-delta", "text-delta", "text-end", "done"}, h.types())
	for _, c := range h.chunks()[:5] {
		require.Equal(t, "chat", c.Node)
		require.Equal(t, "answer", c.ID)
		require.Equal(t, res.OpID, c.OpID)
		require.Equal(t, "step-0", c.SegmentID)
	}
	require.Equal(t, "there ", h.chunks()[2].Delta)
	require.Equal(t, "Hello there world", res.Text)
	require.Equal(t, 1, model.Calls())
	require.Equal(t, []providers.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hello"}}, model.Requests()[0].Messages)
	require.Equal(t, &contracts.Usage{Input: 7, Output: 3, Total: 10}, out.State.Runtime.TokenUsage)
	require.Equal(t, providers.FinishStop, res.FinishReason.Unified)
	require.Len(t, res.Steps, 1)
}

func TestReasonSilentAndBuffered(t *testing.T) {
	tests := []struct {
		name string
		opts hooks.ReasonOptions
		want []string
	}{
		{name: "silent stream", opts: hooks.ReasonOptions{Silent: true}, want: []string{"done"}},
		{name: "buffered", opts: hooks.ReasonOptions{Buffered: true}, want: []string{"text-start", "text-delta", "text-end", "done"}},
		{name: "model option streaming false", opts: hooks.ReasonOptions{Model: providers.ModelRef{Options: map[string]any{"streaming": false}}},
			want: []string{"text-start", "text-delta", "text-end", "done"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fake.New(fake.Text("one two three"))
			h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{"chat": reasonNode(tc.opts, nil)}, "__start__>chat")
			h.run("agent", "hi")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, tc.want, h.types())
			if len(tc.want) > 1 {
				require.Equal(t, "one two three", h.chunks()[1].Delta)
			}
		})
	}
}

func TestReasonToolLoop(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Text("It shipped."))
	var res hooks.ReasonResult
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}}}, &res),
	}, "__start__>chat")
	h.run("agent", "Where is A-1?")
	out, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-end", "done"}, h.types())
	c := h.chunks()
	require.Equal(t, "lookup_order", c[0].Tool)
	require.Equal(t, "call-lookup_order-1", c[0].ToolCallID)
	require.JSONEq(t, `{"orderId":"A-1"}`, string(c[0].Input))
	require.JSONEq(t, `{"orderId":"A-1","status":"shipped"}`, c[1].Content)
	require.Equal(t, "step-1", c[2].SegmentID)
	require.Equal(t, 2, model.Calls())
	require.Equal(t, 1, box.n("lookup_order"))
	require.Equal(t, testRunID+":"+res.OpID+":call-lookup_order-1", box.keys[0], "idempotency key: workflow id, op, call id")
	second := model.Requests()[1].Messages
	require.Len(t, second, 3)
	require.Equal(t, providers.RoleAssistant, second[1].Role)
	require.Equal(t, "lookup_order", second[1].ToolCalls[0].Name)
	require.Equal(t, providers.RoleTool, second[2].Role)
	require.Equal(t, "call-lookup_order-1", second[2].ToolCallID)
	require.Equal(t, "lookup_order", model.Requests()[0].Tools[0].Name)
	require.Equal(t, "It shipped.", res.Text)
	require.Len(t, res.Steps, 2)
	require.Len(t, res.ToolResults, 1)
	require.Equal(t, 10+0+10+2, out.State.Runtime.TokenUsage.Total) // fake usage: 10 in + one out per delta, each pass
}

func TestReasonMaxSteps(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}, ToolExecution: hooks.ToolExecution{MaxSteps: 1}}, nil),
	}, "__start__>chat")
	h.run("agent", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeReasonMaxSteps, contracts.CodeOf(err))
	f := contracts.FailureOf(err)
	require.Contains(t, f.Message, "reached maxSteps (1) before producing a final response")
	require.Equal(t, 0, box.n("lookup_order"), "no pass is left to read a result: the tool does not run")
	require.Equal(t, 1, model.Calls())
	require.Equal(t, []string{"error", "done"}, h.types())
}

func TestReasonApproval(t *testing.T) {
	for _, decision := range []string{"approve", "deny"} {
		t.Run(decision, func(t *testing.T) {
			box := &toolbox{}
			model := fake.New(fake.Call("refund", `{"orderId":"A-1"}`), fake.Text("Done."))
			h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
				"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"refund", "lookup_order"},
					ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}, Approval: hooks.Only("refund")}}, nil),
			}, "__start__>chat")
			var question contracts.InterruptInput
			h.updateAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
				question = p.Input
				return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: []string{decision}}
			}, func(_ contracts.RespondResult, err error) { require.NoError(t, err) })
			h.run("agent", "refund A-1")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, "Approve refund?", question.Question)
			require.Equal(t, "tool:call-refund-1", question.ID)
			require.JSONEq(t, `{"tool":"refund","toolCallId":"call-refund-1","input":{"orderId":"A-1"}}`, string(question.Meta))
			require.Equal(t, []string{"interrupt", "done", "tool-call-start", "tool-call-result", "text-start", "text-delta", "text-end", "done"}, h.types())
			toolMsg := model.Requests()[1].Messages[2] // user, assistant (tool call), tool
			if decision == "deny" {
				require.Equal(t, 0, box.n("refund"))
				require.True(t, toolMsg.IsError)
				require.Equal(t, "Tool call denied by user.", toolMsg.Content)
				require.True(t, h.chunks()[3].IsError)
			} else {
				require.Equal(t, 1, box.n("refund"))
				require.False(t, toolMsg.IsError)
			}
		})
	}
}

func TestReasonToolErrorsReachTheModel(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Calls(
		providers.ToolCall{Name: "broken", Arguments: json.RawMessage(`{}`)},
		providers.ToolCall{Name: "lookup_order", Arguments: json.RawMessage(`{"order":7}`)},
	), fake.Text("Sorry."))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"broken", "lookup_order"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}}}, nil),
	}, "__start__>chat")
	h.run("agent", "x")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"tool-call-start", "tool-call-error", "tool-call-start", "tool-call-error", "text-start", "text-delta", "text-end", "done"}, h.types())
	msgs := model.Requests()[1].Messages // user, assistant, tool, tool
	require.True(t, msgs[2].IsError)
	require.Contains(t, msgs[2].Content, "warehouse offline")
	require.True(t, msgs[3].IsError)
	require.Contains(t, msgs[3].Content, `Invalid arguments for tool "lookup_order"`)
	require.Equal(t, 1, box.n("broken"))
	require.Equal(t, 0, box.n("lookup_order"), "invalid arguments never reach the tool")
	require.Equal(t, contracts.CodeSchemaValidation, h.chunks()[3].Failure.Code)
}

func TestReasonRejectsBadToolCalls(t *testing.T) {
	tests := []struct {
		name string
		turn fake.Turn
		code contracts.Code
	}{
		{name: "unknown tool", turn: fake.Call("delete_everything", `{}`), code: contracts.CodeUnknownTool},
		{name: "empty id", turn: fake.Turn{KeepIDs: true, ToolCalls: []providers.ToolCall{{Name: "lookup_order"}}}, code: contracts.CodeInvalidToolCall},
		{name: "duplicate ids", turn: fake.Turn{KeepIDs: true, ToolCalls: []providers.ToolCall{{ID: "a", Name: "lookup_order"}, {ID: "a", Name: "lookup_order"}}}, code: contracts.CodeInvalidToolCall},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			box := &toolbox{}
			h := reasonHarness(t, fake.New(tc.turn), box, map[string]workflows.NodeFunc{
				"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}}, nil),
			}, "__start__>chat")
			h.run("agent", "x")
			_, err := h.result()
			require.Equal(t, tc.code, contracts.CodeOf(err), "err: %v", err)
			require.Equal(t, 0, box.n("lookup_order"))
		})
	}
}

func TestReasonRecordedWorkIsNotRepeatedOnNodeRetry(t *testing.T) {
	box := &toolbox{}
	model := fake.New(
		fake.Call("lookup_order", `{"orderId":"A-1"}`),
		fake.Fail(contracts.CodeProviderHTTPError, false, "bad request"), // the second pass fails the node
		fake.Text("Shipped."),
	)
	attempts := 0
	var keys []string
	d := def("agent", map[string]workflows.NodeFunc{
		"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			attempts++
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "r", Input: "where?", Tools: []string{"lookup_order"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			keys = append(keys, res.OpID)
			if attempts == 2 {
				return workflows.NodeResult{}, errors.New("crash after the answer")
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
		},
	}, "__start__>chat")
	d.Nodes["chat"] = workflows.Node{Run: d.Nodes["chat"].Run, Retry: &workflows.Retry{MaxAttempts: 3}}
	h := newHarness(t, d)
	h.acts.Providers, h.acts.DefaultProvider, h.acts.Tools = providers.NewSet(model), fake.ID, box.set(t)
	h.run("agent", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "Shipped.", res.State.Data["answer"])
	require.Equal(t, 3, attempts)
	require.Equal(t, 3, model.Calls(), "pass 1 once, the failed pass 2, pass 2 again; the completed call is not repeated")
	require.Equal(t, 1, box.n("lookup_order"), "the recorded tool result is reused")
	require.Equal(t, keys[0], keys[1], "the same operation across retries")
	require.Equal(t, 10+0+10+1, res.State.Runtime.TokenUsage.Total, "usage counted once per paid pass")
}

func TestReasonRetriedStreamInvalidatesItsText(t *testing.T) {
	model := fake.New(
		fake.Turn{Text: "Hello brave world", FailAfter: 2, Err: &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Message: "connection reset"}},
		fake.Text("Hello brave world"),
	)
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{"chat": reasonNode(hooks.ReasonOptions{}, nil)}, "__start__>chat")
	h.run("agent", "x")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"text-start", "text-delta", "text-delta", "status", "text-invalidated", "text-start", "text-delta", "text-delta", "text-delta", "text-end", "done"}, h.types())
	c := h.chunks()
	require.Equal(t, "model fake failed (attempt 1 of 5), retrying in 1 s", c[3].Message, "the retry is announced")
	require.Equal(t, "step-0", c[4].SegmentID, "the failed attempt's segment is void")
	require.Equal(t, "step-0~2", c[5].SegmentID)
	require.Equal(t, 2, model.Calls())
}

func TestReasonProviderErrorFailsTheRun(t *testing.T) {
	model := fake.New(fake.Fail(contracts.CodeProviderConfiguration, false, "OPENAI_API_KEY is not set"))
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{"chat": reasonNode(hooks.ReasonOptions{}, nil)}, "__start__>chat")
	h.run("agent", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
	require.Equal(t, 1, model.Calls(), "non-retryable: one attempt")
	require.Equal(t, "OPENAI_API_KEY is not set", h.chunks()[0].Message)
}

func TestReasonOptionsAreChecked(t *testing.T) {
	h := reasonHarness(t, fake.New(), nil, map[string]workflows.NodeFunc{
		"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{})
			return workflows.NodeResult{}, err
		},
	}, "__start__>chat")
	h.run("agent", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err))
}
