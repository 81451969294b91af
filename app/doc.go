// Package app is the wiring of Kortyx programs, shared by the worker, the starter's demo and
// your own programs: configuration from the environment ([ConfigFromEnv]; the Temporal
// connection is the standard client configuration of go.temporal.io/sdk/contrib/envconfig), the
// embedded Temporal dev server ([StartDevServer], [Connect]), the model providers and tools of
// the activities ([NewBackend]), the workflow files of KORTYX_WORKFLOWS ([LoadWorkflows]), the
// stream broker ([OpenBroker]), a worker ([NewWorker]), the development HTTP API ([ServeHTTP])
// and its health endpoints ([Readiness], [ServeHealth], [Probe]). It registers no agents: a program
// registers its own (the repository's worker registers the examples it is told to, see package
// examples). A worker of your own on it (the same as the package example):
//
//	cfg := app.ConfigFromEnv()
//	t, err := app.Connect(ctx, &cfg, os.Stdout) // a dev server of its own without TEMPORAL_ADDRESS
//	if err != nil {
//		return err
//	}
//	defer t.Close()
//	reg := workflows.NewRegistry()
//	if err := hello.Register(reg); err != nil { // your agents
//		return err
//	}
//	broker := stream.NewMemory()
//	acts, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(openai.New(openai.Options{}))})
//	if err != nil {
//		return err
//	}
//	w := app.NewWorker(t.Client, cfg, reg, acts)
//	if _, _, err := app.ServeHTTP(ctx, cfg.ListenAddr(), app.API{Client: t.Client, Broker: broker, TaskQueue: cfg.TaskQueue}); err != nil {
//		return err
//	}
//	return w.Run(worker.InterruptCh())
package app
