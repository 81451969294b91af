package integration_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The declarative agent of the pinning tests, before and after an edit that adds a node in
// front and changes the params of the last one.
const (
	pinnedV1 = `id: pinned-yaml
version: "1"
nodes:
  ask: {run: triage.revise}
  reply:
    run: kortyx.reason
    params: {model: "fake:test", input: "say:v1", output: reply}
edges:
  - [__start__, ask]
  - [ask, reply]
`
	pinnedV2 = `id: pinned-yaml
version: "2"
nodes:
  greet:
    run: kortyx.reason
    params: {model: "fake:test", input: "say:hello", output: greeting}
  ask: {run: triage.revise}
  reply:
    run: kortyx.reason
    params: {model: "fake:test", input: "say:v2", output: reply}
edges:
  - [__start__, greet]
  - [greet, ask]
  - [ask, reply]
`
	// pinnedV3 is what a worker without the triage example could load: no "ask" node.
	pinnedV3 = `id: pinned-yaml
version: "3"
nodes:
  reply:
    run: kortyx.reason
    params: {model: "fake:test", input: "say:v3", output: reply}
edges:
  - [__start__, reply]
`
)

// workflowDir writes one workflow file into a new directory and returns the directory.
func workflowDir(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pinned.workflow.yaml"), []byte(text), 0o644))
	return dir
}

// startTestWorker starts the testworker program with env added.
func startTestWorker(t *testing.T, tq string, env ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(binary(t, "testworker"))
	cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+srv.Address(), "KORTYX_TASK_QUEUE="+tq,
		"KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_EFFECTS_FILE="+filepath.Join(t.TempDir(), "effects.txt")), env...)
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

func (p *workerProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	_ = p.cmd.Wait()
}

// A waiting run of a YAML agent survives an edit of its file that adds a node in front (and
// changes the last node's params) and a worker restart: it finishes with the graph it started
// with; a new run uses the new file. `starter replay` replays both, and reports the runs a
// worker without the node function of "ask" could not continue.
func TestPinnedYAMLRunSurvivesEdit(t *testing.T) {
	tq := taskQueue(t)
	ctx := context.Background()
	v1 := workflowDir(t, pinnedV1)
	first := startTestWorker(t, tq, "KORTYX_WORKFLOWS="+v1)
	old := startRun(t, tc, tq, "pinned-yaml", "hi")
	resp, _ := nextResponse(t, httpFollower(first.addr), old.GetID(), 0)
	require.Equal(t, []string{"interrupt", "done"}, types(resp))
	ask, _ := interruptOf(t, resp)
	eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, old.GetID()) == "waiting" })
	first.stop(t)

	// The edit: a node in front, other params for reply. The new worker replays the waiting
	// run (its first task after the answer) with the definition the run recorded.
	v2 := workflowDir(t, pinnedV2)
	second := startTestWorker(t, tq, "KORTYX_WORKFLOWS="+v2)
	require.True(t, isWaiting(t, tc, old.GetID()))
	require.NoError(t, kortyx.Respond(ctx, tc, old.GetID(), answer(ask, "Ada")))
	res, err := result(t, old)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"summary": "Ada", "reply": "v1"}, res.State.Data, "the old graph: no greeting, the old params")
	tail, _ := nextResponse(t, httpFollower(second.addr), old.GetID(), 0)
	require.Equal(t, []string{"text-start", "text-delta", "text-end", "done"}, types(tail))
	require.Equal(t, "v1", tail[1].Delta)

	// A new run uses the new file.
	fresh := startRun(t, tc, tq, "pinned-yaml", "hi")
	resp, _ = nextResponse(t, httpFollower(second.addr), fresh.GetID(), 0)
	require.Equal(t, []string{"text-start", "text-delta", "text-end", "interrupt", "done"}, types(resp))
	require.Equal(t, "hello", resp[1].Delta)
	ask, _ = interruptOf(t, resp)
	require.NoError(t, kortyx.Respond(ctx, tc, fresh.GetID(), answer(ask, "Bo")))
	res, err = result(t, fresh)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"greeting": "hello", "summary": "Bo", "reply": "v2"}, res.State.Data)
	second.stop(t)

	// Before deploying: the histories replay against the build with the new file …
	env := []string{"TEMPORAL_ADDRESS=" + srv.Address(), "KORTYX_WORKFLOWS=" + v2}
	out, errOut, err := starter(t, env, "", "replay", "--workflow", "pinned-yaml")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Equal(t, []string{
		"ok kortyx.Run " + fresh.GetID() + " " + fresh.GetRunID() + " (Completed)",
		"ok kortyx.Run " + old.GetID() + " " + old.GetRunID() + " (Completed)",
	}, strings.Split(strings.TrimSpace(out), "\n"))

	// … and not against a build without the triage example, whose node function "ask" runs.
	env = []string{"TEMPORAL_ADDRESS=" + srv.Address(), "KORTYX_WORKFLOWS=" + workflowDir(t, pinnedV3), "KORTYX_EXAMPLES=none"}
	out, errOut, err = starter(t, env, "", "replay", "--workflow", "pinned-yaml", "--limit", "5", "--since", "1h")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Equal(t, 1, exit.ExitCode())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.True(t, strings.HasPrefix(lines[0], "mismatch kortyx.Run "+fresh.GetID()+" "), lines[0])
	require.Contains(t, lines[0], `workflow "pinned-yaml" changed since this run started (nodes "ask", "greet", "reply";`)
	require.True(t, strings.HasPrefix(lines[1], "mismatch kortyx.Run "+old.GetID()+" "), lines[1])
	require.Contains(t, lines[1], `workflow "pinned-yaml" changed since this run started (nodes "ask", "reply";`)
	require.Contains(t, lines[1], `node function "triage.revise" is not registered`)
	require.Contains(t, errOut, "2 of 2 histories do not replay against this code")
}

// pinnedGo is a Go agent: "lookup" calls the model, then "ask" waits for a name. lookupV2
// changes lookup's code so that it replays differently (a timer before the model call);
// declared is lookup's declared version.
func pinnedGo(t *testing.T, lookupV2 bool, declared string) *workflows.Registry {
	t.Helper()
	lookup := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if lookupV2 {
			if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
				return workflows.NodeResult{}, err
			}
		}
		r, err := hooks.Reason(ctx, hooks.ReasonOptions{Model: providers.Model("fake:test"), Input: "say:one"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"one": r.Text}}, nil
	}
	ask := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		name, err := hooks.AskText(ctx, "name", "Your name?")
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"name": name}}, nil
	}
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "pinned-go", Version: "1",
		Nodes: map[string]workflows.Node{"lookup": {Run: lookup, Version: declared}, "ask": {Run: ask}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "lookup"}, {From: "lookup", To: "ask"}}}))
	return reg
}

// goWorker runs reg on tq in the test process, with the fake model under "fake".
func goWorker(t *testing.T, tq string, broker stream.Broker, reg *workflows.Registry) worker.Worker {
	t.Helper()
	set, err := tools.NewSet()
	require.NoError(t, err)
	w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker,
		Providers: providers.NewSet(fake.NewResponder(testagents.Responder(false)).WithID("fake")), Tools: set})
	require.NoError(t, w.Start())
	return w
}

// workflowTaskFailures returns the messages of the run's failed workflow tasks.
func workflowTaskFailures(t *testing.T, runID string) []string {
	t.Helper()
	var out []string
	for _, e := range history(t, tc, runID).Events {
		if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_FAILED {
			out = append(out, e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())
		}
	}
	return out
}

// A Go run whose node changed stops with a message naming the node — Temporal's
// non-determinism error (the node's activity id names it) for changed code, Kortyx's for a
// changed declared version — and stays open; the old code, deployed again, finishes it.
func TestPinnedGoRunStopsOnChangedNode(t *testing.T) {
	for name, tc2 := range map[string]struct {
		reg  func(t *testing.T) *workflows.Registry
		want string
	}{
		"code": {func(t *testing.T) *workflows.Registry { return pinnedGo(t, true, "") },
			"[TMPRL1100] lookup failed for scheduledEventID to activityID: scheduleEventID: 9, activityID: lookup/model#1"},
		"declared version": {func(t *testing.T) *workflows.Registry { return pinnedGo(t, false, "2") },
			`[kortyx] nondeterministic change: workflow "pinned-go" changed since this run started (node "lookup";`},
	} {
		t.Run(name, func(t *testing.T) {
			tq := taskQueue(t)
			ctx := context.Background()
			broker := stream.NewMemory(stream.MemoryOptions{})
			w := goWorker(t, tq, broker, pinnedGo(t, false, ""))
			run := startRun(t, tc, tq, "pinned-go", "hi")
			f := func(ctx context.Context, runID string, after int64, until stream.Until, fn func(int64, contracts.Chunk) error) error {
				return stream.Follow(ctx, broker, runID, after, until, func(en stream.Entry) error { return fn(en.Offset, en.Chunk) })
			}
			resp, _ := nextResponse(t, f, run.GetID(), 0)
			ask, _ := interruptOf(t, resp)
			eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, run.GetID()) == "waiting" })
			w.Stop()
			// The next workflow task goes to the task queue, not to the stopped worker's sticky
			// queue: there it would time out first, and the failures of the attempts after a
			// timeout are not written to history.
			_, err := tc.WorkflowService().ResetStickyTaskQueue(ctx, &workflowservice.ResetStickyTaskQueueRequest{
				Namespace: "default", Execution: &commonpb.WorkflowExecution{WorkflowId: run.GetID()}})
			require.NoError(t, err)

			changed := goWorker(t, tq, broker, tc2.reg(t))
			require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(ask, "Ada")))
			eventually(t, 30*time.Second, "a failed workflow task", func() bool { return len(workflowTaskFailures(t, run.GetID())) > 0 })
			require.Contains(t, workflowTaskFailures(t, run.GetID())[0], tc2.want)
			d, err := tc.DescribeWorkflow(ctx, run.GetID(), "")
			require.NoError(t, err)
			require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.RawResponse.GetWorkflowExecutionInfo().GetStatus(), "the run waits for a fixed deploy")
			changed.Stop()

			w = goWorker(t, tq, broker, pinnedGo(t, false, ""))
			defer w.Stop()
			rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			var res contracts.RunResult
			require.NoError(t, run.Get(rctx, &res))
			require.Equal(t, map[string]any{"one": "one", "name": "Ada"}, res.State.Data)
		})
	}
}

// transitionRegistry: "hand" hands over to "target", whose definition has the given version.
func transitionRegistry(t *testing.T, targetVersion string) *workflows.Registry {
	t.Helper()
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "hand", Version: "1",
		Nodes: map[string]workflows.Node{"go": {Run: func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{TransitionTo: "target"}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "go"}}},
		&workflows.Definition{ID: "target", Version: targetVersion,
			Nodes: map[string]workflows.Node{"say": {Run: func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) {
				return workflows.NodeResult{UI: &workflows.UI{Message: "arrived"}}, nil
			}}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "say"}}}))
	return reg
}

// A transition records the target's definition: the history replays against the same code, and
// a changed target is reported by name.
func TestPinnedTransitionRecordsTheTarget(t *testing.T) {
	tq := taskQueue(t)
	w := goWorker(t, tq, stream.NewMemory(stream.MemoryOptions{}), transitionRegistry(t, "1"))
	defer w.Stop()
	run := startRun(t, tc, tq, "hand", "hi")
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "target", res.State.CurrentWorkflow)
	require.Equal(t, "arrived", res.State.UI.Message)
	ctx := context.Background()
	h, err := kortyxtest.FetchHistory(ctx, tc, run.GetID(), "")
	require.NoError(t, err)
	markers := 0
	for _, e := range h.Events {
		if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "SideEffect" {
			markers++
		}
	}
	require.Equal(t, 3, markers, "the definitions of hand and of target, and the lean run's id seed")
	require.NoError(t, kortyxtest.Replay(transitionRegistry(t, "1"), h, kortyxtest.ReplayOptions{}))
	err = kortyxtest.Replay(transitionRegistry(t, "2"), h, kortyxtest.ReplayOptions{})
	require.ErrorContains(t, err, `[kortyx] nondeterministic change: workflow "target" changed since this run started (its version, recorded "1", is "2" now;`)
}
