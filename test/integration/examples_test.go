package integration_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// workerProgram starts the worker program on its own task queue with env added, and returns
// the task queue and the address of its HTTP API once it polls.
func workerProgram(t *testing.T, env ...string) (tq, addr string) {
	t.Helper()
	tq = taskQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary(t, "worker"))
	cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+tq, "KORTYX_HTTP_ADDR=127.0.0.1:0",
		"KORTYX_WORKFLOWS=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "KORTYX_MCP_SERVERS="), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, _ = waitPolling(t, out)
	require.NotEmpty(t, addr, "the worker serves the HTTP API with KORTYX_HTTP_ADDR")
	return tq, addr
}

// Issue 10 item 3: the worker registers the examples of KORTYX_EXAMPLES only; a run of another
// example fails with UNKNOWN_WORKFLOW.
func TestWorkerProgramRegistersChosenExamples(t *testing.T) {
	tq, addr := workerProgram(t, "KORTYX_EXAMPLES=hello")
	run := startRun(t, tc, tq, "hello", "")
	resp, _ := nextResponse(t, httpFollower(addr), run.GetID(), 0)
	_, in := interruptOf(t, resp)
	require.Equal(t, "What is your name?", in.Question)

	other := startRun(t, tc, tq, "support", "Where is my order A-1002?")
	_, err := result(t, other)
	require.Equal(t, contracts.CodeUnknownWorkflow, contracts.CodeOf(err), "%v", err)
}

// An unknown name in KORTYX_EXAMPLES stops the worker at start, naming the known examples.
func TestWorkerProgramRefusesUnknownExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "worker"))
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+taskQueue(t), "KORTYX_HTTP_ADDR=127.0.0.1:0",
		"KORTYX_EXAMPLES=hello,shop")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the worker must exit, not run: %s", out)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, `kortyx: KORTYX_EXAMPLES: unknown example "shop" (the examples are support, triage, hello, research; or "all", or "none")`+"\n", string(out))
}
