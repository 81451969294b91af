package hooks_test

import (
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// agent registers a one-node workflow "agent" running node.
func agent(node workflows.NodeFunc) *workflows.Registry {
	reg := workflows.NewRegistry()
	if err := reg.Add(&workflows.Definition{
		ID: "agent", Version: "1",
		Nodes: map[string]workflows.Node{"main": {Run: node}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "main"}},
	}); err != nil {
		panic(err)
	}
	return reg
}

// A node asks a human and waits; the run continues from the call with the answer. The test kit
// answers the question by its id.
func ExampleAskText() {
	reg := agent(func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		name, err := hooks.AskText(ctx, "name", "What is your name?")
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "Hello, " + name + "!"}}, nil
	})
	env := kortyxtest.New(reg, kortyxtest.Options{})
	env.OnQuestion("name", kortyxtest.Text("Ada"))
	res, err := env.Run("agent", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.State.UI.Message)
	// Output:
	// Hello, Ada!
}

// Choose offers options and returns the id of the one chosen.
func ExampleChoose() {
	reg := agent(func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		plan, err := hooks.Choose(ctx, "plan", "Which plan?",
			contracts.Option{ID: "basic", Label: "Basic"}, contracts.Option{ID: "pro", Label: "Pro"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"plan": plan}}, nil
	})
	env := kortyxtest.New(reg, kortyxtest.Options{})
	env.OnQuestion("plan", kortyxtest.Select("pro"))
	res, err := env.Run("agent", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.State.Data["plan"])
	// Output:
	// pro
}

// Reason calls a model in an activity; here the test kit's model is a scripted fake, so the
// answer and the number of model passes are exact.
func ExampleReason() {
	reg := agent(func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "answer", System: "Be brief.", Input: in.Text()})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: res.Text}}, nil
	})
	model := fake.New(fake.Text("Paris."))
	env := kortyxtest.New(reg, kortyxtest.Options{Model: model, DefaultModel: "test"})
	res, err := env.Run("agent", "What is the capital of France?")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.State.UI.Message, model.Calls())
	fmt.Println(model.Requests()[0].Messages[1].Content)
	// Output:
	// Paris. 1
	// What is the capital of France?
}

// NodeState keeps a value per node across its visits (here a self-loop), durably.
func ExampleNodeState() {
	reg := workflows.NewRegistry()
	if err := reg.Add(&workflows.Definition{
		ID: "agent", Version: "1",
		Nodes: map[string]workflows.Node{"count": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			visits, err := hooks.NodeState(ctx, 0)
			if err != nil {
				return workflows.NodeResult{}, err
			}
			if err := visits.Update(func(n int) int { return n + 1 }); err != nil {
				return workflows.NodeResult{}, err
			}
			again := "again"
			if visits.Get() == 3 {
				again = "done"
			}
			return workflows.NodeResult{Data: map[string]any{"visits": visits.Get()}, Condition: again}, nil
		}}},
		Edges: []workflows.Edge{
			{From: workflows.Start, To: "count"},
			{From: "count", To: "count", When: "again"},
			{From: "count", To: workflows.End, When: "done"},
		},
	}); err != nil {
		panic(err)
	}
	env := kortyxtest.New(reg, kortyxtest.Options{})
	res, err := env.Run("agent", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.State.Data["visits"])
	// Output:
	// 3
}
