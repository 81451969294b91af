package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

func TestLinearRunMergesDataAndEndsWithDone(t *testing.T) {
	var seen any
	d := def("support", map[string]workflows.NodeFunc{
		"classify": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{Data: map[string]any{"message": in.Text(), "topic": "billing", "tags": []any{"a", "b"}}}, nil
		},
		"answer": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			seen = in.Input
			return workflows.NodeResult{Data: map[string]any{"tags": []any{"c"}}, UI: &workflows.UI{Message: "Reset it in Settings."}}, nil
		},
	}, "__start__>classify", "classify>answer", "answer>__end__")
	h := newHarness(t, d)
	h.run("support", "  How do I reset billing access?  ")
	res, err := h.result()
	require.NoError(t, err)

	require.Equal(t, map[string]any{"rawInput": "How do I reset billing access?", "message": "How do I reset billing access?",
		"topic": "billing", "tags": []any{"a", "b"}}, seen)
	require.Equal(t, []any{"c"}, res.State.Data["tags"], "arrays replace, never concatenate")
	require.Equal(t, "answer", res.State.LastNode)
	require.Equal(t, contracts.StatusCompleted, res.Status)
	require.Equal(t, []string{"message", "done"}, h.types())
	chunks := h.chunks()
	require.Equal(t, "Reset it in Settings.", chunks[0].Content)
	require.Equal(t, "answer", chunks[0].Node)
	var final contracts.GraphState
	require.NoError(t, json.Unmarshal(chunks[1].Data, &final))
	require.Equal(t, "billing", final.Data["topic"])
	require.Len(t, final.ConversationHistory, 1)
}

func TestNodeReturningNothingLeavesInputUnchanged(t *testing.T) {
	var seen any
	d := def("w", map[string]workflows.NodeFunc{
		"a": returns(workflows.NodeResult{}),
		"b": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			seen = in.Input
			return workflows.NodeResult{}, nil
		},
	}, "__start__>a", "a>b")
	h := newHarness(t, d)
	h.run("w", "hi")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "hi", seen)
}

func TestConditionalRouting(t *testing.T) {
	var ran []string
	node := func(name string, res workflows.NodeResult) workflows.NodeFunc {
		return func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			ran = append(ran, name)
			return res, nil
		}
	}
	tests := []struct {
		name      string
		condition string
		intent    string
		want      []string
	}{
		{name: "condition multi", condition: "multi", want: []string{"route", "askMulti"}},
		{name: "intent used when no condition", intent: "single", want: []string{"route", "askSingle"}},
		{name: "unmatched ends silently", condition: "other", want: []string{"route"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			d := def("w", map[string]workflows.NodeFunc{
				"route":     node("route", workflows.NodeResult{Condition: tc.condition, Intent: tc.intent}),
				"askMulti":  node("askMulti", workflows.NodeResult{}),
				"askSingle": node("askSingle", workflows.NodeResult{}),
			}, "__start__>route", "route>askMulti?multi", "route>askSingle?single")
			h := newHarness(t, d)
			h.run("w", "x")
			_, err := h.result()
			require.NoError(t, err)
			require.Equal(t, tc.want, ran)
		})
	}
}

func TestStaleConditionDoesNotRoute(t *testing.T) {
	var ran []string
	d := def("w", map[string]workflows.NodeFunc{
		"a": func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			ran = append(ran, "a")
			return workflows.NodeResult{Condition: "go"}, nil
		},
		"b": func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			ran = append(ran, "b")
			return workflows.NodeResult{}, nil // no condition: must not reuse a's "go"
		},
		"c": func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			ran = append(ran, "c")
			return workflows.NodeResult{}, nil
		},
	}, "__start__>a", "a>b?go", "b>c?go")
	h := newHarness(t, d)
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, ran)
	require.Empty(t, res.State.LastCondition)
}

func TestLoopWithNodeState(t *testing.T) {
	d := def("todo", map[string]workflows.NodeFunc{
		"todo": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			count, err := hooks.NodeState(ctx, 0)
			if err != nil {
				return workflows.NodeResult{}, err
			}
			if err := count.Set(count.Get() + 1); err != nil {
				return workflows.NodeResult{}, err
			}
			if count.Get() < 3 {
				return workflows.NodeResult{Condition: "more"}, nil
			}
			return workflows.NodeResult{Condition: "done", Data: map[string]any{"count": count.Get()}}, nil
		},
	}, "__start__>todo", "todo>todo?more", "todo>__end__?done")
	h := newHarness(t, d)
	h.run("todo", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, float64(3), res.State.Data["count"])
}

func TestNodeStateResetsWhenAnotherNodeRunsBetween(t *testing.T) {
	var counts []int
	d := def("w", map[string]workflows.NodeFunc{
		"a": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			n, err := hooks.NodeState(ctx, 0)
			if err != nil {
				return workflows.NodeResult{}, err
			}
			_ = n.Set(n.Get() + 1)
			counts = append(counts, n.Get())
			if len(counts) < 2 {
				return workflows.NodeResult{Condition: "again"}, nil
			}
			return workflows.NodeResult{}, nil
		},
		"b": returns(workflows.NodeResult{}),
	}, "__start__>a", "a>b?again", "b>a")
	h := newHarness(t, d)
	h.run("w", "x")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []int{1, 1}, counts, "A→B→A starts A's node state fresh")
}

func TestTransitionHandsOverInSameRun(t *testing.T) {
	var seenInput any
	var shared []int
	bump := func(ctx workflow.Context) error {
		s, err := hooks.WorkflowState(ctx, "visits", 0)
		if err != nil {
			return err
		}
		if err := s.Set(s.Get() + 1); err != nil {
			return err
		}
		shared = append(shared, s.Get())
		return nil
	}
	triage := def("triage", map[string]workflows.NodeFunc{
		"start": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if err := bump(ctx); err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{TransitionTo: "general-chat", Data: map[string]any{"reason": "fallback", "rawInput": "hello again"}}, nil
		},
		"never": returns(workflows.NodeResult{}),
	}, "__start__>start", "start>never")
	general := def("general-chat", map[string]workflows.NodeFunc{
		"reply": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if err := bump(ctx); err != nil {
				return workflows.NodeResult{}, err
			}
			seenInput = in.Input
			return workflows.NodeResult{UI: &workflows.UI{Message: "general reply"}}, nil
		},
	}, "__start__>reply")
	h := newHarness(t, triage, general)
	h.run("triage", "hi")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"transition", "message", "done"}, h.types())
	c := h.chunks()[0]
	require.Equal(t, "general-chat", c.TransitionTo)
	require.JSONEq(t, `{"reason":"fallback","rawInput":"hello again"}`, string(c.Payload))
	require.Equal(t, "hello again", seenInput)
	require.Equal(t, "general-chat", res.State.CurrentWorkflow)
	require.Equal(t, "fallback", res.State.Data["reason"])
	require.Equal(t, []int{1, 2}, shared, "workflow state is shared across a transition")
}

func TestTransitionToUnknownWorkflowFails(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{"a": returns(workflows.NodeResult{TransitionTo: "nope"})}, "__start__>a")
	fallback := def("general-chat", map[string]workflows.NodeFunc{"b": returns(workflows.NodeResult{})}, "__start__>b")
	h := newHarness(t, d, fallback) // a hand-off never falls back silently
	h.run("w", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeUnknownWorkflow, contracts.CodeOf(err))
	require.Equal(t, []string{"transition", "error", "done"}, h.types())
	require.True(t, strings.HasPrefix(h.chunks()[1].Message, "Transition failed to 'nope': "), h.chunks()[1].Message)
}

func TestNodeRetry(t *testing.T) {
	t.Run("fails once then succeeds", func(t *testing.T) {
		calls := 0
		d := def("w", map[string]workflows.NodeFunc{
			"flaky": func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
				calls++
				if calls == 1 {
					return workflows.NodeResult{}, errors.New("transient")
				}
				return workflows.NodeResult{Data: map[string]any{"ok": true}}, nil
			},
		}, "__start__>flaky")
		d.Nodes["flaky"] = workflows.Node{Run: d.Nodes["flaky"].Run, Retry: &workflows.Retry{MaxAttempts: 2, DelayMs: 1000}}
		h := newHarness(t, d)
		h.run("w", "x")
		res, err := h.result()
		require.NoError(t, err)
		require.Equal(t, 2, calls)
		require.Equal(t, true, res.State.Data["ok"])
	})
	t.Run("always fails: error then done, next node never runs", func(t *testing.T) {
		nextRan := false
		d := def("w", map[string]workflows.NodeFunc{
			"bad": func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
				return workflows.NodeResult{}, errors.New("database is down")
			},
			"next": func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
				nextRan = true
				return workflows.NodeResult{}, nil
			},
		}, "__start__>bad", "bad>next")
		d.Nodes["bad"] = workflows.Node{Run: d.Nodes["bad"].Run, Retry: &workflows.Retry{MaxAttempts: 3}}
		h := newHarness(t, d)
		h.run("w", "x")
		_, err := h.result()
		require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(err))
		require.False(t, nextRan)
		require.Equal(t, []string{"error", "done"}, h.types())
		c := h.chunks()[0]
		require.Equal(t, "An unexpected error occurred.", c.Message, "internal error text stays out of the stream")
		require.Contains(t, err.Error(), "database is down", "operators see it in the Temporal failure")
		require.Equal(t, contracts.CodeExecutionFailed, c.Failure.Code)
		require.Empty(t, h.chunks()[1].Data, "done after an error carries no data")
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr))
		require.True(t, appErr.NonRetryable())
	})
	t.Run("retry reuses completed hook results", func(t *testing.T) {
		attempts := 0
		d := def("w", map[string]workflows.NodeFunc{
			"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
				attempts++
				if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"step": "start"}}); err != nil {
					return workflows.NodeResult{}, err
				}
				name, err := hooks.AskText(ctx, "name", "Your name?")
				if err != nil {
					return workflows.NodeResult{}, err
				}
				if attempts == 1 {
					return workflows.NodeResult{}, errors.New("crash after the answer")
				}
				return workflows.NodeResult{Data: map[string]any{"name": name}}, nil
			},
		}, "__start__>ask")
		d.Nodes["ask"] = workflows.Node{Run: d.Nodes["ask"].Run, Retry: &workflows.Retry{MaxAttempts: 2}}
		h := newHarness(t, d)
		h.signalAt(time.Minute, text("Ada"))
		h.run("w", "x")
		res, err := h.result()
		require.NoError(t, err)
		require.Equal(t, 2, attempts)
		require.Equal(t, "Ada", res.State.Data["name"])
		require.Equal(t, []string{"structured-data", "interrupt", "done", "done"}, h.types(),
			"the retried attempt neither republishes the chunk nor asks again")
	})
}

func TestInterruptAnsweredBySignal(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			name, err := hooks.AskText(ctx, "name", "What is your name?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"name": name}}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	var waiting contracts.RunView
	h.env.RegisterDelayedCallback(func() { waiting = h.view() }, 30*time.Second)
	h.signalAt(time.Minute, text("Ada"))
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "Ada", res.State.Data["name"])

	require.Equal(t, contracts.StatusWaiting, waiting.Status)
	require.True(t, waiting.State.AwaitingHumanInput)
	require.NotNil(t, waiting.Pending)
	require.Equal(t, "ask", waiting.Pending.Node)
	require.True(t, strings.HasPrefix(waiting.Pending.RequestID, "human-"))
	require.GreaterOrEqual(t, len(waiting.Pending.Token), 32, "≥128 random bits")

	require.Equal(t, []string{"interrupt", "done", "done"}, h.types())
	c := h.chunks()[0]
	require.Equal(t, waiting.Pending.RequestID, c.RequestID)
	require.Equal(t, waiting.Pending.Token, c.ResumeToken)
	require.Equal(t, "w", c.Workflow)
	require.Equal(t, "name", c.ID)
	require.JSONEq(t, `{"kind":"text","multiple":false,"question":"What is your name?","id":"name","options":[]}`, string(c.Input))
}

func TestInterruptAnsweredByUpdate(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"pick": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{Options: []contracts.Option{{ID: "red"}, {ID: "blue", Label: "Blue"}}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"color": a.Selected[0]}}, nil
		},
	}, "__start__>pick")
	h := newHarness(t, d)
	var outcomes []error
	record := func(_ contracts.RespondResult, err error) { outcomes = append(outcomes, err) }
	h.updateAt(time.Minute, selected("green"), record)
	h.updateAt(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: "forged", RequestID: p.RequestID, Selected: []string{"red"}}
	}, record)
	h.updateAt(3*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: "human-other", Selected: []string{"red"}}
	}, record)
	h.updateAt(4*time.Minute, selected("blue"), record)
	h.updateAt(5*time.Minute, selected("red"), record) // after completion of the node: nothing pending
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "blue", res.State.Data["color"])
	require.Len(t, outcomes, 4, "the fifth update finds the run completed")
	require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(outcomes[0]))
	require.Contains(t, outcomes[0].Error(), `Unknown option "green"`)
	require.Equal(t, contracts.CodeInvalidResume, contracts.CodeOf(outcomes[1]))
	require.Equal(t, contracts.CodeResumeMismatch, contracts.CodeOf(outcomes[2]))
	require.NoError(t, outcomes[3])
	require.Empty(t, h.view().Rejections, "rejected updates leave no trace in state")
	c := h.chunks()[0]
	require.JSONEq(t, `{"kind":"choice","multiple":false,"question":"Please choose an option.","options":[{"id":"red","label":"red"},{"id":"blue","label":"Blue"}]}`, string(c.Input))
}

func TestInvalidSignalIsRecordedAndRunKeepsWaiting(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "many", Options: []contracts.Option{{ID: "a"}, {ID: "b"}, {ID: "c"}}, Multiple: true})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"picked": a.Selected}}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	h.signalAt(time.Minute, selected("a", "z"))
	var afterReject contracts.RunView
	h.env.RegisterDelayedCallback(func() { afterReject = h.view() }, 90*time.Second)
	h.signalAt(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`[{"id":"c"},{"id":"a"}]`)}
	})
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []any{"c", "a"}, res.State.Data["picked"])
	require.Equal(t, contracts.StatusWaiting, afterReject.Status)
	require.NotNil(t, afterReject.Pending)
	require.Len(t, afterReject.Rejections, 1)
	require.Equal(t, contracts.CodeInvalidResponse, afterReject.Rejections[0].Failure.Code)
	require.Equal(t, []string{"interrupt", "done", "resume-rejected", "done"}, h.types())
	rej := h.chunks()[2]
	require.Equal(t, afterReject.Pending.RequestID, rej.RequestID)
	require.Equal(t, contracts.CodeInvalidResponse, rej.Failure.Code)
}

func TestTwoInterruptsInOneNodeSideEffectOnce(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"intake": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if err := sideEffect(ctx); err != nil { // no guard needed: code before an interrupt never re-runs
				return workflows.NodeResult{}, err
			}
			first, err := hooks.AskText(ctx, "first", "First?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			second, err := hooks.AskText(ctx, "second", "Second?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answers": []any{first, second}}}, nil
		},
	}, "__start__>intake")
	h := newHarness(t, d)
	h.signalAt(time.Minute, text("one"))
	h.updateAt(2*time.Minute, text("two"), func(_ contracts.RespondResult, err error) { require.NoError(t, err) })
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []any{"one", "two"}, res.State.Data["answers"])
	require.Equal(t, int32(1), h.effects.Load())
	require.Equal(t, []string{"interrupt", "done", "interrupt", "done", "done"}, h.types())
	require.NotEqual(t, h.chunks()[0].ResumeToken, h.chunks()[2].ResumeToken)
	require.NotEqual(t, h.chunks()[0].RequestID, h.chunks()[2].RequestID)
}

func TestCustomInterruptWithSchemas(t *testing.T) {
	req := contracts.MustCompileSchema(`{"type":"object","required":["question"],"properties":{"question":{"type":"string"}}}`)
	resp := contracts.MustCompileSchema(`{"type":"object","required":["account"],"properties":{"account":{"enum":["A","B"]}}}`)
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "acct", Request: map[string]any{"question": "Which account?"},
				Contract: "approval", RequestSchema: req, ResponseSchema: resp, SchemaID: "acct", SchemaVersion: "1",
				Meta: map[string]any{"ticket": 7, "__kortyxSecret": "x"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			var v struct{ Account string }
			if err := a.Decode(&v); err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"account": v.Account}}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	var rejected error
	h.updateAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"C"}`)}
	}, func(_ contracts.RespondResult, err error) { rejected = err })
	h.signalAt(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"account":"B"}`)}
	})
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "B", res.State.Data["account"])
	f := contracts.FailureOf(rejected)
	require.Equal(t, contracts.CodeInvalidResponse, f.Code)
	require.Equal(t, []any{"account"}, f.Issues[0].Path, "per-field reasons")
	c := h.chunks()[0]
	require.Equal(t, "acct", c.SchemaID)
	require.JSONEq(t, `{"ticket":7}`, string(c.Meta))
	require.JSONEq(t, `{"kind":"custom","multiple":false,"question":"Which account?","id":"acct","schemaId":"acct","schemaVersion":"1",
		"meta":{"ticket":7},"options":[],"contract":"approval","request":{"question":"Which account?"}}`, string(c.Input))
}

func TestInvalidInterruptRequestPublishesNothing(t *testing.T) {
	tests := []struct {
		name string
		opts hooks.InterruptOptions
	}{
		{name: "choice without options", opts: hooks.InterruptOptions{Kind: contracts.InterruptChoice}},
		{name: "duplicate option ids", opts: hooks.InterruptOptions{Options: []contracts.Option{{ID: "a"}, {ID: "a"}}}},
		{name: "custom without request", opts: hooks.InterruptOptions{Kind: contracts.InterruptCustom}},
		{name: "request fails its schema", opts: hooks.InterruptOptions{Request: map[string]any{}, RequestSchema: contracts.MustCompileSchema(`{"required":["q"]}`)}},
		{name: "unknown kind", opts: hooks.InterruptOptions{Kind: "poll"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := def("w", map[string]workflows.NodeFunc{
				"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
					_, err := hooks.Interrupt(ctx, tc.opts)
					return workflows.NodeResult{}, err
				},
			}, "__start__>ask")
			h := newHarness(t, d)
			h.run("w", "x")
			_, err := h.result()
			require.Equal(t, contracts.CodeInvalidInterrupt, contracts.CodeOf(err))
			require.Equal(t, []string{"error", "done"}, h.types())
		})
	}
}

func TestCancelAnswerEndsRunCancelled(t *testing.T) {
	after := false
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.AskText(ctx, "q", "Continue?"); err != nil {
				return workflows.NodeResult{}, err
			}
			after = true
			return workflows.NodeResult{}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	h.updateAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Cancel: true}
	}, func(r contracts.RespondResult, err error) {
		require.NoError(t, err)
		require.True(t, r.Cancelled)
	})
	h.run("w", "x")
	_, err := h.result()
	require.True(t, temporal.IsCanceledError(err), "err: %v", err)
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
	require.False(t, after)
	require.Equal(t, []string{"interrupt", "done", "cancelled", "done"}, h.types())
	c := h.chunks()[2]
	require.Equal(t, testRunID, c.RunID)
	require.Equal(t, "Execution cancelled.", c.Reason)
}

func TestCancelEvenWhenNodeSwallowsIt(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, _ = hooks.AskText(ctx, "q", "Continue?") // ignores the cancellation
			return workflows.NodeResult{Data: map[string]any{"fallback": true}}, nil
		},
		"next": returns(workflows.NodeResult{}),
	}, "__start__>ask", "ask>next")
	h := newHarness(t, d)
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Cancel: true}
	})
	h.run("w", "x")
	_, err := h.result()
	require.True(t, temporal.IsCanceledError(err))
	require.Equal(t, []string{"interrupt", "done", "cancelled", "done"}, h.types())
}

func TestTemporalCancelWhileWaiting(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.AskText(ctx, "q", "Continue?")
			return workflows.NodeResult{}, err
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.run("w", "x")
	_, err := h.result()
	require.True(t, temporal.IsCanceledError(err))
	require.Equal(t, []string{"interrupt", "done", "cancelled", "done"}, h.types())
}

func TestStructuredData(t *testing.T) {
	schema := contracts.MustCompileSchema(`{"type":"object","required":["title"]}`)
	d := def("w", map[string]workflows.NodeFunc{
		"plan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			id, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Kind: contracts.StructuredSet, StreamID: "card", DataType: "plan", Path: "title", Value: "Trip"})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			steps := []hooks.StructuredDataOptions{
				{Kind: contracts.StructuredTextDelta, Path: "body", Delta: "Day 1"},
				{Kind: contracts.StructuredAppend, Path: "stops", Items: []any{"Rome", "Pisa"}},
				{Kind: contracts.StructuredFinal, Data: map[string]any{"title": "Trip", "body": "Day 1", "stops": []any{"Rome", "Pisa"}}, Schema: schema},
			}
			for _, s := range steps {
				s.StreamID, s.DataType = id, "plan"
				if _, err := hooks.StructuredData(ctx, s); err != nil {
					return workflows.NodeResult{}, err
				}
			}
			// Failures publish nothing.
			for _, bad := range []hooks.StructuredDataOptions{
				{Kind: contracts.StructuredSet, Path: "a..b", Value: 1},
				{Kind: contracts.StructuredSet, Path: "", Value: 1},
				{Kind: contracts.StructuredFinal, Data: map[string]any{"body": "no title"}, Schema: schema},
				{Kind: contracts.StructuredFinal, Data: "not an object"},
			} {
				if _, err := hooks.StructuredData(ctx, bad); err == nil {
					return workflows.NodeResult{}, errors.New("expected an error")
				}
			}
			auto, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"n": 1}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"auto": auto}}, nil
		},
	}, "__start__>plan")
	h := newHarness(t, d)
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	chunks := h.chunks()
	require.Equal(t, []string{"structured-data", "structured-data", "structured-data", "structured-data", "structured-data", "done"}, h.types())
	var kinds []contracts.StructuredKind
	for _, c := range chunks[:4] {
		kinds = append(kinds, c.Kind)
		require.Equal(t, "card", c.StreamID)
		require.Equal(t, "plan", c.DataType)
		require.Equal(t, "plan", c.Node)
	}
	require.Equal(t, []contracts.StructuredKind{"set", "text-delta", "append", "final"}, kinds)
	require.JSONEq(t, `["Rome","Pisa"]`, string(chunks[2].Items))
	require.Equal(t, testRunID+":structured:5", res.State.Data["auto"])
	require.Equal(t, "generic", chunks[4].DataType)
}

func TestUIStructuredIsPublishedWithInferredType(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"a": returns(workflows.NodeResult{UI: &workflows.UI{Structured: map[string]any{"jobs": []any{1}}}}),
		"b": returns(workflows.NodeResult{UI: &workflows.UI{Message: "done", Structured: map[string]any{"summary": "ok"}}}),
	}, "__start__>a", "a>b")
	h := newHarness(t, d)
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"structured-data", "message", "structured-data", "done"}, h.types())
	require.Equal(t, "jobs", h.chunks()[0].DataType)
	require.Equal(t, "summary", h.chunks()[2].DataType)
	require.Equal(t, map[string]any{"jobs": []any{float64(1)}, "summary": "ok"}, res.State.UI.Structured)
	require.Equal(t, "done", res.State.UI.Message)
}

func TestRuntimeContext(t *testing.T) {
	type reqCtx struct {
		ThreadID string `json:"threadId"`
	}
	var got reqCtx
	var asMap map[string]any
	d := def("w", map[string]workflows.NodeFunc{
		"a": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			var err error
			if got, err = hooks.RuntimeContext[reqCtx](ctx); err != nil {
				return workflows.NodeResult{}, err
			}
			asMap, err = hooks.RuntimeContext[map[string]any](ctx)
			return workflows.NodeResult{}, err
		},
	}, "__start__>a")
	h := newHarness(t, d)
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "w", Input: json.RawMessage(`"x"`), Context: json.RawMessage(`{"threadId":"t-9"}`)})
	require.NoError(t, h.env.GetWorkflowError())
	require.Equal(t, "t-9", got.ThreadID)
	require.Equal(t, map[string]any{"threadId": "t-9"}, asMap)

	h2 := newHarness(t, d)
	h2.run("w", "x")
	require.NoError(t, h2.env.GetWorkflowError())
	require.Equal(t, map[string]any{}, asMap, "no context reads as {}")
}

func TestHooksOutsideANode(t *testing.T) {
	var leaked workflow.Context
	d := def("w", map[string]workflows.NodeFunc{
		"a": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			leaked = ctx
			return workflows.NodeResult{}, nil
		},
		"b": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.NodeState(leaked, 1) // a's context, after a returned
			return workflows.NodeResult{}, err
		},
	}, "__start__>a", "a>b")
	h := newHarness(t, d)
	h.run("w", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeHookOutsideNode, contracts.CodeOf(err))
	require.Contains(t, err.Error(), `after node "a" returned`)

	env := newHarness(t).env
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		_, err := hooks.AskText(ctx, "", "hi?")
		return contracts.ToTemporal(err) // what crosses Temporal keeps its code
	}, workflow.RegisterOptions{Name: "plain"})
	env.ExecuteWorkflow("plain")
	require.Equal(t, contracts.CodeHookOutsideNode, contracts.CodeOf(env.GetWorkflowError()))
	require.Contains(t, env.GetWorkflowError().Error(), "hooks.Interrupt called outside a node")
}

func TestUnknownWorkflowAndInvalidInput(t *testing.T) {
	schema := contracts.MustCompileSchema(`{"type":"object","required":["topic"]}`)
	d := def("typed", map[string]workflows.NodeFunc{"a": returns(workflows.NodeResult{})}, "__start__>a")
	d.InputSchema = schema
	h := newHarness(t, d)
	h.run("nope", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeUnknownWorkflow, contracts.CodeOf(err))
	require.Equal(t, []string{"error", "done"}, h.types())

	h = newHarness(t, d)
	h.run("typed", map[string]any{"subject": 1})
	_, err = h.result()
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))
	require.Equal(t, []any{}, contracts.FailureOf(err).Issues[0].Path)

	h = newHarness(t, d)
	h.run("typed", map[string]any{"topic": "x"})
	_, err = h.result()
	require.NoError(t, err)
}

func TestOutputSchemaValidatesFinalData(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{"a": returns(workflows.NodeResult{Data: map[string]any{"summary": 3}})}, "__start__>a")
	d.OutputSchema = contracts.MustCompileSchema(`{"type":"object","properties":{"summary":{"type":"string"}}}`)
	h := newHarness(t, d)
	h.run("w", "x")
	_, err := h.result()
	require.Equal(t, contracts.CodeInvalidOutput, contracts.CodeOf(err))
	require.Equal(t, []any{"summary"}, contracts.FailureOf(err).Issues[0].Path)
}

func TestContinueAsNewCarriesState(t *testing.T) {
	var inputs []any
	counter := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		inputs = append(inputs, in.Input)
		s, err := hooks.WorkflowState(ctx, "n", 0)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		if err := s.Set(s.Get() + 1); err != nil {
			return workflows.NodeResult{}, err
		}
		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"n": s.Get()}}); err != nil {
			return workflows.NodeResult{}, err
		}
		if s.Get() < 5 {
			return workflows.NodeResult{Condition: "more", Data: map[string]any{"n": s.Get()}}, nil
		}
		return workflows.NodeResult{Data: map[string]any{"n": s.Get()}}, nil
	}
	d := def("loop", map[string]workflows.NodeFunc{"step": counter}, "__start__>step", "step>step?more")
	h := newHarness(t, d)
	in := protocol.RunStart{RunInput: contracts.RunInput{Workflow: "loop", Input: json.RawMessage(`"go"`), SessionID: "s", ContinueAsNewAfterNodes: 2}}
	executions := 0
	for {
		executions++
		env := newEnv()
		reg := workflows.NewRegistry()
		require.NoError(t, reg.Add(d))
		workflows.NewRunner(reg).Register(env)
		(&activities.Activities{Stream: h.broker}).Register(env)
		env.ExecuteWorkflow(contracts.RunWorkflowName, in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
			require.NotNil(t, in.Snapshot)
			require.Equal(t, "s", in.SessionID)
			continue
		}
		require.NoError(t, err)
		var res contracts.RunResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, float64(5), res.State.Data["n"])
		break
	}
	require.Equal(t, 3, executions, "5 nodes, continuing as new after every 2")
	require.Len(t, inputs, 5)
	require.Equal(t, map[string]any{"rawInput": "go", "n": float64(4)}, inputs[4], "graph input survives continue-as-new")
	types := h.types()
	require.Equal(t, []string{"structured-data", "structured-data", "structured-data", "structured-data", "structured-data", "done"}, types,
		"chunk keys continue across executions: nothing lost, nothing duplicated")
}

func TestRunFromSnapshotReusesJournal(t *testing.T) {
	var effects int
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"step": "asking"}}); err != nil {
				return workflows.NodeResult{}, err
			}
			name, err := hooks.AskText(ctx, "name", "Name?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			effects++
			return workflows.NodeResult{Data: map[string]any{"name": name}}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	answered := contracts.Answer{RequestID: "human-1", Kind: contracts.InterruptText, Text: "Ada", Value: json.RawMessage(`"Ada"`)}
	published := contracts.Chunk{Type: contracts.ChunkStructuredData, Kind: contracts.StructuredFinal, StreamID: "s-1", DataType: "generic",
		Node: "ask", Data: json.RawMessage(`{"step":"asking"}`)}
	snap := &protocol.RunSnapshot{
		State:    contracts.GraphState{Input: "hi", CurrentWorkflow: "w", LastNode: "__start__", Data: map[string]any{}},
		NextNode: "ask",
		Seq:      3,
		Hooks: protocol.HookState{NodeID: "ask", Journal: map[string]protocol.JournalEntry{
			"structured#0":   {Kind: "structured", Value: protocol.RawJSON(published)},
			"interrupt:name": {Kind: "interrupt", Answer: &answered},
		}},
	}
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, protocol.RunStart{RunInput: contracts.RunInput{}, Snapshot: snap})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "Ada", res.State.Data["name"])
	require.Equal(t, 1, effects)
	require.Equal(t, []string{"done"}, h.types(), "nothing recorded is published or asked again")
	require.Equal(t, "w:4", func() string {
		e, _ := h.broker.Read(context.Background(), testRunID, 0, 0)
		return e[0].Key
	}(), "chunk keys continue from the snapshot's sequence")
}

func TestRepeatedSignalHasOneEffectConflictingOneIsRejected(t *testing.T) {
	d := def("w", map[string]workflows.NodeFunc{
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			first, err := hooks.AskText(ctx, "first", "First?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			second, err := hooks.AskText(ctx, "second", "Second?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answers": []any{first, second}}}, nil
		},
	}, "__start__>ask")
	h := newHarness(t, d)
	var firstReq contracts.PendingRequest
	h.env.RegisterDelayedCallback(func() {
		firstReq = *h.view().Pending
		resp := contracts.Response{Token: firstReq.Token, RequestID: firstReq.RequestID, Text: "one"}
		h.env.SignalWorkflow(contracts.RespondName, resp)
		h.env.SignalWorkflow(contracts.RespondName, resp) // delivered twice
	}, time.Minute)
	var view contracts.RunView
	h.env.RegisterDelayedCallback(func() {
		// A different answer to the already answered first question.
		h.env.SignalWorkflow(contracts.RespondName, contracts.Response{Token: firstReq.Token, RequestID: firstReq.RequestID, Text: "uno"})
	}, 2*time.Minute)
	h.env.RegisterDelayedCallback(func() { view = h.view() }, 3*time.Minute)
	h.signalAt(4*time.Minute, text("two"))
	h.run("w", "x")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []any{"one", "two"}, res.State.Data["answers"])
	require.Len(t, view.Rejections, 1, "only the conflicting answer is rejected")
	require.Equal(t, contracts.CodeInvalidResume, view.Rejections[0].Failure.Code)
	require.Equal(t, []string{"interrupt", "done", "interrupt", "done", "resume-rejected", "done"}, h.types())
}
