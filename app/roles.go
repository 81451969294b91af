package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/worker"
)

// PollOptions maps the worker program's --poll value (KORTYX_WORKER_POLL) to worker options:
// "all" polls workflow and activity tasks; "workflows" polls workflow tasks and runs their
// local activities (kortyx.Publish) only; "activities" polls activity tasks only. The identity
// Temporal records on the tasks the worker completes is KORTYX_WORKER_IDENTITY when set (else
// the SDK's pid@host).
func PollOptions(poll string) (worker.Options, error) {
	wo := worker.Options{Identity: os.Getenv("KORTYX_WORKER_IDENTITY")}
	switch poll {
	case "all":
	case "workflows":
		wo.LocalActivityWorkerOnly = true
	case "activities":
		wo.DisableWorkflowWorker = true
	default:
		return wo, fmt.Errorf("worker: --poll (or KORTYX_WORKER_POLL) is %q; want all, workflows or activities", poll)
	}
	return wo, nil
}

// Polls names what a worker with options wo polls ("all", "workflows" or "activities").
func Polls(wo worker.Options) string {
	switch {
	case wo.LocalActivityWorkerOnly:
		return "workflows"
	case wo.DisableWorkflowWorker:
		return "activities"
	}
	return "all"
}

// ServeAPIOnly is the worker program's --api-only role: the HTTP API on the configured
// Temporal server (never a dev server) and the broker of cfg, no worker, until ctx ends.
func ServeAPIOnly(ctx context.Context, cfg Config, logger *slog.Logger, defaultWorkflow string) error {
	if cfg.DevMode() {
		return errors.New("kortyx worker --api-only: no Temporal server configured; set TEMPORAL_ADDRESS (or TEMPORAL_PROFILE/TEMPORAL_CONFIG_FILE): an API process does not start a dev server — run a worker in dev mode (go run ./worker) for that")
	}
	c, err := Dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	broker, closeBroker, err := OpenBroker(ctx, cfg)
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
	_, addr, err := ServeHTTP(ctx, cfg.ListenAddr(), API{Client: c, Broker: broker, TaskQueue: cfg.TaskQueue,
		DefaultWorkflow: defaultWorkflow, Logger: logger, Telemetry: cfg.Telemetry, Namespace: cfg.Namespace, Codec: cfg.PayloadCodec(),
		CORSOrigins: cfg.CORSOrigins, NoWebPage: !cfg.WebPage})
	if err != nil {
		return err
	}
	logger.Info("kortyx worker: API only, polling nothing", "address", cfg.Address(), "namespace", cfg.Namespace, "task_queue", cfg.TaskQueue)
	LogAPI(logger, addr, cfg.WebPage)
	<-ctx.Done()
	logger.Info("kortyx worker: stopping")
	return nil
}

// LogAPI logs the line that says where the HTTP API listens; its addr attribute is the base URL
// (programs and tests read it). With page (the API serves the chat page), a second line gives
// the page's URL.
func LogAPI(logger *slog.Logger, addr string, page bool) {
	logger.Info("kortyx worker: HTTP API", "addr", "http://"+addr,
		"routes", "chat /api/chat, checkpoints /api/checkpoints (and /api/chat/checkpoints), streams /v1/runs/{runID}/stream, /healthz, /readyz",
		"auth", "none: development API")
	if page {
		logger.Info("kortyx worker: chat page", "url", "http://"+addr+"/", "auth", "none: lists every session (KORTYX_WEB_PAGE=false leaves it out)")
	}
}
