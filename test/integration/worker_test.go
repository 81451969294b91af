package integration_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerProgramRunsDeclarativeAgent runs the real worker program with a directory of
// workflow files and no model key: a YAML agent with a tool runs end to end on the fake model.
func TestWorkerProgramRunsDeclarativeAgent(t *testing.T) {
	tq := taskQueue(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "workflows"))
	require.NoError(t, err)
	cmd := exec.Command(binary(t, "worker"))
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+tq, "KORTYX_HTTP_ADDR=127.0.0.1:0",
		"KORTYX_WORKFLOWS="+dir, "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_STICKY_CACHE=")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	addr, banner := waitPolling(t, out)

	run := startRun(t, tc, tq, "desk", "Where is my order A-1002?")
	resp, _ := nextResponse(t, httpFollower(addr), run.GetID(), 0)
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-delta",
		"text-delta", "text-delta", "text-delta", "text-end", "done"}, types(resp))
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", res.State.Data["reply"])
	require.NotNil(t, res.State.Runtime.TokenUsage)
	require.Contains(t, banner, "sticky_cache=10000\n", "with a Temporal address the SDK's default stays")
	require.Contains(t, banner, `msg="kortyx worker: models" models="the scripted fake model`)
	require.Contains(t, banner, `level=WARN msg="kortyx worker: provider" provider=openai reaches="the in-process scripted model" env="" fake=true`,
		"KORTYX_FAKE_MODELS=1 outside dev mode")
	require.Contains(t, banner, `msg="kortyx worker: provider" provider=fake reaches="the in-process scripted model" env="" fake=true`)
}

// waitPolling reads the worker program's log (slog text on its stdout) until the worker polls,
// and returns the host:port of its HTTP API (the addr attribute of the "HTTP API" line, without
// http://; "" when it serves none) and the lines up to then.
func waitPolling(t *testing.T, out io.Reader) (addr, banner string) {
	t.Helper()
	type ready struct{ addr, banner string }
	got := make(chan ready, 1)
	go func() {
		var b strings.Builder
		var addr string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			b.WriteString(line + "\n")
			if strings.Contains(line, `msg="kortyx worker: HTTP API"`) {
				addr = logAttr(line, "addr")
			}
			if strings.Contains(line, `msg="kortyx worker: polling task queue"`) {
				got <- ready{strings.TrimPrefix(addr, "http://"), b.String()}
			}
		}
	}()
	select {
	case r := <-got:
		return r.addr, r.banner
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not start")
	}
	return "", ""
}

// logAttr is the value of the attribute key of an slog text line ("" if absent; for values
// without spaces or quotes).
func logAttr(line, key string) string {
	_, rest, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}
