package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/sweep"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TestKillSweep runs tool-loop runs with approvals while the worker process is SIGKILLed every
// 1–4 s and restarted: every run completes, no question is lost, every tool call executed
// (at least once: a kill between a tool's effect and Temporal recording its completion runs it
// again, under the same idempotency key). The big sweep is `go run ./test/sweep/cmd`
// (docs/reliability.md).
func TestKillSweep(t *testing.T) {
	const runs = 12
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	rep, err := sweep.Run(ctx, sweep.Config{Client: tc, TemporalAddress: srv.Address(), WorkerBinary: binary(t, "testworker"),
		TaskQueue: taskQueue(t), Effects: filepath.Join(t.TempDir(), "effects.txt"), Runs: runs,
		StartEvery: time.Second, MinKill: time.Second, MaxKill: 4 * time.Second, RunTimeout: 100 * time.Second, Logf: t.Logf, WorkerStderr: os.Stderr})
	require.NoError(t, err)
	t.Logf("kill sweep:\n%s", rep)

	require.Empty(t, rep.Failed)
	require.Empty(t, rep.Stuck)
	require.Equal(t, runs, rep.Completed)
	require.Zero(t, rep.Lost)
	require.Zero(t, rep.MissingKeys)
	require.GreaterOrEqual(t, rep.Kills, 3, "the worker was killed while runs went on")
	require.GreaterOrEqual(t, rep.Questions, runs*testagents.SweepSteps, "every approval was asked")
	keys, executions := 0, 0
	for n, k := range rep.ToolExecutionsPerKey {
		require.Positive(t, n)
		keys += k
		executions += n * k
	}
	require.Equal(t, runs*testagents.SweepSteps, keys, "one idempotency key per tool call")
	require.GreaterOrEqual(t, executions, keys)
	passes := 0
	for n, r := range rep.ModelPassesPerRun {
		require.GreaterOrEqual(t, n, testagents.SweepSteps+1, "every pass reached the model")
		passes += r
	}
	require.Equal(t, runs, passes, "model passes counted for every run")
}

// TestKillSweepBudgets (issue 34): the kill sweep over runs with budgets and children. Each run
// calls two sweep agents as parallel children under a token budget of 40, which their passes
// outgrow: every child pass reserves at the root, and the root pauses with the budget question
// (the sweep answers Continue) again and again, while the worker is SIGKILLed every 1–4 s.
// Every run completes, no question is lost, and every run spent exactly the tokens of its
// settled passes, each counted once (passes that reached the model twice after a kill are
// settled once), within its final budget. The runs are also one tenant's, under a tenant budget
// of 400 tokens (its ledger workflow): each child reserves there in its passes' activities,
// asks when the ledger cannot grant a pass, and settles when it ends; the ledger counts each
// one's spend exactly once.
func TestKillSweepBudgets(t *testing.T) {
	const runs = 6
	ctx, cancel := context.WithTimeout(context.Background(), 270*time.Second)
	defer cancel()
	rep, err := sweep.Run(ctx, sweep.Config{Client: tc, TemporalAddress: srv.Address(), WorkerBinary: binary(t, "testworker"),
		TaskQueue: taskQueue(t), Effects: filepath.Join(t.TempDir(), "effects.txt"), Runs: runs, Budget: true, TenantTokens: 400,
		StartEvery: time.Second, MinKill: time.Second, MaxKill: 4 * time.Second, RunTimeout: 240 * time.Second, Logf: t.Logf, WorkerStderr: os.Stderr})
	require.NoError(t, err)
	t.Logf("kill sweep with budgets:\n%s", rep)
	require.Empty(t, rep.Failed)
	require.Empty(t, rep.Stuck)
	require.Equal(t, runs, rep.Completed)
	require.Zero(t, rep.Lost)
	require.Zero(t, rep.MissingKeys)
	require.GreaterOrEqual(t, rep.Kills, 3, "the worker was killed while runs went on")
	require.GreaterOrEqual(t, rep.BudgetQuestions, runs, "every run paused at its budget")
	require.Equal(t, map[int]int{testagents.SweepTreeTokens: runs}, rep.SpendPerRun, "every settled pass counted once")
	// The tenant's ledger: every run and child settled once, with exactly what it spent.
	require.NotNil(t, rep.Ledger)
	require.Equal(t, 2*runs, rep.Ledger.Settled, "each child settled once (the root makes no model pass, so it holds no grant)")
	require.Equal(t, runs*testagents.SweepTreeTokens, rep.Ledger.SpentTokens, "every settled pass counted once in the tenant's ledger")
	require.Empty(t, rep.Ledger.Live)
}

// TestRetryableToolErrorTextStaysInTemporal: on a real server, a retryable tool error that uses
// up its attempts reaches the stream as EXECUTION_FAILED "An unexpected error occurred." naming
// kortyx.Tool and why retries stopped; the tool's text is in the run's history only.
func TestRetryableToolErrorTextStaysInTemporal(t *testing.T) {
	const secret = `dial tcp 10.0.3.7:5432: password authentication failed for user "orders" (password "hunter2")`
	vault, err := tools.Func("vault", "Reads the vault.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			return "", tools.Retryable(errors.New(secret))
		})
	require.NoError(t, err)
	set, err := tools.NewSet(vault)
	require.NoError(t, err)
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "vault", Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: in.Text(), Tools: []string{"vault"}, ToolExecution: hooks.ToolExecution{
				Emit: hooks.Switch{On: true}, Retry: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 2}}})
			return workflows.NodeResult{}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: e.broker, Tools: set,
		Providers: providers.NewSet(fake.New(fake.Call("vault", `{}`))), DefaultProvider: fake.ID})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run := startRun(t, tc, e.tq, "vault", "open it")
	_, err = result(t, run)
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(err))
	chunks, _ := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"tool-call-start", "error", "done"}, types(chunks))
	b, err := json.Marshal(chunks[1].Failure)
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"code":"EXECUTION_FAILED","category":"internal","message":"An unexpected error occurred.",
		"retryable":false,"context":{"activity":"kortyx.Tool","retryState":"MaximumAttemptsReached"}}`, string(b))
	all, err := json.Marshal(chunks)
	require.NoError(t, err)
	require.NotContains(t, string(all), "hunter2")
	require.NotContains(t, string(all), "10.0.3.7")
	h, err := json.Marshal(history(t, tc, run.GetID()))
	require.NoError(t, err)
	require.Contains(t, string(h), "hunter2", "the full error stays in Temporal")
}
