// Command testworker is the worker the integration tests start, kill and restart as a
// separate process. It needs TEMPORAL_ADDRESS, KORTYX_TASK_QUEUE, KORTYX_HTTP_ADDR and
// KORTYX_EFFECTS_FILE, and prints "ready <http address>" once it polls.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/internal/testagents"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
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
	c, err := app.Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	rec := &testagents.Recorder{File: os.Getenv("KORTYX_EFFECTS_FILE")}
	chosen, err := examples.Parse("all")
	if err != nil {
		return err
	}
	opts, err := chosen.Backend(rec.Tool(), rec.KeyTool())
	if err != nil {
		return err
	}
	opts.NoModels = true // its own test model replaces the providers below
	backend, err := app.NewBackend(ctx, opts)
	if err != nil {
		return err
	}
	defer backend.Close()
	reg, err := app.Registry(backend, chosen.Register)
	if err != nil {
		return err
	}
	if err := testagents.Register(reg); err != nil {
		return err
	}
	if err := testagents.RegisterSweep(reg); err != nil {
		return err
	}
	// Only the test model: model references must name it ("fake:test"), there is no default.
	backend.Providers = providers.NewSet(fake.NewResponder(rec.SweepResponder(testagents.Responder(os.Getenv("KORTYX_TEST_SLOW_MODEL") == "1"))).WithID("fake"))
	backend.DefaultProvider, backend.DefaultModel = "", ""
	st, err := app.StartStack(ctx, c, cfg, app.StackOptions{Registry: reg, Backend: backend, HTTPAddr: cfg.HTTPAddr,
		DefaultWorkflow: chosen.DefaultWorkflow(), Register: rec.Register})
	if err != nil {
		return err
	}
	defer st.Stop()
	fmt.Printf("ready %s\n", st.HTTPAddr)
	<-ctx.Done()
	return nil
}
