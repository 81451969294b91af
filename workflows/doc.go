// Package workflows defines Kortyx workflows — graphs of nodes written in Go — and runs them on
// Temporal: one workflow execution per run, with node functions executing as workflow code.
//
// Define a workflow in Go (or load the same shape from YAML/JSON with [Load], naming node
// functions registered with [Registry.RegisterNode]), add it to a [Registry], and register a
// [Runner] with the activities on a Temporal worker:
//
//	greet := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
//		name, err := hooks.AskText(ctx, "name", "What is your name?")
//		if err != nil {
//			return workflows.NodeResult{}, err
//		}
//		return workflows.NodeResult{UI: &workflows.UI{Message: "Hello, " + name + "!"}}, nil
//	}
//	reg := workflows.NewRegistry()
//	err := reg.Add(&workflows.Definition{
//		ID: "hello", Version: "1",
//		Nodes: map[string]workflows.Node{"greet": {Run: greet}},
//		Edges: []workflows.Edge{{From: Start, To: "greet"}},
//	})
//	// handle err: a *contracts.Error with code INVALID_DEFINITION listing every problem
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: models})
//	// handle err: a missing broker or provider is refused here, not in the middle of a run
//	w := worker.New(c, contracts.DefaultTaskQueue, worker.Options{})
//	workflows.NewRunner(reg).Register(w)
//	acts.Register(w)
//
// Start runs with [StartRun] (or any Temporal client call of [contracts.RunWorkflowName]),
// answer their questions with [Respond] (signal) or [RespondAndWait] (update), and read their
// state with [Query].
//
// Semantics follow the Kortyx specification (F1, F2) with one deliberate difference: a node is
// routed only by the condition or intent it returned itself; a condition returned by an earlier
// node is never reused.
package workflows
