package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
)

// program is a worker program process started by the test, with its log lines.
type program struct {
	cmd   *exec.Cmd
	lines chan string
	log   strings.Builder
}

// startProgram starts the worker binary with args and env over a clean environment for the
// connection (the test's dev server, the test's task queue, no model key).
func startProgram(t *testing.T, tq string, args []string, env ...string) *program {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary(t, "worker"), args...)
	cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+tq, "KORTYX_HTTP_ADDR=",
		"KORTYX_HEALTH_ADDR=", "KORTYX_REDIS_URL=", "KORTYX_WORKFLOWS=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_MCP_SERVERS=",
		"KORTYX_LOG_FORMAT=", "KORTYX_LOG_LEVEL="), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &program{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

// until reads log lines until one contains msg and returns it.
func (p *program) until(t *testing.T, msg string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			require.True(t, ok, "the program ended before logging %s; log:\n%s", msg, p.log.String())
			p.log.WriteString(line + "\n")
			if strings.Contains(line, msg) {
				return line
			}
		case <-deadline:
			t.Fatalf("no %s in 30s; log:\n%s", msg, p.log.String())
		}
	}
}

func readyz(t *testing.T, base string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(b, &body), "%s", b)
	return resp.StatusCode, body
}

// probe runs worker --probe url and returns its exit code and output.
func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	out, err := exec.Command(binary(t, "worker"), "--probe", url).CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// The processes of docker-compose.yml, started directly the way the compose file starts them:
// a worker without KORTYX_HTTP_ADDR (it polls, serves no API, warns that its in-memory chunks
// cannot leave it, serves /healthz and /readyz on KORTYX_HEALTH_ADDR for the healthcheck) and an
// --api-only process (it serves the API and polls nothing). Without Redis no chunk crosses
// processes, so the chat runs through a worker that also serves the API, as dev mode does.
func TestProcessRoles(t *testing.T) {
	tq := taskQueue(t)

	// The worker role: no API, health only.
	w := startProgram(t, tq, nil, "KORTYX_HEALTH_ADDR=127.0.0.1:0", "KORTYX_EXAMPLES=hello")
	warn := w.until(t, "in-memory stream broker and no HTTP API")
	require.Contains(t, warn, "level=WARN")
	require.Contains(t, warn, "set KORTYX_REDIS_URL")
	health := strings.TrimPrefix(logAttr(w.until(t, `msg="kortyx worker: health endpoints"`), "addr"), "http://")
	w.until(t, `msg="kortyx worker: polling task queue"`)
	require.NotContains(t, w.log.String(), `msg="kortyx worker: HTTP API"`)
	require.Contains(t, w.log.String(), `level=INFO msg="Started Worker" Namespace=default TaskQueue=`+tq, "the SDK logs through the same handler")
	status, body := readyz(t, "http://"+health)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok", "worker": "ok"}}, body)
	resp, err := http.Post("http://"+health+"/api/chat", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the health listener serves no API")
	code, out := probe(t, "http://"+health+"/readyz")
	require.Equal(t, 0, code, out)
	// A run started on the worker's task queue executes there (hello asks for a name).
	run := startRun(t, tc, tq, "hello", "")
	require.Eventually(t, func() bool { // queries need a live worker: this one
		v, err := kortyx.Query(context.Background(), tc, run.GetID())
		return err == nil && v.Pending != nil && v.Pending.Input.Question == "What is your name?"
	}, 30*time.Second, 100*time.Millisecond)

	// The API role: serves the API and health, polls nothing.
	api := startProgram(t, tq, []string{"--api-only"}, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_EXAMPLES=hello")
	warn = api.until(t, "--api-only: in-memory stream broker")
	require.Contains(t, warn, "level=WARN")
	addr := strings.TrimPrefix(logAttr(api.until(t, `msg="kortyx worker: HTTP API"`), "addr"), "http://")
	require.NotContains(t, api.log.String(), "polling task queue")
	require.NotContains(t, api.log.String(), "Started Worker")
	status, body = readyz(t, "http://"+addr)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok"}}, body, "no worker check")
	code, out = probe(t, "http://"+addr+"/readyz")
	require.Equal(t, 0, code, out)
	// With a Temporal address the unauthenticated chat page (every session) is not served
	// unless KORTYX_WEB_PAGE=true asks for it.
	for _, path := range []string{"/", "/api/sessions"} {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}

	// One chat through a worker that also has the API (dev mode's shape; with Redis the API
	// process above would serve it), and the page asked for.
	wa := startProgram(t, taskQueue(t), nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_EXAMPLES=hello", "KORTYX_WEB_PAGE=true")
	own := strings.TrimPrefix(logAttr(wa.until(t, `msg="kortyx worker: HTTP API"`), "addr"), "http://")
	require.Equal(t, "http://"+own+"/", logAttr(wa.until(t, `msg="kortyx worker: chat page"`), "url"))
	wa.until(t, `msg="kortyx worker: polling task queue"`)
	resp, err = http.Get("http://" + own + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "KORTYX_WEB_PAGE=true serves the page")
	require.NotContains(t, wa.log.String(), "in-memory stream broker", "a worker with the API reads its own chunks")
	status, body = readyz(t, "http://"+own)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok", "worker": "ok"}}, body)
	c := &chatEnv{url: "http://" + own}
	r := c.send(t, prompt("roles-1", "", "hello", "hi"))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	chunks := r.Chunks(t)
	require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(chunks), r.Body)
	require.Equal(t, "[DONE]", r.Events[len(r.Events)-1].Data)
}

// The api-only role needs a real Temporal server: with no address configured it stops at once
// and says what to set; --help lists the flags.
func TestAPIOnlyNeedsATemporalServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "worker"), "--api-only")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_CONFIG_FILE="+t.TempDir()+"/none.toml", "TEMPORAL_PROFILE=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, "kortyx worker --api-only: no Temporal server configured; set TEMPORAL_ADDRESS (or TEMPORAL_PROFILE/TEMPORAL_CONFIG_FILE): "+
		"an API process does not start a dev server — run a worker in dev mode (go run ./worker) for that\n", string(out))

	out, err = exec.CommandContext(ctx, binary(t, "worker"), "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{"usage: worker [--poll all|workflows|activities] | worker --api-only | worker --probe URL\n", "-api-only", "-probe URL", "-poll all"} {
		require.Contains(t, string(out), want)
	}
}

// The compose shape over Redis: a worker that serves no API and an --api-only process, both on
// one Redis. A chat served by the API process runs on the worker, and its chunks cross
// processes through Redis; the worker logs no in-memory warning; /readyz of each checks Redis;
// a reader reconnecting with Last-Event-ID to the API process gets the rest of the turn.
func TestProcessRolesOverRedis(t *testing.T) {
	redis := redistest.Start(t)
	tq := taskQueue(t)
	w := startProgram(t, tq, nil, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HEALTH_ADDR=127.0.0.1:0", "KORTYX_EXAMPLES=hello")
	health := strings.TrimPrefix(logAttr(w.until(t, `msg="kortyx worker: health endpoints"`), "addr"), "http://")
	w.until(t, `msg="kortyx worker: polling task queue"`)
	require.NotContains(t, w.log.String(), "in-memory stream broker")
	status, body := readyz(t, "http://"+health)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok", "redis": "ok", "worker": "ok"}}, body)

	api := startProgram(t, tq, []string{"--api-only"}, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_EXAMPLES=hello")
	addr := strings.TrimPrefix(logAttr(api.until(t, `msg="kortyx worker: HTTP API"`), "addr"), "http://")
	require.NotContains(t, api.log.String(), "in-memory stream broker")
	status, body = readyz(t, "http://"+addr)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"status": "ready", "checks": map[string]any{"temporal": "ok", "redis": "ok"}}, body)

	c := &chatEnv{url: "http://" + addr}
	r := c.send(t, prompt("roles-redis-1", "t1", "hello", "hi"))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	chunks := r.Chunks(t)
	require.Equal(t, []string{"session", "interrupt", "checkpoint", "done"}, types(chunks), r.Body)
	require.Equal(t, "[DONE]", r.Events[len(r.Events)-1].Data)
	require.Equal(t, []string{"", "1", "2", "3", ""}, eventIDs(r.Events))

	// Reattach with Last-Event-ID 1: the rest of the turn, from Redis, through the API process.
	again := c.send(t, prompt("roles-redis-1", "t1", "hello", "hi"), "Last-Event-ID: 1")
	require.Equal(t, http.StatusOK, again.Status, again.Body)
	require.Equal(t, []string{"session", "checkpoint", "done"}, types(again.Chunks(t)), again.Body)
	require.Equal(t, []string{"", "2", "3", ""}, eventIDs(again.Events), "the session chunk has no id; the rest follows offset 1")

	// Answer through the API process; the run continues on the worker.
	ask := chunkOf(t, chunks, contracts.ChunkInterrupt)
	answer := c.send(t, resumeBody("roles-redis-1", "t2", ask, "Ada", nil))
	require.Equal(t, http.StatusOK, answer.Status, answer.Body)
	require.Contains(t, answer.Body, "Hello, Ada!")
}

func eventIDs(events []event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.ID
	}
	return out
}
