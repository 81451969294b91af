package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/stretchr/testify/require"
)

// starter runs the starter program with env and stdin; it returns stdout, stderr and the error.
func starter(t *testing.T, env []string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary(t, "starter"), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

var runIDPattern = regexp.MustCompile(`run (run-[0-9a-f-]+) started`)

func TestDemoOnEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := starter(t, []string{"TEMPORAL_ADDRESS=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TEMPORAL_CLI_PATH=" + tcliPath, "KORTYX_ROOT=" + dir}, "", "demo", "--auto")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "Temporal dev server ready at")
	require.Contains(t, out, "· model: the scripted fake model (no OPENAI_API_KEY or OPENAI_BASE_URL set)")
	require.Contains(t, out, `→ lookup_order {"orderId":"A-1001"}`)
	require.Contains(t, out, "? Approve refund?")
	require.Contains(t, out, "> approve (auto)")
	require.Contains(t, out, `← refund: {"refundId":"R-5001","orderId":"A-1001","amount":249}`)
	require.Contains(t, out, "agent: Done: order A-1001 is refunded (R-5001, full amount).")
	require.Contains(t, out, "· demo finished: 1 refund(s) made")
	_, err = os.Stat(filepath.Join(dir, ".kortyx", "demo.db"))
	require.NoError(t, err, "the embedded server keeps its data under .kortyx/")
}

func TestDemoTriageOnRunningServer(t *testing.T) {
	out, errOut, err := starter(t, []string{"TEMPORAL_ADDRESS=" + srv.Address()}, "", "demo", "--auto", "--workflow", "triage")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.NotContains(t, out, "starting the Temporal dev server")
	require.Contains(t, out, `? Open a billing ticket "Billing question"?`)
	require.Regexp(t, `open: Opened billing ticket T-[0-9A-F-]{6}: I was charged twice on my last invoice`, out)
	require.Regexp(t, `demo finished: ticket T-[0-9A-F-]{6} \(billing\)`, out)
}

func TestDemoWithOpenAICompatibleEndpoint(t *testing.T) {
	// Any OpenAI-compatible server: here the fake one, reached as a real endpoint would be.
	model := fakeserver.New(support.FakeModel())
	defer model.Close()
	out, errOut, err := starter(t, []string{"TEMPORAL_ADDRESS=" + srv.Address(), "OPENAI_BASE_URL=" + model.URL(), "KORTYX_MODEL=test-model"},
		"2\n", "demo", "Refund A-1003 please")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "· model: test-model at "+model.URL())
	require.Contains(t, out, "agent: I have not refunded order A-1003: Tool call denied by user.")
	require.Contains(t, out, "· demo finished: 0 refund(s) made")
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, "test-model", reqs[0].Model)
}

func TestStarterCommands(t *testing.T) {
	tq := taskQueue(t)
	w := startWorkerProcess(t, srv.Address(), tq, filepath.Join(t.TempDir(), "effects.txt"))
	env := []string{"TEMPORAL_ADDRESS=" + srv.Address(), "KORTYX_TASK_QUEUE=" + tq, "KORTYX_STREAM_URL=http://" + w.addr}

	// run --json --detach: JSON chunks until the run waits, then exit 0.
	out, errOut, err := starter(t, env, "", "run", "triage", "The app shows an error on login", "--json", "--detach", "--session", "cli")
	require.NoError(t, err, errOut)
	m := runIDPattern.FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	runID := m[1]
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c contracts.Chunk
		require.NoError(t, json.Unmarshal([]byte(line), &c), line)
		kinds = append(kinds, string(c.Type))
	}
	require.Equal(t, "interrupt", kinds[len(kinds)-2])
	require.Equal(t, "done", kinds[len(kinds)-1])

	// waiting: found through search attributes (visibility is eventually consistent).
	var waiting []kortyx.WaitingRun
	eventually(t, 10*time.Second, "starter waiting to list the run", func() bool {
		out, errOut, err = starter(t, env, "", "waiting", "--json", "--session", "cli")
		require.NoError(t, err, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &waiting))
		return len(waiting) == 1
	})
	require.Equal(t, runID, waiting[0].RunID)
	require.Equal(t, "triage", waiting[0].Workflow)

	// respond --update: an unknown option is rejected with its code, a valid one accepted.
	_, errOut, err = starter(t, env, "", "respond", runID, "--select", "close", "--update")
	require.Error(t, err)
	require.Contains(t, errOut, "[INVALID_RESPONSE]")
	out, errOut, err = starter(t, env, "", "respond", runID, "--select", "open", "--update")
	require.NoError(t, err, errOut)
	require.Contains(t, out, "accepted")
	var res contracts.RunResult
	require.NoError(t, tc.GetWorkflow(context.Background(), runID, "").Get(context.Background(), &res))
	require.Equal(t, "technical", res.State.Data["topic"])

	// run with answers typed at the prompt.
	out, errOut, err = starter(t, env, "Ada\n2\n", "run", "effects", "hi")
	require.NoError(t, err, errOut)
	require.Contains(t, out, "? What is your name?")
	require.Contains(t, out, "? Which plan?")
	require.Contains(t, out, "intake: Welcome Ada, you are on pro.")
	require.Regexp(t, `run run-[0-9a-f-]+ completed`, out)

	// cancel a waiting run.
	_, errOut, err = starter(t, env, "", "run", "effects", "hi", "--detach")
	require.NoError(t, err)
	_ = errOut
	eventually(t, 10*time.Second, "starter waiting to list the effects run", func() bool {
		out, _, _ = starter(t, env, "", "waiting")
		m = regexp.MustCompile(`(run-[0-9a-f-]+)\s+effects`).FindStringSubmatch(out)
		return m != nil
	})
	out, errOut, err = starter(t, env, "", "cancel", m[1])
	require.NoError(t, err, errOut)
	err = tc.GetWorkflow(context.Background(), m[1], "").Get(context.Background(), nil)
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
}
