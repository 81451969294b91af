package integration_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const localToolAgent = "it-local-tool"

// calcBox is a tool "calc" that records the idempotency key of every execution.
type calcBox struct {
	mu   sync.Mutex
	keys []string
}

func (b *calcBox) tool(t *testing.T, local bool) tools.Tool {
	calc, err := tools.Func("calc", "Adds one.", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
		func(ctx context.Context, call tools.Call, in struct {
			N int `json:"n"`
		}) (int, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.keys = append(b.keys, call.IdempotencyKey)
			return in.N + 1, nil
		})
	require.NoError(t, err)
	if local {
		return tools.Local(calc)
	}
	return calc
}

func (b *calcBox) executed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.keys...)
}

// localToolRegistry is the registry of a worker whose tool calc is local or regular, wired
// the way app.Run wires the tools.
func localToolRegistry(t *testing.T, set *tools.Set) *workflows.Registry {
	reg := workflows.NewRegistry()
	reg.SetToolNames(set.Names()...)
	reg.SetLocalTools(set.LocalNames()...)
	require.NoError(t, reg.Add(&workflows.Definition{ID: localToolAgent, Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "calc", Input: in.Text(), Tools: []string{"calc"},
				ToolExecution: hooks.ToolExecution{MaxSteps: 3, Emit: hooks.Switch{On: true}, Approval: hooks.Only("calc")}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text, "calls": len(res.ToolResults)}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}, {From: "agent", To: workflows.End}}}))
	return reg
}

// startLocalToolWorker starts an in-process worker on tq whose calc tool is local or regular.
func startLocalToolWorker(t *testing.T, tq string, local bool, box *calcBox, model *fake.Model, broker stream.Broker) (worker.Worker, *workflows.Registry) {
	set, err := tools.NewSet(box.tool(t, local))
	require.NoError(t, err)
	reg := localToolRegistry(t, set)
	w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker,
		Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set})
	require.NoError(t, w.Start())
	return w, reg
}

// toolExecutions counts kortyx.Tool in a history: scheduled activities and local activity
// markers; and the side effects that recorded the list of local tools want (alone, or with a
// lean run's id seed; the others record ids and tokens).
func toolExecutions(t *testing.T, h *historypb.History, want []string) (scheduled, local, localSets int) {
	t.Helper()
	for _, e := range h.Events {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == protocol.ToolActivityName {
				scheduled++
			}
		case enums.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			switch m.GetMarkerName() {
			case "SideEffect":
				var v []string
				if converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &v) == nil && v != nil && slices.Equal(v, want) {
					localSets++
				}
				// A lean run records its local set with its id seed, at its start.
				var lean struct {
					Seed  []byte   `json:"seed"`
					Local []string `json:"local"`
				}
				if converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &lean) == nil && len(lean.Seed) > 0 &&
					lean.Local != nil && slices.Equal(lean.Local, want) {
					localSets++
				}
			case "LocalActivity":
				var data struct{ ActivityType string }
				require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &data))
				if data.ActivityType == protocol.ToolActivityName {
					local++
				}
			}
		}
	}
	return scheduled, local, localSets
}

// TestLocalToolHistory: a run whose tool is local records each call as a local activity
// marker, and schedules no kortyx.Tool activity; the same run with the tool regular schedules
// one per call. Both record the worker's local set once.
func TestLocalToolHistory(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			tq := taskQueue(t)
			box := &calcBox{}
			broker := stream.NewMemory(stream.MemoryOptions{})
			model := fake.New(fake.Call("calc", `{"n":1}`), fake.Call("calc", `{"n":2}`), fake.Text("3"))
			w, _ := startLocalToolWorker(t, tq, local, box, model, broker)
			defer w.Stop()
			run := startRun(t, tc, tq, localToolAgent, "count")
			f := (&inproc{broker: broker}).follow
			var after int64
			for i := range 2 {
				resp, last := nextResponse(t, f, run.GetID(), after)
				ask, in := interruptOf(t, resp)
				require.Equal(t, "Approve calc?", in.Question)
				require.Len(t, box.executed(), i, "the call waits for its approval")
				require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), answer(ask, "", "approve")))
				after = last
			}
			res, err := result(t, run)
			require.NoError(t, err)
			require.Equal(t, "3", res.State.Data["answer"])
			require.Equal(t, 3, model.Calls())
			keys := box.executed()
			require.Len(t, keys, 2)
			require.Regexp(t, "^"+run.GetID()+":[^:]+:call-calc-1$", keys[0])
			require.Regexp(t, "^"+run.GetID()+":[^:]+:call-calc-2$", keys[1])
			want := []string{}
			if local {
				want = []string{"calc"}
			}
			scheduled, markers, sideEffects := toolExecutions(t, history(t, tc, run.GetID()), want)
			if local {
				require.Equal(t, [2]int{0, 2}, [2]int{scheduled, markers}, "kortyx.Tool: scheduled activities, local markers")
			} else {
				require.Equal(t, [2]int{2, 0}, [2]int{scheduled, markers}, "kortyx.Tool: scheduled activities, local markers")
			}
			require.Equal(t, 1, sideEffects, "the local set is recorded once per run")
			tail, _ := nextResponse(t, f, run.GetID(), after)
			require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-end", "done"}, types(tail))
		})
	}
}

// TestLocalToolSwitchedWhileRunWaits: a run executes one call of calc, then waits for the
// approval of the second; the worker is replaced by one where calc switched (regular → local,
// local → regular). The new worker replays the run and continues it the way it started:
// both calls run as the first did, no call runs twice, and the history replays on workers of
// either configuration.
func TestLocalToolSwitchedWhileRunWaits(t *testing.T) {
	for _, startedLocal := range []bool{false, true} {
		t.Run(fmt.Sprintf("started local=%v", startedLocal), func(t *testing.T) {
			tq := taskQueue(t)
			box := &calcBox{}
			broker := stream.NewMemory(stream.MemoryOptions{})
			model := fake.New(fake.Call("calc", `{"n":1}`), fake.Call("calc", `{"n":2}`), fake.Text("3"))
			first, firstReg := startLocalToolWorker(t, tq, startedLocal, box, model, broker)
			run := startRun(t, tc, tq, localToolAgent, "count")
			f := (&inproc{broker: broker}).follow
			resp, after := nextResponse(t, f, run.GetID(), 0)
			ask, _ := interruptOf(t, resp)
			require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), answer(ask, "", "approve")))
			resp, after = nextResponse(t, f, run.GetID(), after)
			require.Equal(t, []string{"tool-call-start", "tool-call-result", "interrupt", "done"}, types(resp))
			ask, _ = interruptOf(t, resp)
			require.Len(t, box.executed(), 1)
			first.Stop()

			second, secondReg := startLocalToolWorker(t, tq, !startedLocal, box, model, broker)
			defer second.Stop()
			require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), answer(ask, "", "approve")))
			res, err := result(t, run)
			require.NoError(t, err)
			require.Equal(t, "3", res.State.Data["answer"])
			require.Equal(t, float64(2), res.State.Data["calls"])
			require.Len(t, box.executed(), 2, "no call runs twice")
			require.Equal(t, 3, model.Calls())

			h := history(t, tc, run.GetID())
			want := []string{}
			if startedLocal {
				want = []string{"calc"}
			}
			scheduled, markers, sideEffects := toolExecutions(t, h, want)
			if startedLocal {
				require.Equal(t, [2]int{0, 2}, [2]int{scheduled, markers}, "both calls ran locally")
			} else {
				require.Equal(t, [2]int{2, 0}, [2]int{scheduled, markers}, "both calls ran as regular activities")
			}
			require.Equal(t, 1, sideEffects, "the first worker's local set is recorded, once")
			for _, reg := range []*workflows.Registry{firstReg, secondReg} {
				require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{WorkflowID: run.GetID(), Logger: quietLogger()}))
			}
			tail, _ := nextResponse(t, f, run.GetID(), after)
			require.Equal(t, []string{"tool-call-start", "tool-call-result", "text-start", "text-delta", "text-end", "done"}, types(tail))
		})
	}
}

const localFailAgent = "it-local-tool-fail"

// TestLocalToolFailuresOnServer: on a real server, a local tool's exhausted retries (a
// Retryable error, attempts that outlive the timeout) fail the run with the code, message and
// activity a regular tool's do; only the server's retryState is missing.
func TestLocalToolFailuresOnServer(t *testing.T) {
	type seen struct {
		Code, Message, Activity string
		Runs                    int
	}
	results := map[bool]map[string]seen{}
	for _, local := range []bool{false, true} {
		results[local] = map[string]seen{}
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			var mu sync.Mutex
			runs := map[string]int{}
			count := func(name string) {
				mu.Lock()
				defer mu.Unlock()
				runs[name]++
			}
			flaky, err := tools.Func("flaky", "Always busy.", `{"type":"object"}`,
				func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
					count("flaky")
					return "", tools.Retryable(errors.New("busy"))
				})
			require.NoError(t, err)
			slow, err := tools.Func("slow", "Never in time.", `{"type":"object"}`,
				func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
					count("slow")
					<-ctx.Done()
					return "", ctx.Err()
				})
			require.NoError(t, err)
			if local {
				flaky, slow = tools.Local(flaky), tools.Local(slow)
			}
			set, err := tools.NewSet(flaky, slow)
			require.NoError(t, err)
			reg := workflows.NewRegistry()
			reg.SetToolNames(set.Names()...)
			reg.SetLocalTools(set.LocalNames()...)
			require.NoError(t, reg.Add(&workflows.Definition{ID: localFailAgent, Version: "1",
				Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
					_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "fail", Input: in.Text(), Tools: []string{in.Text()},
						ToolExecution: hooks.ToolExecution{Timeout: 500 * time.Millisecond,
							Retry: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 2}}})
					return workflows.NodeResult{}, err
				}}},
				Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}, {From: "agent", To: workflows.End}}}))
			model := fake.NewResponder(func(req providers.Request) fake.Turn {
				return fake.Call(req.Messages[len(req.Messages)-1].Content, `{}`)
			})
			tq := taskQueue(t)
			broker := stream.NewMemory(stream.MemoryOptions{})
			w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker,
				Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set})
			require.NoError(t, w.Start())
			defer w.Stop()
			for _, tool := range []string{"flaky", "slow"} {
				run := startRun(t, tc, tq, localFailAgent, tool)
				_, err := result(t, run)
				require.Error(t, err)
				chunks, _ := nextResponse(t, (&inproc{broker: broker}).follow, run.GetID(), 0)
				require.Equal(t, []string{"error", "done"}, types(chunks), tool)
				f := chunks[0].Failure
				require.Equal(t, f.Code, contracts.CodeOf(err), tool)
				activity, _ := f.Context["activity"].(string)
				mu.Lock()
				results[local][tool] = seen{Code: string(f.Code), Message: f.Message, Activity: activity, Runs: runs[tool]}
				mu.Unlock()
			}
		})
	}
	require.Equal(t, seen{Code: "EXECUTION_FAILED", Message: "An unexpected error occurred.", Activity: protocol.ToolActivityName, Runs: 2}, results[false]["flaky"])
	require.Equal(t, seen{Code: "ACTIVITY_TIMEOUT", Message: "Activity kortyx.Tool did not complete in time (StartToClose timeout).",
		Activity: protocol.ToolActivityName, Runs: 2}, results[false]["slow"])
	require.Equal(t, results[false], results[true], "the same failures with the tools local")
}
