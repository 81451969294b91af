package workflows_test

import (
	"errors"
	"strings"
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

var (
	topicSchema    = contracts.MustCompileSchema(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)
	childOutSchema = contracts.MustCompileSchema(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`)
)

// child returns a child workflow definition with the topic/summary schemas.
func child(id string, nodes map[string]workflows.NodeFunc, edges ...string) *workflows.Definition {
	d := def(id, nodes, edges...)
	d.InputSchema, d.OutputSchema = topicSchema, childOutSchema
	return d
}

func upper(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	var args struct {
		Topic string `json:"topic"`
	}
	if err := in.Decode(&args); err != nil {
		return workflows.NodeResult{}, err
	}
	return workflows.NodeResult{Data: map[string]any{"summary": strings.ToUpper(args.Topic)}}, nil
}

func TestWorkflowCallReturnsChildData(t *testing.T) {
	var seen any
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "research", Workflow: "upper", Input: map[string]any{"topic": "test"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"summary": res.Data["summary"]}}, nil
		},
		"after": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			seen = in.Input.(map[string]any)["summary"]
			return workflows.NodeResult{}, nil
		},
	}, "__start__>call", "call>after")
	h := newHarness(t, parent, child("upper", map[string]workflows.NodeFunc{"up": upper}, "__start__>up"))
	h.run("parent", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "TEST", seen)
	require.Equal(t, "TEST", res.State.Data["summary"])
	require.Equal(t, []string{"done"}, h.types(), "the child publishes no done of its own")
}

func TestChildInterruptIsAskedByTheRoot(t *testing.T) {
	asked := 0
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "ask", Workflow: "asker", Input: map[string]any{"topic": "x"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: res.Data}, nil
		},
	}, "__start__>call")
	asker := child("asker", map[string]workflows.NodeFunc{
		"first": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			asked++
			a, err := hooks.AskText(ctx, "q1", "First?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			b, err := hooks.AskText(ctx, "q2", "Second?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"summary": a + "+" + b}}, nil
		},
	}, "__start__>first")
	h := newHarness(t, parent, asker)
	h.signalAt(time.Minute, text("A"))
	h.signalAt(2*time.Minute, text("B"))
	h.run("parent", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "A+B", res.State.Data["summary"])
	require.Equal(t, 1, asked, "the child's node ran once")
	require.Equal(t, []string{"interrupt", "done", "interrupt", "done", "done"}, h.types())
	c := h.chunks()[0]
	require.Equal(t, "asker", c.Workflow)
	require.Equal(t, "first", c.Node)
}

// asks returns a child node that asks question q and returns the answer as its summary.
func asks(q string, runs *int) workflows.NodeFunc {
	return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		*runs++
		a, err := hooks.AskText(ctx, "q", q)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"summary": q + a}}, nil
	}
}

func TestParallelAsksOneQuestionAtATimeInCallOrder(t *testing.T) {
	var aRuns, bRuns, cRuns int
	var got []string
	parent := def("parent", map[string]workflows.NodeFunc{
		"fan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Parallel(ctx,
				hooks.WorkflowCall{ID: "a", Workflow: "a", Input: map[string]any{"topic": "a"}},
				hooks.WorkflowCall{ID: "b", Workflow: "b", Input: map[string]any{"topic": "b"}},
				hooks.WorkflowCall{ID: "c", Workflow: "c", Input: map[string]any{"topic": "c"}})
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
		child("a", map[string]workflows.NodeFunc{"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			aRuns++
			return workflows.NodeResult{Data: map[string]any{"summary": "A"}}, nil
		}}, "__start__>n"),
		child("b", map[string]workflows.NodeFunc{"n": asks("B?", &bRuns)}, "__start__>n"),
		child("c", map[string]workflows.NodeFunc{"n": asks("C?", &cRuns)}, "__start__>n"))
	var questions []string
	answer := func(p contracts.PendingRequest) contracts.Response {
		questions = append(questions, p.Input.Question)
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: "!"}
	}
	h.signalAt(time.Minute, answer)
	h.signalAt(2*time.Minute, answer)
	h.run("parent", "go")
	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"B?", "C?"}, questions)
	require.Equal(t, []string{"A", "B?!", "C?!"}, got)
	require.Equal(t, []int{1, 1, 1}, []int{aRuns, bRuns, cRuns})
	require.Equal(t, []string{"interrupt", "done", "interrupt", "done", "done"}, h.types())
}

func TestParallelFailureAfterWaitingSiblingIsAnswered(t *testing.T) {
	var perr *hooks.ParallelError
	var bRuns int
	parent := def("parent", map[string]workflows.NodeFunc{
		"fan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Parallel(ctx,
				hooks.WorkflowCall{ID: "a", Workflow: "fails", Input: map[string]any{"topic": "a"}},
				hooks.WorkflowCall{ID: "b", Workflow: "b", Input: map[string]any{"topic": "b"}})
			if !errors.As(err, &perr) {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"caught": true}}, nil
		},
	}, "__start__>fan")
	h := newHarness(t, parent,
		child("fails", map[string]workflows.NodeFunc{"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, &contracts.Error{Code: contracts.CodeDomainError, Message: "no sources"}
		}}, "__start__>n"),
		child("b", map[string]workflows.NodeFunc{"n": asks("B?", &bRuns)}, "__start__>n"))
	h.signalAt(time.Minute, text("yes"))
	h.run("parent", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, true, res.State.Data["caught"])
	require.Len(t, perr.Results, 2)
	require.Equal(t, []string{"rejected", "fulfilled"}, []string{perr.Results[0].Status, perr.Results[1].Status})
	require.Equal(t, "B?yes", perr.Results[1].Value.Data["summary"])
	require.Equal(t, contracts.CodeWorkflowCallFailed, contracts.CodeOf(perr.Results[0].Err))
	require.ErrorContains(t, perr.Results[0].Err, "Workflow 'fails': no sources")
	f := contracts.FailureOf(perr)
	require.Equal(t, contracts.CodeParallelFailed, f.Code)
	require.Equal(t, []string{"rejected", "fulfilled"}, []string{f.Results[0].Status, f.Results[1].Status})
	require.Equal(t, []string{"interrupt", "done", "done"}, h.types(), "the question came before the failure")
}

func TestWorkflowCallFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		call hooks.WorkflowCall
		want string
	}{
		"invalid input":    {hooks.WorkflowCall{ID: "x", Workflow: "upper", Input: map[string]any{"topic": 7}}, "Workflow 'upper': input does not match its input schema"},
		"unknown workflow": {hooks.WorkflowCall{ID: "x", Workflow: "nope", Input: map[string]any{"topic": "t"}}, "Workflow 'nope': "},
		"no schemas":       {hooks.WorkflowCall{ID: "x", Workflow: "plain", Input: map[string]any{"topic": "t"}}, "must declare inputSchema and outputSchema"},
		"invalid output":   {hooks.WorkflowCall{ID: "x", Workflow: "badout", Input: map[string]any{"topic": "t"}}, "Workflow 'badout': run data does not match the output schema"},
		"transition":       {hooks.WorkflowCall{ID: "x", Workflow: "handoff", Input: map[string]any{"topic": "t"}}, "cannot hand off"},
		"blank id":         {hooks.WorkflowCall{ID: " ", Workflow: "upper", Input: map[string]any{"topic": "t"}}, "needs a non-blank, stable id"},
		"not plain JSON":   {hooks.WorkflowCall{ID: "x", Workflow: "upper", Input: map[string]any{"topic": func() {}}}, "input is not plain JSON"},
		"child node fails": {hooks.WorkflowCall{ID: "x", Workflow: "fails", Input: map[string]any{"topic": "t"}}, "Workflow 'fails': no sources"},
	} {
		t.Run(name, func(t *testing.T) {
			parent := def("parent", map[string]workflows.NodeFunc{
				"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
					_, err := hooks.Workflow(ctx, tc.call)
					return workflows.NodeResult{}, err
				},
			}, "__start__>call")
			h := newHarness(t, parent,
				child("upper", map[string]workflows.NodeFunc{"up": upper}, "__start__>up"),
				def("plain", map[string]workflows.NodeFunc{"up": upper}, "__start__>up"),
				child("badout", map[string]workflows.NodeFunc{"n": returns(workflows.NodeResult{Data: map[string]any{"summary": 1}})}, "__start__>n"),
				child("handoff", map[string]workflows.NodeFunc{"n": returns(workflows.NodeResult{TransitionTo: "upper"})}, "__start__>n"),
				child("fails", map[string]workflows.NodeFunc{"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
					return workflows.NodeResult{}, &contracts.Error{Code: contracts.CodeDomainError, Message: "no sources"}
				}}, "__start__>n"))
			h.run("parent", "go")
			_, err := h.result()
			require.Error(t, err)
			t.Logf("%v", err)
			require.Equal(t, contracts.CodeWorkflowCallFailed, contracts.CodeOf(err), "err: %v", err)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, []string{"error", "done"}, h.types())
		})
	}
}

// A node retry reuses a completed call; a retry whose call changed fails with
// WorkflowCallError; a failed call stays failed for the activation.
func TestWorkflowCallReplay(t *testing.T) {
	childRuns, attempts := 0, 0
	upperCounting := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		childRuns++
		return upper(ctx, in)
	}
	mk := func(changeInput bool) *harness {
		childRuns, attempts = 0, 0
		parent := def("parent", map[string]workflows.NodeFunc{
			"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
				attempts++
				topic := "a"
				if changeInput && attempts > 1 {
					topic = "b"
				}
				res, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "c1", Workflow: "upper", Input: map[string]any{"topic": topic}})
				if err != nil {
					return workflows.NodeResult{}, err
				}
				if attempts == 1 {
					return workflows.NodeResult{}, errors.New("flaky after the call")
				}
				return workflows.NodeResult{Data: res.Data}, nil
			},
		}, "__start__>call")
		parent.Nodes["call"] = workflows.Node{Run: parent.Nodes["call"].Run, Retry: &workflows.Retry{MaxAttempts: 2}}
		return newHarness(t, parent, child("upper", map[string]workflows.NodeFunc{"up": upperCounting}, "__start__>up"))
	}
	h := mk(false)
	h.run("parent", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "A", res.State.Data["summary"])
	require.Equal(t, 1, childRuns, "the retry reused the child's result")

	h = mk(true)
	h.run("parent", "go")
	_, err = h.result()
	require.Equal(t, contracts.CodeWorkflowCallFailed, contracts.CodeOf(err))
	require.ErrorContains(t, err, "call input or target changed during replay")
	require.Equal(t, 1, childRuns)
}

// A child runs a parallel group of its own; the grandchildren's questions reach the root one
// at a time and their answers go back down two levels.
func TestNestedParallelGroups(t *testing.T) {
	var x, y, z int
	fan := func(ids ...string) workflows.NodeFunc {
		return func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			calls := make([]hooks.WorkflowCall, len(ids))
			for i, id := range ids {
				calls[i] = hooks.WorkflowCall{ID: id, Workflow: id, Input: map[string]any{"topic": id}}
			}
			res, err := hooks.Parallel(ctx, calls...)
			if err != nil {
				return workflows.NodeResult{}, err
			}
			var parts []string
			for _, r := range res {
				parts = append(parts, r.Data["summary"].(string))
			}
			return workflows.NodeResult{Data: map[string]any{"summary": strings.Join(parts, ",")}}, nil
		}
	}
	h := newHarness(t,
		def("root", map[string]workflows.NodeFunc{"fan": fan("mid", "z")}, "__start__>fan"),
		child("mid", map[string]workflows.NodeFunc{"fan": fan("x", "y")}, "__start__>fan"),
		child("x", map[string]workflows.NodeFunc{"n": asks("X?", &x)}, "__start__>n"),
		child("y", map[string]workflows.NodeFunc{"n": asks("Y?", &y)}, "__start__>n"),
		child("z", map[string]workflows.NodeFunc{"n": asks("Z?", &z)}, "__start__>n"))
	var questions []string
	answer := func(p contracts.PendingRequest) contracts.Response {
		questions = append(questions, p.Input.Question)
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: "1"}
	}
	for i := 1; i <= 3; i++ {
		h.signalAt(time.Duration(i)*time.Minute, answer)
	}
	h.run("root", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, []string{"X?", "Y?", "Z?"}, questions, "group order, depth first")
	require.Equal(t, "X?1,Y?1,Z?1", res.State.Data["summary"])
	require.Equal(t, []int{1, 1, 1}, []int{x, y, z})
}

// Cancelling through a child's question cancels every child; the parent's continuation never
// runs.
func TestCancelThroughChildQuestionCancelsAllChildren(t *testing.T) {
	var b, c int
	after := false
	parent := def("parent", map[string]workflows.NodeFunc{
		"fan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Parallel(ctx,
				hooks.WorkflowCall{ID: "b", Workflow: "b", Input: map[string]any{"topic": "b"}},
				hooks.WorkflowCall{ID: "c", Workflow: "c", Input: map[string]any{"topic": "c"}})
			return workflows.NodeResult{}, err
		},
		"after": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			after = true
			return workflows.NodeResult{}, nil
		},
	}, "__start__>fan", "fan>after")
	h := newHarness(t, parent,
		child("b", map[string]workflows.NodeFunc{"n": asks("B?", &b)}, "__start__>n"),
		child("c", map[string]workflows.NodeFunc{"n": asks("C?", &c)}, "__start__>n"))
	h.signalAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Cancel: true}
	})
	h.run("parent", "go")
	_, err := h.result()
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err), "err: %v", err)
	require.False(t, after)
	require.Equal(t, []string{"interrupt", "done", "cancelled", "done"}, h.types())
}

// A custom question of a child is validated by the root against the child's schema.
func TestChildCustomQuestionValidatedByRoot(t *testing.T) {
	schema := contracts.MustCompileSchema(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "k", Workflow: "custom", Input: map[string]any{"topic": "t"}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: res.Data}, nil
		},
	}, "__start__>call")
	h := newHarness(t, parent, child("custom", map[string]workflows.NodeFunc{
		"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			a, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "amount", Kind: contracts.InterruptCustom, Question: "How many?", Request: map[string]any{"unit": "boxes"}, ResponseSchema: schema})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"summary": string(a.Value)}}, nil
		}}, "__start__>n"))
	var rejected error
	h.updateAt(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: []byte(`{"n":"many"}`)}
	}, func(_ contracts.RespondResult, err error) { rejected = err })
	h.signalAt(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: []byte(`{"n":3}`)}
	})
	h.run("parent", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(rejected))
	require.JSONEq(t, `{"n":3}`, res.State.Data["summary"].(string))
}

// A child's model usage is added to the root's once, after the child's question was answered.
func TestChildUsageCountedOnce(t *testing.T) {
	model := fake.New(fake.Turn{Text: "hi", Usage: providers.Usage{Input: 7, Output: 3, Total: 10}})
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
			r, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: "hello"})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			a, err := hooks.AskText(ctx, "q", "More?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"summary": r.Text + a}}, nil
		}}, "__start__>n"))
	h.acts.Providers, h.acts.DefaultProvider = providers.NewSet(model), fake.ID
	h.signalAt(time.Minute, text("!"))
	h.run("parent", "go")
	res, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "hi!", res.State.Data["summary"])
	require.Equal(t, &contracts.Usage{Input: 7, Output: 3, Total: 10}, res.State.Runtime.TokenUsage)
	types := h.types()
	require.Equal(t, []string{"text-start", "text-delta", "text-end", "interrupt", "done", "done"}, types,
		"the child's text streams on the root's stream")
}

// A failed call stays failed for the node activation: a retry gets the recorded failure and
// does not run the child again; a new call id calls again.
func TestFailedCallStaysFailedForTheActivation(t *testing.T) {
	childRuns, attempts := 0, 0
	var errs []string
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			attempts++
			_, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "c1", Workflow: "fails", Input: map[string]any{"topic": "a"}})
			errs = append(errs, err.Error())
			if attempts < 2 {
				return workflows.NodeResult{}, err
			}
			_, err = hooks.Workflow(ctx, hooks.WorkflowCall{ID: "c2", Workflow: "fails", Input: map[string]any{"topic": "a"}})
			return workflows.NodeResult{}, err
		},
	}, "__start__>call")
	parent.Nodes["call"] = workflows.Node{Run: parent.Nodes["call"].Run, Retry: &workflows.Retry{MaxAttempts: 2}}
	h := newHarness(t, parent, child("fails", map[string]workflows.NodeFunc{"n": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		childRuns++
		return workflows.NodeResult{}, &contracts.Error{Code: contracts.CodeDomainError, Message: "no sources"}
	}}, "__start__>n"))
	h.run("parent", "go")
	_, err := h.result()
	require.Equal(t, contracts.CodeWorkflowCallFailed, contracts.CodeOf(err))
	require.Equal(t, 2, childRuns, "c1 once (its failure reused by the retry), c2 once")
	require.Equal(t, errs[0], errs[1])
}

// A second group while one is awaited in the same node is refused.
func TestOneParallelGroupAtATime(t *testing.T) {
	var second error
	parent := def("parent", map[string]workflows.NodeFunc{
		"fan": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			workflow.Go(ctx, func(gctx workflow.Context) {
				_, second = hooks.Parallel(ctx, hooks.WorkflowCall{ID: "x", Workflow: "upper", Input: map[string]any{"topic": "x"}})
			})
			_, err := hooks.Parallel(ctx, hooks.WorkflowCall{ID: "a", Workflow: "upper", Input: map[string]any{"topic": "a"}})
			return workflows.NodeResult{}, err
		},
	}, "__start__>fan")
	h := newHarness(t, parent, child("upper", map[string]workflows.NodeFunc{"up": upper}, "__start__>up"))
	h.run("parent", "go")
	_, err := h.result()
	require.NoError(t, err)
	require.ErrorContains(t, second, "Await each parallel group before starting another in the same node")
}
