package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// BenchmarkToolLoopStep: one node calling hooks.Reason with one tool; the model asks for the tool
// loopCalls times (one call per pass), then answers — loopCalls+1 model passes and loopCalls
// tool calls, silent (no text or tool chunks). Plain: a workflow executing the same two
// activities by name in the same loop. Reported per step (run time ÷ loopCalls).
func BenchmarkToolLoopStep(b *testing.B) { benchToolLoop(b, kortyxToolLoop, false) }

// BenchmarkToolLoopStepEmit is BenchmarkToolLoopStep with text and tool chunks published.
func BenchmarkToolLoopStepEmit(b *testing.B) { benchToolLoop(b, kortyxToolLoopEmit, true) }

func benchToolLoop(b *testing.B, wf string, emit bool) {
	e := setup(b)
	compare(b, "ms/step",
		func(b *testing.B) float64 {
			return benchLoopRuns(b, e, func(ctx context.Context) (string, error) {
				id, _, err := e.runKortyx(ctx, wf)
				return id, err
			})
		},
		func(b *testing.B) float64 {
			return benchLoopRuns(b, e, func(ctx context.Context) (string, error) {
				var out toolLoopResult
				return e.runPlain(ctx, plainToolLoop, &out, toolLoopInput{Emit: emit})
			})
		})
}

// benchLoopRuns times whole runs (start to result) and reports ms/step (÷ loopCalls), plus the
// history of the last run.
func benchLoopRuns(b *testing.B, e *env, run func(context.Context) (string, error)) float64 {
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
	perStep := ms(b.Elapsed()) / float64(b.N*loopCalls)
	b.ReportMetric(perStep, "ms/step")
	reportHistory(b, e, last)
	return perStep
}

// firstTokenVariant is one way to produce the first token of a run.
type firstTokenVariant struct {
	name   string
	broker stream.Broker
	// start starts producing run id's answer; finish (if not nil) waits for the run to end.
	start func(ctx context.Context, id string) (finish func(context.Context) error, err error)
}

// firstTokenVariants are the variants of BenchmarkTimeToFirstToken: a Kortyx run (hooks.Reason,
// kortyx.Model), a plain workflow whose activity streams the same provider to the same broker
// with and without kortyx.Model's heartbeat before each delta, and the provider called in
// process, publishing to a broker of its own (no Temporal).
func (e *env) firstTokenVariants() []firstTokenVariant {
	plain := func(heartbeat bool) func(context.Context, string) (func(context.Context) error, error) {
		return func(ctx context.Context, id string) (func(context.Context) error, error) {
			run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.queue}, plainFirstToken, heartbeat)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error {
				var text string
				return run.Get(ctx, &text)
			}, nil
		}
	}
	local := stream.NewMemory(stream.MemoryOptions{})
	return []firstTokenVariant{
		{name: "kortyx", broker: e.broker, start: func(ctx context.Context, id string) (func(context.Context) error, error) {
			run, err := kortyx.StartRun(ctx, e.c, contracts.RunInput{Workflow: kortyxFirstToken, SessionID: "bench"},
				kortyx.StartOptions{RunID: id, TaskQueue: e.queue})
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error {
				var res contracts.RunResult
				if err := run.Get(ctx, &res); err != nil {
					return err
				}
				if res.Status != contracts.StatusCompleted {
					return fmt.Errorf("run %s ended %s", id, res.Status)
				}
				return nil
			}, nil
		}},
		{name: "plain", broker: e.broker, start: plain(true)},
		{name: "plain-noheartbeat", broker: e.broker, start: plain(false)},
		{name: "inprocess", broker: local, start: func(ctx context.Context, id string) (func(context.Context) error, error) {
			pub := &deltaPublisher{broker: local, runID: id}
			_, err := generateFirstToken(ctx, pub, func(d string) error { return pub.delta(ctx, d) })
			return nil, err
		}},
	}
}

// firstToken is one measured first token.
type firstToken struct {
	id      string
	latency time.Duration // provider about to call onDelta → subscriber has the text-delta
	total   time.Duration // start (StartRun, ExecuteWorkflow, Generate) → subscriber has it
	chunk   contracts.Chunk
}

// measureFirstToken starts a run of v with a subscriber already waiting on the broker for the
// run's first text-delta chunk, and waits for the run to end. Only start → first token is timed
// (tm must be stopped on entry; it is stopped again on return).
func (e *env) measureFirstToken(ctx context.Context, tm timer, v firstTokenVariant) (firstToken, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := firstToken{id: e.id("ttft-" + v.name)}
	type arrival struct {
		at    time.Time
		chunk contracts.Chunk
		err   error
	}
	got := make(chan arrival, 1)
	go func() {
		c, err := firstDelta(ctx, v.broker, r.id)
		got <- arrival{time.Now(), c, err}
	}()
	time.Sleep(time.Millisecond) // let the subscriber park in Wait
	tm.StartTimer()
	t0 := time.Now()
	finish, err := v.start(ctx, r.id)
	if err != nil {
		tm.StopTimer()
		return r, err
	}
	a := <-got
	tm.StopTimer()
	if a.err != nil {
		return r, fmt.Errorf("waiting for the first text-delta of %s: %w", r.id, a.err)
	}
	if finish != nil {
		if err := finish(ctx); err != nil {
			return r, err
		}
	}
	stamp, ok := firstModel.take(r.id)
	if !ok {
		return r, fmt.Errorf("the provider recorded no first delta for %s", r.id)
	}
	r.latency, r.total, r.chunk = a.at.Sub(stamp), a.at.Sub(t0), a.chunk
	return r, nil
}

// firstDelta waits for the first text-delta chunk of a run.
func firstDelta(ctx context.Context, b stream.Broker, runID string) (contracts.Chunk, error) {
	var after int64
	for {
		entries, err := b.Read(ctx, runID, after, 0)
		if err != nil {
			return contracts.Chunk{}, err
		}
		for _, en := range entries {
			if en.Chunk.Type == contracts.ChunkTextDelta {
				return en.Chunk, nil
			}
			after = en.Offset
		}
		if err := b.Wait(ctx, runID, after); err != nil {
			return contracts.Chunk{}, err
		}
	}
}

// BenchmarkTimeToFirstToken: what lies between a provider producing its first text delta and a
// stream subscriber receiving it as a text-delta chunk (us/first-token), and, as context, from
// starting the run to that moment (ms/start-to-token; ns/op is the same). One fresh run per
// iteration; starting the subscriber and waiting for the run to end are not timed.
func BenchmarkTimeToFirstToken(b *testing.B) {
	e := setup(b)
	type result struct{ latency, total samples }
	results := map[string]*result{}
	variants := e.firstTokenVariants()
	for _, v := range variants {
		res := &result{}
		results[v.name] = res
		b.Run(v.name, func(b *testing.B) {
			b.StopTimer()
			b.ResetTimer()
			lat := make([]time.Duration, 0, b.N)
			var total time.Duration
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), iterationTimeout)
				r, err := e.measureFirstToken(ctx, b, v)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, r.latency)
				total += r.total
			}
			var sum time.Duration
			for _, l := range lat {
				sum += l
			}
			slices.Sort(lat)
			mean := us(sum) / float64(b.N)
			b.ReportMetric(mean, "us/first-token")
			b.ReportMetric(us(lat[len(lat)/2]), "us/first-token-p50")
			b.ReportMetric(ms(total)/float64(b.N), "ms/start-to-token")
			res.latency.add(b.N, mean)
			res.total.add(b.N, ms(total)/float64(b.N))
		})
	}
	line := "FirstToken " + b.Name() + " mean us/first-token:"
	for _, v := range variants {
		line += fmt.Sprintf(" %s %.1f", v.name, results[v.name].latency.mean())
	}
	k, in := results["kortyx"].latency.mean(), results["inprocess"].latency.mean()
	fmt.Printf("%s; kortyx-inprocess=%+.1f us (mean of %d repetitions)\n", line, k-in, results["kortyx"].latency.n())
	if km, pm := results["kortyx"].total.mean(), results["plain"].total.mean(); km > 0 && pm > 0 {
		fmt.Printf("Ratio %s kortyx/plain=%.2f (kortyx %.3f ms/start-to-token, plain %.3f ms/start-to-token; mean of %d and %d repetitions)\n",
			b.Name(), km/pm, km, pm, results["kortyx"].total.n(), results["plain"].total.n())
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// activityTypes counts the activities a closed workflow scheduled, by activity type.
func (e *env) activityTypes(ctx context.Context, id string) (map[string]int, error) {
	out := map[string]int{}
	it := e.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			out[a.GetActivityType().GetName()]++
		}
	}
	return out, nil
}

// TestReasonBaselinesAgree runs the hooks.Reason workloads once in every variant and checks that
// they do the same work: the same model passes, tool executions, messages sent to the model,
// answer and chunks; and that every first-token variant delivers the first delta.
func TestReasonBaselinesAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// shape is a model request without tool call ids (the fake numbers them per model).
	type msg struct {
		Role, Content, Name, Calls string
	}
	shape := func(msgs []providers.Message) []msg {
		out := make([]msg, len(msgs))
		for i, m := range msgs {
			out[i] = msg{Role: m.Role, Content: m.Content, Name: m.Name}
			for _, c := range m.ToolCalls {
				out[i].Calls += c.Name + string(c.Arguments) + ";"
			}
		}
		return out
	}
	type work struct {
		passes, tools int
		activities    map[string]int
		last          []msg
		chunks        []contracts.ChunkType
		stats         stats
	}
	measure := func(t *testing.T, run func() (string, error)) work {
		t.Helper()
		before := loopModel.Calls()
		id, err := run()
		require.NoError(t, err)
		reqs := loopModel.Requests()
		w := work{passes: loopModel.Calls() - before, tools: toolRuns.get(id), last: shape(reqs[len(reqs)-1].Messages)}
		w.activities, err = e.activityTypes(ctx, id)
		require.NoError(t, err)
		w.stats, err = e.history(ctx, id)
		require.NoError(t, err)
		w.chunks = e.chunkTypes(t, id)
		return w
	}

	for _, tc := range []struct {
		name string
		wf   string
		emit bool
	}{{"toolloop", kortyxToolLoop, false}, {"toolloop-emit", kortyxToolLoopEmit, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var kres contracts.RunResult
			k := measure(t, func() (string, error) {
				id, res, err := e.runKortyx(ctx, tc.wf)
				kres = res
				return id, err
			})
			var pres toolLoopResult
			p := measure(t, func() (string, error) {
				return e.runPlain(ctx, plainToolLoop, &pres, toolLoopInput{Emit: tc.emit})
			})
			logHistory(t, "kortyx", k.stats)
			logHistory(t, "plain", p.stats)
			t.Logf("chunks: kortyx %v, plain %v", k.chunks, p.chunks)

			require.Equal(t, loopAnswer, kres.State.Data["answer"], "kortyx answer")
			require.Equal(t, loopAnswer, pres.Text, "plain answer")
			for _, v := range []struct {
				name string
				w    work
			}{{"kortyx", k}, {"plain", p}} {
				require.Equal(t, loopCalls+1, v.w.passes, "%s model passes", v.name)
				require.Equal(t, loopCalls, v.w.tools, "%s tool executions", v.name)
				require.Equal(t, loopCalls+1, v.w.activities[protocol.ModelActivityName], "%s model activities", v.name)
				require.Equal(t, loopCalls, v.w.activities[protocol.ToolActivityName], "%s tool activities", v.name)
				require.Len(t, v.w.activities, 2, "%s activities: %v", v.name, v.w.activities)
				require.Equal(t, 2*loopCalls+1, v.w.stats.count(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED), "%s completed activities", v.name)
			}
			require.Equal(t, pres.Passes, k.passes)
			require.Equal(t, pres.ToolCalls, k.tools)
			require.Equal(t, 2*loopCalls+1, len(k.last), "last request: prompt + 10 × (assistant, tool)")
			require.Equal(t, k.last, p.last, "the last model request of both variants")
			require.Equal(t, pres.Usage.Total, kres.State.Runtime.TokenUsage.Total, "token usage")

			// Kortyx ends its stream with done; otherwise both publish the same chunks.
			require.Equal(t, contracts.ChunkDone, k.chunks[len(k.chunks)-1])
			require.Equal(t, p.chunks, k.chunks[:len(k.chunks)-1])
			if tc.emit {
				require.Equal(t, loopCalls, count(p.chunks, contracts.ChunkToolCallStart))
				require.Equal(t, loopCalls, count(p.chunks, contracts.ChunkToolCallResult))
				require.Equal(t, 4, count(p.chunks, contracts.ChunkTextDelta), "the answer's deltas")
			} else {
				require.Empty(t, p.chunks, "a silent plain loop publishes nothing")
			}
		})
	}

	t.Run("first-token", func(t *testing.T) {
		for _, v := range e.firstTokenVariants() {
			r, err := e.measureFirstToken(ctx, noTimer{}, v)
			require.NoError(t, err, v.name)
			require.Equal(t, firstTokenDeltas[0], r.chunk.Delta, v.name)
			require.Equal(t, "step-0", r.chunk.SegmentID, v.name)
			require.Positive(t, r.latency, v.name)
			if v.name != "inprocess" {
				types := e.chunkTypes(t, r.id)
				want := []contracts.ChunkType{contracts.ChunkTextStart}
				for range firstTokenDeltas {
					want = append(want, contracts.ChunkTextDelta)
				}
				want = append(want, contracts.ChunkTextEnd)
				if v.name == "kortyx" {
					want = append(want, contracts.ChunkDone)
				}
				require.Equal(t, want, types, v.name)
			}
			t.Logf("%s: provider → subscriber %s, start → first token %s", v.name, r.latency, r.total)
		}
	})
}
