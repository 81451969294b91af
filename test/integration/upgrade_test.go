package integration_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
)

// upgradeBase is the commit before the lean turn (issue 31): the previous release, whose
// sessions and runs the current code must finish.
const upgradeBase = "307a3cc4ca6c5cf575f6fb8d7bf5a5461e395a9b"

// buildAt builds the program pkg (e.g. "./worker") of the module as it was at commit rev, from
// the checkout's git history (the module cache serves its dependencies).
func buildAt(t *testing.T, rev, pkg string) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("the upgrade test builds %s of commit %s from the checkout's git history, which does not have it (a shallow clone?): %v %s", pkg, rev, err, out)
	}
	archive, err := exec.Command("git", "-C", root, "archive", "--format=tar", rev).Output()
	require.NoError(t, err)
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		path := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(path, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o644))
		}
	}
	bin := filepath.Join(dir, "bin", filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s at %s: %s", pkg, rev, out)
	return bin
}

// pinVersion is the version of the pinned-definition change (kortyx.pinned-definition) that
// the run's history records (0: none).
func pinVersion(t *testing.T, workflowID string) int {
	t.Helper()
	for _, ev := range history(t, tc, workflowID).Events {
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" &&
			strings.Contains(string(m.GetDetails()["change-id"].GetPayloads()[0].GetData()), "kortyx.pinned-definition") {
			v, err := strconv.Atoi(string(m.GetDetails()["version"].GetPayloads()[0].GetData()))
			require.NoError(t, err)
			return v
		}
	}
	return 0
}

// Issue 31, in-flight upgrade: a worker built from the previous release (upgradeBase) asks a
// question in one session, an approval in another and completes a turn in a third; it is
// stopped, and a worker of this build takes over the task queue (the same Redis). The question
// and the approval are answered on the new worker and their runs finish exactly as before (the
// refund once), and the third session's next turn runs there: its run is a lean one
// (execution.LeanVersion), the runs the old release started are not. The histories replay
// (recorded for TestReplayRecordedHistories with KORTYX_RECORD_HISTORIES=1).
func TestUpgradeFinishesWhatThePreviousReleaseStarted(t *testing.T) {
	redis := redistest.Start(t)
	oldBin := buildAt(t, upgradeBase, "./worker")
	tq := taskQueue(t)
	env := []string{"KORTYX_REDIS_URL=" + redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0"}
	old := startBinary(t, oldBin, tq, nil, env...)
	base := old.apiURL(t)
	old.until(t, `msg="kortyx worker: polling task queue"`)

	hello, _, helloLast := askHello(t, base, "upgrade-hello")
	refund, refundLast := askRefund(t, base, "upgrade-refund", "A-1001")
	chatOrder(t, base, "upgrade-order")
	helloRun, refundRun, orderRun := runOfSession(t, "upgrade-hello"), runOfSession(t, "upgrade-refund"), runOfSession(t, "upgrade-order")
	for _, run := range []string{helloRun, refundRun} {
		eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, run) == "waiting" })
	}
	require.NoError(t, old.cmd.Process.Signal(syscall.SIGTERM)) // a deploy: the old worker stops
	_ = old.cmd.Wait()

	neu := startProcess(t, tq, nil, env...)
	base = neu.apiURL(t)
	neu.until(t, `msg="kortyx worker: polling task queue"`)
	answerHello(t, base, "upgrade-hello", "t2", hello, helloLast, "Ada")
	answerRefund(t, base, "upgrade-refund", "A-1001", refund, refundLast, true)
	chunks, _ := exactly(t, mpChat(t, base, prompt("upgrade-order", "t2", support.WorkflowID, "Where is my order A-1002?")), 0, orderTurn...)
	require.Equal(t, orderText, sessions.Buffer(chunks).Text)
	nextRun := runOfSession(t, "upgrade-order")
	require.NotEqual(t, orderRun, nextRun)

	for _, run := range []string{helloRun, refundRun, orderRun} {
		require.Equal(t, 1, pinVersion(t, run), "run %s of the old release pins its definition and is not lean", run)
	}
	require.Equal(t, int(execution.LeanVersion), pinVersion(t, nextRun), "the new release's run is lean")
	for name, id := range map[string]string{
		"upgrade-hello-run": helloRun, "upgrade-refund-run": refundRun, "upgrade-order-next-run": nextRun,
		"upgrade-hello-session": protocol.SessionWorkflowID("upgrade-hello"), "upgrade-order-session": protocol.SessionWorkflowID("upgrade-order"),
	} {
		recordHistory(t, tc, name, id)
	}
}
