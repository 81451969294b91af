package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
)

// BenchmarkWaitingRunMemory: what a run waiting for an answer costs the worker process that
// ran it. It starts KORTYX_BENCH_WAITING runs (default 1,000) that each ask a question, waits
// until all of them wait idle, and reports the growth of the Go heap in use and of the
// goroutine count per waiting run: while the runs sit in the worker's sticky workflow cache,
// and again after the cache is purged (what a worker that evicted them, or a new worker,
// holds). The in-memory broker, which keeps each run's chunks, is in both figures. Then it
// answers every run and waits for all of them to complete. The plain variant is a workflow
// blocked on a signal.
func BenchmarkWaitingRunMemory(b *testing.B) {
	e := setup(b)
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("KORTYX_BENCH_WAITING")); err == nil && v > 0 {
		n = v
	}
	for _, variant := range []string{"kortyx", "plain"} {
		b.Run(variant, func(b *testing.B) {
			ask := e.askKortyx
			if variant == "plain" {
				ask = e.askPlain
			}
			for i := 0; i < b.N; i++ {
				cached, evicted, goroutines := waitingCost(b, n, ask)
				b.ReportMetric(cached/1024, "KB/waiting-run")
				b.ReportMetric(evicted/1024, "KB/waiting-run-evicted")
				b.ReportMetric(goroutines, "goroutines/waiting-run")
			}
		})
	}
}

// waitingCost starts n waiting runs and returns the heap bytes per run with the runs cached and
// after the cache was purged, and the goroutines per cached run; it then completes the runs.
func waitingCost(b *testing.B, n int, ask func(context.Context, string) (*waiting, error)) (cached, evicted, goroutines float64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	worker.PurgeStickyWorkflowCache()
	heap0, g0 := heapInUse(), runtime.NumGoroutine()
	runs := make([]*waiting, n)
	if err := parallel(n, func(i int) (err error) { runs[i], err = ask(ctx, bySignal); return err }); err != nil {
		b.Fatal(err)
	}
	heap1, g1 := heapInUse(), runtime.NumGoroutine()
	worker.PurgeStickyWorkflowCache()
	// Evicted workflows stop their goroutines asynchronously: wait for them (at most 10 s).
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > g0+n/100 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	heap2, g2 := heapInUse(), runtime.NumGoroutine()
	if err := parallel(n, func(i int) error {
		if err := runs[i].send(ctx); err != nil {
			return fmt.Errorf("answering %s: %w", runs[i].id, err)
		}
		return runs[i].finish(ctx)
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(g2-g0)/float64(n), "goroutines/waiting-run-evicted")
	return float64(heap1-heap0) / float64(n), float64(heap2-heap0) / float64(n), float64(g1-g0) / float64(n)
}

// parallel calls fn(0..n-1), 16 at a time, and returns the first error.
func parallel(n int, fn func(i int) error) error {
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- fn(i)
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// heapInUse returns the bytes of the Go heap in use after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
