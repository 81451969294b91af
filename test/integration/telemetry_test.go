package integration_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerProgramTelemetry runs the real worker program with OTEL_METRICS_EXPORTER=prometheus
// and OTEL_TRACES_EXPORTER=console: after one run of a tool-using agent its /metrics serves the
// run, tool and token metrics with exact values, and its stdout carries the model and tool
// spans. Without the OTEL_* variables /metrics is not served (404).
func TestWorkerProgramTelemetry(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "workflows"))
	require.NoError(t, err)
	start := func(t *testing.T, tq string, otel ...string) (addr string, out *lockedLog) {
		cmd := exec.Command(binary(t, "worker"))
		cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+tq, "KORTYX_HTTP_ADDR=127.0.0.1:0",
			"KORTYX_WORKFLOWS="+dir, "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=",
			"OTEL_METRICS_EXPORTER=", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_SERVICE_NAME=kortyx-test-worker"), otel...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
		out = &lockedLog{}
		ready := make(chan string, 1)
		go func() {
			var addr string
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				l := sc.Text()
				out.add(l)
				if strings.Contains(l, `msg="kortyx worker: HTTP API"`) {
					addr = strings.TrimPrefix(logAttr(l, "addr"), "http://")
				}
				if strings.Contains(l, `msg="kortyx worker: polling task queue"`) {
					ready <- addr
				}
			}
		}()
		select {
		case addr = <-ready:
		case <-time.After(30 * time.Second):
			t.Fatalf("the worker did not start:\n%s", out.String())
		}
		return addr, out
	}

	t.Run("enabled", func(t *testing.T) {
		tq := taskQueue(t)
		addr, out := start(t, tq, "OTEL_METRICS_EXPORTER=prometheus", "OTEL_TRACES_EXPORTER=console")
		run := startRun(t, tc, tq, "desk", "Where is my order A-1002?")
		_, err := result(t, run)
		require.NoError(t, err)

		var text string
		require.Eventually(t, func() bool { // the counters reach the meter when the run's last task completes
			text = scrape(t, "http://"+addr+"/metrics")
			return strings.Contains(text, `kortyx_runs_completed_total{`) && strings.Contains(text, "temporal_workflow_completed_total{")
		}, 20*time.Second, 200*time.Millisecond)
		requireMetric(t, text, "kortyx_runs_started_total", `kortyx_workflow="desk"`, "1")
		requireMetric(t, text, "kortyx_runs_completed_total", `kortyx_workflow="desk"`, "1")
		requireMetric(t, text, "kortyx_tool_calls_total", `gen_ai_tool_name="lookup_order"`, "1")
		require.Contains(t, text, "gen_ai_client_token_usage_sum{")
		require.Contains(t, text, `service_name="kortyx-test-worker"`)

		// The console exporter writes the spans (JSON) to stdout when they end; the program's
		// output is read until the tool span has been seen.
		require.Eventually(t, func() bool {
			return strings.Contains(out.String(), `"Name":"execute_tool lookup_order"`)
		}, 20*time.Second, 200*time.Millisecond)
		require.Contains(t, out.String(), `"Name":"chat `)
	})

	t.Run("disabled", func(t *testing.T) {
		addr, _ := start(t, taskQueue(t))
		resp, err := http.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

// lockedLog is a program's output, read while the program writes it.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// requireMetric requires the sample of name whose labels contain label to have value.
func requireMetric(t *testing.T, text, name, label, value string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, label) {
			require.True(t, strings.HasSuffix(l, "} "+value), "sample %s", l)
			return
		}
	}
	t.Fatalf("no sample %s{%s} in the scrape:\n%s", name, label, text)
}
