// Package activities is the activity side of Kortyx runs: everything that touches the outside
// world (the stream broker now; model providers and tools as they land). Workflow code reaches
// it only through activity names in [contracts], never by importing this package.
//
// A worker registers the run workflow and these activities together:
//
//	broker := stream.NewMemory()
//	reg := workflows.NewRegistry()
//	// ... reg.RegisterNode / reg.Add ...
//	w := worker.New(c, contracts.DefaultTaskQueue, worker.Options{})
//	workflows.NewRunner(reg).Register(w)
//	(&activities.Activities{Stream: broker}).Register(w)
//	err := w.Run(worker.InterruptCh())
package activities
