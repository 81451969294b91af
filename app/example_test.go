package app_test

import (
	"context"
	"log"
	"os"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples/hello"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/worker"
)

// A worker of your own on the wiring: the dev server without TEMPORAL_ADDRESS, your agents,
// checked activities, the development HTTP API. (Compiled, not run: it serves until Ctrl-C.)
func Example() {
	ctx := context.Background()
	cfg := app.ConfigFromEnv()
	t, err := app.Connect(ctx, &cfg, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	reg := workflows.NewRegistry()
	if err := hello.Register(reg); err != nil {
		log.Fatal(err)
	}
	broker := stream.NewMemory()
	acts, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(openai.New(openai.Options{}))})
	if err != nil {
		log.Fatal(err)
	}
	w := app.NewWorker(t.Client, cfg, reg, acts)
	if _, _, err := app.ServeHTTP(ctx, cfg.ListenAddr(), app.API{Client: t.Client, Broker: broker, TaskQueue: cfg.TaskQueue}); err != nil {
		log.Fatal(err)
	}
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}
