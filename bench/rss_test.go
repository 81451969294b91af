package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Names of bench/cmd/waitworker.
const (
	waitKortyx = "bench-wait"
	waitPlain  = "bench.PlainWait"
)

// waitWorkerBinary builds bench/cmd/waitworker once per test process.
var waitWorkerBinary = sync.OnceValues(func() (string, error) {
	return buildProgram("waitworker", "./bench/cmd/waitworker")
})

// waitWorker is a running waitworker process.
type waitWorker struct {
	cmd      *exec.Cmd
	queue    string
	lines    chan string
	stopOnce sync.Once
}

// startWaitWorker starts waitworker against the shared dev server on a new task queue, with the
// given sticky cache size (0: the SDK's default), and waits until it polls.
func (e *env) startWaitWorker(sticky int) (*waitWorker, error) {
	bin, err := waitWorkerBinary()
	if err != nil {
		return nil, err
	}
	ww := &waitWorker{queue: "kortyx-bench-wait-" + uuid.NewString(), lines: make(chan string, 16)}
	ww.cmd = exec.Command(bin)
	ww.cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+e.srv.Address(), "KORTYX_TASK_QUEUE="+ww.queue)
	if sticky > 0 {
		ww.cmd.Env = append(ww.cmd.Env, "KORTYX_BENCH_STICKY_CACHE="+strconv.Itoa(sticky))
	}
	ww.cmd.Stderr = os.Stderr
	out, err := ww.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := ww.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ww.lines <- sc.Text()
		}
		close(ww.lines)
	}()
	if err := ww.expect("ready", time.Minute); err != nil {
		ww.stop()
		return nil, err
	}
	return ww, nil
}

// expect waits for the process to print line.
func (ww *waitWorker) expect(line string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-ww.lines:
			if !ok {
				return fmt.Errorf("waitworker exited before printing %q", line)
			}
			if l == line {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("waitworker did not print %q within %s", line, timeout)
		}
	}
}

// rss returns the process's resident set size (VmRSS of /proc/<pid>/status) in bytes.
func (ww *waitWorker) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ww.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

// freeOSMemory asks the process to collect garbage and return freed memory to the OS.
func (ww *waitWorker) freeOSMemory() error {
	if err := ww.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	return ww.expect("freed", 30*time.Second)
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s); calling it again does nothing.
func (ww *waitWorker) stop() { ww.stopOnce.Do(ww.terminate) }

func (ww *waitWorker) terminate() {
	_ = ww.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = ww.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = ww.cmd.Process.Kill()
		<-done
	}
}

// startWaiting starts a run of variant on ww's queue and returns once it waits: its first
// workflow task completed and none is pending.
func (e *env) startWaiting(ctx context.Context, ww *waitWorker, variant string) (string, error) {
	id := e.id("wait-" + variant)
	var err error
	if variant == "kortyx" {
		_, err = kortyx.StartRun(ctx, e.c, contracts.RunInput{Workflow: waitKortyx, SessionID: "bench"},
			kortyx.StartOptions{RunID: id, TaskQueue: ww.queue})
	} else {
		_, err = e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: ww.queue}, waitPlain)
	}
	if err != nil {
		return id, err
	}
	for {
		d, err := e.c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return id, err
		}
		info := d.RawResponse.GetWorkflowExecutionInfo()
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return id, fmt.Errorf("run %s is %s, not waiting", id, info.GetStatus())
		}
		if d.RawResponse.GetPendingWorkflowTask() == nil && info.GetHistoryLength() >= 4 {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return id, fmt.Errorf("run %s did not reach its question: %w", id, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rssSample is one BenchmarkWorkerRSS measurement.
type rssSample struct {
	Variant string `json:"variant"`
	Sticky  int    `json:"stickyCache"` // 0: the SDK's default (10,000)
	Runs    int    `json:"runs"`
	// Idle, Waiting and Freed are VmRSS in bytes: after the worker polls (before any run),
	// once every run waits, and after a forced GC with debug.FreeOSMemory.
	Idle    int64 `json:"idle"`
	Waiting int64 `json:"waiting"`
	Freed   int64 `json:"freed"`
}

func (s rssSample) perRun(v int64) float64 { return float64(v-s.Idle) / float64(s.Runs) / 1024 }

// measureRSS starts a waitworker, n waiting runs of variant on it, and samples its RSS; it then
// terminates the runs and stops the worker.
func (e *env) measureRSS(variant string, sticky, n int) (rssSample, error) {
	s := rssSample{Variant: variant, Sticky: sticky, Runs: n}
	ww, err := e.startWaitWorker(sticky)
	if err != nil {
		return s, err
	}
	defer ww.stop()
	time.Sleep(time.Second) // let the pollers settle
	if err := ww.freeOSMemory(); err != nil {
		return s, err
	}
	if s.Idle, err = ww.rss(); err != nil {
		return s, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ids := make([]string, n)
	err = parallel(n, func(i int) (err error) { ids[i], err = e.startWaiting(ctx, ww, variant); return err })
	defer func() {
		_ = parallel(n, func(i int) error {
			if ids[i] != "" {
				_ = e.c.TerminateWorkflow(ctx, ids[i], "", "rss benchmark done")
			}
			return nil
		})
	}()
	if err != nil {
		return s, err
	}
	if s.Waiting, err = ww.rss(); err != nil {
		return s, err
	}
	if err := ww.freeOSMemory(); err != nil {
		return s, err
	}
	s.Freed, err = ww.rss()
	return s, err
}

// rssStickySmall is the sticky cache size of the "evicted" measurement: far below the number of
// waiting runs, so that nearly all of them have been evicted when the RSS is read.
const rssStickySmall = 10

// BenchmarkWorkerRSS: the resident memory a worker process (bench/cmd/waitworker, one per
// measurement) holds per waiting run: KORTYX_BENCH_WAITING runs (default 1,000) that each wait
// for an answer, with the SDK's default sticky cache (every run cached) and with a cache of 10
// (the runs evicted). KB/run is (VmRSS once all wait − VmRSS idle) ÷ runs; KB/run-freed the same
// after a forced GC and debug.FreeOSMemory. Each sample is also printed as an "RSS {json}"
// line. Run it with -benchtime 1x.
func BenchmarkWorkerRSS(b *testing.B) {
	e := setup(b)
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("KORTYX_BENCH_WAITING")); err == nil && v > 0 {
		n = v
	}
	for _, variant := range []string{"kortyx", "plain"} {
		for _, sticky := range []int{0, rssStickySmall} {
			name := "cache=default"
			if sticky > 0 {
				name = fmt.Sprintf("cache=%d", sticky)
			}
			b.Run(variant+"/"+name, func(b *testing.B) {
				for range b.N {
					s, err := e.measureRSS(variant, sticky, n)
					if err != nil {
						b.Fatal(err)
					}
					j, _ := json.Marshal(s)
					fmt.Println("RSS " + string(j))
					b.ReportMetric(s.perRun(s.Waiting), "KB/run")
					b.ReportMetric(s.perRun(s.Freed), "KB/run-freed")
					b.ReportMetric(float64(s.Idle)/(1<<20), "MB-idle")
				}
			})
		}
	}
}

// TestWorkerRSSAgree runs the RSS workload with 3 runs per variant on a worker process and
// checks that every run waits at its question (running, first workflow task completed, a
// local activity marker recorded).
func TestWorkerRSSAgree(t *testing.T) {
	e := setup(t)
	for _, variant := range []string{"kortyx", "plain"} {
		ww, err := e.startWaitWorker(rssStickySmall)
		require.NoError(t, err)
		t.Cleanup(ww.stop)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for range 3 {
			id, err := e.startWaiting(ctx, ww, variant)
			require.NoError(t, err, variant)
			s, err := e.history(ctx, id)
			require.NoError(t, err)
			require.Equal(t, 1, s.count(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), "%s %s", variant, id)
			// The question's publish (local activity); Kortyx also records its pinned definition
			// (a version marker and a SideEffect) and its id seed (a SideEffect: the request id
			// and resume token are derived from it).
			markers := map[string]int{"kortyx": 4, "plain": 1}[variant]
			require.Equal(t, markers, s.count(enumspb.EVENT_TYPE_MARKER_RECORDED), "%s %s", variant, id)
			require.NoError(t, e.c.TerminateWorkflow(ctx, id, "", "test done"))
		}
		rss, err := ww.rss()
		require.NoError(t, err)
		require.Positive(t, rss)
		cancel()
	}
}
