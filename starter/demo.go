package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"go.temporal.io/sdk/contrib/envconfig"
)

// demoMessages are the default inputs of the demo workflows.
var demoMessages = map[string]string{
	"support":  "Please refund order A-1001, it arrived broken.",
	"triage":   "I was charged twice on my last invoice",
	"research": "AI agents",
}

// cmdDemo brings up everything in one process — the Temporal dev server (unless
// TEMPORAL_ADDRESS is set), a worker with the model providers and tools, the stream API — and
// runs an example agent end to end.
func cmdDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	auto := fs.Bool("auto", false, "answer questions automatically (first option) and exit")
	wf := fs.String("workflow", "support", "the example to run: support, triage or research")
	model := fs.String("model", "", "the default model, e.g. anthropic:claude-sonnet-4-5 (default: KORTYX_MODEL, else openai:gpt-4.1-mini)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	message, ok := demoMessages[*wf]
	if !ok {
		return usagef(fs, "demo --workflow must be support, triage or research, not %q", *wf)
	}
	if len(pos) > 0 {
		message = strings.Join(pos, " ")
	}
	// The model is checked before anything starts (a server, a worker).
	if *model != "" {
		if err := app.CheckModel(*model); err != nil {
			return usagef(fs, "demo --model: %s", contracts.FailureOf(err).Message)
		}
	} else if m := os.Getenv("KORTYX_MODEL"); m != "" {
		if err := app.CheckModel(m); err != nil {
			return fmt.Errorf("KORTYX_MODEL: %w", err)
		}
	}
	if provider, ok := needsAllProviders(*model); ok {
		return demoElsewhere(newPrinter(os.Stdout, false), provider, args)
	}
	cfg := config()
	// A task queue of this process's own: on a shared server (TEMPORAL_ADDRESS) another demo's
	// worker, whose stream is in its own memory, must not take this demo's runs.
	cfg.TaskQueue = "kortyx-demo-" + uuid.NewString()[:8]
	p := newPrinter(os.Stdout, false)
	if cfg.TemporalAddress == "" {
		if cfg.Messages != nil && !cfg.Codec.HasStore() {
			// The demo's server keeps its histories in memory; the messages its runs store go
			// to a directory that goes with it.
			tmp, err := os.MkdirTemp("", "kortyx-demo-payloads-")
			if err != nil {
				return err
			}
			defer func() { _ = os.RemoveAll(tmp) }()
			cfg.Messages = cfg.Messages.WithStore(codec.OpenDirStore(tmp))
		}
		p.note("starting the Temporal dev server")
		srv, err := startDemoServer(ctx, cfg)
		if err != nil {
			return err
		}
		defer func() { _ = srv.Stop() }() // exiting: a stop error changes nothing
		cfg.TemporalAddress = srv.Address()
		cfg.Temporal = envconfig.ClientConfigProfile{} // the dev server is plain gRPC
		p.note("Temporal dev server ready at %s (UI http://%s while the demo runs)", srv.Address(), srv.UIAddress())
	}
	chosen, err := examples.Parse("all")
	if err != nil {
		return err
	}
	o := chosen.Options()
	o.Model, o.Providers = *model, demoProviders()
	cfg.FakeModels = true        // the demo works without a key: the in-process fake model answers
	cfg.HTTPAddr = "127.0.0.1:0" // its own stream API, on a free port
	o.Logger = cfg.Logger        // the CLI's diagnostics logger, on stderr
	if os.Getenv("KORTYX_LOG_LEVEL") == "" {
		o.Logger = newLogger(cfg, slog.LevelError) // the worker's start lines, fakes included, are not the demo's output
	}
	running := make(chan app.Running, 1)
	o.Started = func(r app.Running) { running <- r }
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cfg, o) }()
	defer func() { stop(); err := <-done; _ = err }() // the worker stops with the demo; the demo's own result is the one to report
	var st app.Running
	select {
	case st = <-running:
	case err := <-done:
		return err
	}
	c := st.Client
	p.note("model: %s", modelNote(st))
	input, _ := json.Marshal(message)
	run, err := kortyx.StartRun(ctx, c, contracts.RunInput{Workflow: *wf, Input: input, SessionID: "demo"},
		kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
	if err != nil {
		return err
	}
	p.note("run %s started (workflow %s): %q", run.GetID(), *wf, message)
	var ans answerer = &promptAnswerer{in: os.Stdin, out: os.Stdout}
	if *auto {
		ans = &autoAnswerer{out: os.Stdout}
	}
	if err := follow(ctx, c, &sseclient.Client{BaseURL: "http://" + st.HTTPAddr}, run.GetID(), ans, true, p, false); err != nil {
		return err
	}
	var res contracts.RunResult
	if err := run.Get(ctx, &res); err != nil {
		return err
	}
	switch *wf {
	case "support":
		fmt.Printf("· demo finished: %d refund(s) made; tokens used: %d\n", chosen.Store.Refunds(), tokens(res))
	case "research":
		fmt.Printf("· demo finished: %d findings from three child workflows\n", len(asList(res.State.Data["findings"])))
	default:
		fmt.Printf("· demo finished: ticket %v (%v)\n", res.State.Data["ticketId"], res.State.Data["topic"])
	}
	return nil
}

// startDemoServer starts the demo's own dev server: in memory and on free ports, so demos run
// side by side (on one checkout too) and never clash with a dev-mode worker's .kortyx/ database.
func startDemoServer(ctx context.Context, cfg app.Config) (*devserver.Server, error) {
	bin, err := devserver.FindOrInstall(ctx, cfg.Root, os.Stdout)
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		BinaryPath:       bin,
		Namespace:        cfg.Namespace,
		SearchAttributes: protocol.SearchAttributeNames(),
	})
	if err != nil {
		return nil, fmt.Errorf("kortyx: starting the demo's Temporal dev server (or set TEMPORAL_ADDRESS to use a running one): %w", err)
	}
	return srv, nil
}

// modelNote names the default model, then says what answers it: "openai:gpt-4.1-mini at
// https://…", or "openai:gpt-4.1-mini, answered by the scripted fake model …".
func modelNote(r app.Running) string {
	_, model, _ := strings.Cut(r.DefaultModel, ":")
	if where, ok := strings.CutPrefix(r.Model, model+" at "); ok {
		return r.DefaultModel + " at " + where
	}
	return r.DefaultModel + ", answered by " + r.Model
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func tokens(res contracts.RunResult) int {
	if u := res.State.Runtime.TokenUsage; u != nil {
		return u.Total
	}
	return 0
}
