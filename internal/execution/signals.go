package execution

import "go.temporal.io/sdk/workflow"

// onSignal starts a workflow goroutine that receives every signal name, decoded as a T, and
// handles it with fn, in the order of arrival, until Receive reports no more. It is the one
// signal-receive loop of the run workflow (questions and budget requests of children, grants,
// answers); the channel is taken and the goroutine started at the call, as the loops it
// replaced did, so histories stay the same.
func onSignal[T any](ctx workflow.Context, name string, fn func(ctx workflow.Context, v T)) {
	ch := workflow.GetSignalChannel(ctx, name)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var v T
			if !ch.Receive(ctx, &v) {
				return
			}
			fn(ctx, v)
		}
	})
}
