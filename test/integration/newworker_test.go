package integration_test

import (
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// newWorker returns a worker (not started) on task queue tq set up the way app.Run sets up the
// programs' workers: the run and session workflows of reg, acts, and the heartbeat throttle of
// activities.WorkerOptions (a stopped run's model request is aborted within 0.5 s). Register
// more before Start. Each of opts may change the worker's options.
func newWorker(c client.Client, tq string, reg *workflows.Registry, acts *activities.Activities, opts ...func(*worker.Options)) worker.Worker {
	o := worker.Options{}
	activities.WorkerOptions(&o)
	for _, f := range opts {
		f(&o)
	}
	w := worker.New(c, tq, o)
	workflows.NewRunner(reg).Register(w)
	acts.Register(w)
	return w
}
