package app

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// redisAPI serves the HTTP API (logging to logger, the default logger when nil) on a fresh dev
// server and a real redis-server as its broker, until the test ends; it returns the API's
// address and the Redis server.
func redisAPI(t *testing.T, logger *slog.Logger) (string, *redistest.Server) {
	t.Helper()
	_, cfg := devServer(t)
	c, err := Dial(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	redis := redistest.Start(t)
	cfg.RedisURL = redis.URL()
	broker, closeBroker, err := openBroker(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeBroker() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, addr, err := ServeHTTP(ctx, "127.0.0.1:0", API{Client: c, Broker: broker, TaskQueue: cfg.TaskQueue, Logger: logger})
	require.NoError(t, err)
	return addr, redis
}

// Issue 19 item 8: with Redis down, no answer of the HTTP API names Redis's address or carries
// a cause: /readyz and the chat route answer 503 STREAM_UNAVAILABLE with our message only, the
// run-stream route ends with an error chunk of that message; the log has the address.
func TestRedisDownTellsClientsNoAddress(t *testing.T) {
	var logs syncBuffer
	addr, redis := redisAPI(t, slog.New(slog.NewTextHandler(&logs, nil)))
	base := "http://" + addr
	redis.Kill()

	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := do(http.MethodGet, "/readyz", "")
	require.Equal(t, 503, status)
	require.JSONEq(t, `{"status":"unavailable","checks":{"temporal":"ok","redis":"STREAM_UNAVAILABLE"},
		"error":"The stream store (Redis) is unavailable; try again shortly.",
		"failure":{"version":1,"code":"STREAM_UNAVAILABLE","category":"persistence","message":"The stream store (Redis) is unavailable; try again shortly.","retryable":true}}`, body)

	status, body = do(http.MethodPost, "/api/chat", `{"sessionId":"s-down","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 503, status)
	require.JSONEq(t, `{"error":"The stream store (Redis) does not answer, so no turn was started; try again shortly.",
		"failure":{"version":1,"code":"STREAM_UNAVAILABLE","category":"persistence","message":"The stream store (Redis) does not answer, so no turn was started; try again shortly.","retryable":true}}`, body)

	status, body = do(http.MethodGet, "/v1/runs/run-down/stream", "")
	require.Equal(t, 200, status)
	var events []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, ":") {
			events = append(events, line)
		}
	}
	require.Equal(t, []string{`data: {"type":"error","message":"The stream store (Redis) did not answer; try again shortly.","failure":{"version":1,"code":"STREAM_UNAVAILABLE","category":"persistence","message":"The stream store (Redis) did not answer; try again shortly.","retryable":true}}`,
		"data: [DONE]"}, events)

	require.Contains(t, logs.String(), redis.Addr(), "the address is in the log")
}
