package integration_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// workerProc is the testworker program running as a separate process.
type workerProc struct {
	cmd  *exec.Cmd
	addr string // its HTTP API
}

func startWorkerProcess(t *testing.T, temporalAddr, tq, effects string) *workerProc {
	t.Helper()
	cmd := exec.Command(binary(t, "testworker"))
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+temporalAddr,
		"KORTYX_TASK_QUEUE="+tq,
		"KORTYX_HTTP_ADDR=127.0.0.1:0",
		"KORTYX_EFFECTS_FILE="+effects,
	)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &workerProc{cmd: cmd}
	t.Cleanup(func() { p.kill() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- addr
			}
		}
	}()
	select {
	case p.addr = <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("worker process did not become ready")
	}
	return p
}

func (p *workerProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

func TestWorkerKilledWhileRunWaits(t *testing.T) {
	tq := taskQueue(t)
	effects := filepath.Join(t.TempDir(), "effects.txt")
	ctx := context.Background()

	first := startWorkerProcess(t, srv.Address(), tq, effects)
	run := startRun(t, tc, tq, testagents.EffectsWorkflow, "hello")
	resp, off := nextResponse(t, httpFollower(first.addr), run.GetID(), 0)
	ask, _ := interruptOf(t, resp)
	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(ask, "Ada")))
	resp, _ = nextResponse(t, httpFollower(first.addr), run.GetID(), off)
	plan, _ := interruptOf(t, resp)
	require.Equal(t, []string{"before", "between Ada"}, readLines(t, effects))

	// Let the workflow task that asked the question complete, so that the kill lands while the
	// run waits (a kill inside a task only makes the next worker redo that task).
	eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, run.GetID()) == "waiting" })
	first.kill() // SIGKILL: no graceful shutdown
	require.Equal(t, -1, first.cmd.ProcessState.ExitCode())
	d, err := tc.DescribeWorkflow(ctx, run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, "Running", d.RawResponse.GetWorkflowExecutionInfo().GetStatus().String())
	require.True(t, isWaiting(t, tc, run.GetID()), "discoverable as waiting with no worker alive")

	second := startWorkerProcess(t, srv.Address(), tq, effects)
	view, err := kortyx.Query(ctx, tc, run.GetID())
	require.NoError(t, err)
	require.NotNil(t, view.Pending)
	require.Equal(t, plan.RequestID, view.Pending.RequestID, "still waiting for the same question")
	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(plan, "", "pro"))
	require.NoError(t, err)

	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "pro", res.State.Data["plan"])
	require.Equal(t, []string{"before", "between Ada", "after pro"}, readLines(t, effects), "nothing ran twice")
	// The new worker's stream has only what happened after the answer: the node was not
	// restarted from the top (no second "started" structured chunk, no second question).
	tail, _ := nextResponse(t, httpFollower(second.addr), run.GetID(), 0)
	require.Equal(t, []string{"message", "done"}, types(tail))
	recordHistory(t, tc, "effects-worker-killed", run.GetID())
}

func TestDevServerRestartedOnSameDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	addr := freeAddr(t)
	_, portStr, _ := strings.Cut(addr, ":")
	port := atoi(t, portStr)
	startServer := func() *devserver.Server {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := devserver.Start(ctx, devserver.Options{BinaryPath: tcliPath, Port: port, UIPort: -1, DBFile: db,
			SearchAttributes: protocol.SearchAttributeNames()})
		require.NoError(t, err)
		return s
	}
	s1 := startServer()
	c, err := dial(s1.Address())
	require.NoError(t, err)
	defer c.Close()
	e := startWorker(t, c)
	run := startRun(t, c, e.tq, testagents.EffectsWorkflow, "hello")
	resp, off := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, resp)

	require.NoError(t, s1.Stop())
	s2 := startServer()
	t.Cleanup(func() { _ = s2.Kill() })
	// Visibility is eventually consistent: the interrupt chunk can reach the reader a moment
	// before KortyxStatus=waiting is listed (architecture.md), also across the restart.
	require.Eventually(t, func() bool {
		runs, err := kortyx.ListWaiting(context.Background(), c, "") // fails while the client reconnects
		return err == nil && slices.ContainsFunc(runs, func(r kortyx.WaitingRun) bool { return r.RunID == run.GetID() })
	}, 20*time.Second, 100*time.Millisecond, "the waiting run survived the restart")

	// The worker and client reconnect on their own; retry the (idempotent) update until they have.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = kortyx.RespondAndWait(ctx, c, run.GetID(), "after-restart", answer(ask, "Ada"))
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, err)
	resp, _ = nextResponse(t, e.follow, run.GetID(), off)
	plan, _ := interruptOf(t, resp)
	_, err = kortyx.RespondAndWait(context.Background(), c, run.GetID(), "", answer(plan, "", "basic"))
	require.NoError(t, err)
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "basic", res.State.Data["plan"])
	require.Equal(t, []string{"before", "between Ada", "after basic"}, readLines(t, e.effects))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		require.True(t, r >= '0' && r <= '9', "not a port: %q", s)
		n = n*10 + int(r-'0')
	}
	return n
}
