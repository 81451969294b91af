package integration_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const deskAgent = `id: desk
version: "1"
nodes:
  agent:
    run: kortyx.reason
    params:
      tools: [lookup_order, %s]
edges:
  - [__start__, agent]
`

// The worker program knows its tools before it loads KORTYX_WORKFLOWS: a kortyx.reason node that
// names a tool the worker does not have stops it at start, with the file and the name, instead
// of failing every run.
func TestWorkerRefusesAWorkflowFileWithAnUnknownTool(t *testing.T) {
	start := func(t *testing.T, tool string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "desk.workflow.yaml"), []byte(strings.Replace(deskAgent, "%s", tool, 1)), 0o600))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, binary(t, "worker"))
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+taskQueue(t),
			"KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_WORKFLOWS="+dir, "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_MCP_SERVERS=")
		stderr := &strings.Builder{}
		cmd.Stderr = stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		return cmd, bufio.NewScanner(out), stderr
	}
	t.Run("unknown tool", func(t *testing.T) {
		cmd, out, stderr := start(t, "no_such_tool")
		for out.Scan() { // until the program exits
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "the worker must exit, not run: %v", err)
		require.Equal(t, 1, exit.ExitCode())
		require.Contains(t, stderr.String(), "desk.workflow.yaml: ")
		require.Contains(t, stderr.String(), `nodes.agent.params.tools[1]: tool "no_such_tool" is not one of the worker's tools (`)
	})
	t.Run("known tools", func(t *testing.T) {
		_, out, stderr := start(t, "refund")
		polling := false
		for !polling && out.Scan() {
			polling = strings.Contains(out.Text(), "polling task queue")
		}
		require.True(t, polling, "the worker starts with a file naming its tools; stderr: %s", stderr.String())
	})
}
