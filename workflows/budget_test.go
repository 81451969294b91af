package workflows_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/sessionapi"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// call is a scripted tool call of lookup_order with usage u.
func callWith(u providers.Usage, order string) fake.Turn {
	return fake.Turn{Usage: u, ToolCalls: []providers.ToolCall{{ID: "c-" + order, Name: "lookup_order", Arguments: json.RawMessage(`{"orderId":"` + order + `"}`)}}}
}

// the chunk of type typ (the first one).
func chunkOf(t *testing.T, h *harness, typ contracts.ChunkType) contracts.Chunk {
	t.Helper()
	for _, c := range h.chunks() {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s chunk in %v", typ, h.types())
	return contracts.Chunk{}
}

func answer(id string) func(p contracts.PendingRequest) contracts.Response {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: []string{id}}
	}
}

// A token budget of 500: the two tool-loop passes spend it exactly (120 + 380); the third pass
// cannot be granted, so the run pauses with a limit-reached chunk and the budget question;
// "Continue with 500 more tokens" lets it run. The model ran 3 passes, each tool once, and the
// run's spend is the providers' usage, counted once.
func TestTokenBudgetPausesAndContinues(t *testing.T) {
	box := &toolbox{}
	model := fake.New(callWith(usage(100, 20), "A-1"), callWith(usage(300, 80), "A-2"),
		fake.Turn{Text: "Both shipped.", Usage: usage(200, 10)})
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}, Options: providers.CallOptions{MaxOutputTokens: 100}}, nil),
	}, "__start__>chat")
	var asked contracts.PendingRequest
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		asked = p
		return answer(execution.BudgetContinue)(p)
	})
	h.runLimited("agent", "Where are A-1 and A-2?", contracts.Limits{MaxTokens: 500})
	out, err := h.result()
	require.NoError(t, err)
	require.Equal(t, 3, model.Calls())
	require.Equal(t, 2, box.n("lookup_order"))
	for _, req := range model.Requests() {
		require.Equal(t, 100, req.Options.MaxOutputTokens, "the passes had room for their maximum output")
	}
	require.Equal(t, &contracts.Spend{Tokens: 710, MaxTokens: 1000}, out.State.Runtime.Spend)
	require.Equal(t, 710, out.State.Runtime.TokenUsage.Total)

	lr := chunkOf(t, h, contracts.ChunkLimitReached)
	require.Equal(t, protocol.LimitTokens, lr.Limit)
	require.Equal(t, 500, lr.Maximum)
	require.Equal(t, 500, lr.Consumed)
	require.Equal(t, "run", lr.Budget.Scope)
	require.Equal(t, 500, lr.Budget.Tokens)
	require.Equal(t, 500, lr.Budget.MaxTokens)
	require.Equal(t, execution.BudgetQuestion, asked.Input.Question)
	require.Equal(t, execution.BudgetQuestionID, asked.Input.ID)
	require.Equal(t, []contracts.Option{{ID: "continue", Label: "Continue with 500 more tokens"}, {ID: "stop", Label: "Stop"}}, asked.Input.Options)
	var meta struct {
		Code   string                 `json:"code"`
		Budget contracts.BudgetStatus `json:"budget"`
	}
	require.NoError(t, json.Unmarshal(asked.Input.Meta, &meta))
	require.Equal(t, "BUDGET_EXHAUSTED", meta.Code)
	require.Equal(t, protocol.LimitTokens, meta.Budget.Limit)
	// The warning share (80 %) was passed by the second pass, once.
	var status []contracts.Chunk
	for _, c := range h.chunks() {
		if c.Type == contracts.ChunkStatus && c.Budget != nil {
			status = append(status, c)
		}
	}
	require.Len(t, status, 1)
	require.Equal(t, "Budget 80% used: 500 of 500 tokens", status[0].Message)
}

// Stop at the budget question fails the run with BUDGET_EXHAUSTED: no further pass, no
// further tool call.
func TestTokenBudgetStop(t *testing.T) {
	box := &toolbox{}
	model := fake.New(callWith(usage(400, 100), "A-1"), fake.Text("never"))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}}, nil),
	}, "__start__>chat")
	h.signalAt(time.Minute, answer(execution.BudgetStop))
	h.runLimited("agent", "Where is A-1?", contracts.Limits{MaxTokens: 500})
	_, err := h.result()
	require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(err))
	require.Equal(t, 1, model.Calls())
	require.Equal(t, 1, box.n("lookup_order"))
}

// Without a maximum output, a pass reserves execution.DefaultOutputReserve; with less left,
// it is sent with what is left as its maximum output.
func TestTokenBudgetClampsOutput(t *testing.T) {
	model := fake.New(fake.Turn{Text: "Hi.", Usage: usage(30, 40)})
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{}, nil),
	}, "__start__>chat")
	h.runLimited("agent", "Say hi", contracts.Limits{MaxTokens: 100})
	out, err := h.result()
	require.NoError(t, err)
	got := model.Requests()[0].Options.MaxOutputTokens
	require.Greater(t, got, 90)
	require.Less(t, got, 100)
	require.Equal(t, &contracts.Spend{Tokens: 70, MaxTokens: 100}, out.State.Runtime.Spend)
}

// A money budget priced by the worker's table, with OnBudgetExhausted "fail": the first pass
// spends it all (150 × 1000 + 25 × 2000 per million = 0.20 USD), the second fails the run with
// BUDGET_EXHAUSTED after a limit-reached chunk that says what was spent.
func TestMoneyBudgetFails(t *testing.T) {
	box := &toolbox{}
	model := fake.New(callWith(usage(150, 25), "A-1"), fake.Text("never"))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}, Options: providers.CallOptions{MaxOutputTokens: 10}}, nil),
	}, "__start__>chat")
	require.NoError(t, h.reg.SetPrices(map[string]contracts.Price{"fake:scripted": {Input: 1000, Output: 2000}}, fake.ID, "scripted", "USD"))
	h.runLimited("agent", "Where is A-1?", contracts.Limits{MaxCost: 0.2, OnBudgetExhausted: contracts.BudgetFail})
	_, err := h.result()
	require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(err))
	require.Contains(t, err.Error(), "0.20 of 0.20 USD spent")
	require.Equal(t, 1, model.Calls())
	require.Equal(t, 1, box.n("lookup_order"))
	lr := chunkOf(t, h, contracts.ChunkLimitReached)
	require.Equal(t, protocol.LimitCost, lr.Limit)
	require.InDelta(t, 0.2, lr.Budget.Cost, 1e-9)
	require.Equal(t, 0.2, lr.Budget.MaxCost)
	require.Equal(t, "USD", lr.Budget.Currency)
	require.Zero(t, lr.Maximum)
}

// A money budget and a model the price table lacks: PRICE_MISSING before any pass.
func TestMoneyBudgetUnpricedModel(t *testing.T) {
	model := fake.New(fake.Text("never"))
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Model: providers.ModelRef{Provider: fake.ID, Model: "other"}}, nil),
	}, "__start__>chat")
	require.NoError(t, h.reg.SetPrices(map[string]contracts.Price{"fake:scripted": {Input: 1, Output: 2}}, fake.ID, "scripted", "EUR"))
	h.runLimited("agent", "Hi", contracts.Limits{MaxCost: 1})
	_, err := h.result()
	require.Equal(t, contracts.CodePriceMissing, contracts.CodeOf(err))
	require.Contains(t, err.Error(), "no price for the model fake:other")
	require.Zero(t, model.Calls())
}

// The worker's default budget (Registry.SetLimits) applies to a run that sets none, and
// AskAtWarn asks once at the warning share: Stop fails the run before its next pass.
func TestWorkerBudgetAsksAtWarning(t *testing.T) {
	box := &toolbox{}
	model := fake.New(callWith(usage(700, 150), "A-1"), fake.Text("never"))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"chat": reasonNode(hooks.ReasonOptions{Tools: []string{"lookup_order"}, Options: providers.CallOptions{MaxOutputTokens: 10}}, nil),
	}, "__start__>chat")
	require.NoError(t, h.reg.SetLimits(contracts.Limits{MaxTokens: 1000, AskAtWarn: true}))
	var asked contracts.PendingRequest
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		asked = p
		return answer(execution.BudgetStop)(p)
	})
	h.run("agent", "Where is A-1?")
	_, err := h.result()
	require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(err))
	require.Equal(t, execution.BudgetWarnQuestion, asked.Input.Question)
	require.Equal(t, 1, model.Calls())
	require.Equal(t, []string{"status", "interrupt"}, h.types()[len(h.types())-5:len(h.types())-3])
}

// A child's passes reserve at the root: the root's budget counts them; a pass the budget cannot
// grant pauses the root with the budget question (the child waits), and Continue lets it run.
// The root's spend is the child's passes, counted once.
func TestBudgetCountsChildren(t *testing.T) {
	model := fake.New(fake.Turn{Text: "one", Usage: usage(20, 10)}, fake.Turn{Text: "two", Usage: usage(5, 5)})
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "t", Workflow: "talker", Input: map[string]any{"topic": "x"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: res.Data}, nil
		},
	}, "__start__>call")
	h := newHarness(t, parent, child("talker", map[string]workflows.NodeFunc{
		"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "hello", Options: providers.CallOptions{MaxOutputTokens: 10}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			b, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "again", Options: providers.CallOptions{MaxOutputTokens: 10}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"summary": a.Text + " " + b.Text}}, nil
		}}, "__start__>n"))
	h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
	var asked contracts.PendingRequest
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		asked = p
		return answer(execution.BudgetContinue)(p)
	})
	h.runLimited("parent", "go", contracts.Limits{MaxTokens: 30, BudgetWarnAt: 1})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "one two", res.State.Data["summary"])
	require.Equal(t, 2, model.Calls())
	require.Equal(t, execution.BudgetQuestion, asked.Input.Question)
	require.Equal(t, &contracts.Spend{Tokens: 40, MaxTokens: 60}, res.State.Runtime.Spend)
	require.Equal(t, []string{"text-start", "text-delta", "text-end", "limit-reached", "interrupt", "done"}, h.types()[:6])
}

// With OnBudgetExhausted "fail", a child's pass the root cannot grant fails the child and the
// root with BUDGET_EXHAUSTED, after the root's limit-reached chunk; the model is not called.
func TestBudgetDeniesChild(t *testing.T) {
	model := fake.New(fake.Text("never"))
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "t", Workflow: "talker", Input: map[string]any{"topic": "x"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: res.Data}, nil
		},
	}, "__start__>call")
	h := newHarness(t, parent, child("talker", map[string]workflows.NodeFunc{
		"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "a long question that needs more than the budget"})
			return workflows.NodeResult{}, err
		}}, "__start__>n"))
	h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
	h.runLimited("parent", "go", contracts.Limits{MaxTokens: 5, OnBudgetExhausted: contracts.BudgetFail})
	_, err := h.result()
	require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(err))
	require.Zero(t, model.Calls())
	lr := chunkOf(t, h, contracts.ChunkLimitReached)
	require.Equal(t, protocol.LimitTokens, lr.Limit)
	require.Equal(t, 5, lr.Budget.MaxTokens)
}

// Bad budgets are refused with INVALID_INPUT before any work.
func TestBudgetRefusesBadSettings(t *testing.T) {
	for _, l := range []contracts.Limits{{MaxTokens: -1}, {MaxCost: -0.5}, {BudgetWarnAt: -1}, {MaxTokens: 5, OnBudgetExhausted: "later"}} {
		model := fake.New(fake.Text("never"))
		h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{"chat": reasonNode(hooks.ReasonOptions{}, nil)}, "__start__>chat")
		h.runLimited("agent", "Hi", l)
		_, err := h.result()
		require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err), "%+v", l)
		require.Zero(t, model.Calls())
	}
}

// The session's budget (issue 34, the session scope): the turn request that names one sets it;
// each run is given the session's limits and what its earlier runs reported spent (a run counts
// once it reported; a run that ended adds its spend and allowances to the session's).
func TestSessionGivesItsBudgetToEachRun(t *testing.T) {
	h := newSessionHarness(t)
	b, _ := json.Marshal("hi")
	var first, second, third sessionapi.TurnStarted
	var refused, refused2, refused3, bad error
	budget := contracts.Limits{MaxTokens: 200, OnBudgetExhausted: contracts.BudgetFail, MaxModelPasses: 3}
	h.update(time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Workflow: "echo", Input: b, SessionBudget: &budget}, &first, &refused)
	end := func(at time.Duration, run *sessionapi.TurnStarted, spend protocol.RunSpendReport, id string) {
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: run.RunID, TurnEnded: true, Spend: &spend,
				Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: id, SessionID: "s", RunID: run.RunID, TurnIndex: 1, Workflow: "echo",
					ActivePendingRequests: []contracts.PendingRequest{}}}})
		}, at)
	}
	end(2*time.Second, &first, protocol.RunSpendReport{Tokens: 26, MoreTokens: 200}, "cp-1")
	neg := contracts.Limits{MaxTokens: -1}
	h.update(3*time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Workflow: "echo", Input: b, SessionBudget: &neg}, new(sessionapi.TurnStarted), &bad)
	h.update(4*time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Workflow: "echo", Input: b}, &second, &refused2)
	end(5*time.Second, &second, protocol.RunSpendReport{Tokens: 30}, "cp-2")
	h.update(6*time.Second, protocol.SessionStartTurnUpdate, sessionapi.TurnRequest{Workflow: "echo", Input: b}, &third, &refused3)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s"}})

	require.NoError(t, refused)
	require.NoError(t, refused2)
	require.NoError(t, refused3)
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(bad), "%v", bad)
	require.Len(t, h.runs, 3)
	limits := contracts.Limits{MaxTokens: 200, OnBudgetExhausted: contracts.BudgetFail}
	require.Equal(t, &protocol.SessionBudget{Limits: limits}, h.runs[0].SessionBudget)
	require.Equal(t, &protocol.SessionBudget{Limits: limits, Spent: contracts.Spend{Tokens: 26}, More: contracts.Spend{Tokens: 200}}, h.runs[1].SessionBudget)
	require.Equal(t, &protocol.SessionBudget{Limits: limits, Spent: contracts.Spend{Tokens: 56}, More: contracts.Spend{Tokens: 200}}, h.runs[2].SessionBudget)
}

// A run of a session with a budget: its passes are bounded by what the session has left; the
// question says "Session budget reached — Continue?" with the session's spend; Continue's
// allowance is reported to the session with the run's spend.
func TestRunUnderSessionBudget(t *testing.T) {
	model := fake.New(fake.Turn{Text: "one", Usage: usage(20, 10)}, fake.Turn{Text: "two", Usage: usage(5, 5)})
	h := twoCallsHarness(t, model)
	var asked contracts.PendingRequest
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		asked = p
		return answer(execution.BudgetContinue)(p)
	})
	in, _ := json.Marshal("go")
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, protocol.RunStart{RunInput: contracts.RunInput{Workflow: "agent", Input: in, SessionID: "s-1"},
		SessionBudget: &protocol.SessionBudget{Limits: contracts.Limits{MaxTokens: 100}, Spent: contracts.Spend{Tokens: 75}}})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "one two", res.State.Data["answer"])
	require.Equal(t, 2, model.Calls())
	require.Equal(t, execution.SessionBudgetQuestion, asked.Input.Question)
	require.Equal(t, []contracts.Option{{ID: "continue", Label: "Continue with 100 more tokens"}, {ID: "stop", Label: "Stop"}}, asked.Input.Options)
	lr := chunkOf(t, h, contracts.ChunkLimitReached)
	require.Equal(t, contracts.BudgetStatus{Scope: "session", Limit: "maxTokens", Tokens: 105, MaxTokens: 100, Reserve: lr.Budget.Reserve}, *lr.Budget)
	// The session's warning share (0.8) was passed by the first pass: once, in scope "session".
	st := chunkOf(t, h, contracts.ChunkStatus)
	require.Equal(t, "Session budget 80% used: 105 of 100 tokens", st.Message)
	require.Equal(t, "session", st.Budget.Scope)
	require.Equal(t, &contracts.Spend{Tokens: 40}, res.State.Runtime.Spend)
}

// A run of a session with a budget reports its spend with each checkpoint report; a run whose
// response ended early (CompleteResponse) and then spent more reports that, once, at its end.
func TestRunReportsItsSessionSpend(t *testing.T) {
	model := fake.New(fake.Turn{Text: "one", Usage: usage(20, 10)}, fake.Turn{Text: "two", Usage: usage(5, 5)})
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "hello", Options: providers.CallOptions{MaxOutputTokens: 10}}); err != nil {
				return workflows.NodeResult{}, err
			}
			if _, err := hooks.CompleteResponse(ctx, hooks.CompleteResponseOptions{}); err != nil {
				return workflows.NodeResult{}, err
			}
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "after", Options: providers.CallOptions{MaxOutputTokens: 10}})
			return workflows.NodeResult{}, err
		},
	}, "__start__>chat")
	var reports []protocol.CheckpointReport
	h.env.OnSignalExternalWorkflow(mock.Anything, "session-wf", "", protocol.SessionCheckpointSignal, mock.Anything).Return(
		func(namespace, workflowID, runID, signalName string, arg any) error {
			reports = append(reports, arg.(protocol.CheckpointReport))
			return nil
		})
	in, _ := json.Marshal("go")
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, protocol.RunStart{RunInput: contracts.RunInput{Workflow: "agent", Input: in, SessionID: "s-1"},
		Session:       &protocol.SessionBinding{WorkflowID: "session-wf", SessionID: "s-1", TurnIndex: 1},
		SessionBudget: &protocol.SessionBudget{Limits: contracts.Limits{MaxTokens: 1000}, Spent: contracts.Spend{Tokens: 100}}})
	_, err := h.result()
	require.NoError(t, err)
	require.Len(t, reports, 2)
	require.NotNil(t, reports[0].Checkpoint, "CompleteResponse's checkpoint")
	require.Equal(t, &protocol.RunSpendReport{Tokens: 30}, reports[0].Spend)
	require.Nil(t, reports[1].Checkpoint, "the spend after it")
	require.Equal(t, &protocol.RunSpendReport{Tokens: 40}, reports[1].Spend)
}

// A child that fails after a pass carries its spend in its failure: the root counts the pass's
// usage exactly (not the reservation it held), when the node goes on after the failed call.
func TestBudgetCountsAFailedChild(t *testing.T) {
	model := fake.New(fake.Turn{Text: "one", Usage: usage(20, 10)})
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "t", Workflow: "talker", Input: map[string]any{"topic": "x"}})
			return workflows.NodeResult{Data: map[string]any{"failed": err != nil}}, nil
		},
	}, "__start__>call")
	h := newHarness(t, parent, child("talker", map[string]workflows.NodeFunc{
		"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "hello", Options: providers.CallOptions{MaxOutputTokens: 100}}); err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{}, contracts.Errorf(contracts.CodeDomainError, "the child gives up")
		}}, "__start__>n"))
	h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
	h.runLimited("parent", "go", contracts.Limits{MaxTokens: 1000})
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, true, res.State.Data["failed"])
	require.Equal(t, 1, model.Calls())
	require.Equal(t, &contracts.Spend{Tokens: 30, MaxTokens: 1000}, res.State.Runtime.Spend)
}

// A session budget with AskAtWarn: the run whose pass reaches the warning share asks "Session
// budget almost used — Continue?" once, before its next pass; Continue goes on. A session whose
// warning an earlier run published (Warned) asks nothing.
func TestSessionBudgetAsksAtWarning(t *testing.T) {
	for _, warned := range []bool{false, true} {
		t.Run(fmt.Sprintf("warned before: %v", warned), func(t *testing.T) {
			model := fake.New(fake.Turn{Text: "one", Usage: usage(20, 10)}, fake.Turn{Text: "two", Usage: usage(5, 5)})
			h := twoCallsHarness(t, model)
			var asked []string
			h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
				asked = append(asked, p.Input.Question)
				return answer(execution.BudgetContinue)(p)
			})
			in, _ := json.Marshal("go")
			h.env.ExecuteWorkflow(contracts.RunWorkflowName, protocol.RunStart{RunInput: contracts.RunInput{Workflow: "agent", Input: in, SessionID: "s-1"},
				SessionBudget: &protocol.SessionBudget{Limits: contracts.Limits{MaxTokens: 1000, AskAtWarn: true, BudgetWarnAt: 0.5},
					Spent: contracts.Spend{Tokens: 480}, Warned: warned}})
			res, err := h.result()
			require.NoError(t, err)
			require.Equal(t, "one two", res.State.Data["answer"])
			require.Equal(t, 2, model.Calls())
			if warned {
				require.Empty(t, asked)
				return
			}
			require.Equal(t, []string{execution.SessionWarnQuestion}, asked, "asked once, after the first pass passed the share")
		})
	}
}

// twoCallsHarness runs the agent whose node makes two Reason calls ("hello", "again"; at most
// 10 output tokens each) and keeps their texts, joined, as data "answer".
func twoCallsHarness(t *testing.T, model *fake.Model) *harness {
	return reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"chat": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "hello", Options: providers.CallOptions{MaxOutputTokens: 10}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			b, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "again", Options: providers.CallOptions{MaxOutputTokens: 10}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": a.Text + " " + b.Text}}, nil
		},
	}, "__start__>chat")
}
