package app

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	telemetry "github.com/kortyx-go/kortyx/internal/telemetrycore"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/web"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
)

// defaultHTTPAddr is where the HTTP API listens when KORTYX_HTTP_ADDR is not set and the
// process serves it (dev mode, --api-only): loopback only, because its routes are
// unauthenticated.
const defaultHTTPAddr = "127.0.0.1:8080"

// Config is a program's configuration, read from the environment by [ConfigFromEnv]. The zero
// value is a dev-mode program on the task queue "kortyx" of the namespace "default".
type Config struct {
	// TemporalAddress is the Temporal server's host:port as the standard Temporal client
	// configuration gives it (TEMPORAL_ADDRESS, else the address of the TEMPORAL_PROFILE profile
	// of TEMPORAL_CONFIG_FILE); empty means dev mode: the embedded dev server.
	TemporalAddress string
	// Namespace is the profile's namespace (TEMPORAL_NAMESPACE; default "default").
	Namespace string
	// Temporal is the rest of the standard client configuration (envconfig): API key, TLS client
	// certificate and key, server CA, server name, gRPC metadata. [Dial] applies it; [Run]
	// clears it when it starts the dev server.
	Temporal envconfig.ClientConfigProfile
	// TaskQueue is KORTYX_TASK_QUEUE (default "kortyx").
	TaskQueue string
	// HTTPAddr is KORTYX_HTTP_ADDR as set ("" when unset): where the HTTP API (chat and
	// checkpoint routes, run streams, health) listens: a worker serves it when it is set, or in
	// dev mode (on 127.0.0.1:8080); --api-only serves it there too.
	HTTPAddr string
	// WebPage is KORTYX_WEB_PAGE (true or false): whether the worker program's HTTP API serves
	// the chat page and its routes, which list every session of the namespace without
	// authentication ([API.NoWebPage]). Default: true in dev mode only.
	WebPage bool
	// HealthAddr is KORTYX_HEALTH_ADDR: where a worker that serves no HTTP API serves /healthz
	// and /readyz alone (a container's healthcheck; "" serves nothing).
	HealthAddr string
	// RedisURL is KORTYX_REDIS_URL: the Redis stream broker ("" keeps the in-memory broker).
	RedisURL string
	// StreamRetention is KORTYX_STREAM_RETENTION (a Go duration, e.g. 24h; 0: the broker's
	// default, 24h in Redis and 10 min in memory; < 0: never): how long
	// a finished run's stream stays readable after its final done.
	StreamRetention time.Duration
	// StreamMaxRuns is KORTYX_STREAM_MAX_RUNS: how many runs' streams the in-memory broker keeps
	// (0: 256, the in-memory broker's default); beyond it the least recently published run is dropped.
	StreamMaxRuns int
	// StickyCacheSize is KORTYX_STICKY_CACHE: how many workflow executions the process's
	// workers keep in memory between workflow tasks (worker.SetStickyWorkflowCacheSize; an
	// evicted one is replayed from its history at its next task). 0: 200 in dev mode, the SDK's
	// default (10,000) otherwise.
	StickyCacheSize int
	// GrpcCompression is KORTYX_GRPC_COMPRESSION: how the process's Temporal client compresses
	// its requests to the Temporal server. "none" (the default) sends them as they are; "gzip"
	// compresses every request, and the server its answers to them, which is the Temporal SDK's
	// own default. On a local network or loopback gzip costs the worker and the API CPU on every
	// request and gains nothing (docs/performance.md#grpc-compression); over a slow link to a
	// remote server it saves bytes. Payloads themselves are compressed by the
	// codec (KORTYX_CODEC_COMPRESS, docs/codec.md) whichever is set.
	GrpcCompression string
	// LogFormat is KORTYX_LOG_FORMAT: "text" (default) or "json".
	LogFormat string
	// LogLevel is KORTYX_LOG_LEVEL: debug, info (default), warn or error.
	LogLevel slog.Level
	// Logger, when set, is the logger of the Temporal client that [Dial] connects (nil: warnings
	// and errors only, as text on stderr). [Run] sets it to the program's logger.
	Logger *slog.Logger
	// Telemetry is the program's OpenTelemetry (nil: [Options.Telemetry]'s, else none).
	// [Dial]'s client and [Run]'s worker, activities and HTTP API use it.
	Telemetry *telemetry.Telemetry
	// DevPort and DevUIPort are the embedded server's ports (KORTYX_DEV_PORT, default 7233;
	// KORTYX_DEV_UI_PORT, default 8233).
	DevPort, DevUIPort int
	// DevDB is the embedded server's SQLite file name under .kortyx/ (KORTYX_DEV_DB, default
	// temporal.db): one dev server at a time uses a file, so a second dev worker of one
	// checkout needs another.
	DevDB string
	// Codec is the payload codec of KORTYX_CODEC_KEYS, KORTYX_CODEC_KEY_ID,
	// KORTYX_CODEC_COMPRESS and KORTYX_PAYLOAD_STORE ([codec.FromEnv]; nil: none, payloads are
	// Temporal's default JSON). [Dial] puts it in the client's data converter, which the
	// client's workers inherit, and [Run]'s HTTP API serves it at /codec/ ([API.Codec]).
	Codec *codec.Codec
	// Messages keeps the large conversation messages of model passes, so that runs send them
	// by reference ([activities.Activities.Messages]): Codec when it has a payload store
	// (KORTYX_PAYLOAD_STORE); in dev mode otherwise Codec's compression and keys over the
	// directory .kortyx/payloads; nil (every message inline) with a Temporal address and no
	// store, or with KORTYX_MESSAGE_REFS=false.
	Messages *codec.Codec
	// FakeModels is KORTYX_FAKE_MODELS (true/1): outside dev mode, the model providers whose
	// variables are unset answer from the in-process scripted fake model (package
	// providers/fake, playing [Options.FakeModel]) instead of the program refusing to start
	// without a configured provider. For tests and demos only: [Run] logs it at WARN.
	FakeModels bool
	// CORSOrigins are the origins whose browser pages may call the HTTP API's chat, stop and
	// checkpoint routes ([chat.CORS] AllowedOrigins): in dev mode the loopback origins
	// http://localhost:*, http://127.0.0.1:* and http://[::1]:*, then the comma-separated list KORTYX_CORS_ORIGINS
	// ("https://app.example.com,http://10.0.0.5:*"; "*" allows any origin), in any mode.
	CORSOrigins []string
	// Prices is the price table of KORTYX_PRICES (a JSON file of web.Price by "provider:model"):
	// the run traces of the chat page price their tokens with it; nil prices nothing.
	Prices map[string]web.Price
	// Budget is the worker's default budget of each run (docs/budgets.md): KORTYX_MAX_TOKENS
	// (tokens of a run's model passes, its children's included), KORTYX_MAX_COST (their cost in
	// Currency, priced by Prices), KORTYX_BUDGET_WARN_AT (the share at which a run publishes a
	// budget status chunk, default 0.8) and KORTYX_ON_BUDGET_EXHAUSTED ("ask", the default: the
	// run pauses with a question; "fail": it fails with BUDGET_EXHAUSTED). A run's own limits
	// (RunInput.Limits, a chat turn's limits) override them.
	Budget contracts.Limits
	// SessionBudget is the budget of every chat session the HTTP API starts, across its turns
	// (docs/budgets.md): KORTYX_SESSION_MAX_TOKENS and KORTYX_SESSION_MAX_COST, with
	// KORTYX_ON_BUDGET_EXHAUSTED. It is the API process's setting: each turn it starts carries it.
	SessionBudget contracts.Limits
	// AgentBudget is the worker's shared budget of each agent (docs/budgets.md): the passes of
	// all runs of one agent together, KORTYX_AGENT_MAX_TOKENS and KORTYX_AGENT_MAX_COST, per
	// KORTYX_AGENT_BUDGET_PERIOD ("day", "month"; unset: no period), with
	// KORTYX_ON_BUDGET_EXHAUSTED and KORTYX_BUDGET_WARN_AT. A YAML agent's budget overrides it.
	AgentBudget contracts.ScopeBudget
	// TenantBudget is the worker's shared budget of each tenant (docs/budgets.md): the passes of
	// all runs of one tenant (a session's owner) together, KORTYX_TENANT_MAX_TOKENS and
	// KORTYX_TENANT_MAX_COST, per KORTYX_TENANT_BUDGET_PERIOD.
	TenantBudget contracts.ScopeBudget
	// TenantHeader is KORTYX_TENANT_HEADER: the HTTP header whose value the HTTP API's wires
	// take as the caller's identity, the owner of the sessions it starts and the tenant whose
	// budget their runs spend ("": none). Only behind a proxy that authenticates the caller and
	// sets the header: the API itself authenticates nobody.
	TenantHeader string
	// Busy is KORTYX_BUSY: what a message sent to a session while its turn runs does on the HTTP
	// API's chat wires, unless its request names a policy (docs/steering.md): "reject" (the
	// default: 409 SESSION_BUSY), "enqueue", "interrupt" or "steer".
	Busy string
	// Currency is KORTYX_CURRENCY: the currency of the price table and of ActionPrice, shown
	// with every cost of the studio ("": web.DefaultCurrency, USD).
	Currency string
	// ActionPrice is KORTYX_ACTION_PRICE: the price per million Temporal actions at which the
	// studio estimates each run's Temporal cost (nil: web.DefaultActionPrice; 0 for a server
	// that bills no actions).
	ActionPrice *float64
	// Root is the project directory holding .tools/ and .kortyx/ (KORTYX_ROOT, default: the
	// nearest directory above the working directory with a go.mod, else the working directory).
	Root string
	// MCPStateless is KORTYX_MCP_STATELESS (true or false): whether the HTTP API's MCP server
	// also serves the stateless revision 2026-07-28 ([mcpserver.Options].StatelessRevision).
	// Default: true in dev mode only. On, every client that prefers 2026-07-28 moves to it (the
	// go-sdk v1.8.0 client does), where a cancelled call does not stop its run
	// (docs/mcp-server.md).
	MCPStateless bool
	// MCPStateKey signs the request states of MCP 2026-07-28 (KORTYX_MCP_STATE_KEY: at least
	// 32 bytes, base64): give every API process of a deployment the same key, so that a
	// question's state issued by one is answered on another. Unset, each process draws a
	// random key; [Run] warns of it outside dev mode.
	MCPStateKey []byte

	err error // a configuration the program cannot start with, reported by Err
}

// ConfigFromEnv reads the configuration: the Temporal connection the way every Temporal program
// reads it (go.temporal.io/sdk/contrib/envconfig: TEMPORAL_CONFIG_FILE and TEMPORAL_PROFILE, then
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_* and
// TEMPORAL_GRPC_META_* over the profile), then the KORTYX_* variables. A value it cannot use
// (an unknown profile, a bad duration or log level) is reported by [Config.Err], and by [Dial]
// and [Run].
func ConfigFromEnv() Config {
	c := Config{
		TaskQueue:  envOr("KORTYX_TASK_QUEUE", contracts.DefaultTaskQueue),
		HTTPAddr:   os.Getenv("KORTYX_HTTP_ADDR"),
		RedisURL:   os.Getenv("KORTYX_REDIS_URL"),
		HealthAddr: os.Getenv("KORTYX_HEALTH_ADDR"),
		LogFormat:  envOr("KORTYX_LOG_FORMAT", "text"),
		DevPort:    envInt("KORTYX_DEV_PORT", 7233),
		DevUIPort:  envInt("KORTYX_DEV_UI_PORT", 8233),
		DevDB:      envOr("KORTYX_DEV_DB", "temporal.db"),
		Root:       os.Getenv("KORTYX_ROOT"),
	}
	if v := os.Getenv("KORTYX_STREAM_MAX_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			c.fail(fmt.Errorf("kortyx: KORTYX_STREAM_MAX_RUNS=%q is not a positive number of runs, such as 256", v))
		}
		c.StreamMaxRuns = n
	}
	if v := os.Getenv("KORTYX_STICKY_CACHE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			c.fail(fmt.Errorf("kortyx: KORTYX_STICKY_CACHE=%q is not a positive number of workflow executions, such as 1000", v))
		}
		c.StickyCacheSize = n
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{})
	if err != nil {
		c.fail(fmt.Errorf("kortyx: loading the Temporal client configuration (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE, TEMPORAL_* variables): %w", err))
	}
	c.Temporal = prof
	c.TemporalAddress, c.Namespace = prof.Address, prof.Namespace
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if v := os.Getenv("KORTYX_STREAM_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			c.fail(fmt.Errorf("kortyx: KORTYX_STREAM_RETENTION=%q is not a duration such as 24h or 90m", v))
		}
		c.StreamRetention = d
	}
	if c.DevDB != filepath.Base(c.DevDB) || c.DevDB == "." || c.DevDB == ".." {
		c.fail(fmt.Errorf("kortyx: KORTYX_DEV_DB=%q: use a file name (it is kept in .kortyx/), such as second.db", c.DevDB))
	}
	if v := os.Getenv("KORTYX_FAKE_MODELS"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			c.fail(fmt.Errorf("kortyx: KORTYX_FAKE_MODELS=%q: use 1 (the in-process scripted fake model) or 0", v))
		}
		c.FakeModels = on
	}
	switch c.GrpcCompression = strings.TrimSpace(envOr("KORTYX_GRPC_COMPRESSION", GrpcCompressionNone)); c.GrpcCompression {
	case GrpcCompressionNone, GrpcCompressionGzip:
	default:
		c.fail(fmt.Errorf("kortyx: KORTYX_GRPC_COMPRESSION=%q: use none (the default) or gzip", c.GrpcCompression))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		c.fail(fmt.Errorf("kortyx: KORTYX_LOG_FORMAT=%q: use text or json", c.LogFormat))
	}
	if v := os.Getenv("KORTYX_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil || !knownLevel(v) {
			c.fail(fmt.Errorf("kortyx: KORTYX_LOG_LEVEL=%q: use debug, info, warn or error", v))
		}
	}
	c.WebPage = c.devMode()
	if v := os.Getenv("KORTYX_WEB_PAGE"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			c.fail(fmt.Errorf("kortyx: KORTYX_WEB_PAGE=%q: use true or false", v))
		}
		c.WebPage = on
	}
	if c.Root == "" {
		c.Root = projectRoot()
	}
	if c.devMode() {
		c.CORSOrigins = devCORSOrigins()
	}
	origins, err := parseOrigins(os.Getenv("KORTYX_CORS_ORIGINS"))
	if err != nil {
		c.fail(err)
	}
	c.CORSOrigins = append(c.CORSOrigins, origins...)
	c.MCPStateless = c.devMode()
	if v := os.Getenv("KORTYX_MCP_STATELESS"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			c.fail(fmt.Errorf("kortyx: KORTYX_MCP_STATELESS=%q: use true or false", v))
		}
		c.MCPStateless = on
	}
	if v := os.Getenv("KORTYX_MCP_STATE_KEY"); v != "" {
		key, err := parseStateKey(v)
		if err != nil {
			c.fail(err)
		}
		c.MCPStateKey = key
	}
	c.Currency = strings.TrimSpace(os.Getenv("KORTYX_CURRENCY"))
	if v := strings.TrimSpace(os.Getenv("KORTYX_ACTION_PRICE")); v != "" {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || math.IsInf(p, 0) || math.IsNaN(p) {
			c.fail(fmt.Errorf("kortyx: KORTYX_ACTION_PRICE=%q is not a price per million Temporal actions, such as 25 (0 for a server that bills none)", v))
		} else {
			c.ActionPrice = &p
		}
	}
	c.Budget = budgetFromEnv(c.fail)
	c.SessionBudget = sessionBudgetFromEnv(c.fail, c.Budget.OnBudgetExhausted)
	c.AgentBudget = scopeBudgetFromEnv(c.fail, "AGENT", c.Budget)
	c.TenantBudget = scopeBudgetFromEnv(c.fail, "TENANT", c.Budget)
	c.TenantHeader = strings.TrimSpace(os.Getenv("KORTYX_TENANT_HEADER"))
	if c.Busy = strings.TrimSpace(os.Getenv("KORTYX_BUSY")); sessions.CheckBusy(c.Busy) != nil {
		c.fail(fmt.Errorf("kortyx: KORTYX_BUSY=%q: use reject, enqueue, interrupt or steer", c.Busy))
	}
	if path := os.Getenv("KORTYX_PRICES"); path != "" {
		prices, err := web.LoadPrices(path)
		if err != nil {
			c.fail(err)
		}
		c.Prices = prices
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a Redis store's first ping
	cd, err := codec.FromEnv(ctx, filepath.Join(c.Root, ".kortyx", "payloads"))
	cancel()
	if err != nil {
		c.fail(err)
	}
	c.Codec = cd
	if err := c.messageStore(); err != nil {
		c.fail(err)
	}
	return c
}

// parseStateKey reads KORTYX_MCP_STATE_KEY: base64 (standard or URL alphabet, padded or not) of
// at least 32 bytes.
func parseStateKey(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(v); err == nil {
			if len(key) < 32 {
				return nil, fmt.Errorf("kortyx: KORTYX_MCP_STATE_KEY has %d bytes: give at least 32 random bytes, base64 (openssl rand -base64 32)", len(key))
			}
			return key, nil
		}
	}
	return nil, fmt.Errorf("kortyx: KORTYX_MCP_STATE_KEY is not base64: give at least 32 random bytes, base64 (openssl rand -base64 32)")
}

// devCORSOrigins are the origins a dev-mode HTTP API allows by CORS: pages served from
// loopback on any port (http://localhost:*, http://127.0.0.1:*, http://[::1]:*).
func devCORSOrigins() []string {
	return []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"}
}

// parseOrigins reads KORTYX_CORS_ORIGINS: origins separated by commas, each "*" or
// scheme://host with an optional port (or ":*": any port), no path.
func parseOrigins(v string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o != "*" {
			u, err := url.Parse(strings.Replace(o, ":*", "", 1))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil ||
				strings.Count(o, "*") > 1 || (strings.Contains(o, "*") && !strings.HasSuffix(o, ":*")) {
				return nil, fmt.Errorf("kortyx: KORTYX_CORS_ORIGINS: %q is not an origin: give origins such as https://app.example.com or http://localhost:* (any port), separated by commas, or *", o)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// messageStore sets c.Messages (see [Config.Messages]).
func (c *Config) messageStore() error {
	if v := os.Getenv("KORTYX_MESSAGE_REFS"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("kortyx: KORTYX_MESSAGE_REFS=%q: use true or false", v)
		}
		if !on {
			return nil
		}
	}
	switch {
	case c.Codec.HasStore():
		c.Messages = c.Codec
	case c.devMode():
		dir := codec.OpenDirStore(filepath.Join(c.Root, ".kortyx", "payloads")) // created when first written
		base := c.Codec
		if base == nil {
			var err error
			if base, err = codec.New(codec.Options{Compress: true}); err != nil {
				return err
			}
		}
		c.Messages = base.WithStore(dir)
	}
	return nil
}

func knownLevel(v string) bool {
	switch strings.ToLower(v) {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

func (c *Config) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Err is the first configuration error [ConfigFromEnv] found, nil when the program can start.
func (c Config) Err() error { return c.err }

// devMode reports whether no Temporal address is configured anywhere (neither TEMPORAL_ADDRESS
// nor the profile): the worker then starts the embedded dev server.
func (c Config) devMode() bool { return c.TemporalAddress == "" }

// address is where clients reach Temporal: the configured address, else the embedded server's
// port.
func (c Config) address() string {
	if c.TemporalAddress != "" {
		return c.TemporalAddress
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.DevPort))
}

// servesHTTP reports whether a worker (not --api-only) serves the HTTP API: when
// KORTYX_HTTP_ADDR is set, or in dev mode (on [defaultHTTPAddr]). A worker of a deployment
// polls only; the API runs in processes of its own (worker --api-only).
func (c Config) servesHTTP() bool { return c.HTTPAddr != "" || c.devMode() }

// listenAddr is where the HTTP API listens: KORTYX_HTTP_ADDR, else [defaultHTTPAddr].
func (c Config) listenAddr() string {
	if c.HTTPAddr != "" {
		return c.HTTPAddr
	}
	return defaultHTTPAddr
}

// newLogger returns the program's logger on w: KORTYX_LOG_FORMAT (text or json) at
// KORTYX_LOG_LEVEL.
func (c Config) newLogger(w io.Writer) *slog.Logger {
	o := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// clientOptions are the options [Dial] connects with: the standard client configuration
// ([Config.Temporal]) on the address and [Config.Namespace], the Temporal SDK logging through
// [Config.Logger], payloads through [Config.Codec] when set.
func (c Config) clientOptions() (client.Options, error) {
	if c.err != nil {
		return client.Options{}, c.err
	}
	prof := c.Temporal
	prof.Address, prof.Namespace = c.address(), c.namespace()
	o, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("kortyx: the Temporal client configuration (TEMPORAL_TLS_*, TEMPORAL_API_KEY or the profile's tls section): %w", err)
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	o.Logger = log.NewStructuredLogger(logger)
	o.ConnectionOptions.GrpcCompression = grpcCompression(c.GrpcCompression)
	c.Telemetry.ClientOptions(&o) // tracing interceptor and SDK metrics; nothing when nil
	if c.Codec != nil {
		o.DataConverter = codec.DataConverter(c.Codec)
	}
	return o, nil
}

// The values of [Config.GrpcCompression].
const (
	GrpcCompressionNone = "none"
	GrpcCompressionGzip = "gzip"
)

// grpcCompression is the client option of a [Config.GrpcCompression] value: no compression
// unless it is "gzip" ("" is a Config built without ConfigFromEnv: the default, none).
func grpcCompression(v string) client.GrpcCompression {
	if v == GrpcCompressionGzip {
		return &client.GrpcCompressionGzip{}
	}
	return &client.GrpcCompressionNone{}
}

// payloadCodec is [Config.Codec] as a [converter.PayloadCodec] for [API.Codec]: nil (not a nil
// *codec.Codec in an interface) when no codec is configured.
func (c Config) payloadCodec() converter.PayloadCodec {
	if c.Codec == nil {
		return nil
	}
	return c.Codec
}

// Dial connects a Temporal client as cfg says: the standard client configuration
// ([Config.Temporal]) on [Config.TemporalAddress] (in dev mode the embedded server's port,
// KORTYX_DEV_PORT) and [Config.Namespace], the Temporal SDK logging through [Config.Logger],
// payloads through [Config.Codec] when set. It reports the error of [Config.Err].
func Dial(cfg Config) (client.Client, error) {
	o, err := cfg.clientOptions()
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(context.Background(), o)
	if err != nil {
		return nil, fmt.Errorf("kortyx: cannot reach Temporal at %s, namespace %q (start the worker in dev mode, or set TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and, for a TLS server, TEMPORAL_API_KEY or TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH): %w", cfg.address(), cfg.namespace(), err)
	}
	return c, nil
}

// namespace is [Config.Namespace], "default" when empty.
func (c Config) namespace() string {
	if c.Namespace == "" {
		return "default"
	}
	return c.Namespace
}

// taskQueue is [Config.TaskQueue], contracts.DefaultTaskQueue when empty.
func (c Config) taskQueue() string {
	if c.TaskQueue == "" {
		return contracts.DefaultTaskQueue
	}
	return c.TaskQueue
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

// budgetFromEnv reads the worker's default budget ([Config].Budget), reporting each variable
// that is not one to fail.
func budgetFromEnv(fail func(error)) contracts.Limits {
	var l contracts.Limits
	if v := strings.TrimSpace(os.Getenv("KORTYX_MAX_TOKENS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(fmt.Errorf("kortyx: KORTYX_MAX_TOKENS=%q is not a number of tokens, such as 200000 (0: no token budget)", v))
		}
		l.MaxTokens = max(n, 0)
	}
	for _, f := range []struct {
		name, what string
		to         *float64
	}{
		{"KORTYX_MAX_COST", "an amount of the currency (KORTYX_CURRENCY), such as 2.50 (0: no money budget)", &l.MaxCost},
		{"KORTYX_BUDGET_WARN_AT", "a share of the budget, such as 0.8 (1: no warning)", &l.BudgetWarnAt},
	} {
		if v := strings.TrimSpace(os.Getenv(f.name)); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
				fail(fmt.Errorf("kortyx: %s=%q is not %s", f.name, v, f.what))
				continue
			}
			*f.to = x
		}
	}
	if v := strings.TrimSpace(os.Getenv("KORTYX_ON_BUDGET_EXHAUSTED")); v != "" {
		if v != contracts.BudgetAsk && v != contracts.BudgetFail {
			fail(fmt.Errorf("kortyx: KORTYX_ON_BUDGET_EXHAUSTED=%q must be %q (pause the run with a question) or %q (fail it with BUDGET_EXHAUSTED)", v, contracts.BudgetAsk, contracts.BudgetFail))
		} else {
			l.OnBudgetExhausted = v
		}
	}
	return l
}

// scopeBudgetFromEnv reads a shared budget of scope ("AGENT" or "TENANT"):
// KORTYX_<scope>_MAX_TOKENS, KORTYX_<scope>_MAX_COST and KORTYX_<scope>_BUDGET_PERIOD, with run's
// OnBudgetExhausted and BudgetWarnAt (KORTYX_ON_BUDGET_EXHAUSTED, KORTYX_BUDGET_WARN_AT).
func scopeBudgetFromEnv(fail func(error), scope string, run contracts.Limits) contracts.ScopeBudget {
	var b contracts.ScopeBudget
	name := "KORTYX_" + scope + "_MAX_TOKENS"
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(fmt.Errorf("kortyx: %s=%q is not a number of tokens, such as 1000000 (0: no token budget)", name, v))
		}
		b.MaxTokens = max(n, 0)
	}
	name = "KORTYX_" + scope + "_MAX_COST"
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			fail(fmt.Errorf("kortyx: %s=%q is not an amount of the currency (KORTYX_CURRENCY), such as 100 (0: no money budget)", name, v))
		} else {
			b.MaxCost = x
		}
	}
	name = "KORTYX_" + scope + "_BUDGET_PERIOD"
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		if v != contracts.PeriodDay && v != contracts.PeriodMonth {
			fail(fmt.Errorf("kortyx: %s=%q must be %q or %q (unset: the budget never starts again)", name, v, contracts.PeriodDay, contracts.PeriodMonth))
		} else {
			b.Period = v
		}
	}
	if b.On() {
		b.OnBudgetExhausted, b.BudgetWarnAt = run.OnBudgetExhausted, run.BudgetWarnAt
	}
	return b
}

// sessionBudgetFromEnv reads the API's session budget ([Config].SessionBudget); onExhausted is
// KORTYX_ON_BUDGET_EXHAUSTED's.
func sessionBudgetFromEnv(fail func(error), onExhausted string) contracts.Limits {
	var l contracts.Limits
	if v := strings.TrimSpace(os.Getenv("KORTYX_SESSION_MAX_TOKENS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(fmt.Errorf("kortyx: KORTYX_SESSION_MAX_TOKENS=%q is not a number of tokens, such as 1000000 (0: no session token budget)", v))
		}
		l.MaxTokens = max(n, 0)
	}
	if v := strings.TrimSpace(os.Getenv("KORTYX_SESSION_MAX_COST")); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			fail(fmt.Errorf("kortyx: KORTYX_SESSION_MAX_COST=%q is not an amount of the currency (KORTYX_CURRENCY), such as 10 (0: no session money budget)", v))
		} else {
			l.MaxCost = x
		}
	}
	if l != (contracts.Limits{}) {
		l.OnBudgetExhausted = onExhausted
	}
	return l
}
