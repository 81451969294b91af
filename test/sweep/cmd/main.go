// Command cmd runs the kill sweep (package sweep) against a dev server of its own and prints
// the report:
//
//	go run ./test/sweep/cmd -runs 100
//
// It builds the testworker program, SIGKILLs it every -min-kill to -max-kill and restarts it
// while the runs go on, and exits 1 unless every run completed with no question lost.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/test/sweep"
	"github.com/kortyx-go/kortyx/test/testenv"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

func main() {
	ok, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run() (bool, error) {
	runs := flag.Int("runs", 100, "tool-loop runs with approvals")
	conc := flag.Int("concurrency", 0, "runs in flight at once (0: all)")
	every := flag.Duration("start-every", 250*time.Millisecond, "one run starts every this long")
	minKill := flag.Duration("min-kill", time.Second, "shortest worker life before its SIGKILL")
	maxKill := flag.Duration("max-kill", 4*time.Second, "longest worker life before its SIGKILL")
	runTimeout := flag.Duration("run-timeout", 15*time.Minute, "a run not finished after this is stuck")
	jsonOut := flag.String("json", "", "also write the report as JSON to this file")
	fast := flag.Bool("fast", false, "sweep the fast path (model passes as local activities)")
	budget := flag.Bool("budget", false, "sweep budgets: runs of two parallel children under a token budget that pauses them")
	budgetTokens := flag.Int("budget-tokens", 40, "with -budget, each run's token budget")
	tenantTokens := flag.Int("tenant-tokens", 0, "with -budget, also a tenant budget of this many tokens over all the runs (0: none)")
	flag.Parse()

	root, err := testenv.ModuleRoot()
	if err != nil {
		return false, err
	}
	dir, err := os.MkdirTemp("", "kortyx-sweep")
	if err != nil {
		return false, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "testworker")
	build := exec.Command("go", "build", "-o", bin, "./test/testworker")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		return false, fmt.Errorf("building the testworker: %w", err)
	}
	tcli, err := devserver.Find(root)
	if err != nil {
		return false, fmt.Errorf("the sweep needs the Temporal CLI (make tools): %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := devserver.Start(sctx, devserver.Options{BinaryPath: tcli, UIPort: -1, SearchAttributes: protocol.SearchAttributeNames()})
	cancel()
	if err != nil {
		return false, err
	}
	defer func() { _ = srv.Kill() }()
	c, err := client.Dial(client.Options{HostPort: srv.Address(),
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))})
	if err != nil {
		return false, err
	}
	defer c.Close()

	fmt.Fprintf(os.Stderr, "sweep: %d runs (one every %s, fast path: %v, budget: %v), worker SIGKILLed every %s–%s\n", *runs, *every, *fast, *budget, *minKill, *maxKill)
	rep, err := sweep.Run(context.Background(), sweep.Config{Client: c, TemporalAddress: srv.Address(), WorkerBinary: bin,
		TaskQueue: "sweep", Effects: filepath.Join(dir, "effects.txt"), Runs: *runs, Fast: *fast, Budget: *budget, BudgetTokens: *budgetTokens, TenantTokens: *tenantTokens, Concurrency: *conc, StartEvery: *every,
		MinKill: *minKill, MaxKill: *maxKill, RunTimeout: *runTimeout,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }})
	if err != nil {
		return false, err
	}
	fmt.Print(rep)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return false, err
		}
	}
	return rep.OK(), nil
}
