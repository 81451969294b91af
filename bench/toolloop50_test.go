package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// The 50-step loop of the LangGraph comparison: the history workload with 50 tool calls of
// 16-byte results (bench/peers/langgraph runs the same loop: 50 tool calls, 16-character
// results, 51 model passes).
const (
	loop50Steps = 50
	loop50Bytes = 16
)

// runLoopN runs the history workload with n steps of size-byte results as a Kortyx run on the
// shared worker (default converter).
func (e *env) runLoopN(ctx context.Context, n, size int) (string, contracts.RunResult, error) {
	id := e.id("k-loop")
	var res contracts.RunResult
	input, err := json.Marshal(historyInput{Steps: n, Bytes: size})
	if err != nil {
		return id, res, err
	}
	run, err := kortyx.StartRun(ctx, e.c, contracts.RunInput{Workflow: kortyxHistory, SessionID: "bench", Input: input},
		kortyx.StartOptions{RunID: id, TaskQueue: e.queue})
	if err != nil {
		return id, res, err
	}
	if err := run.Get(ctx, &res); err != nil {
		return id, res, err
	}
	if res.Status != contracts.StatusCompleted {
		return id, res, fmt.Errorf("run %s ended %s", id, res.Status)
	}
	return id, res, nil
}

// runPlainLoopN runs the same loop as PlainToolLoopWorkflow.
func (e *env) runPlainLoopN(ctx context.Context, n, size int) (string, toolLoopResult, error) {
	var out toolLoopResult
	in := toolLoopInput{Provider: historyProvider, Tool: historyTool, Prompt: historyInput{Steps: n, Bytes: size}.prompt(), Calls: n}
	id, err := e.runPlain(ctx, plainToolLoop, &out, in)
	return id, out, err
}

// BenchmarkToolLoop50: hooks.Reason doing 50 tool calls (16-byte results) then answering,
// against the plain workflow executing the same kortyx.Model and kortyx.Tool activities; reported
// per step (run time ÷ 50). This is the loop the LangGraph peer runs.
func BenchmarkToolLoop50(b *testing.B) {
	e := setup(b)
	perStep := func(b *testing.B, run func(context.Context) error) float64 {
		b.ResetTimer()
		for range b.N {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := run(ctx)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		v := ms(b.Elapsed()) / float64(b.N*loop50Steps)
		b.ReportMetric(v, "ms/step")
		return v
	}
	compare(b, "ms/step",
		func(b *testing.B) float64 {
			return perStep(b, func(ctx context.Context) error {
				_, _, err := e.runLoopN(ctx, loop50Steps, loop50Bytes)
				return err
			})
		},
		func(b *testing.B) float64 {
			return perStep(b, func(ctx context.Context) error {
				_, _, err := e.runPlainLoopN(ctx, loop50Steps, loop50Bytes)
				return err
			})
		})
}

// TestToolLoopNAgree runs the loop of BenchmarkToolLoop50 with 5 steps in both variants and
// checks that they do the same work: the same tool executions and model passes, and the same
// answer.
func TestToolLoopNAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 5
	p0 := historyModel.Calls()
	kid, kres, err := e.runLoopN(ctx, n, loop50Bytes)
	require.NoError(t, err)
	require.Equal(t, n+1, historyModel.Calls()-p0, "kortyx model passes")
	require.Equal(t, n, historyToolRuns.get(kid), "kortyx tool executions")
	require.Equal(t, historyAnswer, kres.State.Data["answer"])

	p0 = historyModel.Calls()
	pid, pres, err := e.runPlainLoopN(ctx, n, loop50Bytes)
	require.NoError(t, err)
	require.Equal(t, n+1, historyModel.Calls()-p0, "plain model passes")
	require.Equal(t, n, historyToolRuns.get(pid), "plain tool executions")
	require.Equal(t, n+1, pres.Passes)
	require.Equal(t, n, pres.ToolCalls)
	require.Equal(t, historyAnswer, pres.Text)
	for _, id := range []string{kid, pid} {
		acts, err := e.activityTypes(ctx, id)
		require.NoError(t, err)
		require.Equal(t, map[string]int{protocol.ModelActivityName: n + 1, protocol.ToolActivityName: n}, acts, id)
	}
}
