// Package hooks holds the durable, workflow-side calls that node code makes: each takes the
// node's workflow.Context and records its result in the run (Temporal history, plus the run's
// hook journal), so a crash, a worker restart or a node retry never repeats completed work.
// ("Hooks" here are Kortyx's useX verbs, not callbacks.)
//
//   - [NodeState] and [WorkflowState]: durable values per node and per run.
//   - [RuntimeContext]: the request context the run was started with.
//   - [StructuredData]: structured UI data (set, append, text-delta, final) for the stream.
//   - [Interrupt], [AskText], [Choose]: ask a human and wait, for days if need be.
//   - [Reason]: call a model, with a tool loop, budgets and human approval of tools.
//   - [Flush]: publish what the node emitted so far.
//
// Hooks work only inside a node function, with the ctx it receives; elsewhere they return a
// HOOK_OUTSIDE_NODE error. Unlike Kortyx, a node is not replayed from the top after an answer:
// the run continues from the Interrupt call, so code before it needs no guard.
//
//	func review(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
//		visits, err := hooks.NodeState(ctx, 0)
//		if err != nil {
//			return workflows.NodeResult{}, err
//		}
//		if err := visits.Set(visits.Get() + 1); err != nil {
//			return workflows.NodeResult{}, err
//		}
//		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{
//			DataType: "draft", Data: map[string]any{"title": in.Text()},
//		}); err != nil {
//			return workflows.NodeResult{}, err
//		}
//		choice, err := hooks.Choose(ctx, "approve", "Publish this draft?",
//			contracts.Option{ID: "yes", Label: "Publish"}, contracts.Option{ID: "no", Label: "Discard"})
//		if err != nil {
//			return workflows.NodeResult{}, err // includes EXECUTION_CANCELLED when the human cancels
//		}
//		return workflows.NodeResult{Condition: choice, Data: map[string]any{"decision": choice}}, nil
//	}
package hooks
