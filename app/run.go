package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/kortyx-go/kortyx/activities"
	telemetry "github.com/kortyx-go/kortyx/internal/telemetrycore"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// Options are what a program adds to its [Config] for [Run]: its agents, tools and models,
// its role, and what it serves. The zero value runs a worker of no agent of its own (the
// workflow files of KORTYX_WORKFLOWS only) on the openai provider of the environment.
type Options struct {
	// Register adds the program's agents to the worker's registry (e.g. hello.Register); Run
	// then adds the workflow files of KORTYX_WORKFLOWS, whose kortyx.reason nodes may only name
	// the worker's tools.
	Register func(*workflows.Registry) error
	// Tools are the program's own tools; the tools of the MCP servers of KORTYX_MCP_SERVERS are
	// added to them.
	Tools []tools.Tool
	// DefaultWorkflow runs a chat session's first turn when the request names none ("": such
	// a request is refused with UNKNOWN_WORKFLOW).
	DefaultWorkflow string

	// Providers are the model providers configured from the environment after openai
	// (OPENAI_API_KEY, OPENAI_BASE_URL: OpenAI or any OpenAI-compatible server):
	// allproviders.FromEnv() adds google and anthropic. A provider none of whose variables is
	// set is not registered; in dev mode or with KORTYX_FAKE_MODELS=1 the in-process fake model
	// (package providers/fake) playing FakeModel answers under its id instead, logged. A worker
	// outside dev mode with none configured does not start, and says which variables to set.
	Providers []ProviderFromEnv
	// Models, when not nil, are the model providers instead of those of the environment (a
	// test worker's fakes, or fake servers of the providers' wires); there is then no default
	// model unless Model names one.
	Models []providers.Provider
	// Model, when set, replaces KORTYX_MODEL as the default model
	// ("anthropic:claude-sonnet-4-5"; default openai:gpt-4.1-mini). See [CheckModel].
	Model string
	// FakeModel is the script of the in-process fake model: the provider "fake", and each
	// provider that stands in for one without a key (see Providers). Nil: a model that says
	// no model is configured.
	FakeModel fake.Responder

	// APIOnly serves the HTTP API and polls nothing (worker --api-only): it needs a Temporal
	// server (never a dev server) and, to read the workers' streams, KORTYX_REDIS_URL.
	APIOnly bool
	// Poll is what the worker polls (worker --poll, KORTYX_WORKER_POLL): "all" or "" (workflow
	// and activity tasks), "workflows" (workflow tasks and their local publish activity) or
	// "activities" (the model, tool and MCP list activities). Another value is an [ErrUsage].
	Poll string
	// RegisterWorker, when set, registers more workflows and activities of the program's own
	// on the worker before it starts.
	RegisterWorker func(worker.Registry)
	// HTTP, when set, builds the handler the program serves on KORTYX_HTTP_ADDR (default
	// 127.0.0.1:8080), always, instead of the development HTTP API ([ServeHTTP]); it gets the
	// program's client and broker.
	HTTP func(client.Client, stream.Broker) (http.Handler, error)
	// Telemetry, when set and [Config.Telemetry] is nil, reads the program's OpenTelemetry
	// (telemetry.FromEnv: OTEL_*, nothing when unset); Run shuts it down (flushing the
	// exporters) when it returns. Nil: none. A function, so that a program without telemetry
	// (the starter) links no exporter.
	Telemetry func(context.Context) (*telemetry.Telemetry, error)
	// Logger logs the program and the Temporal SDK (nil: KORTYX_LOG_FORMAT at KORTYX_LOG_LEVEL
	// on stdout, also made slog's default).
	Logger *slog.Logger
	// Started, when set, is called once the program runs: its HTTP listens and its worker polls.
	Started func(Running)
}

// Running is a program that [Run] started, as [Options.Started] sees it.
type Running struct {
	Client client.Client
	Broker stream.Broker // the broker the activities publish to and the HTTP API reads
	// HTTPAddr is where the HTTP API (or [Options.HTTP]) listens, "" when nothing is served.
	HTTPAddr string
	// DefaultModel is "provider:model" ("" when there is none); Model says in a sentence what
	// answers it ("gpt-4.1-mini at https://api.openai.com/v1", "the scripted fake model (…)").
	DefaultModel, Model string
}

// Run builds the program cfg and o describe and runs it until ctx ends: the composition root
// of the worker program, the chat server example, the starter's demo and the test workers.
//
// Roles: with [Options.APIOnly] the HTTP API alone; otherwise a Temporal worker on
// cfg.TaskQueue polling what [Options.Poll] says, with the run and session workflows, the
// activities (kortyx.Publish, kortyx.Model, kortyx.Tool, kortyx.ListTools) and the agents of
// [Options.Register] and KORTYX_WORKFLOWS. Temporal: the configured server, whose namespace
// gets the search attributes it lacks, or in dev mode (no address) a tuned dev server of its
// own with its database in .kortyx/, stopped on exit. The activities publish to the broker of
// KORTYX_REDIS_URL, else one in memory. HTTP: the development API ([ServeHTTP]) when
// KORTYX_HTTP_ADDR is set or in dev mode, else /healthz and /readyz alone on
// KORTYX_HEALTH_ADDR when that is set. Telemetry: cfg.Telemetry, else [Options.Telemetry]'s
// (the worker passes telemetry.FromEnv). Every step is logged ("kortyx worker: ...").
//
// It returns nil when ctx ends, else the error that stopped it: a configuration it cannot
// start with ([Config.Err], [ErrUsage], no model provider), or the worker's fatal error, or
// the dev server's exit.
func Run(ctx context.Context, cfg Config, o Options) error {
	wo, err := pollOptions(o.Poll)
	if err != nil {
		return err
	}
	if err := cfg.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx) // the HTTP servers stop when Run returns
	defer cancel()
	cfg.Namespace, cfg.TaskQueue = cfg.namespace(), cfg.taskQueue()
	logger := o.Logger
	if logger == nil {
		logger = cfg.newLogger(os.Stdout)
		slog.SetDefault(logger)
	}
	cfg.Logger = logger // the Temporal SDK logs through the same handler
	if cfg.Telemetry == nil && o.Telemetry != nil {
		tel, err := o.Telemetry(ctx) // telemetry.FromEnv: OTEL_*, nothing when unset
		if err != nil {
			return err
		}
		defer func() { _ = tel.Shutdown(context.Background()) }() // flushes the exporters
		cfg.Telemetry = tel
	}
	if o.APIOnly {
		return serveAPIOnly(ctx, cfg, o, logger)
	}
	return runWorker(ctx, cfg, o, wo, logger)
}

// runWorker is [Run]'s worker role.
func runWorker(ctx context.Context, cfg Config, o Options, wo worker.Options, logger *slog.Logger) error {
	// Temporal: the configured server, or a dev server of our own.
	serveHTTP := cfg.servesHTTP() || o.HTTP != nil // decided before connect fills in the dev server's address
	devMode := cfg.devMode()
	if devMode {
		logger.Info("kortyx worker: dev mode (no Temporal address configured): starting the Temporal dev server")
	}
	t, err := connect(ctx, &cfg, os.Stdout)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Dev != nil {
		logger.Info("kortyx worker: Temporal dev server ready", "address", t.Dev.Address(), "ui", uiURL(t), "data", ".kortyx/", "pid", t.Dev.PID())
	} else {
		logger.Info("kortyx worker: connected to Temporal", "address", cfg.address(), "namespace", cfg.Namespace)
	}

	// Models and tools, then the agents (which may only name those tools).
	if cfg.FakeModels && !devMode && o.Models == nil {
		logger.Warn("kortyx worker: KORTYX_FAKE_MODELS=1: every model provider without its variables answers from the in-process scripted fake model; for tests and demos only")
	}
	b, err := newBackend(ctx, backendOptions{Tools: o.Tools, FakeModel: o.FakeModel, Model: o.Model, Models: o.Models,
		Providers: append([]ProviderFromEnv{openAIFromEnv()}, o.Providers...), Fakes: devMode || cfg.FakeModels,
		NoModels: wo.LocalActivityWorkerOnly}) // --poll workflows runs no model activity
	if err != nil {
		return err
	}
	defer b.stop()
	b.Telemetry, b.Messages = cfg.Telemetry, cfg.Messages // model passes send the conversation prefix by reference
	logger.Info("kortyx worker: models", "models", b.Model)
	for _, p := range b.ProviderInfo { // which providers are registered, and from what
		level := slog.LevelInfo
		if p.Fake && p.ID != fake.ID && !devMode {
			level = slog.LevelWarn // KORTYX_FAKE_MODELS=1 outside dev mode: runs answer from the script
		}
		logger.Log(ctx, level, "kortyx worker: provider", "provider", p.ID, "reaches", p.Where, "env", strings.Join(p.Env, ","), "fake", p.Fake)
	}
	reg, err := newRegistry(b, o.Register) // the program's agents, then KORTYX_WORKFLOWS
	if err != nil {
		return err
	}
	if err := setBudget(reg, cfg, b); err != nil {
		return err
	}

	// The activities publish to the stream broker the HTTP API reads: Redis, or memory.
	broker, closeBroker, err := openBroker(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = closeBroker() }()
	if cfg.RedisURL == "" && !serveHTTP {
		logger.Warn("kortyx worker: in-memory stream broker and no HTTP API: chunks published by this worker are only readable from this process; set KORTYX_REDIS_URL")
	}
	acts, err := b.activities(broker)
	if err != nil {
		return err
	}
	state := &WorkerState{}
	fatal := make(chan error, 1)
	wo.OnFatalError = func(err error) {
		state.Stopped()
		fatal <- err
	}
	cfg.Telemetry.WorkerOptions(&wo) // tracing of workflows and activities
	activities.WorkerOptions(&wo)    // cancellations reach running model passes within 0.5 s

	// The sticky workflow cache: KORTYX_STICKY_CACHE; in dev mode defaultDevStickyCacheSize.
	sticky := cfg.stickyCache()
	if sticky > 0 {
		worker.SetStickyWorkflowCacheSize(sticky)
	} else {
		sticky = sdkStickyCacheSize
	}
	w := worker.New(t.Client, cfg.TaskQueue, wo)
	if !wo.DisableWorkflowWorker { // --poll activities: the SDK refuses workflows on a worker that polls none
		workflows.NewRunner(reg).Register(w) // kortyx.Run, kortyx.Session
	}
	acts.Register(w) // kortyx.Publish, kortyx.Model, kortyx.Tool, kortyx.ListTools
	if o.RegisterWorker != nil {
		o.RegisterWorker(w)
	}
	var addr string
	switch {
	case serveHTTP:
		if err := cfg.Telemetry.ObserveWaitingRuns(t.Client); err != nil { // the kortyx.runs.waiting gauge
			return err
		}
		def := ""
		if b.DefaultModel != "" {
			def = b.DefaultProvider + ":" + b.DefaultModel
		}
		addr, err = serve(ctx, cfg, o, logger, API{Client: t.Client, Broker: broker, TaskQueue: cfg.TaskQueue, DefaultModel: def,
			DefaultWorkflow: o.DefaultWorkflow, Worker: state, Logger: logger, Telemetry: cfg.Telemetry, Namespace: cfg.Namespace,
			TemporalUIURL: devUILink(t), Codec: cfg.payloadCodec(), Registry: reg, CORSOrigins: cfg.CORSOrigins, Prices: cfg.Prices, NoWebPage: !cfg.WebPage,
			Currency: cfg.Currency, ActionPrice: cfg.ActionPrice})
		if err != nil {
			return err
		}
		if o.HTTP == nil {
			logAPI(logger, addr, cfg.WebPage)
		}
	case cfg.HealthAddr != "":
		haddr, err := serveHealth(ctx, cfg.HealthAddr, t.Client, broker, state, logger)
		if err != nil {
			return err
		}
		logger.Info("kortyx worker: health endpoints", "addr", "http://"+haddr, "routes", "/healthz, /readyz")
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("kortyx worker: starting the worker: %w", err)
	}
	state.Started()
	logger.Info("kortyx worker: polling task queue", "task_queue", cfg.TaskQueue, "namespace", cfg.Namespace, "poll", polls(wo), "sticky_cache", sticky)
	if o.Started != nil {
		def := ""
		if b.DefaultModel != "" {
			def = b.DefaultProvider + ":" + b.DefaultModel
		}
		o.Started(Running{Client: t.Client, Broker: broker, HTTPAddr: addr, DefaultModel: def, Model: b.Model})
	}
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
// KORTYX_TEMPORAL_UI_URL names one; "" (API's default) with a Temporal address.
func devUILink(t *temporalConn) string {
	if t.Dev == nil || os.Getenv("KORTYX_TEMPORAL_UI_URL") != "" {
		return ""
	}
	if t.Dev.UIAddress() == "" {
		return "none"
	}
	return "http://" + t.Dev.UIAddress()
}

func uiURL(t *temporalConn) string {
	if t.Dev.UIAddress() == "" {
		return "disabled"
	}
	return "http://" + t.Dev.UIAddress()
}
