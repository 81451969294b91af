package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/worker"
)

// ErrUsage is the error of [Run] for options no program can run with (an unknown
// [Options.Poll]): the worker program exits with status 2 for it.
var ErrUsage = errors.New("usage")

// usageError is an [ErrUsage] with its own message.
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// pollOptions maps [Options.Poll] (the worker program's --poll, KORTYX_WORKER_POLL) to worker
// options: "all" (or "") polls workflow and activity tasks; "workflows" polls workflow tasks
// and runs their local activities (kortyx.Publish) only; "activities" polls activity tasks
// only. The identity Temporal records on the tasks the worker completes is
// KORTYX_WORKER_IDENTITY when set (else the SDK's pid@host).
func pollOptions(poll string) (worker.Options, error) {
	wo := worker.Options{Identity: os.Getenv("KORTYX_WORKER_IDENTITY")}
	switch poll {
	case "all", "":
	case "workflows":
		wo.LocalActivityWorkerOnly = true
	case "activities":
		wo.DisableWorkflowWorker = true
	default:
		return wo, usageError{fmt.Sprintf("worker: --poll (or KORTYX_WORKER_POLL) is %q; want all, workflows or activities", poll)}
	}
	return wo, nil
}

// polls names what a worker with options wo polls ("all", "workflows" or "activities").
func polls(wo worker.Options) string {
	switch {
	case wo.LocalActivityWorkerOnly:
		return "workflows"
	case wo.DisableWorkflowWorker:
		return "activities"
	}
	return "all"
}

// serveAPIOnly is the --api-only role ([Options.APIOnly]): the HTTP API on the configured
// Temporal server (never a dev server) and the broker of cfg, no worker, until ctx ends.
func serveAPIOnly(ctx context.Context, cfg Config, o Options, logger *slog.Logger) error {
	if cfg.devMode() {
		return errors.New("kortyx worker --api-only: no Temporal server configured; set TEMPORAL_ADDRESS (or TEMPORAL_PROFILE/TEMPORAL_CONFIG_FILE): an API process does not start a dev server — run a worker in dev mode (go run ./worker) for that")
	}
	// The agents the workers run (the program's and KORTYX_WORKFLOWS's; their definitions only:
	// tool names are the workers' to check), for the routes that list them: the A2A cards, the
	// MCP server's tools, the page's suggestions. Checked before dialing: a bad file fails fast.
	reg := workflows.NewRegistry()
	if o.Register != nil {
		if err := o.Register(reg); err != nil {
			return err
		}
	}
	if err := loadWorkflows(reg); err != nil {
		return err
	}
	c, err := Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	broker, closeBroker, err := openBroker(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = closeBroker() }()
	if cfg.RedisURL == "" {
		logger.Warn("kortyx worker --api-only: in-memory stream broker: this process reads no worker's chunks, so chat and stream requests wait for chunks that never come; set KORTYX_REDIS_URL")
	}
	if err := cfg.Telemetry.ObserveWaitingRuns(c); err != nil { // the kortyx.runs.waiting gauge
		return err
	}
	// The workers' default model, for pricing the passes that name none: theirs is KORTYX_MODEL
	// (or Options.Model) like this process's.
	def := providers.Model(envOr("KORTYX_MODEL", "gpt-4.1-mini"))
	if o.Model != "" {
		def = providers.Model(o.Model)
	}
	if def.Provider == "" {
		def.Provider = openai.ID
	}
	addr, err := serve(ctx, cfg, o, logger, API{Client: c, Broker: broker, TaskQueue: cfg.TaskQueue, DefaultModel: def.Provider + ":" + def.Model,
		DefaultWorkflow: o.DefaultWorkflow, Logger: logger, Telemetry: cfg.Telemetry, Namespace: cfg.Namespace, Codec: cfg.payloadCodec(),
		CORSOrigins: cfg.CORSOrigins, Prices: cfg.Prices, NoWebPage: !cfg.WebPage, Registry: reg,
		Currency: cfg.Currency, ActionPrice: cfg.ActionPrice})
	if err != nil {
		return err
	}
	logger.Info("kortyx worker: API only, polling nothing", "address", cfg.address(), "namespace", cfg.Namespace, "task_queue", cfg.TaskQueue)
	if o.HTTP == nil {
		logAPI(logger, addr, cfg.WebPage)
	}
	if o.Started != nil {
		o.Started(Running{Client: c, Broker: broker, HTTPAddr: addr})
	}
	<-ctx.Done()
	logger.Info("kortyx worker: stopping")
	return nil
}

// serve serves the program's HTTP: [Options.HTTP]'s handler when set, else the development
// HTTP API ([ServeHTTP]) of api, on cfg's address until ctx ends. It returns the address it
// listens on.
func serve(ctx context.Context, cfg Config, o Options, logger *slog.Logger, api API) (string, error) {
	api.MCPStateless, api.MCPStateKey = cfg.MCPStateless, cfg.MCPStateKey
	api.SessionBudget, api.Busy, api.TenantHeader = cfg.SessionBudget, cfg.Busy, cfg.TenantHeader
	if o.HTTP == nil && api.Registry != nil && cfg.MCPStateless && len(cfg.MCPStateKey) == 0 && !cfg.devMode() {
		logger.Warn("kortyx worker: KORTYX_MCP_STATE_KEY is not set: the MCP server signs the request states of its 2026-07-28 questions with a key of this process only, so another API process refuses their answers; give every API process the same key (openssl rand -base64 32)")
	}
	if o.HTTP == nil {
		_, addr, err := ServeHTTP(ctx, cfg.listenAddr(), api)
		return addr, err
	}
	h, err := o.HTTP(api.Client, api.Broker)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", cfg.listenAddr())
	if err != nil {
		return "", fmt.Errorf("kortyx: cannot listen on %s (set KORTYX_HTTP_ADDR): %w", cfg.listenAddr(), err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}

// logAPI logs the line that says where the HTTP API listens; its addr attribute is the base URL
// (programs and tests read it). With page (the API serves the chat page), a second line gives
// the page's URL.
func logAPI(logger *slog.Logger, addr string, page bool) {
	logger.Info("kortyx worker: HTTP API", "addr", "http://"+addr,
		"routes", "chat /api/chat, checkpoints /api/checkpoints (and /api/chat/checkpoints), streams /v1/runs/{runID}/stream, "+
			"AI SDK /api/ui/chat, MCP /mcp, A2A /a2a/{agent}, /healthz, /readyz",
		"auth", "none: development API")
	if page {
		logger.Info("kortyx worker: chat page", "url", "http://"+addr+"/", "auth", "none: lists every session (KORTYX_WEB_PAGE=false leaves it out)")
	}
}
