// Package activities is the activity side of Kortyx runs: everything that touches the outside
// world — the stream broker, the model providers, the Go tools and the MCP servers. Workflow
// code reaches it only through the activity names in [contracts] (kortyx.Publish, kortyx.Model,
// kortyx.Tool, kortyx.ListTools), never by importing this package.
//
// [New] checks the configuration at start (a missing broker or provider fails there, not in
// the middle of a run), and a worker registers the activities next to the run workflow:
//
//	broker := stream.NewMemory(stream.MemoryOptions{})
//	acts, err := activities.New(activities.Config{
//		Stream:          broker,
//		Providers:       providers.NewSet(openai.New(openai.Options{})),
//		DefaultProvider: openai.ID,
//		DefaultModel:    "gpt-4.1-mini",
//		Tools:           toolSet, // optional: tools.NewSet(...)
//	})
//	if err != nil {
//		return err
//	}
//	reg := workflows.NewRegistry()
//	// ... reg.RegisterNode / reg.Add ...
//	w := worker.New(c, contracts.DefaultTaskQueue, worker.Options{})
//	workflows.NewRunner(reg).Register(w)
//	acts.Register(w)
//	err = w.Run(worker.InterruptCh())
//
// The model activity publishes a pass's text (or structured-data) chunks to the broker as the
// provider streams them; the tool activity runs one tool call with its idempotency key. Both
// record OpenTelemetry spans and metrics (GenAI conventions) on Config.TracerProvider and
// Config.MeterProvider, or on the global providers when those are nil (docs/observability.md).
package activities
