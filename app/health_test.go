package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// devServer starts a Temporal dev server of the test's own, with the CLI the programs find
// (devserver.Find: TEMPORAL_CLI_PATH, the project's .tools/bin, PATH), and a client of it.
func devServer(t *testing.T) (*devserver.Server, Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin, err := devserver.Find(ConfigFromEnv().Root)
	require.NoError(t, err, "the Temporal CLI (make tools, or TEMPORAL_CLI_PATH)")
	srv, err := devserver.Start(ctx, devserver.Options{BinaryPath: bin, UIPort: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Kill() })
	return srv, Config{TemporalAddress: srv.Address(), Namespace: "default", TaskQueue: "health"}
}

// pingBroker is a broker whose store answers Ping with err.
type pingBroker struct {
	stream.Broker
	err error
}

func (b *pingBroker) Ping(context.Context) error { return b.err }

func get(t *testing.T, url string) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(b, &body), "%s", b)
	return resp.StatusCode, body, resp.Header
}

// /healthz says the process lives; /readyz checks Temporal, the broker's store when it has a
// Ping, and the worker when the process has one — and names what fails, with its code.
func TestReadiness(t *testing.T) {
	srv, cfg := devServer(t)
	c, err := Dial(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	serve := func(api API) string {
		api.Client, api.TaskQueue = c, cfg.TaskQueue
		_, addr, err := ServeHTTP(ctx, "127.0.0.1:0", api)
		require.NoError(t, err)
		return "http://" + addr
	}
	state := &WorkerState{}
	redis := &pingBroker{Broker: stream.NewMemory(stream.MemoryOptions{})}
	worker := serve(API{Broker: redis, Worker: state})
	apiOnly := serve(API{Broker: stream.NewMemory(stream.MemoryOptions{})})

	status, body, h := get(t, worker+"/healthz")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"status": "ok"}, body)
	require.Equal(t, "application/json", h.Get("Content-Type"))

	status, body, _ = get(t, worker+"/readyz")
	require.Equal(t, 503, status, "the worker has not started")
	require.Equal(t, map[string]any{"status": "unavailable", "checks": map[string]any{"temporal": "ok", "redis": "ok", "worker": "starting"},
		"error": "The worker of this process is starting."}, body)

	state.Started()
	status, body, _ = get(t, worker+"/readyz")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok", "redis": "ok", "worker": "ok"}}, body)
	status, body, _ = get(t, apiOnly+"/readyz")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok"}}, body, "no store to ping, no worker")

	redis.err = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	status, body, _ = get(t, worker+"/readyz")
	require.Equal(t, 503, status)
	require.Equal(t, map[string]any{"temporal": "ok", "redis": "STREAM_UNAVAILABLE", "worker": "ok"}, body["checks"])
	require.Equal(t, "The stream store (Redis) is unavailable; try again shortly.", body["error"])
	f := body["failure"].(map[string]any)
	require.Equal(t, "STREAM_UNAVAILABLE", f["code"])
	require.Equal(t, true, f["retryable"])
	require.NotContains(t, body["error"], "connection refused", "no internal error text to clients")
	redis.err = nil

	state.Stopped()
	status, body, _ = get(t, worker+"/readyz")
	require.Equal(t, 503, status)
	require.Equal(t, "stopped", body["checks"].(map[string]any)["worker"])
	state.Started()

	require.NoError(t, srv.Stop())
	status, body, _ = get(t, apiOnly+"/readyz")
	require.Equal(t, 503, status)
	require.Equal(t, map[string]any{"temporal": "TEMPORAL_UNAVAILABLE"}, body["checks"])
	require.Equal(t, "TEMPORAL_UNAVAILABLE", body["failure"].(map[string]any)["code"])
	status, body, _ = get(t, worker+"/readyz")
	require.Equal(t, 503, status)
	require.Equal(t, map[string]any{"temporal": "TEMPORAL_UNAVAILABLE", "redis": "ok", "worker": "ok"}, body["checks"])
	status, _, _ = get(t, worker+"/healthz")
	require.Equal(t, 200, status, "the process still lives")
}

// worker --probe URL: 0 for a 200, an error naming the status (and body) otherwise, and for a
// port nobody listens on.
func TestProbe(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"status":"ready"}`) }))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		_, _ = io.WriteString(w, `{"status":"unavailable"}`)
	}))
	defer down.Close()
	ctx := context.Background()
	require.NoError(t, Probe(ctx, ok.URL+"/readyz", 5*time.Second))
	err := Probe(ctx, down.URL+"/readyz", 5*time.Second)
	require.EqualError(t, err, "kortyx probe: GET "+down.URL+`/readyz: 503 Service Unavailable: {"status":"unavailable"}`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String() + "/readyz"
	require.NoError(t, ln.Close())
	require.ErrorContains(t, Probe(ctx, closed, 5*time.Second), "kortyx probe: GET "+closed+": ")
	require.ErrorContains(t, Probe(ctx, "::nope", time.Second), "is not a URL")
}

// /readyz of a process on the Redis broker: "redis":"ok" while Redis answers, 503
// STREAM_UNAVAILABLE once it is gone (killed, its port closed), "ok" again after it restarts.
func TestReadinessRedis(t *testing.T) {
	addr, redis := redisAPI(t, nil)

	status, body, _ := get(t, "http://"+addr+"/readyz")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok", "redis": "ok"}}, body)

	redis.Kill()
	status, body, _ = get(t, "http://"+addr+"/readyz")
	require.Equal(t, 503, status)
	require.Equal(t, map[string]any{"temporal": "ok", "redis": "STREAM_UNAVAILABLE"}, body["checks"])
	require.Equal(t, "STREAM_UNAVAILABLE", body["failure"].(map[string]any)["code"])
	require.NotContains(t, body["error"], redis.Addr(), "no internal detail to clients")

	redis.Restart()
	require.Eventually(t, func() bool {
		status, _, _ := get(t, "http://"+addr+"/readyz")
		return status == 200
	}, 30*time.Second, 100*time.Millisecond)
}

// The chat page and its routes are left out with NoWebPage (the worker program's
// KORTYX_WEB_PAGE=false, its default outside dev mode): JSON 404s; the API routes stay.
func TestServeHTTPWithoutTheWebPage(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"}) // no route below reaches it
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	serve := func(noPage bool) string {
		_, addr, err := ServeHTTP(ctx, "127.0.0.1:0", API{Client: c, Broker: stream.NewMemory(stream.MemoryOptions{}), TaskQueue: "page", NoWebPage: noPage})
		require.NoError(t, err)
		return "http://" + addr
	}
	with, without := serve(false), serve(true)
	resp, err := http.Get(with + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	for _, path := range []string{"/", "/static/js", "/api/config", "/api/sessions", "/api/sessions/s-1", "/api/runs/r-1/timeline"} {
		status, body, _ := get(t, without+path)
		require.Equal(t, 404, status, path)
		require.Equal(t, "NOT_FOUND", body["failure"].(map[string]any)["code"], path)
	}
	status, body, _ := get(t, without+"/healthz")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"status": "ok"}, body)
}
