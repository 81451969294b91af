// Command worker runs a Kortyx worker: the run workflow, its activities, the example agents,
// and the HTTP API that streams runs (GET /v1/runs/{runID}/stream).
//
// Without TEMPORAL_ADDRESS it runs in dev mode: it finds the Temporal CLI (TEMPORAL_CLI_PATH,
// .tools/bin, PATH) or installs it into .tools/bin, starts a tuned dev server with its database
// in .kortyx/temporal.db and the search attributes registered, and stops it on exit.
//
//	go run ./worker                       # dev mode
//	TEMPORAL_ADDRESS=host:7233 go run ./worker
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kortyx-go/kortyx/internal/app"
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
	if cfg.TemporalAddress == "" {
		fmt.Printf("kortyx worker: dev mode (TEMPORAL_ADDRESS is not set): starting the Temporal dev server...\n")
	}
	t, err := app.Connect(ctx, &cfg, os.Stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	c := t.Client
	if t.Dev != nil {
		ui := "disabled"
		if t.Dev.UIAddress() != "" {
			ui = "http://" + t.Dev.UIAddress()
		}
		fmt.Printf("kortyx worker: Temporal dev server at %s (UI %s), data in .kortyx/\n", t.Dev.Address(), ui)
	}
	backend, err := app.NewBackend(ctx)
	if err != nil {
		return err
	}
	defer backend.Close()
	reg, err := app.Registry(backend.Tools.Names()...)
	if err != nil {
		return err
	}
	fmt.Printf("kortyx worker: models: %s\n", backend.Model)
	st, err := app.StartStack(ctx, c, cfg, reg, backend, cfg.HTTPAddr, nil)
	if err != nil {
		return err
	}
	defer st.Stop()
	fmt.Printf("kortyx worker: polling task queue %q; HTTP API at http://%s (chat /api/chat, checkpoints /api/checkpoints, streams /v1/runs/{runID}/stream; no authentication: development only)\n", cfg.TaskQueue, st.HTTPAddr)
	<-ctx.Done()
	fmt.Println("kortyx worker: stopping")
	return nil
}
