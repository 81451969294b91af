// Command loadworker is the worker program (worker/main.go: app.Run configured by the
// environment, --api-only for the HTTP API alone) with the load test's agent instead of the
// examples: bench/cmd/load starts it as workers, API processes and the one-process baseline.
//
// The agent "bench-load" streams one slow answer from the provider "bench": KORTYX_BENCH_CHUNKS
// text deltas (default 200), one every KORTYX_BENCH_CHUNK_INTERVAL (default 20ms), each delta
// the provider's clock when it sent it (Unix nanoseconds and a space), so that a client on the
// same machine measures provider chunk → client. A prompt containing "approve" first asks
// "Approve?" (options approve, deny) and streams after the answer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/workflow"
)

// Agent is the load test's workflow id.
const Agent = "bench-load"

func main() {
	apiOnly := flag.Bool("api-only", false, "serve the HTTP API without polling tasks")
	flag.Parse()
	if err := run(*apiOnly); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, app.ErrUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(apiOnly bool) error {
	m, err := slowFromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := app.Options{
		APIOnly:         apiOnly,
		Register:        register,
		DefaultWorkflow: Agent,
		Providers: []app.ProviderFromEnv{{ID: "bench", Env: []string{"KORTYX_BENCH_CHUNKS"},
			New: func() (providers.Provider, string, error) { return m, "the load test's slow model", nil }}},
	}
	return app.Run(ctx, app.ConfigFromEnv(), o)
}

func register(reg *workflows.Registry) error {
	answer := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		text := in.Text()
		if strings.Contains(text, "approve") {
			if _, err := hooks.Choose(ctx, "ok", "Approve?",
				contracts.Option{ID: "approve", Label: "Approve"}, contracts.Option{ID: "deny", Label: "Deny"}); err != nil {
				return workflows.NodeResult{}, err
			}
		}
		_, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "answer", Model: providers.Model("bench:slow"), Input: text})
		return workflows.NodeResult{}, err
	}
	return reg.Add(&workflows.Definition{
		ID: Agent, Version: "1",
		Nodes: map[string]workflows.Node{"answer": {Run: answer}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "answer"}},
	})
}

// slow is the provider "bench": a slow answer of n deltas, one per interval.
type slow struct {
	n        int
	interval time.Duration
}

func slowFromEnv() (*slow, error) {
	m := &slow{n: 200, interval: 20 * time.Millisecond}
	if v := os.Getenv("KORTYX_BENCH_CHUNKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("loadworker: KORTYX_BENCH_CHUNKS=%q is not a positive number", v)
		}
		m.n = n
	}
	if v := os.Getenv("KORTYX_BENCH_CHUNK_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("loadworker: KORTYX_BENCH_CHUNK_INTERVAL=%q is not a duration", v)
		}
		m.interval = d
	}
	return m, nil
}

func (m *slow) ID() string { return "bench" }

func (m *slow) Generate(ctx context.Context, _ providers.Request, onDelta func(string) error) (providers.Response, error) {
	var text strings.Builder
	t := time.NewTicker(max(m.interval, time.Microsecond))
	defer t.Stop()
	for i := range m.n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return providers.Response{}, ctx.Err()
			case <-t.C:
			}
		}
		d := strconv.FormatInt(time.Now().UnixNano(), 10) + " "
		text.WriteString(d)
		if onDelta != nil {
			if err := onDelta(d); err != nil {
				return providers.Response{}, err
			}
		}
	}
	return providers.Response{Text: text.String(), FinishReason: providers.FinishReason{Unified: providers.FinishStop},
		Usage: providers.Usage{Input: 10, Output: m.n, Total: 10 + m.n}}, nil
}
