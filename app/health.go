package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kortyx-go/kortyx/httpwire"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/temporalhealth"
	"go.temporal.io/sdk/client"
)

// pinger is a broker that can tell whether its store answers (the Redis broker); the in-memory
// broker has nothing to check.
type pinger interface {
	Ping(ctx context.Context) error
}

// WorkerState is what the readiness check of [ServeHTTP] (/readyz, [API.Worker]) reports about
// a process's worker: starting until [WorkerState.Started], ok until [WorkerState.Stopped].
// The zero value is starting.
type WorkerState struct{ v atomic.Int32 }

// Started marks the worker as polling.
func (s *WorkerState) Started() { s.v.Store(1) }

// Stopped marks the worker as stopped (a fatal error or shutdown).
func (s *WorkerState) Stopped() { s.v.Store(2) }

func (s *WorkerState) check() string {
	switch s.v.Load() {
	case 1:
		return "ok"
	case 2:
		return "stopped"
	}
	return "starting"
}

// readiness is the JSON body of /readyz: status "ready" (HTTP 200) or "unavailable" (HTTP 503);
// each check is "ok" or what failed (the code of a failing Temporal or stream check; the worker's
// "starting" or "stopped"). Error and Failure describe the first failing check that has a code.
type readiness struct {
	Status  string             `json:"status"`
	Checks  map[string]string  `json:"checks"`
	Error   string             `json:"error,omitempty"`
	Failure *contracts.Failure `json:"failure,omitempty"`

	cause error // the first failing check's error, for the log
}

// readyTimeout bounds the readiness checks of one probe.
const readyTimeout = 3 * time.Second

// checkReady runs the checks: temporal (client.CheckHealth), redis (when broker is a [pinger]),
// worker (when w is not nil: api-only processes have none).
func checkReady(ctx context.Context, c client.Client, broker any, w *WorkerState) (readiness, int) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	r := readiness{Status: "ready", Checks: map[string]string{}}
	var failed error
	note := func(name string, err error) {
		if err == nil {
			r.Checks[name] = "ok"
			return
		}
		r.Checks[name] = string(contracts.CodeOf(err))
		if failed == nil {
			failed = err
		}
	}
	note("temporal", temporalhealth.Check(ctx, c))
	if p, ok := broker.(pinger); ok {
		var err error
		if perr := p.Ping(ctx); perr != nil {
			err = &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Err: perr,
				Message: "The stream store (Redis) is unavailable; try again shortly."}
		}
		note("redis", err)
	}
	ready := failed == nil
	if w != nil {
		r.Checks["worker"] = w.check()
		ready = ready && r.Checks["worker"] == "ok"
	}
	if ready {
		return r, http.StatusOK
	}
	r.Status = "unavailable"
	if failed != nil {
		f := httpwire.Public(failed) // the cause (Redis's address, Temporal's error) is logged
		r.Error, r.Failure = f.Message, &f
		r.cause = failed
	} else {
		r.Error = "The worker of this process is " + r.Checks["worker"] + "."
	}
	return r, http.StatusServiceUnavailable
}

// readyHandler serves /readyz.
func readyHandler(c client.Client, broker any, w *WorkerState, logger *slog.Logger) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		body, status := checkReady(r.Context(), c, broker, w)
		if status != http.StatusOK && logger != nil && !errors.Is(r.Context().Err(), context.Canceled) {
			attrs := []any{"checks", body.Checks}
			if body.cause != nil {
				attrs = append(attrs, "error", body.cause.Error())
				if u := errors.Unwrap(body.cause); u != nil {
					attrs = append(attrs, "cause", u.Error())
				}
			}
			logger.Warn("kortyx: not ready", attrs...)
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		rw.WriteHeader(status)
		_ = json.NewEncoder(rw).Encode(body)
	}
}

// healthHandler serves /healthz: the process lives.
func healthHandler(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	_, _ = rw.Write([]byte(`{"status":"ok"}` + "\n"))
}

// serveHealth serves /healthz and /readyz alone on addr until ctx ends (KORTYX_HEALTH_ADDR of a
// worker that serves no HTTP API): Temporal through c, broker's store when it is a [pinger],
// and w. It returns the address it listens on.
func serveHealth(ctx context.Context, addr string, c client.Client, broker any, w *WorkerState, logger *slog.Logger) (string, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("kortyx: health endpoints cannot listen on %s (set KORTYX_HEALTH_ADDR): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthHandler)
	mux.HandleFunc("GET /readyz", readyHandler(c, broker, w, logger))
	srv := &http.Server{Handler: httpwire.JSONErrors(mux, logger), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}

// Probe GETs url and returns nil when it answers 200 within timeout: the healthcheck of a
// container image without curl (worker --probe URL).
func Probe(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("kortyx probe: %q is not a URL: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kortyx probe: GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kortyx probe: GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
