package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/internal/httpapi"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// Config is read from the environment by [ConfigFromEnv].
type Config struct {
	// TemporalAddress is TEMPORAL_ADDRESS; empty means the embedded dev server.
	TemporalAddress string
	// Namespace is TEMPORAL_NAMESPACE (default "default").
	Namespace string
	// TaskQueue is KORTYX_TASK_QUEUE (default "kortyx").
	TaskQueue string
	// HTTPAddr is KORTYX_HTTP_ADDR (default 127.0.0.1:8080): the worker's HTTP API (chat and
	// checkpoint routes, run streams).
	HTTPAddr string
	// DevPort and DevUIPort are the embedded server's ports (KORTYX_DEV_PORT, default 7233;
	// KORTYX_DEV_UI_PORT, default 8233).
	DevPort, DevUIPort int
	// DevDB is the embedded server's SQLite file name under .kortyx/ (default temporal.db).
	DevDB string
	// Root is the project directory holding .tools/ and .kortyx/ (KORTYX_ROOT, default: the
	// nearest directory above the working directory with a go.mod, else the working directory).
	Root string
}

// ConfigFromEnv reads the configuration.
func ConfigFromEnv() Config {
	c := Config{
		TemporalAddress: os.Getenv("TEMPORAL_ADDRESS"),
		Namespace:       envOr("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:       envOr("KORTYX_TASK_QUEUE", contracts.DefaultTaskQueue),
		HTTPAddr:        envOr("KORTYX_HTTP_ADDR", "127.0.0.1:8080"),
		DevPort:         envInt("KORTYX_DEV_PORT", 7233),
		DevUIPort:       envInt("KORTYX_DEV_UI_PORT", 8233),
		DevDB:           "temporal.db",
		Root:            os.Getenv("KORTYX_ROOT"),
	}
	if c.Root == "" {
		c.Root = projectRoot()
	}
	return c
}

// Address is where clients reach Temporal: TEMPORAL_ADDRESS, else the embedded server's port.
func (c Config) Address() string {
	if c.TemporalAddress != "" {
		return c.TemporalAddress
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.DevPort))
}

// StreamURL is the base URL of the worker's HTTP API.
func (c Config) StreamURL() string {
	if u := os.Getenv("KORTYX_STREAM_URL"); u != "" {
		return u
	}
	return "http://" + c.HTTPAddr
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func projectRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// StartDevServer finds (or installs, printing progress to out) the Temporal CLI and starts a
// tuned dev server on the configured ports with its SQLite file under .kortyx/, the search
// attributes registered and the UI enabled.
func StartDevServer(ctx context.Context, cfg Config, out io.Writer) (*devserver.Server, error) {
	bin, err := devserver.FindOrInstall(ctx, cfg.Root, out)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(mkdir(cfg.Root, ".kortyx"), strings.TrimSuffix(cfg.DevDB, ".db")+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		BinaryPath:       bin,
		Port:             cfg.DevPort,
		UIPort:           cfg.DevUIPort,
		DBFile:           filepath.Join(cfg.Root, ".kortyx", cfg.DevDB),
		Namespace:        cfg.Namespace,
		SearchAttributes: contracts.SearchAttributes,
		Log:              logFile,
	})
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("kortyx: starting the Temporal dev server on port %d (set KORTYX_DEV_PORT to use another, or TEMPORAL_ADDRESS to use a running server): %w", cfg.DevPort, err)
	}
	go func() { <-srv.Done(); _ = logFile.Close() }()
	return srv, nil
}

func mkdir(parts ...string) string {
	dir := filepath.Join(parts...)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// Dial connects a Temporal client with a quiet logger.
func Dial(cfg Config) (client.Client, error) {
	c, err := client.Dial(client.Options{
		HostPort:  cfg.Address(),
		Namespace: cfg.Namespace,
		Logger:    log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		return nil, fmt.Errorf("kortyx: cannot reach Temporal at %s (start the worker in dev mode, or set TEMPORAL_ADDRESS): %w", cfg.Address(), err)
	}
	return c, nil
}

// Temporal is a program's connection to Temporal, with the dev server it started, if any.
type Temporal struct {
	Client client.Client
	Dev    *devserver.Server // nil with TEMPORAL_ADDRESS
}

// Close closes the client and stops the dev server (its stop error, if any, is the server's
// own: the program is ending and has nothing to do with it).
func (t *Temporal) Close() {
	t.Client.Close()
	if t.Dev != nil {
		_ = t.Dev.Stop() // its exit status after a stop request says nothing more
	}
}

// Connect reaches Temporal for a program that hosts workers: without TEMPORAL_ADDRESS it starts
// the dev server (progress to out; cfg.TemporalAddress is set to its address), otherwise it
// registers the search attributes the namespace lacks.
func Connect(ctx context.Context, cfg *Config, out io.Writer) (*Temporal, error) {
	t := &Temporal{}
	if cfg.TemporalAddress == "" {
		srv, err := StartDevServer(ctx, *cfg, out)
		if err != nil {
			return nil, err
		}
		t.Dev = srv
		cfg.TemporalAddress = srv.Address() // the actual port, also when KORTYX_DEV_PORT=0
	}
	c, err := Dial(*cfg)
	if err != nil {
		if t.Dev != nil {
			_ = t.Dev.Stop() // the dial error is the one to report
		}
		return nil, err
	}
	t.Client = c
	if t.Dev == nil {
		if err := kortyx.RegisterSearchAttributes(ctx, c, cfg.Namespace); err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

// LoadWorkflows adds the workflow files of the directory KORTYX_WORKFLOWS (*.workflow.yaml,
// *.workflow.yml, *.workflow.json) to reg when the variable is set. Call
// [workflows.Registry.SetToolNames] first with the worker's tools ([Backend] Tools.Names()): a
// kortyx.reason node that names another tool is then refused here, at start.
func LoadWorkflows(reg *workflows.Registry) error {
	if dir := os.Getenv("KORTYX_WORKFLOWS"); dir != "" {
		if err := reg.AddDir(dir); err != nil {
			return fmt.Errorf("kortyx: loading workflows from KORTYX_WORKFLOWS=%s: %w", dir, err)
		}
	}
	return nil
}

// Registry returns the registry of a worker whose tools are b's: the definitions that each of
// register adds (e.g. the chosen examples' Register), then the files of KORTYX_WORKFLOWS
// ([LoadWorkflows]), whose kortyx.reason nodes may only name b's tools.
func Registry(b *Backend, register ...func(*workflows.Registry) error) (*workflows.Registry, error) {
	reg := workflows.NewRegistry()
	reg.SetToolNames(b.Tools.Names()...)
	for _, add := range register {
		if err := add(reg); err != nil {
			return nil, err
		}
	}
	if err := LoadWorkflows(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// NewWorker returns a worker (not started) for reg on the task queue, with the run workflow
// and acts registered; register more before calling Start.
func NewWorker(c client.Client, cfg Config, reg *workflows.Registry, acts *activities.Activities) worker.Worker {
	w := worker.New(c, cfg.TaskQueue, worker.Options{})
	workflows.NewRunner(reg).Register(w)
	acts.Register(w)
	return w
}

// Stack is a started worker with its in-memory broker and the HTTP API that streams its runs.
type Stack struct {
	Worker   worker.Worker
	Broker   *stream.Memory
	HTTPAddr string // where the HTTP API listens
}

// StackOptions is what [StartStack] starts.
type StackOptions struct {
	Registry *workflows.Registry
	Backend  *Backend
	// HTTPAddr is where the HTTP API listens ("127.0.0.1:0": a free port).
	HTTPAddr string
	// DefaultWorkflow runs a chat session's first turn when the request names none.
	DefaultWorkflow string
	// Register, when not nil, adds more activities to the worker before it starts.
	Register func(worker.ActivityRegistry)
}

// StartStack starts a worker for o.Registry on cfg.TaskQueue, with the activities of o.Backend
// over a new in-memory broker, and the HTTP API on o.HTTPAddr; the API stops when ctx ends,
// the worker on [Stack.Stop].
func StartStack(ctx context.Context, c client.Client, cfg Config, o StackOptions) (*Stack, error) {
	broker := stream.NewMemory()
	acts, err := o.Backend.Activities(broker)
	if err != nil {
		return nil, err
	}
	w := NewWorker(c, cfg, o.Registry, acts)
	if o.Register != nil {
		o.Register(w)
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("kortyx: starting the worker: %w", err)
	}
	_, addr, err := ServeHTTP(ctx, o.HTTPAddr, API{Client: c, Broker: broker, TaskQueue: cfg.TaskQueue, DefaultWorkflow: o.DefaultWorkflow})
	if err != nil {
		w.Stop()
		return nil, err
	}
	return &Stack{Worker: w, Broker: broker, HTTPAddr: addr}, nil
}

// Stop stops the worker.
func (s *Stack) Stop() { s.Worker.Stop() }

// API is what the development HTTP API serves.
type API struct {
	Client    client.Client
	Broker    stream.Broker // the broker the worker's activities publish to
	TaskQueue string        // where chat turns start their runs
	// DefaultWorkflow runs a chat session's first turn when the request names none ("": such
	// a request is refused with UNKNOWN_WORKFLOW).
	DefaultWorkflow string
}

// ServeHTTP serves the HTTP API on addr until ctx ends: the chat route at /api/chat (and
// /api/chat/stop), the checkpoint route at /api/checkpoints, run streams at
// /v1/runs/{runID}/stream, liveness at /healthz and readiness (Temporal answers) at /readyz.
// Every error, also of unknown paths and methods, is a JSON {error, failure}. The routes have
// no authentication: this is the development API; put the chat package's handlers behind your
// own authentication in production. It returns the server and the address it listens on.
func ServeHTTP(ctx context.Context, addr string, api API) (*http.Server, string, error) {
	c, broker := api.Client, api.Broker
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("kortyx: HTTP API cannot listen on %s (set KORTYX_HTTP_ADDR): %w", addr, err)
	}
	chatRoute, err := chat.NewHandler(chat.Options{Client: c, Broker: broker, TaskQueue: api.TaskQueue, DefaultWorkflow: api.DefaultWorkflow,
		AllowUnauthenticated: true})
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	checkpoints, err := chat.NewCheckpointHandler(chat.CheckpointOptions{Client: c, AllowUnauthenticated: true})
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/chat", chatRoute)
	mux.Handle("/api/chat/stop", chatRoute.StopHandler())
	mux.Handle("/api/checkpoints", checkpoints)
	mux.Handle("/v1/runs/", stream.Handler(broker))
	// Liveness: the process serves HTTP.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	// Readiness: Temporal answers a health check.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := chat.CheckHealth(r.Context(), c); err != nil {
			httpapi.WriteError(w, r, nil, 0, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ready"}`+"\n")
	})
	srv := &http.Server{Handler: httpapi.JSONErrors(mux, nil), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return srv, ln.Addr().String(), nil
}
