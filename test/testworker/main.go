// Command testworker is the worker the integration tests start, kill and restart as a
// separate process: app.Run with the examples, the test agents and the test model. It needs
// TEMPORAL_ADDRESS, KORTYX_TASK_QUEUE, KORTYX_HTTP_ADDR and KORTYX_EFFECTS_FILE, logs warnings
// to stderr, and prints "ready <http address>" once it polls.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/test/testagents"
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
	if cfg.TemporalAddress == "" {
		return fmt.Errorf("testworker needs TEMPORAL_ADDRESS")
	}
	rec := &testagents.Recorder{File: os.Getenv("KORTYX_EFFECTS_FILE")}
	chosen, err := examples.Parse("all")
	if err != nil {
		return err
	}
	o := chosen.Options(rec.Tool(), rec.KeyTool())
	o.Register = func(reg *workflows.Registry) error {
		for _, add := range []func(*workflows.Registry) error{chosen.Register, testagents.Register, testagents.RegisterSweep} {
			if err := add(reg); err != nil {
				return err
			}
		}
		return nil
	}
	// Only the test model: model references must name it ("fake:test"), there is no default.
	o.Models = []providers.Provider{fake.NewResponder(rec.SweepResponder(testagents.Responder(os.Getenv("KORTYX_TEST_SLOW_MODEL") == "1")))}
	o.RegisterWorker = func(w worker.Registry) { rec.Register(w) } // the activities that record effects
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o.Started = func(r app.Running) { fmt.Printf("ready %s\n", r.HTTPAddr) }
	return app.Run(ctx, cfg, o)
}
