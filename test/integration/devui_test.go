package integration_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The dev-mode worker's chat page links to the embedded server's Temporal UI on the port it
// runs on (KORTYX_DEV_UI_PORT), and shows no links when the UI is disabled; the log names the
// page's URL.
func TestDevModeChatPageLinksTheDevServerUI(t *testing.T) {
	uiPort := func() string {
		_, port, err := net.SplitHostPort(freeAddr(t))
		require.NoError(t, err)
		return port
	}()
	for name, c := range map[string]struct{ uiPort, want, otel string }{
		"ui on another port": {uiPort, "http://127.0.0.1:" + uiPort, ""},
		// The program's OTEL_* are its own: the dev server does not inherit them (it would exit
		// on "unsupported OTEL exporter").
		"ui disabled, traces to the console": {"-1", "", "console"},
	} {
		t.Run(name, func(t *testing.T) {
			p := startProcess(t, taskQueue(t), nil, "TEMPORAL_ADDRESS=", "KORTYX_ROOT="+t.TempDir(), "TEMPORAL_CLI_PATH="+tcliPath,
				"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT="+c.uiPort, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_TEMPORAL_UI_URL=", "KORTYX_STICKY_CACHE=",
				"OTEL_TRACES_EXPORTER="+c.otel, "KORTYX_WEB_PAGE=")
			base := p.apiURL(t)
			// The dev log names the chat page's URL.
			require.Equal(t, base+"/", logAttr(p.until(t, `msg="kortyx worker: chat page"`), "url"))
			require.Equal(t, "200", logAttr(p.until(t, `msg="kortyx worker: polling task queue"`), "sticky_cache"),
				"dev mode bounds the sticky cache (200)")
			resp, err := http.Get(base + "/api/config")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var got struct {
				TemporalUIURL string `json:"temporalUiUrl"`
				Namespace     string `json:"namespace"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
			require.Equal(t, c.want, got.TemporalUIURL)
			require.Equal(t, "default", got.Namespace)
		})
	}
}

// A dev-mode worker whose dev server dies ends (exit 1) with the server's own last words: its
// exit status and what it printed, not a guess.
func TestDevModeWorkerReportsTheDevServersExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "worker"))
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "KORTYX_ROOT="+t.TempDir(), "TEMPORAL_CLI_PATH="+tcliPath, "KORTYX_TASK_QUEUE="+taskQueue(t),
		"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT=-1", "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_LOG_FORMAT=", "KORTYX_REDIS_URL=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var errOut syncBuffer
	cmd.Stderr = &errOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	_, banner := waitPolling(t, out)
	var ready string
	for _, line := range strings.Split(banner, "\n") {
		if strings.Contains(line, `msg="kortyx worker: Temporal dev server ready"`) {
			ready = line
		}
	}
	pid, err := strconv.Atoi(logAttr(ready, "pid"))
	require.NoError(t, err, "the ready line names the server's pid: %s", ready)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the worker went on for a minute after its dev server was killed; stderr:\n%s", errOut.String())
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode(), errOut.String())
	require.True(t, strings.HasPrefix(errOut.String(), "kortyx worker: the Temporal dev server (pid "+strconv.Itoa(pid)+") exited while the worker ran: "+
		"kortyx: temporal dev server had already exited: signal: killed\n"), errOut.String())
}
