package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/sweep"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The fast-path agents of these tests (Definition.FastPath: every model pass is a local
// activity).
const (
	// fastAgent: a Reason call whose model may call the tool calc (behind an approval), a
	// question, and a second Reason call that answers.
	fastAgent = "it-fast"
	// fastCancelAgent: one Reason call on the provider "fake".
	fastCancelAgent = "it-fast-cancel"
	// fastSlowAgent: one Reason call on the default provider.
	fastSlowAgent = "it-fast-slow"
)

// addFastAgents adds the fast-path agents to reg (also the replay test's registry).
func addFastAgents(reg *workflows.Registry) error {
	one := func(id string, node workflows.NodeFunc) error {
		return reg.Add(&workflows.Definition{ID: id, Version: "1", FastPath: true,
			Nodes: map[string]workflows.Node{"agent": {Run: node}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}, {From: "agent", To: workflows.End}}})
	}
	if err := one(fastAgent, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "calc", Input: in.Text(), Tools: []string{"calc"},
			ToolExecution: hooks.ToolExecution{MaxSteps: 3, Emit: hooks.Switch{On: true}, Approval: hooks.Only("calc")}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		name, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "name", Question: "Name?"})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		bye, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "bye", Input: "bye " + name.Text})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text, "bye": bye.Text}}, nil
	}); err != nil {
		return err
	}
	if err := one(fastCancelAgent, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "reason", Model: providers.Model("fake:test"), Input: in.Text()})
		return workflows.NodeResult{}, err
	}); err != nil {
		return err
	}
	return one(fastSlowAgent, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "slow", Input: in.Text()})
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, err
	})
}

// fastRegistry is the registry of a worker with the fast-path agents and the tools of set.
func fastRegistry(t *testing.T, set *tools.Set) *workflows.Registry {
	reg := workflows.NewRegistry()
	if set != nil {
		reg.SetToolNames(set.Names()...)
		reg.SetLocalTools(set.LocalNames()...)
	}
	require.NoError(t, addFastAgents(reg))
	return reg
}

// modelExecutions counts kortyx.Model in a history: scheduled activities and local activity
// markers.
func modelExecutions(t *testing.T, h *historypb.History) (scheduled, local int) {
	t.Helper()
	for _, e := range h.Events {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == protocol.ModelActivityName {
				scheduled++
			}
		case enums.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "LocalActivity" {
				continue
			}
			var data struct{ ActivityType string }
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &data))
			if data.ActivityType == protocol.ModelActivityName {
				local++
			}
		}
	}
	return scheduled, local
}

// eventCount counts the events of type typ in h.
func eventCount(h *historypb.History, typ enums.EventType) int {
	n := 0
	for _, e := range h.Events {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

// deltas are the text deltas of chunks, each after its segment id.
func deltas(chunks []contracts.Chunk) []string {
	var out []string
	for _, c := range chunks {
		if c.Type == contracts.ChunkTextDelta {
			out = append(out, c.SegmentID+":"+c.Delta)
		}
	}
	return out
}

// TestFastPathRun: an agent with FastPath runs every model pass as a local activity (no
// kortyx.Model activity task); the text still streams, chunk by chunk, in order; a tool
// approval and a question still pause the run (the stream's response ends with done, the run
// waits) and the answers continue it. The history is kept for the replay test.
func TestFastPathRun(t *testing.T) {
	tq := taskQueue(t)
	box := &calcBox{}
	set, err := tools.NewSet(box.tool(t, true))
	require.NoError(t, err)
	broker := stream.NewMemory(stream.MemoryOptions{})
	model := fake.New(fake.Call("calc", `{"n":1}`), fake.Turn{Text: "the answer is 2", Deltas: []string{"the ", "answer ", "is 2"}},
		fake.Turn{Text: "bye Ada", Deltas: []string{"bye ", "Ada"}})
	w := newWorker(tc, tq, fastRegistry(t, set), &activities.Activities{Stream: broker,
		Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set})
	require.NoError(t, w.Start())
	defer w.Stop()
	b := []byte(`"count"`)
	run, err := kortyx.StartRun(context.Background(), tc, contracts.RunInput{Workflow: fastAgent, Input: b, SessionID: "it-session"},
		kortyx.StartOptions{TaskQueue: tq, WorkflowTaskTimeout: workflows.FastPathTaskTimeout})
	require.NoError(t, err)
	f := (&inproc{broker: broker}).follow

	resp, last := nextResponse(t, f, run.GetID(), 0)
	require.Equal(t, []string{"interrupt", "done"}, types(resp))
	ask, in := interruptOf(t, resp)
	require.Equal(t, "Approve calc?", in.Question)
	require.Empty(t, box.executed(), "the call waits for its approval")
	require.Equal(t, 1, model.Calls(), "one pass ran before the approval")
	require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), answer(ask, "", "approve")))

	resp, last = nextResponse(t, f, run.GetID(), last)
	require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-delta", "text-delta", "text-end", "interrupt", "done"}, types(resp))
	require.Equal(t, []string{"step-1:the ", "step-1:answer ", "step-1:is 2"}, deltas(resp))
	ask, in = interruptOf(t, resp)
	require.Equal(t, "Name?", in.Question)
	require.Len(t, box.executed(), 1)
	require.Equal(t, 2, model.Calls(), "the question waits before the next pass")
	require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), answer(ask, "Ada")))

	resp, _ = nextResponse(t, f, run.GetID(), last)
	require.Equal(t, []string{"text-start", "text-delta", "text-delta", "text-end", "done"}, types(resp))
	require.Equal(t, []string{"step-0:bye ", "step-0:Ada"}, deltas(resp))
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "the answer is 2", res.State.Data["answer"])
	require.Equal(t, "bye Ada", res.State.Data["bye"])
	require.Equal(t, 3, model.Calls())

	h := history(t, tc, run.GetID())
	scheduled, local := modelExecutions(t, h)
	require.Equal(t, 0, scheduled, "no model pass is an activity task")
	require.Equal(t, 3, local, "every model pass is a local activity")
	require.Zero(t, eventCount(h, enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), "the local tool and the passes: no activity task at all")
	recordHistory(t, tc, "fastpath-run", run.GetID())
}

// TestFastPathCancelReachesProvider: cancelling a fast-path run (started with
// workflows.FastPathTaskTimeout) while its model pass streams ends the provider's request: the
// fake OpenAI-compatible server, holding the response open after two deltas, sees the request
// go away; the stream shows the two deltas, then cancelled and done, no text-end.
func TestFastPathCancelReachesProvider(t *testing.T) {
	gone := make(chan struct{})
	fs := fakeserver.NewScript(fake.Turn{Text: "one two three", Deltas: []string{"one ", "two ", "three"},
		Hang: &fake.Hang{After: 2, Cancelled: func() { close(gone) }}})
	t.Cleanup(fs.Close)
	tq := taskQueue(t)
	broker := stream.NewMemory(stream.MemoryOptions{})
	reg := fastRegistry(t, nil)
	w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker,
		Providers: providers.NewSet(openai.New(openai.Options{ID: "fake", BaseURL: fs.URL(), APIKey: "test"}))})
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err := kortyx.StartRun(context.Background(), tc, contracts.RunInput{Workflow: fastCancelAgent, Input: []byte(`"go"`)},
		kortyx.StartOptions{TaskQueue: tq, WorkflowTaskTimeout: workflows.FastPathTaskTimeout})
	require.NoError(t, err)
	e := &inproc{broker: broker}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen []contracts.Chunk
	err = e.follow(ctx, run.GetID(), 0, stream.UntilResponse, func(_ int64, c contracts.Chunk) error {
		seen = append(seen, c)
		if c.Type == contracts.ChunkTextDelta && c.Delta == "two " {
			select {
			case <-gone:
				t.Error("the provider's request ended before the cancel")
			default:
			}
			require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
		}
		return nil
	})
	require.NoError(t, err)
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancellation never reached the provider")
	}
	require.Equal(t, []string{"text-start", "text-delta", "text-delta", "cancelled", "done"}, types(seen))
	_, err = result(t, run)
	require.True(t, temporal.IsCanceledError(err), "err: %v", err)
	recordHistory(t, tc, "fastpath-cancel", run.GetID())
}

// TestFastPathLongPass: a fast-path pass that takes longer than its run's workflow task
// timeout (1 s here; the pass takes 2.5 s) runs once: the SDK heartbeats the workflow task
// (completes it and takes the next one) while the local activity runs, so the task never times
// out and the pass is not run again.
func TestFastPathLongPass(t *testing.T) {
	tq := taskQueue(t)
	broker := stream.NewMemory(stream.MemoryOptions{})
	model := fake.New(fake.Turn{Text: "slow", Delay: 2500 * time.Millisecond})
	reg := fastRegistry(t, nil)
	w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker, Providers: providers.NewSet(model), DefaultProvider: fake.ID})
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err := kortyx.StartRun(context.Background(), tc, contracts.RunInput{Workflow: fastSlowAgent, Input: []byte(`"go"`)},
		kortyx.StartOptions{TaskQueue: tq, WorkflowTaskTimeout: time.Second})
	require.NoError(t, err)
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "slow", res.State.Data["answer"])
	require.Equal(t, 1, model.Calls(), "the pass ran once")
	h := history(t, tc, run.GetID())
	require.Zero(t, eventCount(h, enums.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT))
	require.Zero(t, eventCount(h, enums.EVENT_TYPE_WORKFLOW_TASK_FAILED))
	// One task starts the run and the pass; the heartbeats (at 0.8 s, 1.6 s, 2.4 s) complete
	// it and continue in new tasks; the last one records the pass and completes the run.
	require.GreaterOrEqual(t, eventCount(h, enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), 3, "the task was heartbeated")
	_, local := modelExecutions(t, h)
	require.Equal(t, 1, local)
	recordHistory(t, tc, "fastpath-long-pass", run.GetID())
}

// TestFastPathKillSweep is the kill sweep (TestKillSweep) over the fast path: the sweep agent's
// model passes are local activities, the worker process is SIGKILLed every 1–4 s and
// restarted. Every run completes, no question is lost, every tool call executed under one
// idempotency key; a kill inside a workflow task re-runs the passes of that task (counted in
// ModelPassesPerRun). The big sweep is `go run ./test/sweep/cmd -fast` (docs/reliability.md).
func TestFastPathKillSweep(t *testing.T) {
	const runs = 12
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	rep, err := sweep.Run(ctx, sweep.Config{Client: tc, TemporalAddress: srv.Address(), WorkerBinary: binary(t, "testworker"),
		TaskQueue: taskQueue(t), Effects: filepath.Join(t.TempDir(), "effects.txt"), Runs: runs, Fast: true,
		StartEvery: time.Second, MinKill: time.Second, MaxKill: 4 * time.Second, RunTimeout: 100 * time.Second, Logf: t.Logf, WorkerStderr: os.Stderr})
	require.NoError(t, err)
	t.Logf("fast-path kill sweep:\n%s", rep)

	require.Empty(t, rep.Failed)
	require.Empty(t, rep.Stuck)
	require.Equal(t, runs, rep.Completed)
	require.Zero(t, rep.Lost)
	require.Zero(t, rep.MissingKeys)
	require.GreaterOrEqual(t, rep.Kills, 3, "the worker was killed while runs went on")
	require.GreaterOrEqual(t, rep.Questions, runs*testagents.SweepSteps, "every approval was asked")
	keys := 0
	for n, k := range rep.ToolExecutionsPerKey {
		require.Positive(t, n)
		keys += k
	}
	require.Equal(t, runs*testagents.SweepSteps, keys, "one idempotency key per tool call")
	passes := 0
	for n, r := range rep.ModelPassesPerRun {
		require.GreaterOrEqual(t, n, testagents.SweepSteps+1, "every pass reached the model")
		passes += r
	}
	require.Equal(t, runs, passes, "model passes counted for every run")
}

// TestFastPathSessionTaskTimeout: the session starts the runs of a fast-path agent with
// workflows.FastPathTaskTimeout (which bounds how late a cancellation reaches a running pass),
// and the runs of other agents with the server's default; POST /api/chat/stop then ends the
// hanging pass at the provider and the response with cancelled, done.
func TestFastPathSessionTaskTimeout(t *testing.T) {
	gone := make(chan struct{})
	fs := fakeserver.NewScript(fake.Turn{Text: "one two", Deltas: []string{"one ", "two"},
		Hang: &fake.Hang{After: 1, Cancelled: func() { close(gone) }}})
	t.Cleanup(fs.Close)
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	reg := fastRegistry(t, nil)
	require.NoError(t, reg.Add(&workflows.Definition{ID: "it-regular", Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{Data: map[string]any{"ok": true}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(openai.New(openai.Options{ID: "fake", BaseURL: fs.URL(), APIKey: "test"}))})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	h, err := chat.NewHandler(newService(t, e.c, e.broker, e.tq), chat.Options{AllowUnauthenticated: true})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	mux.Handle("/api/chat/stop", h.StopHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := &chatEnv{inproc: e, url: srv.URL}
	taskTimeout := func(runID string) time.Duration {
		d, err := tc.DescribeWorkflow(context.Background(), runID, "")
		require.NoError(t, err)
		return d.RawResponse.GetExecutionConfig().GetDefaultWorkflowTaskTimeout().AsDuration()
	}

	session := "s-" + taskQueue(t)
	l := c.open(t, prompt(session, "t1", fastCancelAgent, "go"))
	require.Equal(t, contracts.ChunkSession, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkTextStart, l.next(t).chunk(t).Type)
	require.Equal(t, "one ", l.next(t).chunk(t).Delta)
	runID := sessionView(t, e, session).Active.RunID
	require.Equal(t, workflows.FastPathTaskTimeout, taskTimeout(runID))
	resp := post(t, c.url+"/api/chat/stop", map[string]any{"sessionId": session})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the stop never reached the provider")
	}
	require.Equal(t, contracts.ChunkCancelled, l.next(t).chunk(t).Type)
	require.Equal(t, contracts.ChunkDone, l.next(t).chunk(t).Type)

	other := "s-" + taskQueue(t) + "-regular"
	l = c.open(t, prompt(other, "t1", "it-regular", "go"))
	for c := l.next(t).chunk(t); c.Type != contracts.ChunkDone; c = l.next(t).chunk(t) {
	}
	var regularRun string
	eventually(t, 30*time.Second, "the regular run in the visibility store", func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("%s = %q AND WorkflowType = %q", contracts.SearchAttributeSession, other, contracts.RunWorkflowName)})
		require.NoError(t, err)
		if len(resp.GetExecutions()) != 1 {
			return false
		}
		regularRun = resp.GetExecutions()[0].GetExecution().GetWorkflowId()
		return true
	})
	require.Equal(t, 10*time.Second, taskTimeout(regularRun), "the server's default")
}
