package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
)

// The throughput workload: a 3-step agent, three chained nodes each executing the no-op
// activity (the plain variant: PlainActivityWorkflow with n = 3).
const (
	kortyxThroughput = "bench-throughput"
	throughputSteps  = 3
	throughputRuns   = 200 // runs per concurrency level and variant, per iteration
)

// throughputLevels are the numbers of runs kept in flight.
var throughputLevels = []int{1, 10, 100}

// throughputDefinition is the 3-step Kortyx agent of the throughput workload.
func throughputDefinition() *workflows.Definition {
	return chainOf(kortyxThroughput, throughputSteps, activityNode)
}

// runThroughput completes total runs of run with c of them in flight at any time and returns
// the runs completed per second of wall time.
func runThroughput(ctx context.Context, c, total int, run func(context.Context) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	t0 := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(total) {
				if err := run(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(total) / elapsed.Seconds(), nil
}

// throughputRun returns one run of the Kortyx or the plain variant.
func (e *env) throughputRun(variant string) func(context.Context) error {
	if variant == "kortyx" {
		return func(ctx context.Context) error {
			_, _, err := e.runKortyx(ctx, kortyxThroughput)
			return err
		}
	}
	return func(ctx context.Context) error {
		var data map[string]any
		_, err := e.runPlain(ctx, plainActivity, &data, throughputSteps)
		return err
	}
}

// BenchmarkThroughput: runs completed per second with 1, 10 and 100 runs in flight, of the
// 3-step agent (three nodes, one no-op activity each) and of the plain workflow executing the
// same activity three times. Each iteration completes throughputRuns Kortyx runs, then as many
// plain ones (so drift in background load hits both), and reports kortyx-runs/s and
// plain-runs/s. Run it with -benchtime 1x and -count for repetitions.
func BenchmarkThroughput(b *testing.B) {
	e := setup(b)
	for _, c := range throughputLevels {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			var k, p float64
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				kr, err := runThroughput(ctx, c, throughputRuns, e.throughputRun("kortyx"))
				if err == nil {
					var pr float64
					pr, err = runThroughput(ctx, c, throughputRuns, e.throughputRun("plain"))
					p += pr
				}
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				k += kr
			}
			k, p = k/float64(b.N), p/float64(b.N)
			b.ReportMetric(k, "kortyx-runs/s")
			b.ReportMetric(p, "plain-runs/s")
			b.ReportMetric(k/p, "kortyx/plain")
		})
	}
}

// TestThroughputAgree runs the throughput workload briefly (10 runs of each variant, 5 in
// flight) and checks that both variants execute three activities per run and every run
// completes.
func TestThroughputAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, variant := range []string{"kortyx", "plain"} {
		var mu sync.Mutex
		var ids []string
		run := func(ctx context.Context) error {
			var id string
			var err error
			if variant == "kortyx" {
				id, _, err = e.runKortyx(ctx, kortyxThroughput)
			} else {
				var data map[string]any
				id, err = e.runPlain(ctx, plainActivity, &data, throughputSteps)
				if err == nil && data["i"] != float64(throughputSteps) {
					err = fmt.Errorf("plain run %s returned %v", id, data)
				}
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
			return err
		}
		rate, err := runThroughput(ctx, 5, 10, run)
		require.NoError(t, err, variant)
		require.Positive(t, rate)
		require.Len(t, ids, 10, variant)
		for _, id := range ids {
			s, err := e.history(ctx, id)
			require.NoError(t, err)
			require.Equal(t, throughputSteps, s.count(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED), "%s %s", variant, id)
			require.Equal(t, 1, s.count(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED), "%s %s", variant, id)
		}
	}
}
