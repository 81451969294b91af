// Package kortyx is the client side of Kortyx runs: the calls a starter, an HTTP server or any
// program with a Temporal [client.Client] makes to start runs, answer their questions, read
// their state and find waiting runs. Sessions (turns, stop, rollback, fork, checkpoints) are
// the session service, package sessions. Everything here takes a [context.Context]; the workflow side —
// definitions, the registry, the run and session workflows — is package workflows, and node
// code uses package hooks.
//
//	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
//	if err != nil {
//		return err
//	}
//	input, err := json.Marshal("Ada")
//	if err != nil {
//		return err
//	}
//	run, err := kortyx.StartRun(ctx, c, contracts.RunInput{Workflow: "hello", Input: input}, kortyx.StartOptions{})
//	if err != nil {
//		return err
//	}
//	view, err := kortyx.Query(ctx, c, run.GetID()) // the pending question, once the run asks
//	if err != nil {
//		return err
//	}
//	if view.Pending != nil {
//		_, err = kortyx.RespondAndWait(ctx, c, run.GetID(), "", contracts.Response{
//			Token: view.Pending.Token, RequestID: view.Pending.RequestID, Text: "Ada"})
//	}
//
// Answers by update ([RespondAndWait]) are validated by the run and refused with a typed error;
// by signal ([Respond]) they are fire and forget.
package kortyx
