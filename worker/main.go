// Command worker runs a Kortyx worker: the run and session workflows, their activities, the
// example agents of KORTYX_EXAMPLES (default: all of them), the workflow files of
// KORTYX_WORKFLOWS, and — when KORTYX_HTTP_ADDR is set, or in dev mode — the HTTP API (chat,
// checkpoints, run streams, /healthz, /readyz); a worker without it serves /healthz and /readyz
// alone on KORTYX_HEALTH_ADDR when that is set. With --api-only it serves the HTTP API and
// polls nothing. With --poll workflows (or KORTYX_WORKER_POLL=workflows) it polls workflow tasks
// only (and runs their local publish activity), with --poll activities the model, tool and MCP
// list activities only; KORTYX_WORKER_IDENTITY names the worker in the run's history.
//
// The Temporal connection is the standard client configuration (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE).
// With no address configured it runs in dev mode: it finds the Temporal CLI (TEMPORAL_CLI_PATH,
// .tools/bin, PATH) or installs it into .tools/bin, starts a tuned dev server with its database
// in .kortyx/temporal.db and the search attributes registered, serves the HTTP API on
// 127.0.0.1:8080, and stops the server on exit. Logs go to stdout through log/slog
// (KORTYX_LOG_FORMAT=text|json, KORTYX_LOG_LEVEL).
//
//	go run ./worker                       # dev mode
//	TEMPORAL_ADDRESS=host:7233 KORTYX_REDIS_URL=redis://redis:6379 go run ./worker
//	TEMPORAL_ADDRESS=host:7233 KORTYX_REDIS_URL=redis://redis:6379 go run ./worker --poll activities
//	TEMPORAL_ADDRESS=host:7233 KORTYX_REDIS_URL=redis://redis:6379 KORTYX_HTTP_ADDR=:8080 go run ./worker --api-only
//	worker --probe http://127.0.0.1:8080/readyz   # exit 0 when it answers 200: a container healthcheck
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/app/allproviders"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/telemetry"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/worker"
)

func main() {
	apiOnly := flag.Bool("api-only", false, "serve the HTTP API (on KORTYX_HTTP_ADDR, default "+app.DefaultHTTPAddr+") without polling tasks; needs a Temporal server (TEMPORAL_ADDRESS or a profile) and, to read the workers' streams, KORTYX_REDIS_URL")
	probe := flag.String("probe", "", "GET `URL` and exit with 0 if it answers 200, else 1 (a container healthcheck without curl)")
	poll := flag.String("poll", envOr("KORTYX_WORKER_POLL", "all"), "what the worker polls: `all` (workflow and activity tasks), workflows (workflow tasks and the local publish activity) or activities (model, tool and MCP list activities); env KORTYX_WORKER_POLL")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: worker [--poll all|workflows|activities] | worker --api-only | worker --probe URL\n\n"+
			"Runs a Kortyx worker (polls the task queue; serves the HTTP API when KORTYX_HTTP_ADDR is set, or in dev mode).\n\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "worker: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if *probe != "" {
		if err := app.Probe(context.Background(), *probe, 5*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	wo, err := app.PollOptions(*poll)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(*apiOnly, wo); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(apiOnly bool, wo worker.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := app.ConfigFromEnv()
	if err := cfg.Err(); err != nil {
		return err
	}
	logger := cfg.NewLogger(os.Stdout)
	slog.SetDefault(logger)
	cfg.Logger = logger                // the Temporal SDK logs through the same handler
	tel, err := telemetry.FromEnv(ctx) // OTEL_*: nothing when unset
	if err != nil {
		return err
	}
	defer func() { _ = tel.Shutdown(context.Background()) }() // flushes the exporters
	cfg.Telemetry = tel
	chosen, err := examples.FromEnv() // KORTYX_EXAMPLES
	if err != nil {
		return err
	}
	if apiOnly {
		return app.ServeAPIOnly(ctx, cfg, logger, chosen.DefaultWorkflow())
	}

	// Temporal: the configured server, or a dev server of our own.
	serveHTTP := cfg.ServesHTTP() // decided before Connect fills in the dev server's address
	devMode := cfg.DevMode()
	if devMode {
		logger.Info("kortyx worker: dev mode (no Temporal address configured): starting the Temporal dev server")
	}
	t, err := app.Connect(ctx, &cfg, os.Stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Dev != nil {
		logger.Info("kortyx worker: Temporal dev server ready", "address", t.Dev.Address(), "ui", uiURL(t), "data", ".kortyx/", "pid", t.Dev.PID())
	} else {
		logger.Info("kortyx worker: connected to Temporal", "address", cfg.Address(), "namespace", cfg.Namespace)
	}

	// Models and tools, then the agents (which may only name those tools).
	opts, err := chosen.Backend()
	if err != nil {
		return err
	}
	opts.Providers = allproviders.FromEnv()
	// Without a key, the scripted fake servers answer in dev mode, or when asked for
	// (KORTYX_FAKE_MODELS=1); otherwise a worker with no provider configured does not start.
	opts.FakeServers = devMode || cfg.FakeModels
	opts.NoModels = wo.LocalActivityWorkerOnly // --poll workflows runs no model activity
	backend, err := app.NewBackend(ctx, opts)
	if err != nil {
		return err
	}
	defer backend.Close()
	backend.Telemetry = tel
	logger.Info("kortyx worker: models", "models", backend.Model)
	for _, p := range backend.ProviderInfo { // which providers are registered, and from what
		level := slog.LevelInfo
		if p.Fake && p.ID != "fake" && !devMode {
			level = slog.LevelWarn // KORTYX_FAKE_MODELS=1 outside dev mode: runs answer from the script
		}
		logger.Log(ctx, level, "kortyx worker: provider", "provider", p.ID, "reaches", p.Where, "env", strings.Join(p.Env, ","), "fake", p.Fake)
	}
	reg, err := app.Registry(backend, chosen.Register) // the examples, then KORTYX_WORKFLOWS
	if err != nil {
		return err
	}

	// The activities publish to the stream broker the HTTP API reads: Redis, or memory.
	broker, closeBroker, err := app.OpenBroker(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = closeBroker() }()
	if cfg.RedisURL == "" && !serveHTTP {
		logger.Warn("kortyx worker: in-memory stream broker and no HTTP API: chunks published by this worker are only readable from this process; set KORTYX_REDIS_URL")
	}
	backend.Messages = cfg.Messages // model passes send the conversation prefix by reference
	acts, err := backend.Activities(broker)
	if err != nil {
		return err
	}
	state := &app.WorkerState{}
	fatal := make(chan error, 1)
	wo.OnFatalError = func(err error) {
		state.Stopped()
		fatal <- err
	}
	tel.WorkerOptions(&wo)        // tracing of workflows and activities
	activities.WorkerOptions(&wo) // cancellations reach running model passes within 0.5 s

	// The sticky workflow cache: KORTYX_STICKY_CACHE; in dev mode app.DefaultDevStickyCacheSize.
	sticky := cfg.StickyCache()
	if sticky > 0 {
		worker.SetStickyWorkflowCacheSize(sticky)
	} else {
		sticky = app.SDKStickyCacheSize
	}
	w := worker.New(t.Client, cfg.TaskQueue, wo)
	if !wo.DisableWorkflowWorker { // --poll activities: the SDK refuses workflows on a worker that polls none
		workflows.NewRunner(reg).Register(w) // kortyx.Run, kortyx.Session
	}
	acts.Register(w) // kortyx.Publish, kortyx.Model, kortyx.Tool, kortyx.ListTools
	if serveHTTP {
		if err := tel.ObserveWaitingRuns(t.Client); err != nil { // the kortyx.runs.waiting gauge
			return err
		}
		_, addr, err := app.ServeHTTP(ctx, cfg.ListenAddr(), app.API{Client: t.Client, Broker: broker, TaskQueue: cfg.TaskQueue,
			DefaultWorkflow: chosen.DefaultWorkflow(), Worker: state, Logger: logger, Telemetry: tel, Namespace: cfg.Namespace,
			TemporalUIURL: devUILink(t), Codec: cfg.PayloadCodec(), Registry: reg, CORSOrigins: cfg.CORSOrigins, NoWebPage: !cfg.WebPage})
		if err != nil {
			return err
		}
		app.LogAPI(logger, addr, cfg.WebPage)
	} else if cfg.HealthAddr != "" {
		addr, err := app.ServeHealth(ctx, cfg.HealthAddr, t.Client, broker, state, logger)
		if err != nil {
			return err
		}
		logger.Info("kortyx worker: health endpoints", "addr", "http://"+addr, "routes", "/healthz, /readyz")
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("kortyx worker: starting the worker: %w", err)
	}
	state.Started()
	logger.Info("kortyx worker: polling task queue", "task_queue", cfg.TaskQueue, "namespace", cfg.Namespace, "poll", app.Polls(wo), "sticky_cache", sticky)
	var devExited <-chan struct{} // nil (never ready) without a dev server
	if t.Dev != nil {
		devExited = t.Dev.Done()
	}
	select {
	case <-ctx.Done(): // Ctrl-C or SIGTERM
		err = nil
	case err = <-fatal:
		err = fmt.Errorf("kortyx worker: the worker stopped: %w", err)
	case <-devExited: // its own last words (exit status, output tail), not a guess
		err = fmt.Errorf("kortyx worker: the Temporal dev server (pid %d) exited while the worker ran", t.Dev.PID())
		if serr := t.Dev.Stop(); serr != nil {
			err = fmt.Errorf("%w: %w", err, serr)
		}
	}
	logger.Info("kortyx worker: stopping")
	state.Stopped()
	w.Stop()
	return err
}

// devUILink is the chat page's Temporal UI base in dev mode: the embedded server's UI, on
// whichever port KORTYX_DEV_UI_PORT gave it ("none" when disabled), unless
// KORTYX_TEMPORAL_UI_URL names one; "" (app.API's default) with a Temporal address.
func devUILink(t *app.Temporal) string {
	if t.Dev == nil || os.Getenv("KORTYX_TEMPORAL_UI_URL") != "" {
		return ""
	}
	if t.Dev.UIAddress() == "" {
		return "none"
	}
	return "http://" + t.Dev.UIAddress()
}

func uiURL(t *app.Temporal) string {
	if t.Dev.UIAddress() == "" {
		return "disabled"
	}
	return "http://" + t.Dev.UIAddress()
}
