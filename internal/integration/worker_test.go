package integration_test

import (
	"bufio"
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
		"KORTYX_WORKFLOWS="+dir, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	ready := make(chan [2]string, 1) // the polling line and the banner before it
	go func() {
		var banner strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			banner.WriteString(sc.Text() + "\n")
			if rest, ok := strings.CutPrefix(sc.Text(), "kortyx worker: polling task queue"); ok {
				ready <- [2]string{rest, banner.String()}
			}
		}
	}()
	var line, banner string
	select {
	case got := <-ready:
		line, banner = got[0], got[1]
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not start")
	}
	addr := strings.Fields(line[strings.Index(line, "http://")+len("http://"):])[0]

	run := startRun(t, tc, tq, "desk", "Where is my order A-1002?")
	resp, _ := nextResponse(t, httpFollower(addr), run.GetID(), 0)
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-delta",
		"text-delta", "text-delta", "text-delta", "text-end", "done"}, types(resp))
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", res.State.Data["reply"])
	require.NotNil(t, res.State.Runtime.TokenUsage)
	require.Contains(t, banner, "models: the scripted fake model")
}
