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

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
)

// upgradeBase is the commit before the lean turn (issue 31): a previous release, whose
// sessions and runs the current code must finish.
const upgradeBase = "307a3cc4ca6c5cf575f6fb8d7bf5a5461e395a9b"

// upgradeLeanBase is the last commit before quiet statuses (execution.QuietStatusVersion): its
// runs are lean (execution.LeanVersion).
const upgradeLeanBase = "04cf478b97dbf2612f367b8617488bbecb2b7276"

// upgradeQuietBase is the last commit before runs started by a session or a parent run took
// their start from their input (protocol.RunStart.Start): its runs record version 3
// (execution.QuietStatusVersion) as a marker.
const upgradeQuietBase = "c5fbfe587f1148a679c71fa0051dc43fa992088c"

// upgradeChildBase is the last commit whose sessions start every run as their child: the
// session service now starts a prompt's run itself (protocol.SessionStartTurnByCallerUpdate).
const upgradeChildBase = "505c7c75322acda74b174cf8d03c923421773a8e"

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
	upgradeFrom(t, upgradeBase, 1, "upgrade-", false)
}

// The same from the release whose runs are lean (version 2) to this one, whose runs are also
// quiet (execution.QuietStatusVersion, version 3).
func TestUpgradeFinishesWhatTheLeanReleaseStarted(t *testing.T) {
	upgradeFrom(t, upgradeLeanBase, int(execution.LeanVersion), "upgrade-lean-", true)
}

// The same from the quiet release (runs record their start as markers) to this one, whose
// sessions record their runs' start in the runs' input.
func TestUpgradeFinishesWhatTheQuietReleaseStarted(t *testing.T) {
	upgradeFrom(t, upgradeQuietBase, int(execution.QuietStatusVersion), "upgrade-quiet-", true)
}

// The same from the release whose sessions start every run as their child to this one, whose
// session service starts a prompt's run itself: the sessions in flight go on, their next turns'
// runs started by the API.
func TestUpgradeFinishesWhatTheChildStartReleaseStarted(t *testing.T) {
	upgradeFrom(t, upgradeChildBase, 0, "upgrade-child-", true)
}

// During a rollout an API process and a worker of different releases serve one task queue. A
// new API with an old worker: the old session rejects the new update's name
// (kortyx.Session.StartTurnByCaller), the API sends the old one, and the old session starts the
// run as its child. An old API with a new worker: the old name, and the new session starts the
// run as its child. Then both new: the API starts the run, also in the session that began on
// the old worker.
func TestUpgradeMixesAPIAndWorkerReleases(t *testing.T) {
	redis := redistest.Start(t)
	oldBin := buildAt(t, upgradeChildBase, "./worker")
	tq := taskQueue(t)
	env := []string{"KORTYX_REDIS_URL=" + redis.URL()}
	apiEnv := append([]string{"KORTYX_HTTP_ADDR=127.0.0.1:0"}, env...)
	chat := func(api, session string) string {
		ask, _, last := askHello(t, api, session)
		answerHello(t, api, session, "t2", ask, last, "Ada")
		return runOfSession(t, session)
	}

	oldWorker := startBinary(t, oldBin, tq, nil, env...)
	oldWorker.until(t, `msg="kortyx worker: polling task queue"`)
	newAPI := startProcess(t, tq, []string{"--api-only"}, apiEnv...).apiURL(t)
	run := chat(newAPI, "rollout-new-api")
	require.Equal(t, protocol.SessionWorkflowID("rollout-new-api"), parentOf(t, run), "the old session started its run")
	require.NoError(t, oldWorker.cmd.Process.Signal(syscall.SIGTERM))
	_ = oldWorker.cmd.Wait()

	newWorker := startProcess(t, tq, nil, env...)
	newWorker.until(t, `msg="kortyx worker: polling task queue"`)
	oldAPI := startBinary(t, oldBin, tq, []string{"--api-only"}, apiEnv...).apiURL(t)
	run = chat(oldAPI, "rollout-old-api")
	require.Equal(t, protocol.SessionWorkflowID("rollout-old-api"), parentOf(t, run), "for an old API, the new session starts its run")

	run = chat(newAPI, "rollout-new")
	require.Empty(t, parentOf(t, run), "the new API started the run")
	// The session the new API sent to the old worker replays on the new worker (the old
	// worker rejected the new update's name, and recorded the old one), and takes a turn.
	chunks, last := exactly(t, mpChat(t, newAPI, prompt("rollout-new-api", "t3", "hello", "hi")), 0, helloAsk...)
	answerHello(t, newAPI, "rollout-new-api", "t4", firstOf(t, chunks, contracts.ChunkInterrupt), last, "Grace")
	require.Empty(t, parentOf(t, runOfSession(t, "rollout-new-api")), "its next run started by the new API")
	recordHistory(t, tc, "upgrade-rollout-session", protocol.SessionWorkflowID("rollout-new-api"))
}

// startVersion is the version of the pinned-definition change a run takes: the one its history
// records as a marker, or the one its input carries (protocol.RunStart.Start), which it then
// takes without a marker.
func startVersion(t *testing.T, workflowID string) int {
	t.Helper()
	if v := pinVersion(t, workflowID); v != 0 {
		return v
	}
	var in protocol.RunStart
	h := history(t, tc, workflowID)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &in))
	if in.Start == nil {
		return 0
	}
	return in.Start.Version
}

// firstTaskMarkers counts the markers other than local activities' (a publish) that a run
// records in its first workflow task (where it records its start: a version, side effects).
func firstTaskMarkers(t *testing.T, workflowID string) int {
	t.Helper()
	n, tasks := 0, 0
	for _, ev := range history(t, tc, workflowID).Events {
		if ev.GetWorkflowTaskCompletedEventAttributes() != nil {
			tasks++
			if tasks > 1 {
				break
			}
		}
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && tasks == 1 && m.GetMarkerName() != "LocalActivity" {
			n++
		}
	}
	return n
}

// upgradeFrom runs the upgrade scenario from a worker built at commit base, whose runs record
// version oldVersion of the pinned-definition change, and records the histories under names
// starting with prefix. seeded says the old release's sessions have an id seed
// (sessions.SessionInput.Seed): their new runs take their start from their input.
func upgradeFrom(t *testing.T, base string, oldVersion int, prefix string, seeded bool) {
	redis := redistest.Start(t)
	oldBin := buildAt(t, base, "./worker")
	tq := taskQueue(t)
	env := []string{"KORTYX_REDIS_URL=" + redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0"}
	old := startBinary(t, oldBin, tq, nil, env...)
	api := old.apiURL(t)
	old.until(t, `msg="kortyx worker: polling task queue"`)

	sid := func(name string) string { return prefix + name }
	hello, _, helloLast := askHello(t, api, sid("hello"))
	refund, refundLast := askRefund(t, api, sid("refund"), "A-1001")
	chatOrder(t, api, sid("order"))
	helloRun, refundRun, orderRun := runOfSession(t, sid("hello")), runOfSession(t, sid("refund")), runOfSession(t, sid("order"))
	for _, run := range []string{helloRun, refundRun} {
		eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, run) == "waiting" })
	}
	require.NoError(t, old.cmd.Process.Signal(syscall.SIGTERM)) // a deploy: the old worker stops
	_ = old.cmd.Wait()

	neu := startProcess(t, tq, nil, env...)
	api = neu.apiURL(t)
	neu.until(t, `msg="kortyx worker: polling task queue"`)
	answerHello(t, api, sid("hello"), "t2", hello, helloLast, "Ada")
	answerRefund(t, api, sid("refund"), "A-1001", refund, refundLast, true)
	chunks, _ := exactly(t, mpChat(t, api, prompt(sid("order"), "t2", support.WorkflowID, "Where is my order A-1002?")), 0, orderTurn...)
	require.Equal(t, orderText, sessions.Buffer(chunks).Text)
	nextRun := runOfSession(t, sid("order"))
	require.NotEqual(t, orderRun, nextRun)
	// A session of the old release asks again on the new one, and is answered.
	chunks, last := exactly(t, mpChat(t, api, prompt(sid("hello"), "t3", "hello", "hi")), 0, helloAsk...)
	answerHello(t, api, sid("hello"), "t4", firstOf(t, chunks, contracts.ChunkInterrupt), last, "Grace")
	helloNext := runOfSession(t, sid("hello"))
	require.NotEqual(t, helloRun, helloNext)

	for _, run := range []string{helloRun, refundRun, orderRun} {
		require.Equal(t, oldVersion, pinVersion(t, run), "run %s of the old release replays as it was recorded", run)
		require.NotEmpty(t, parentOf(t, run), "the old release's session started run %s as its child", run)
	}
	for _, run := range []string{nextRun, helloNext} {
		require.Empty(t, parentOf(t, run), "the new release's API started run %s", run)
	}
	for _, run := range []string{nextRun, helloNext} {
		want := int(execution.ReportWithPublishVersion) // from its session's record
		if !seeded {
			want = int(execution.QuietStatusVersion) // recorded by the run itself
		}
		require.Equal(t, want, startVersion(t, run), "the new release's run is lean and quiet")
		if seeded {
			require.Zero(t, pinVersion(t, run), "and takes its start from its input")
			require.Zero(t, firstTaskMarkers(t, run), "its first workflow task records no version or side effect")
		} else {
			require.Positive(t, firstTaskMarkers(t, run), "a session without a seed: its run records its start")
		}
	}
	for name, id := range map[string]string{
		sid("hello-run"): helloRun, sid("refund-run"): refundRun, sid("order-next-run"): nextRun,
		sid("hello-next-run"): helloNext, sid("hello-session"): protocol.SessionWorkflowID(sid("hello")), sid("order-session"): protocol.SessionWorkflowID(sid("order")),
	} {
		recordHistory(t, tc, name, id)
	}
}
