package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// iterationTimeout bounds one benchmark iteration (one run or one round trip).
const iterationTimeout = time.Minute

// BenchmarkActivityStep: N nodes, each executing one no-op activity, vs a workflow executing the
// same activity N times.
func BenchmarkActivityStep(b *testing.B) {
	e := setup(b)
	compare(b, "ms/node",
		func(b *testing.B) float64 {
			return benchRuns(b, e, func(ctx context.Context) (string, error) {
				id, _, err := e.runKortyx(ctx, kortyxActivity)
				return id, err
			})
		},
		func(b *testing.B) float64 {
			return benchRuns(b, e, func(ctx context.Context) (string, error) {
				var data map[string]any
				return e.runPlain(ctx, plainActivity, &data, nodes)
			})
		})
}

// BenchmarkPublishStep: N nodes, each publishing one structured-data chunk, vs a workflow
// running N local activities that publish one chunk each to the same broker.
func BenchmarkPublishStep(b *testing.B) {
	e := setup(b)
	compare(b, "ms/node",
		func(b *testing.B) float64 {
			return benchRuns(b, e, func(ctx context.Context) (string, error) {
				id, _, err := e.runKortyx(ctx, kortyxPublish)
				return id, err
			})
		},
		func(b *testing.B) float64 {
			return benchRuns(b, e, func(ctx context.Context) (string, error) {
				var data map[string]any
				return e.runPlain(ctx, plainPublish, &data, nodes)
			})
		})
}

// BenchmarkPureNode: N nodes that only return data vs a workflow updating a map N times.
func BenchmarkPureNode(b *testing.B) {
	e := setup(b)
	compare(b, "ms/node",
		func(b *testing.B) float64 {
			return benchRuns(b, e, func(ctx context.Context) (string, error) {
				id, _, err := e.runKortyx(ctx, kortyxPure)
				return id, err
			})
		},
		func(b *testing.B) float64 {
			return benchRuns(b, e, func(ctx context.Context) (string, error) {
				var data map[string]any
				return e.runPlain(ctx, plainPure, &data, nodes)
			})
		})
}

// BenchmarkInterruptRoundTrip: a run waiting for an answer; one iteration is one answer (by
// signal or by update) until the chunk the run publishes after it is in the broker. Starting the
// run and waiting for its question are outside the timed region.
func BenchmarkInterruptRoundTrip(b *testing.B) {
	e := setup(b)
	for _, via := range []string{bySignal, byUpdate} {
		b.Run(via, func(b *testing.B) {
			compare(b, "ms/roundtrip",
				func(b *testing.B) float64 {
					return benchRoundTrips(b, e, func(ctx context.Context) (*waiting, error) { return e.askKortyx(ctx, via) })
				},
				func(b *testing.B) float64 {
					return benchRoundTrips(b, e, func(ctx context.Context) (*waiting, error) { return e.askPlain(ctx, via) })
				})
		})
	}
}

// compare runs the kortyx and plain sub-benchmarks (each -count times) and prints the ratio of
// their main metric, averaged over the repetitions, as a line that benchmark tools ignore.
func compare(b *testing.B, unit string, kortyx, plain func(*testing.B) float64) {
	var k, p samples
	b.Run("kortyx", func(b *testing.B) { k.add(b.N, kortyx(b)) })
	b.Run("plain", func(b *testing.B) { p.add(b.N, plain(b)) })
	if km, pm := k.mean(), p.mean(); km > 0 && pm > 0 {
		fmt.Printf("Ratio %s kortyx/plain=%.2f (kortyx %.3f %s, plain %.3f %s; mean of %d and %d repetitions)\n",
			b.Name(), km/pm, km, unit, pm, unit, k.n(), p.n())
	}
}

// samples collects the results of one sub-benchmark: for each -count repetition the testing
// package calls it with b.N = 1 (a probe), then with the requested b.N; only the calls with the
// largest b.N are kept.
type samples struct {
	maxN   int
	values []float64
}

func (s *samples) add(n int, v float64) {
	if n > s.maxN {
		s.maxN, s.values = n, nil
	}
	if n == s.maxN {
		s.values = append(s.values, v)
	}
}

func (s *samples) n() int { return len(s.values) }

func (s *samples) mean() float64 {
	if len(s.values) == 0 {
		return 0
	}
	var sum float64
	for _, v := range s.values {
		sum += v
	}
	return sum / float64(len(s.values))
}

// benchRuns times whole runs (start to result) and reports ms/node, plus the history of the
// last run.
func benchRuns(b *testing.B, e *env, run func(context.Context) (string, error)) float64 {
	var last string
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
		id, err := run(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		last = id
	}
	b.StopTimer()
	perNode := ms(b.Elapsed()) / float64(b.N*nodes)
	b.ReportMetric(perNode, "ms/node")
	reportHistory(b, e, last)
	return perNode
}

// benchRoundTrips times answer → next chunk round trips and reports ms/roundtrip, ms/ack (until
// the answering call returned) and the history of the last run.
func benchRoundTrips(b *testing.B, e *env, ask func(context.Context) (*waiting, error)) float64 {
	b.StopTimer()
	b.ResetTimer()
	var ack time.Duration
	var last string
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
		w, err := ask(ctx)
		if err == nil {
			var rt roundTrip
			if rt, err = e.answer(ctx, b, w); err == nil {
				ack += rt.ack
				err = w.finish(ctx)
			}
		}
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		last = w.id
	}
	perRT := ms(b.Elapsed()) / float64(b.N)
	b.ReportMetric(perRT, "ms/roundtrip")
	b.ReportMetric(ms(ack)/float64(b.N), "ms/ack")
	reportHistory(b, e, last)
	return perRT
}

func reportHistory(b *testing.B, e *env, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
	defer cancel()
	s, err := e.history(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(s.events), "events/run")
	b.ReportMetric(float64(s.count(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)), "wft/run")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// How an interrupt is answered.
const (
	bySignal = "signal"
	byUpdate = "update"
)

// waiting is a run waiting for an answer.
type waiting struct {
	id     string
	after  int64                           // offset of the last chunk published before waiting
	send   func(ctx context.Context) error // sends the answer; returns when the call returns
	finish func(ctx context.Context) error // waits for the run's result and checks it
}

// askKortyx starts the Kortyx interrupt workflow and returns once it waits, idle, for an
// answer. The resume token comes from the interrupt chunk (no query needed).
func (e *env) askKortyx(ctx context.Context, via string) (*waiting, error) {
	id := e.id("k-interrupt-" + via)
	run, err := kortyx.StartRun(ctx, e.c, contracts.RunInput{Workflow: kortyxInterrupt, SessionID: "bench"},
		kortyx.StartOptions{RunID: id, TaskQueue: e.queue})
	if err != nil {
		return nil, err
	}
	q, err := e.waitChunk(ctx, id, 0, isType(contracts.ChunkInterrupt))
	if err != nil {
		return nil, err
	}
	done, err := e.waitChunk(ctx, id, q.Offset, isType(contracts.ChunkDone))
	if err != nil {
		return nil, err
	}
	if err := e.waitIdle(ctx, id); err != nil {
		return nil, err
	}
	resp := contracts.Response{Token: q.Chunk.ResumeToken, RequestID: q.Chunk.RequestID, Text: "yes"}
	w := &waiting{id: id, after: done.Offset}
	w.send = func(ctx context.Context) error {
		if via == bySignal {
			return kortyx.Respond(ctx, e.c, id, resp)
		}
		_, err := kortyx.RespondAndWait(ctx, e.c, id, "", resp)
		return err
	}
	w.finish = func(ctx context.Context) error {
		var res contracts.RunResult
		if err := run.Get(ctx, &res); err != nil {
			return err
		}
		if res.Status != contracts.StatusCompleted {
			return fmt.Errorf("run %s ended %s", id, res.Status)
		}
		return nil
	}
	return w, nil
}

// askPlain starts the plain interrupt workflow and returns once it waits, idle, for an answer.
func (e *env) askPlain(ctx context.Context, via string) (*waiting, error) {
	id := e.id("p-interrupt-" + via)
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.queue}, plainInterrupt)
	if err != nil {
		return nil, err
	}
	q, err := e.waitChunk(ctx, id, 0, isType(contracts.ChunkInterrupt))
	if err != nil {
		return nil, err
	}
	if err := e.waitIdle(ctx, id); err != nil {
		return nil, err
	}
	w := &waiting{id: id, after: q.Offset}
	w.send = func(ctx context.Context) error {
		if via == bySignal {
			return e.c.SignalWorkflow(ctx, id, "", answerName, "yes")
		}
		h, err := e.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID:   id,
			UpdateID:     "answer",
			UpdateName:   answerName,
			Args:         []any{"yes"},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return err
		}
		var ok string
		return h.Get(ctx, &ok)
	}
	w.finish = func(ctx context.Context) error {
		var answer string
		if err := run.Get(ctx, &answer); err != nil {
			return err
		}
		if answer != "yes" {
			return fmt.Errorf("workflow %s returned %q, want \"yes\"", id, answer)
		}
		return nil
	}
	return w, nil
}

// timer is the part of *testing.B that answer drives; tests pass noTimer.
type timer interface {
	StartTimer()
	StopTimer()
}

type noTimer struct{}

func (noTimer) StartTimer() {}
func (noTimer) StopTimer()  {}

// roundTrip is one measured answer.
type roundTrip struct {
	rt   time.Duration // answer sent → next chunk in the broker
	ack  time.Duration // answer sent → answering call returned
	next stream.Entry  // the first chunk after the answer
}

// answer sends w's answer and waits for the next chunk, timing only that (tm must be stopped on
// entry; it is stopped again on return).
func (e *env) answer(ctx context.Context, tm timer, w *waiting) (roundTrip, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var r roundTrip
	var ackAt time.Time
	sent := make(chan error, 1)
	tm.StartTimer()
	t0 := time.Now()
	go func() {
		err := w.send(ctx)
		ackAt = time.Now()
		if err != nil {
			cancel() // do not wait for a chunk that will not come
		}
		sent <- err
	}()
	werr := e.broker.Wait(ctx, w.id, w.after)
	t1 := time.Now()
	tm.StopTimer()
	if err := <-sent; err != nil {
		return r, fmt.Errorf("answering %s: %w", w.id, err)
	}
	if werr != nil {
		return r, fmt.Errorf("waiting for the chunk after the answer to %s: %w", w.id, werr)
	}
	r.rt, r.ack = t1.Sub(t0), ackAt.Sub(t0)
	entries, err := e.broker.Read(ctx, w.id, w.after, 1)
	if err != nil || len(entries) == 0 {
		return r, fmt.Errorf("reading the chunk after the answer to %s: %v", w.id, err)
	}
	r.next = entries[0]
	return r, nil
}

// TestBaselinesAgree runs every workload once in both variants and checks that they do the same
// work, so that the benchmarks compare like with like (and their code runs in CI).
func TestBaselinesAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	runBoth := func(t *testing.T, kortyxWF, plainWF string) (kid, pid string, kres contracts.RunResult, pdata map[string]any, ks, ps stats) {
		t.Helper()
		kid, kres, err := e.runKortyx(ctx, kortyxWF)
		require.NoError(t, err)
		pid, err = e.runPlain(ctx, plainWF, &pdata, nodes)
		require.NoError(t, err)
		ks, err = e.history(ctx, kid)
		require.NoError(t, err)
		ps, err = e.history(ctx, pid)
		require.NoError(t, err)
		logHistory(t, "kortyx", ks)
		logHistory(t, "plain", ps)
		require.Equal(t, fmt.Sprintf("n%d", nodes), kres.State.LastNode)
		return kid, pid, kres, pdata, ks, ps
	}
	sameData := func(t *testing.T, kres contracts.RunResult, pdata map[string]any) {
		t.Helper()
		require.Equal(t, float64(nodes), kres.State.Data["i"], "kortyx data")
		require.Equal(t, float64(nodes), pdata["i"], "plain data")
	}

	t.Run("activity", func(t *testing.T) {
		_, _, kres, pdata, ks, ps := runBoth(t, kortyxActivity, plainActivity)
		sameData(t, kres, pdata)
		require.Equal(t, nodes, ks.count(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED), "kortyx activities")
		require.Equal(t, nodes, ps.count(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED), "plain activities")
	})

	t.Run("publish", func(t *testing.T) {
		kid, pid, kres, pdata, ks, ps := runBoth(t, kortyxPublish, plainPublish)
		require.Empty(t, kres.State.Data, "kortyx publish nodes return no data")
		require.Empty(t, pdata, "plain publish keeps no data")
		kt, pt := e.chunkTypes(t, kid), e.chunkTypes(t, pid)
		require.Equal(t, nodes, count(kt, contracts.ChunkStructuredData), "kortyx chunks: %v", kt)
		require.Equal(t, nodes, count(pt, contracts.ChunkStructuredData), "plain chunks: %v", pt)
		require.Equal(t, contracts.ChunkDone, kt[len(kt)-1], "kortyx ends its stream with done")
		// One publish local activity per node in both: the last node's chunk goes out with done.
		// Kortyx: plus, once per run, the pinned-definition version marker, the recorded
		// definition and the lean run's id seed (execution.LeanVersion).
		require.Equal(t, nodes+3, ks.count(enumspb.EVENT_TYPE_MARKER_RECORDED), "kortyx local activities, the definition and the id seed")
		require.Equal(t, nodes, ps.count(enumspb.EVENT_TYPE_MARKER_RECORDED), "plain local activities")
	})

	t.Run("pure", func(t *testing.T) {
		kid, _, kres, pdata, ks, ps := runBoth(t, kortyxPure, plainPure)
		sameData(t, kres, pdata)
		require.Equal(t, []contracts.ChunkType{contracts.ChunkDone}, e.chunkTypes(t, kid))
		require.Zero(t, ps.count(enumspb.EVENT_TYPE_MARKER_RECORDED))
		require.Equal(t, 4, ks.count(enumspb.EVENT_TYPE_MARKER_RECORDED), "kortyx records its definition (version marker, side effect) and id seed, and publishes done")
	})

	for _, via := range []string{bySignal, byUpdate} {
		t.Run("interrupt/"+via, func(t *testing.T) {
			for _, variant := range []struct {
				name string
				ask  func(context.Context, string) (*waiting, error)
			}{{"kortyx", e.askKortyx}, {"plain", e.askPlain}} {
				w, err := variant.ask(ctx, via)
				require.NoError(t, err)
				r, err := e.answer(ctx, noTimer{}, w)
				require.NoError(t, err)
				require.NoError(t, w.finish(ctx))
				require.Equal(t, contracts.ChunkStructuredData, r.next.Chunk.Type, "%s: chunk after the answer", variant.name)
				require.JSONEq(t, `{"answer":"yes"}`, string(r.next.Chunk.Data), variant.name)
				s, err := e.history(ctx, w.id)
				require.NoError(t, err)
				logHistory(t, variant.name, s)
				t.Logf("%s: answer → chunk %s, answer call returned after %s", variant.name, r.rt, r.ack)
			}
		})
	}
}

func (e *env) chunkTypes(t *testing.T, id string) []contracts.ChunkType {
	t.Helper()
	entries, err := e.broker.Read(context.Background(), id, 0, 0)
	require.NoError(t, err)
	out := make([]contracts.ChunkType, len(entries))
	for i, en := range entries {
		out[i] = en.Chunk.Type
	}
	return out
}

func count(types []contracts.ChunkType, t contracts.ChunkType) int {
	n := 0
	for _, x := range types {
		if x == t {
			n++
		}
	}
	return n
}

// logHistory logs the history of a run by event type (visible with -v).
func logHistory(t *testing.T, variant string, s stats) {
	t.Helper()
	var parts []string
	for typ, n := range s.byType {
		parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(typ.String(), "EVENT_TYPE_"), n))
	}
	slices.Sort(parts)
	t.Logf("%s: %d events: %s", variant, s.events, strings.Join(parts, " "))
}
