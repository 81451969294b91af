package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sweep"
	"github.com/kortyx-go/kortyx/internal/testagents"
	"github.com/stretchr/testify/require"
)

// TestKillSweep runs tool-loop runs with approvals while the worker process is SIGKILLed every
// 1–4 s and restarted: every run completes, no question is lost, every tool call executed
// (at least once: a kill between a tool's effect and Temporal recording its completion runs it
// again, under the same idempotency key). The big sweep is `go run ./internal/sweep/cmd`
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
