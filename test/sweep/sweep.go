// Package sweep runs the kill sweep: tool-loop runs with approvals (the
// [testagents.SweepWorkflow] agent) against a worker process that is SIGKILLed every
// MinKill–MaxKill and restarted, answering every question as it appears, and counts what ran:
// tool executions per idempotency key, model pass executions per run, failed runs and why.
// The integration tests run a small sweep; `go run ./test/sweep/cmd` runs a big one.
package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/client"
)

// Config configures a sweep.
type Config struct {
	Client          client.Client // of the Temporal server the worker uses
	TemporalAddress string        // given to the worker process
	WorkerBinary    string        // the testworker program
	TaskQueue       string
	Effects         string // the effects file the worker appends to (start with none)
	Runs            int
	// Fast sweeps the fast path: the runs are of [testagents.SweepFastWorkflow] (model passes
	// as local activities), started with workflows.FastPathTaskTimeout.
	Fast bool
	// Budget sweeps budgets: the runs are of [testagents.SweepTreeWorkflow] (two sweep agents
	// as parallel children), each started with a token budget of BudgetTokens (default 40, so
	// that every run pauses at its budget several times: the sweep answers Continue). A run
	// completes as expected only with a spend of exactly testagents.SweepTreeTokens (every
	// settled pass counted once) within its final budget.
	Budget       bool
	BudgetTokens int
	// TenantTokens, with Budget, also puts the runs under a tenant budget of that many tokens
	// (the worker's KORTYX_TENANT_MAX_TOKENS; the tenant is the task queue's name, so the sweep
	// has a ledger of its own): every child reserves at the tenant's ledger, asks when
	// it cannot grant a pass (the sweep answers Continue), and settles when it ends. The
	// report's Ledger is the ledger's state after the sweep.
	TenantTokens int
	Concurrency  int           // runs in flight at once (default: all)
	StartEvery   time.Duration // one run starts every StartEvery (default 250 ms)
	MinKill      time.Duration // the worker lives this long at least (default 1 s)…
	MaxKill      time.Duration // …and at most (default 4 s) before it is SIGKILLed
	RunTimeout   time.Duration // a run not finished after this is stuck (default 10 min)
	Logf         func(format string, args ...any)
	WorkerStderr io.Writer // the worker processes' stderr (default: discarded)
}

// RunFailure is a run that failed: its id and its failure descriptor's code, message and
// context.
type RunFailure struct {
	RunID   string         `json:"runId"`
	Code    contracts.Code `json:"code"`
	Message string         `json:"message"`
	Context map[string]any `json:"context,omitempty"`
}

// Report is what a sweep counted.
type Report struct {
	Runs      int           `json:"runs"`
	Completed int           `json:"completed"` // completed with the expected result
	Failed    []RunFailure  `json:"failed"`    // failed, or completed with another result
	Stuck     []string      `json:"stuck"`     // not finished within RunTimeout
	Kills     int           `json:"kills"`     // SIGKILLs of the worker
	Elapsed   time.Duration `json:"elapsed"`
	// Questions is the approvals asked (distinct request ids seen pending), Answered those
	// whose answer was confirmed accepted (a completed run had all of its SweepSteps accepted:
	// its tools ran), Lost the questions of runs that did not complete whose answer was never
	// accepted.
	Questions int `json:"questions"`
	Answered  int `json:"answered"`
	Lost      int `json:"lost"`
	// ToolExecutionsPerKey maps n to the number of idempotency keys whose tool ran n times;
	// ModelPassesPerRun maps n to the number of runs whose model passes reached the provider n
	// times in all (SweepSteps+1 passes each when none is repeated).
	ToolExecutionsPerKey map[int]int `json:"toolExecutionsPerKey"`
	ModelPassesPerRun    map[int]int `json:"modelPassesPerRun"`
	// MissingKeys counts tool calls of completed runs that never executed (must be 0).
	MissingKeys int `json:"missingKeys"`
	// BudgetQuestions are the budget questions answered Continue (Config.Budget), and
	// SpendPerRun maps a completed run's spent tokens to the number of runs that spent them.
	BudgetQuestions int         `json:"budgetQuestions,omitempty"`
	SpendPerRun     map[int]int `json:"spendPerRun,omitempty"`
	// Ledger is the tenant budget's ledger after the sweep (Config.TenantTokens), once every
	// completed run's tree settled with it (or 30 s passed).
	Ledger *protocol.LedgerView `json:"ledger,omitempty"`
}

// OK reports whether every run completed as expected with no question lost and every tool
// call executed.
func (r *Report) OK() bool {
	return r.Completed == r.Runs && len(r.Failed) == 0 && len(r.Stuck) == 0 && r.Lost == 0 && r.MissingKeys == 0
}

// String renders the report as a few lines of Markdown.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- runs: %d, completed: %d, failed: %d, stuck: %d; worker SIGKILLed %d times in %s\n",
		r.Runs, r.Completed, len(r.Failed), len(r.Stuck), r.Kills, r.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "- questions (tool approvals, and budget questions with Config.Budget): asked %d, answered %d, lost %d\n", r.Questions, r.Answered, r.Lost)
	fmt.Fprintf(&b, "- tool executions per idempotency key: %s (missing: %d)\n", histogram(r.ToolExecutionsPerKey, "key"), r.MissingKeys)
	unit := "run"
	if r.SpendPerRun != nil {
		unit = "child run"
	}
	fmt.Fprintf(&b, "- model pass executions per %s (%d passes each): %s\n", unit, testagents.SweepSteps+1, histogram(r.ModelPassesPerRun, unit))
	if l := r.Ledger; l != nil {
		fmt.Fprintf(&b, "- tenant ledger: %d tokens spent by %d settled runs, %d runs still holding grants, %d tokens granted past the budget by Continue\n",
			l.SpentTokens, l.Settled, len(l.Live), l.OverTokens)
	}
	if r.SpendPerRun != nil {
		fmt.Fprintf(&b, "- budget: %d questions answered Continue; tokens spent per run (%d when every pass counts once): %s\n",
			r.BudgetQuestions, testagents.SweepTreeTokens, histogram(r.SpendPerRun, "run"))
	}
	if len(r.Failed) == 0 {
		b.WriteString("- failed runs: none\n")
	}
	for _, f := range r.Failed {
		ctx, _ := json.Marshal(f.Context)
		fmt.Fprintf(&b, "- failed: %s %s %q %s\n", f.RunID, f.Code, f.Message, ctx)
	}
	return b.String()
}

func histogram(m map[int]int, unit string) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	total := 0
	for _, n := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d× %d %ss", n, m[n], unit))
		total += m[n]
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (%d %ss)", total, unit)
}

// Run runs the sweep until every run has finished (or is stuck) and reports.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Runs <= 0 || cfg.Client == nil || cfg.WorkerBinary == "" || cfg.Effects == "" || cfg.TaskQueue == "" {
		return nil, errors.New("sweep: Runs, Client, WorkerBinary, Effects and TaskQueue are required")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = cfg.Runs
	}
	if cfg.StartEvery <= 0 {
		cfg.StartEvery = 250 * time.Millisecond
	}
	if cfg.MinKill <= 0 {
		cfg.MinKill = time.Second
	}
	if cfg.MaxKill < cfg.MinKill {
		cfg.MaxKill = max(cfg.MinKill, 4*time.Second)
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 10 * time.Minute
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.WorkerStderr == nil {
		cfg.WorkerStderr = io.Discard
	}
	start := time.Now()
	rep := &Report{Runs: cfg.Runs, ToolExecutionsPerKey: map[int]int{}, ModelPassesPerRun: map[int]int{}}
	if cfg.Budget {
		rep.SpendPerRun = map[int]int{}
		if cfg.BudgetTokens <= 0 {
			cfg.BudgetTokens = 40
		}
	}

	killerDone := make(chan struct{})
	stopKiller := make(chan struct{})
	go func() {
		defer close(killerDone)
		rep.Kills = killLoop(ctx, cfg, stopKiller)
	}()

	outcomes := make([]outcome, cfg.Runs)
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	pace := time.NewTicker(cfg.StartEvery)
	defer pace.Stop()
	for i := range cfg.Runs {
		if i > 0 {
			<-pace.C
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outcomes[i] = drive(ctx, cfg, i)
		}()
	}
	wg.Wait()
	if cfg.Budget && cfg.TenantTokens > 0 {
		// Read while the worker (which answers the ledger's query) still runs.
		done := 0
		for _, o := range outcomes {
			if !o.stuck && o.failure == nil {
				done++
			}
		}
		rep.Ledger = settledLedger(ctx, cfg, 2*done) // each child settles; the root makes no pass of its own
	}
	close(stopKiller)
	<-killerDone
	rep.Elapsed = time.Since(start)

	inputs := map[string]*outcome{}
	for i := range outcomes {
		o := &outcomes[i]
		inputs[o.input] = o
		rep.Questions += len(o.asked)
		rep.Answered += len(o.answered)
		rep.BudgetQuestions += o.budgetQuestions
		if o.spent != nil && !o.stuck && o.failure == nil {
			rep.SpendPerRun[*o.spent]++
		}
		switch {
		case o.stuck:
			rep.Stuck = append(rep.Stuck, o.runID)
		case o.failure != nil:
			rep.Failed = append(rep.Failed, *o.failure)
		default:
			rep.Completed++
			continue
		}
		for id := range o.asked {
			if !o.answered[id] {
				rep.Lost++
			}
		}
	}
	keys, passes, err := readEffects(cfg.Effects)
	if err != nil {
		return rep, err
	}
	perRun := map[string]int{}
	for k, n := range keys {
		rep.ToolExecutionsPerKey[n]++
		run, _, _ := strings.Cut(k, ":")
		run, _, _ = strings.Cut(run, "/") // a child run's key counts for its root
		perRun[run]++
	}
	for _, o := range outcomes {
		if !o.stuck && o.failure == nil {
			rep.MissingKeys += max(cfg.toolCalls()-perRun[o.runID], 0)
		}
	}
	for input, n := range passes {
		if cfg.Budget {
			input = strings.TrimSuffix(strings.TrimSuffix(input, "-a"), "-b") // a child's passes count for its run
		}
		if _, ok := inputs[input]; ok {
			rep.ModelPassesPerRun[n]++
		}
	}
	return rep, nil
}

// settledLedger reads the sweep's tenant ledger until runs runs settled with it (30 s at most).
func settledLedger(ctx context.Context, cfg Config, runs int) *protocol.LedgerView {
	id := protocol.LedgerID(cfg.TaskQueue, contracts.ScopeTenant, cfg.TaskQueue, "")
	var v *protocol.LedgerView
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		res, err := cfg.Client.QueryWorkflow(ctx, id, "", protocol.LedgerStateQuery)
		if err != nil {
			continue
		}
		var got protocol.LedgerView
		if res.Get(&got) == nil {
			v = &got
			if got.Settled >= runs {
				break
			}
		}
	}
	return v
}

// toolCalls is the tool calls of one run of the sweep.
func (cfg Config) toolCalls() int {
	if cfg.Budget {
		return 2 * testagents.SweepSteps
	}
	return testagents.SweepSteps
}

// outcome is what happened to one run.
type outcome struct {
	input, runID string
	asked        map[string]*contracts.PendingRequest // requests seen pending, by id
	answered     map[string]bool                      // request ids whose answer was accepted
	failure      *RunFailure
	stuck        bool
	// budgetQuestions counts the budget questions among asked; spent is a completed budget
	// run's spent tokens.
	budgetQuestions int
	spent           *int
}

// drive starts run i and answers its approvals until it finishes.
func drive(ctx context.Context, cfg Config, i int) outcome {
	o := outcome{input: fmt.Sprintf("sweep-%d", i), asked: map[string]*contracts.PendingRequest{}, answered: map[string]bool{}}
	ctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	b, _ := json.Marshal(o.input)
	wf, opts := testagents.SweepWorkflow, kortyx.StartOptions{TaskQueue: cfg.TaskQueue}
	if cfg.Fast {
		wf, opts.WorkflowTaskTimeout = testagents.SweepFastWorkflow, workflows.FastPathTaskTimeout
	}
	in := contracts.RunInput{Workflow: wf, Input: b, SessionID: "sweep"}
	if cfg.Budget {
		in.Workflow, in.Limits = testagents.SweepTreeWorkflow, &contracts.Limits{MaxTokens: cfg.BudgetTokens, BudgetWarnAt: 1}
		if cfg.TenantTokens > 0 {
			in.Tenant = cfg.TaskQueue
		}
	}
	run, err := kortyx.StartRun(ctx, cfg.Client, in, opts)
	if err != nil {
		f := contracts.FailureOf(err)
		o.failure = &RunFailure{Code: f.Code, Message: "starting the run: " + err.Error()}
		return o
	}
	o.runID = run.GetID()
	done := make(chan error, 1)
	var res contracts.RunResult
	go func() { done <- run.Get(ctx, &res) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			switch {
			case ctx.Err() != nil:
				o.stuck = true
			case err != nil:
				f := contracts.FailureOf(err)
				o.failure = &RunFailure{RunID: o.runID, Code: f.Code, Message: f.Message, Context: f.Context}
			case res.State.Data["answer"] != "done" || fmt.Sprint(res.State.Data["toolCalls"]) != strconv.Itoa(cfg.toolCalls()):
				o.failure = &RunFailure{RunID: o.runID, Code: "UNEXPECTED_RESULT", Message: fmt.Sprintf("result data %v", res.State.Data)}
			case cfg.Budget:
				s := res.State.Runtime.Spend
				if s == nil {
					o.failure = &RunFailure{RunID: o.runID, Code: "UNEXPECTED_RESULT", Message: "a budget run's result without its spend"}
					break
				}
				o.spent = &s.Tokens
				if s.Tokens != testagents.SweepTreeTokens || s.Tokens > s.MaxTokens {
					o.failure = &RunFailure{RunID: o.runID, Code: "BUDGET_MISCOUNTED", Message: fmt.Sprintf("spent %d tokens of %d (%d when every pass counts once)", s.Tokens, s.MaxTokens, testagents.SweepTreeTokens)}
				}
			}
			return o
		case <-tick.C:
		}
		answer(ctx, cfg, &o)
	}
}

// answer approves the run's pending question, and sends again the answers not confirmed yet
// (same update id: one effect). Queries and updates fail while no worker is alive; the caller
// tries again on its next tick.
func answer(ctx context.Context, cfg Config, o *outcome) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	view, err := kortyx.Query(qctx, cfg.Client, o.runID)
	cancel()
	if err == nil && view.Pending != nil && o.asked[view.Pending.RequestID] == nil {
		p := *view.Pending
		o.asked[p.RequestID] = &p
	}
	for _, id := range slices.Sorted(maps.Keys(o.asked)) {
		if o.answered[id] {
			continue
		}
		p := o.asked[id]
		choice := "approve" // a tool approval; Continue for a budget question
		if p.Input.ID == execution.BudgetQuestionID || p.Input.ID == execution.BudgetWarnID {
			choice = execution.BudgetContinue
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := kortyx.RespondAndWait(uctx, cfg.Client, o.runID, choice+"-"+id,
			contracts.Response{Token: p.Token, RequestID: id, Selected: []string{choice}})
		cancel()
		if err == nil {
			o.answered[id] = true
			if choice == execution.BudgetContinue {
				o.budgetQuestions++
			}
		} else if ctx.Err() == nil && contracts.FailureOf(err).Category == "request" {
			cfg.Logf("sweep: %s: answer to %s refused: %v", o.runID, id, err)
		}
	}
}

// killLoop keeps a worker process alive for MinKill–MaxKill at a time, SIGKILLs it and starts
// another, until stop is closed; it returns the number of kills.
func killLoop(ctx context.Context, cfg Config, stop <-chan struct{}) int {
	kills := 0
	for {
		cmd, err := startWorker(ctx, cfg)
		if err != nil {
			cfg.Logf("sweep: starting the worker: %v", err)
			select {
			case <-stop:
				return kills
			case <-time.After(time.Second):
				continue
			}
		}
		life := cfg.MinKill + rand.N(cfg.MaxKill-cfg.MinKill+1)
		select {
		case <-stop:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			return kills
		case <-time.After(life):
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		kills++
	}
}

// startWorker starts the testworker and waits for its "ready" line.
func startWorker(ctx context.Context, cfg Config) (*exec.Cmd, error) {
	cmd := exec.Command(cfg.WorkerBinary)
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+cfg.TemporalAddress,
		"KORTYX_TASK_QUEUE="+cfg.TaskQueue,
		"KORTYX_HTTP_ADDR=127.0.0.1:0",
		"KORTYX_EFFECTS_FILE="+cfg.Effects,
	)
	if cfg.Budget && cfg.TenantTokens > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("KORTYX_TENANT_MAX_TOKENS=%d", cfg.TenantTokens), "KORTYX_BUDGET_WARN_AT=1")
	}
	cmd.Stderr = cfg.WorkerStderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			if !once && strings.HasPrefix(sc.Text(), "ready ") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
		return cmd, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	return nil, errors.New("the worker did not print ready within 30 s")
}

// readEffects counts the executions per idempotency key and the model pass executions per
// run input.
func readEffects(path string) (keys, passes map[string]int, err error) {
	keys, passes = map[string]int{}, map[string]int{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return keys, passes, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, ok := strings.CutPrefix(line, testagents.KeyLine); ok {
			keys[k]++
		} else if m, ok := strings.CutPrefix(line, testagents.ModelLine); ok {
			input, _, _ := strings.Cut(m, " ")
			passes[input]++
		}
	}
	return keys, passes, nil
}
