// Command worker runs a Kortyx worker: the run and session workflows, their activities, the
// example agents of KORTYX_EXAMPLES (default: all of them), the workflow files of
// KORTYX_WORKFLOWS, and the HTTP API (chat, checkpoints, run streams).
//
// Without TEMPORAL_ADDRESS it runs in dev mode: it finds the Temporal CLI (TEMPORAL_CLI_PATH,
// .tools/bin, PATH) or installs it into .tools/bin, starts a tuned dev server with its database
// in .kortyx/temporal.db and the search attributes registered, and stops it on exit.
//
//	go run ./worker                       # dev mode
//	TEMPORAL_ADDRESS=host:7233 KORTYX_EXAMPLES=none KORTYX_WORKFLOWS=./agents go run ./worker
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := app.ConfigFromEnv()
	chosen, err := examples.FromEnv() // KORTYX_EXAMPLES
	if err != nil {
		return err
	}

	// Temporal: TEMPORAL_ADDRESS, or a dev server of our own.
	if cfg.TemporalAddress == "" {
		fmt.Printf("kortyx worker: dev mode (TEMPORAL_ADDRESS is not set): starting the Temporal dev server...\n")
	}
	t, err := app.Connect(ctx, &cfg, os.Stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Dev != nil {
		fmt.Printf("kortyx worker: Temporal dev server at %s (UI %s), data in .kortyx/\n", t.Dev.Address(), uiURL(t))
	}

	// Models and tools, then the agents (which may only name those tools).
	opts, err := chosen.Backend()
	if err != nil {
		return err
	}
	backend, err := app.NewBackend(ctx, opts)
	if err != nil {
		return err
	}
	defer backend.Close()
	fmt.Printf("kortyx worker: models: %s\n", backend.Model)
	reg := workflows.NewRegistry()
	reg.SetToolNames(backend.Tools.Names()...)
	if err := chosen.Register(reg); err != nil {
		return err
	}
	if err := app.LoadWorkflows(reg); err != nil { // KORTYX_WORKFLOWS
		return err
	}

	// The worker and the HTTP API share the stream broker.
	broker := stream.NewMemory()
	acts, err := backend.Activities(broker)
	if err != nil {
		return err
	}
	w := worker.New(t.Client, cfg.TaskQueue, worker.Options{})
	workflows.NewRunner(reg).Register(w) // kortyx.Run, kortyx.Session
	acts.Register(w)                     // kortyx.Publish, kortyx.Model, kortyx.Tool, kortyx.ListTools
	_, addr, err := app.ServeHTTP(ctx, cfg.HTTPAddr, app.API{Client: t.Client, Broker: broker, TaskQueue: cfg.TaskQueue,
		DefaultWorkflow: chosen.DefaultWorkflow()})
	if err != nil {
		return err
	}
	fmt.Printf("kortyx worker: polling task queue %q; HTTP API at http://%s (chat /api/chat, checkpoints /api/checkpoints, streams /v1/runs/{runID}/stream; no authentication: development only)\n", cfg.TaskQueue, addr)
	err = w.Run(worker.InterruptCh()) // until Ctrl-C or SIGTERM
	fmt.Println("kortyx worker: stopping")
	return err
}

func uiURL(t *app.Temporal) string {
	if t.Dev.UIAddress() == "" {
		return "disabled"
	}
	return "http://" + t.Dev.UIAddress()
}
