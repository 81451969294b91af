package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/a2aserver"
	"github.com/kortyx-go/kortyx/agui"
	"github.com/kortyx-go/kortyx/aisdk"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/httpwire"
	telemetry "github.com/kortyx-go/kortyx/internal/telemetrycore"
	"github.com/kortyx-go/kortyx/mcpserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/redisstream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
)

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

// startDevServer finds (or installs, printing progress to out) the Temporal CLI and starts a
// tuned dev server on the configured ports with its SQLite file under .kortyx/, the search
// attributes registered and the UI enabled.
func startDevServer(ctx context.Context, cfg Config, out io.Writer) (*devserver.Server, error) {
	bin, err := devserver.FindOrInstall(ctx, cfg.Root, out)
	if err != nil {
		return nil, err
	}
	db := cmp.Or(cfg.DevDB, "temporal.db")
	logFile, err := os.OpenFile(filepath.Join(mkdir(cfg.Root, ".kortyx"), strings.TrimSuffix(db, ".db")+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		BinaryPath:       bin,
		Port:             cfg.DevPort,
		UIPort:           cfg.DevUIPort,
		DBFile:           filepath.Join(cfg.Root, ".kortyx", db),
		Namespace:        cfg.Namespace,
		SearchAttributes: protocol.SearchAttributeNames(),
		Log:              logFile,
	})
	if err != nil {
		_ = logFile.Close()
		return nil, devServerError(cfg, err)
	}
	go func() { <-srv.Done(); _ = logFile.Close() }()
	return srv, nil
}

// devServerError says why the dev server of a dev-mode program did not start, in the
// program's terms (its variables, not devserver.Options).
func devServerError(cfg Config, err error) error {
	var inUse *devserver.DBInUseError
	switch {
	case errors.As(err, &inUse):
		db := inUse.DB
		if wd, werr := os.Getwd(); werr == nil {
			if rel, rerr := filepath.Rel(wd, db); rerr == nil && !strings.HasPrefix(rel, "..") {
				db = rel
			}
		}
		stop := "stop it (Ctrl-C where it runs)"
		if inUse.PID > 0 {
			stop = fmt.Sprintf("stop it (Ctrl-C where it runs, or kill %d)", inUse.PID)
		}
		return fmt.Errorf("kortyx: another dev worker uses the dev server database %s: %s, "+
			"or give this one a database of its own and free ports: KORTYX_DEV_DB=second.db KORTYX_DEV_PORT=0 KORTYX_DEV_UI_PORT=0 KORTYX_HTTP_ADDR=127.0.0.1:0 "+
			"(or set TEMPORAL_ADDRESS to use a running Temporal server): %w", db, stop, devserver.ErrDBInUse)
	case errors.Is(err, devserver.ErrPortInUse):
		ports := fmt.Sprintf("port %d (KORTYX_DEV_PORT)", cfg.DevPort)
		if cfg.DevUIPort >= 0 {
			ports += fmt.Sprintf(" or %d (KORTYX_DEV_UI_PORT)", cfg.DevUIPort)
		}
		return fmt.Errorf("kortyx: starting the Temporal dev server: %s is taken; set another (0: any free port), or TEMPORAL_ADDRESS to use a running server: %w", ports, err)
	}
	return fmt.Errorf("kortyx: starting the Temporal dev server (set TEMPORAL_ADDRESS to use a running server instead): %w", err)
}

func mkdir(parts ...string) string {
	dir := filepath.Join(parts...)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// temporalConn is a program's connection to Temporal, with the dev server it started, if any.
type temporalConn struct {
	Client client.Client
	Dev    *devserver.Server // nil with TEMPORAL_ADDRESS
}

// Close closes the client and stops the dev server (its stop error, if any, is the server's
// own: the program is ending and has nothing to do with it).
func (t *temporalConn) Close() {
	t.Client.Close()
	if t.Dev != nil {
		_ = t.Dev.Stop() // its exit status after a stop request says nothing more
	}
}

// connect reaches Temporal for a program that hosts workers: in dev mode ([Config.devMode]) it
// starts the dev server (progress to out; cfg.TemporalAddress is set to its address, and
// cfg.StickyCacheSize to [defaultDevStickyCacheSize] when it is 0), otherwise it registers the
// search attributes the namespace lacks.
func connect(ctx context.Context, cfg *Config, out io.Writer) (*temporalConn, error) {
	t := &temporalConn{}
	if cfg.devMode() {
		srv, err := startDevServer(ctx, *cfg, out)
		if err != nil {
			return nil, err
		}
		t.Dev = srv
		cfg.TemporalAddress = srv.Address() // the actual port, also when KORTYX_DEV_PORT=0
		if cfg.StickyCacheSize == 0 {
			cfg.StickyCacheSize = defaultDevStickyCacheSize // still dev mode's, with the address set
		}
		// The dev server is plain gRPC: an API key or TLS settings without an address are not
		// for it.
		cfg.Temporal = envconfig.ClientConfigProfile{}
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

// loadWorkflows adds the workflow files of the directory KORTYX_WORKFLOWS (*.workflow.yaml,
// *.workflow.yml, *.workflow.json) to reg when the variable is set. Call
// [workflows.Registry.SetToolNames] first with the worker's tools: a kortyx.reason node that
// names another tool is then refused here, at start.
func loadWorkflows(reg *workflows.Registry) error {
	if dir := os.Getenv("KORTYX_WORKFLOWS"); dir != "" {
		if err := reg.AddDir(dir); err != nil {
			return fmt.Errorf("kortyx: loading workflows from KORTYX_WORKFLOWS=%s: %w", dir, err)
		}
	}
	return nil
}

// setBudget gives reg the worker's prices (KORTYX_PRICES, in KORTYX_CURRENCY, with b's default
// model) and its default budget (cfg.Budget, over the limits the program's agents set).
func setBudget(reg *workflows.Registry, cfg Config, b *backend) error {
	currency := cfg.Currency
	if currency == "" {
		currency = web.DefaultCurrency
	}
	if err := reg.SetPrices(cfg.Prices, b.DefaultProvider, b.DefaultModel, currency); err != nil {
		return err
	}
	if cfg.AgentBudget.On() {
		if err := reg.SetAgentBudget(cfg.AgentBudget); err != nil {
			return err
		}
	}
	if cfg.TenantBudget.On() {
		if err := reg.SetTenantBudget(cfg.TenantBudget); err != nil {
			return err
		}
	}
	if cfg.Budget == (contracts.Limits{}) {
		return nil
	}
	return reg.SetLimits(protocol.BudgetOver(reg.Limits(), &cfg.Budget))
}

// newRegistry returns the registry of a worker whose tools are b's: the definitions that each
// of register adds (e.g. the chosen examples' Register), then the files of KORTYX_WORKFLOWS
// ([loadWorkflows]), whose kortyx.reason nodes may only name b's tools. The tools b marks
// local (tools.Local) run as local activities ([workflows.Registry.SetLocalTools]).
func newRegistry(b *backend, register ...func(*workflows.Registry) error) (*workflows.Registry, error) {
	reg := workflows.NewRegistry()
	reg.SetToolNames(b.Tools.Names()...)
	reg.SetLocalTools(b.Tools.LocalNames()...)
	for _, add := range register {
		if add == nil {
			continue
		}
		if err := add(reg); err != nil {
			return nil, err
		}
	}
	if err := loadWorkflows(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// defaultDevStickyCacheSize is the sticky workflow cache of a dev-mode process (see
// [Config.StickyCacheSize]). A cached idle chat session costs from about 40 KB of heap (a short
// hello session) to 400 KB (one with a 100 KB prompt; docs/performance-archive.md), which the SDK's
// default of 10,000 does not bound in practice.
const defaultDevStickyCacheSize = 200

// sdkStickyCacheSize is the Temporal SDK's default sticky workflow cache size.
const sdkStickyCacheSize = 10_000

// stickyCache returns the sticky workflow cache size the process's workers use: c's
// [Config.StickyCacheSize], else [defaultDevStickyCacheSize] in dev mode, else 0 (the SDK's
// default, [sdkStickyCacheSize]).
func (c Config) stickyCache() int {
	if c.StickyCacheSize > 0 {
		return c.StickyCacheSize
	}
	if c.devMode() {
		return defaultDevStickyCacheSize
	}
	return 0
}

// openBroker opens the stream broker of cfg: the Redis broker at cfg.RedisURL (KORTYX_REDIS_URL)
// with cfg.StreamRetention, else a new in-memory broker with that retention and
// cfg.StreamMaxRuns. Call the returned function to close it.
func openBroker(ctx context.Context, cfg Config) (stream.Broker, func() error, error) {
	if cfg.RedisURL != "" {
		b, err := redisstream.New(ctx, redisstream.Options{URL: cfg.RedisURL, Retention: cfg.StreamRetention})
		if err != nil {
			return nil, nil, fmt.Errorf("kortyx: the stream broker of KORTYX_REDIS_URL: %w", err)
		}
		return b, b.Close, nil
	}
	return stream.NewMemory(stream.MemoryOptions{Retention: cfg.StreamRetention, MaxRuns: cfg.StreamMaxRuns}), func() error { return nil }, nil
}

// API is what the development HTTP API serves.
type API struct {
	// TenantHeader names the header whose value is the caller's identity on every wire (the
	// owner of the sessions it starts, and the tenant whose budget their runs spend;
	// [Config.TenantHeader], KORTYX_TENANT_HEADER). "": none.
	TenantHeader string
	// SessionBudget is every chat session's budget across its turns ([sessions.Options]
	// SessionBudget; KORTYX_SESSION_MAX_TOKENS, KORTYX_SESSION_MAX_COST). Zero: none.
	SessionBudget contracts.Limits
	// Busy is what a message sent to a session while its turn runs does on every wire unless
	// its request names a policy ([Config.Busy], KORTYX_BUSY; docs/steering.md).
	Busy      string
	Client    client.Client
	Broker    stream.Broker // the broker the workers' activities publish to
	TaskQueue string        // where chat turns start their runs
	// DefaultWorkflow runs a chat session's first turn when the request names none ("": such
	// a request is refused with UNKNOWN_WORKFLOW).
	DefaultWorkflow string
	// Worker, when not nil, is the state of the worker of this process, checked by /readyz
	// (nil: an API-only process, no worker check).
	Worker *WorkerState
	// Logger logs failed requests and failed readiness probes (nil: slog.Default()).
	Logger *slog.Logger
	// Namespace and TemporalUIURL are the chat page's links to the Temporal UI (TemporalUIURL
	// "": KORTYX_TEMPORAL_UI_URL, default http://127.0.0.1:8233; "none": no links).
	Namespace     string
	TemporalUIURL string
	// Codec, when set, is served at /codec/ (POST /codec/encode, /codec/decode: the Temporal
	// codec server protocol, [codec.Handler]) for the Temporal UI at TemporalUIURL, whose origin
	// it allows by CORS. Like every route here it has no authentication: whoever reaches it can
	// decrypt every payload, so in production put it behind your authentication or do not
	// expose it. [Run] passes [Config.Codec] (when set).
	Codec converter.PayloadCodec
	// Telemetry, when set, traces each request (otelhttp; the Temporal calls it makes carry the
	// trace) and serves GET /metrics when it exports to Prometheus.
	Telemetry *telemetry.Telemetry
	// Registry, when set, is the worker's registry: the chat page suggests its workflows.
	Registry *workflows.Registry
	// MCPStateless serves MCP 2026-07-28 beside the older revisions at /mcp
	// ([mcpserver.Options].StatelessRevision); [Run] passes [Config.MCPStateless].
	MCPStateless bool
	// MCPStateKey signs the request states of the MCP server's 2026-07-28 revision
	// ([mcpserver.Options].RequestStateKey; nil: a random key of this process). [Run] passes
	// [Config.MCPStateKey].
	MCPStateKey []byte
	// CORSOrigins, when not empty, are the origins whose browser pages may call the chat, stop
	// and checkpoint routes ([chat.CORS]); [Run] passes [Config.CORSOrigins].
	CORSOrigins []string
	// Prices price the tokens of the page's run traces ([Config.Prices]); DefaultModel
	// ("provider:model") is the model of the passes that name none (the worker's default).
	Prices       map[string]web.Price
	DefaultModel string
	// Currency and ActionPrice are the studio's currency and price per million Temporal
	// actions ([web.Options]; [Config.Currency], [Config.ActionPrice]).
	Currency    string
	ActionPrice *float64
	// NoWebPage leaves out the chat page and its routes ([web.Patterns]: the page, the session
	// list and views, run timelines), which list every session of the namespace without
	// authentication. The worker program sets it from [Config.WebPage] (KORTYX_WEB_PAGE).
	NoWebPage bool
}

// ServeHTTP serves the HTTP API on addr until ctx ends: the chat route at /api/chat (and
// /api/chat/stop), the checkpoint route at /api/checkpoints and /api/chat/checkpoints (the
// checkpointEndpoint of Kortyx's example app), run streams at
// /v1/runs/{runID}/stream, the AI SDK's chat transport at POST /api/ui/chat and
// GET /api/ui/chat/{id}/stream (package aisdk), AG-UI runs at POST /api/agui/{agent} (package
// agui), with api.Registry each agent's A2A card at /a2a/{agent}/.well-known/agent-card.json,
// its JSON-RPC endpoint (A2A 1.0 and 0.3) at /a2a/{agent} and its A2A 1.0 HTTP+JSON routes
// under /a2a/{agent}/ (package a2aserver) and the MCP server at /mcp, the agents as tools (package mcpserver), liveness at
// /healthz ({"status":"ok"}) and readiness at /readyz
// ([Readiness]: Temporal answers, the broker answers when it has a Ping, the worker polls).
// Every error, also of unknown paths and methods, is a JSON {error, failure}. The routes have
// no authentication: this is the development API; put the chat package's handlers behind your
// own authentication in production. The wires share one session service. It returns the
// server and the address it listens on.
func ServeHTTP(ctx context.Context, addr string, api API) (*http.Server, string, error) {
	c, broker := api.Client, api.Broker
	logger := api.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("kortyx: HTTP API cannot listen on %s (set KORTYX_HTTP_ADDR): %w", addr, err)
	}
	var owner func(*http.Request) string
	if h := api.TenantHeader; h != "" {
		owner = func(r *http.Request) string { return strings.TrimSpace(r.Header.Get(h)) }
		logger.Warn("kortyx: the HTTP API takes the caller's identity from a request header: only a proxy that authenticates callers may set it", "header", h)
	}
	var cors *chat.CORS
	if len(api.CORSOrigins) > 0 {
		cors = &chat.CORS{AllowedOrigins: api.CORSOrigins}
	}
	// One session service for every wire: the turns, answers, stops and checkpoints of all of
	// them go through it.
	so := sessions.Options{Client: c, Broker: broker, TaskQueue: api.TaskQueue, Logger: logger, SessionBudget: api.SessionBudget}
	if api.Registry != nil {
		so.Agents = api.Registry
	}
	if api.Codec != nil {
		so.DataConverter = codec.DataConverter(api.Codec)
	}
	svc, err := sessions.New(so)
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	// A reader that leaves (a reloaded page) does not cancel its run: it reattaches with
	// Last-Event-ID; Stop cancels.
	chatRoute, err := chat.NewHandler(svc, chat.Options{DefaultWorkflow: api.DefaultWorkflow,
		AllowUnauthenticated: true, Logger: logger, Disconnect: "continue", OnExecution: func(<-chan struct{}) {}, CORS: cors, Busy: api.Busy, Owner: owner})
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	checkpoints, err := chat.NewCheckpointHandler(svc, chat.CheckpointOptions{AllowUnauthenticated: true, Logger: logger, CORS: cors})
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/chat", chatRoute)
	mux.Handle("/api/chat/stop", chatRoute.StopHandler())
	mux.Handle("/api/checkpoints", checkpoints)
	mux.Handle("/api/chat/checkpoints", checkpoints) // Kortyx's example app's checkpointEndpoint
	mux.Handle("GET /v1/runs/{runID}/stream", &sse.Server{Broker: broker, Run: svc.RunState, Logger: logger})
	aiChat, err := aisdk.New(svc, aisdk.Options{DefaultAgent: api.DefaultWorkflow,
		AllowUnauthenticated: true, Logger: logger, CORS: cors, Busy: api.Busy, Owner: owner})
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	mux.Handle("POST /api/ui/chat", aiChat)
	mux.Handle("GET /api/ui/chat/{id}/stream", aiChat)
	if cors != nil {
		mux.Handle("OPTIONS /api/ui/chat", aiChat)
		mux.Handle("OPTIONS /api/ui/chat/{id}/stream", aiChat)
	}
	aguiRoute, err := agui.New(svc, agui.Options{DefaultAgent: api.DefaultWorkflow, AllowUnauthenticated: true, Logger: logger, CORS: cors, Busy: api.Busy, Owner: owner})
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	mux.Handle("POST /api/agui/{agent}", aguiRoute) // AG-UI 1.0 (docs/agui.md)
	if cors != nil {
		mux.Handle("OPTIONS /api/agui/{agent}", aguiRoute)
	}
	if api.Registry != nil { // A2A: a card and a JSON-RPC endpoint per agent (docs/a2a.md)
		a2a, err := a2aserver.New(svc, a2aserver.Options{AllowUnauthenticated: true, Logger: logger, Busy: api.Busy, Owner: owner})
		if err != nil {
			_ = ln.Close()
			return nil, "", err
		}
		mux.Handle("/a2a/", a2a)
	}
	if api.Registry != nil { // the MCP server: one tool per agent (docs/mcp-server.md)
		// MCP 2025-03-26 to 2025-11-25 and, with MCPStateless, the stateless 2026-07-28.
		mcpRoute, err := mcpserver.New(svc, mcpserver.Options{AllowUnauthenticated: true, Logger: logger,
			StatelessRevision: api.MCPStateless, RequestStateKey: api.MCPStateKey, Busy: api.Busy, Owner: owner})
		if err != nil {
			_ = ln.Close()
			return nil, "", err
		}
		mux.Handle("/mcp", mcpRoute)
	}
	wo := web.Options{TaskQueue: api.TaskQueue, Client: c, Namespace: api.Namespace, TemporalUIURL: temporalUI(api.TemporalUIURL), Logger: logger,
		Registry: api.Registry, DefaultWorkflow: api.DefaultWorkflow, Prices: api.Prices, DefaultModel: api.DefaultModel,
		Currency: api.Currency, ActionPrice: api.ActionPrice,
		AllowUnauthenticated: true, Broker: broker}
	if api.Codec != nil {
		wo.DataConverter = codec.DataConverter(api.Codec)
	}
	if !api.NoWebPage {
		page := web.Handler(wo)
		for _, p := range web.Patterns() {
			mux.Handle(p, page)
		}
	}
	if api.Codec != nil {
		var origins []string
		if u, err := url.Parse(temporalUI(api.TemporalUIURL)); err == nil && u.Scheme != "" && u.Host != "" {
			origins = []string{u.Scheme + "://" + u.Host}
		}
		mux.Handle("/codec/", codec.Handler(api.Codec, codec.HandlerOptions{AllowOrigins: origins, Logger: logger}))
	}
	mux.HandleFunc("GET /healthz", healthHandler)
	mux.HandleFunc("GET /readyz", readyHandler(c, broker, api.Worker, logger))
	if m := api.Telemetry.Metrics(); m != nil {
		mux.Handle("GET /metrics", m)
	}
	srv := &http.Server{Handler: api.Telemetry.HTTP(httpwire.JSONErrors(mux, logger)), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return srv, ln.Addr().String(), nil
}

// temporalUI is the chat page's Temporal UI base URL.
func temporalUI(url string) string {
	if url == "" {
		url = envOr("KORTYX_TEMPORAL_UI_URL", "http://127.0.0.1:8233")
	}
	if url == "none" {
		return ""
	}
	return url
}
