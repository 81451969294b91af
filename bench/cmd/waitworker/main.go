// Command waitworker is the worker process of bench's BenchmarkWorkerRSS: a Temporal worker
// with the two workflows of that benchmark, a Kortyx run that asks one question ("bench-wait":
// hooks.AskText, then one structured-data chunk with the answer) and a plain workflow that
// publishes a question chunk by local activity and waits for a signal ("bench.PlainWait"), both
// publishing to an in-memory broker of the process (the Kortyx run to app.Run's, the plain
// workflow to its own).
//
// Environment: TEMPORAL_ADDRESS (required), KORTYX_TASK_QUEUE (required),
// KORTYX_BENCH_STICKY_CACHE (the sticky workflow cache size, worker.SetStickyWorkflowCacheSize;
// unset: the SDK's default, 10,000). It prints "ready" once it polls; on SIGUSR1 it runs a full
// garbage collection, returns freed memory to the OS (debug.FreeOSMemory) and prints "freed";
// SIGTERM or SIGINT stop it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Names shared with bench/rss_test.go.
const (
	kortyxWait    = "bench-wait"
	plainWait     = "bench.PlainWait"
	plainPublish  = "bench.WaitPublish"
	plainAnswer   = "bench.Answer"
	stickyEnv     = "KORTYX_BENCH_STICKY_CACHE"
	readyLine     = "ready"
	freedLine     = "freed"
	questionText  = "Proceed?"
	questionID    = "q"
	waitNode      = "ask"
	publishPrefix = "p:"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "waitworker:", err)
		os.Exit(1)
	}
}

func run() error {
	addr, queue := os.Getenv("TEMPORAL_ADDRESS"), os.Getenv("KORTYX_TASK_QUEUE")
	if addr == "" || queue == "" {
		return fmt.Errorf("set TEMPORAL_ADDRESS and KORTYX_TASK_QUEUE")
	}
	// The configuration is the benchmark's alone (not the environment's): no HTTP API, an
	// in-memory broker, the sticky cache it measures.
	cfg := app.Config{TemporalAddress: addr, TaskQueue: queue}
	if v := os.Getenv(stickyEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%s must be a positive integer, got %q", stickyEnv, v)
		}
		cfg.StickyCacheSize = n
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &publisher{broker: stream.NewMemory(stream.MemoryOptions{})}
	o := app.Options{
		Register: func(reg *workflows.Registry) error { return reg.Add(waitDefinition()) },
		Models:   []providers.Provider{fake.New()}, // its runs call no model
		RegisterWorker: func(w worker.Registry) {
			w.RegisterActivityWithOptions(p.Publish, activity.RegisterOptions{Name: plainPublish})
			w.RegisterWorkflowWithOptions(PlainWaitWorkflow, workflow.RegisterOptions{Name: plainWait})
		},
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), // the SDK's warnings and errors
		Started: func(app.Running) { fmt.Println(readyLine) },
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			runtime.GC()
			debug.FreeOSMemory()
			fmt.Println(freedLine)
		}
	}()
	return app.Run(ctx, cfg, o)
}

// waitDefinition is the Kortyx run of the benchmark: one node that asks, then publishes the
// answer.
func waitDefinition() *workflows.Definition {
	ask := func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
		answer, err := hooks.AskText(ctx, questionID, questionText)
		if err != nil {
			return workflows.NodeResult{}, err
		}
		_, err = hooks.StructuredData(ctx, hooks.StructuredDataOptions{Data: map[string]any{"answer": answer}})
		return workflows.NodeResult{}, err
	}
	return &workflows.Definition{
		ID: kortyxWait, Version: "1",
		Nodes: map[string]workflows.Node{waitNode: {Run: ask}},
		Edges: []workflows.Edge{{From: workflows.Start, To: waitNode}, {From: waitNode, To: workflows.End}},
	}
}

type publishInput struct {
	RunID string          `json:"runId"`
	Seq   int             `json:"seq"`
	Chunk contracts.Chunk `json:"chunk"`
}

type publisher struct{ broker stream.Broker }

// Publish appends one chunk to the run's stream.
func (p *publisher) Publish(ctx context.Context, in publishInput) error {
	return p.broker.Publish(ctx, in.RunID, stream.Keyed{Key: publishPrefix + strconv.Itoa(in.Seq), Chunk: in.Chunk})
}

// PlainWaitWorkflow publishes a question chunk by local activity, waits for the answer signal,
// then publishes the answer.
func PlainWaitWorkflow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 50 * time.Millisecond, MaximumInterval: 5 * time.Second},
	})
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	q := publishInput{RunID: id, Seq: 1, Chunk: contracts.Chunk{Type: contracts.ChunkInterrupt, Node: waitNode}}
	if err := workflow.ExecuteLocalActivity(ctx, plainPublish, q).Get(ctx, nil); err != nil {
		return "", err
	}
	var answer string
	workflow.GetSignalChannel(ctx, plainAnswer).Receive(ctx, &answer)
	a := publishInput{RunID: id, Seq: 2, Chunk: contracts.Chunk{Type: contracts.ChunkStructuredData, Node: waitNode,
		Data: protocol.RawJSON(map[string]any{"answer": answer})}}
	return answer, workflow.ExecuteLocalActivity(ctx, plainPublish, a).Get(ctx, nil)
}
