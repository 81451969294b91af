// Package hello is the smallest Kortyx agent: one node that asks a human for their name and
// greets them. It is the "first agent" of the README.
package hello

import (
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

func greet(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
	name, err := hooks.AskText(ctx, "name", "What is your name?")
	if err != nil {
		return workflows.NodeResult{}, err // includes EXECUTION_CANCELLED when the human cancels
	}
	return workflows.NodeResult{UI: &workflows.UI{Message: "Hello, " + name + "!"}}, nil
}

// Register adds the hello workflow to reg; a bad definition comes back as an error listing
// every problem.
func Register(reg *workflows.Registry) error {
	return reg.Add(&workflows.Definition{
		ID: "hello", Version: "1",
		Nodes: map[string]workflows.Node{"greet": {Run: greet}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "greet"}},
	})
}
