package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"
)

// The fast-path workloads (workflows.Definition.FastPath: model passes as local activities),
// each beside the same workload on the regular path, on workers of their own on the shared
// dev server and broker:
//   - the 50-step loop of BenchmarkToolLoop50 (the history workload), with its tool a regular
//     activity or a local one (tools.Local);
//   - answer → next chunk: a question, then a streamed Reason call; the round trip ends at the
//     pass's first chunk.
const (
	fastHistory    = "bench-history-fast" // the history workload with FastPath
	askReason      = "bench-ask-reason"   // AskText, then a streamed Reason call
	askReasonFast  = "bench-ask-reason-fast"
	answerProvider = "bench-answer" // answerModel
	answerText     = "Going ahead."
)

// The variants of the fast-path benchmarks (sub-benchmark names).
const (
	variantRegular   = "regular"         // the regular path: passes and tool calls are activity tasks
	variantFast      = "fast"            // passes are local activities, the tool a regular activity
	variantFastLocal = "fast-local-tool" // passes and the tool are local activities
)

// answerModel streams answerText.
var answerModel = fake.NewResponder(func(providers.Request) fake.Turn {
	return fake.Turn{Text: answerText, Deltas: []string{"Going ", "ahead."}}
}).WithID(answerProvider)

// fastWorkers are the task queues of the two fast-path workers: the blob tool regular or local.
type fastWorkers struct {
	once    sync.Once
	err     error
	regular string // blob tool regular
	local   string // blob tool local
}

var fast fastWorkers

// heartbeats counts the activity heartbeats the fast-path workers sent to the server (calls of
// RecordActivityTaskHeartbeat, which history does not show; the SDK throttles them, so these are
// the ones Temporal records). The benchmarks run one run at a time: the count of an iteration
// is its run's.
var heartbeats atomic.Int64

// countHeartbeats is a gRPC client interceptor counting heartbeat calls.
func countHeartbeats(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if strings.HasSuffix(method, "/RecordActivityTaskHeartbeat") || strings.HasSuffix(method, "/RecordActivityTaskHeartbeatById") {
		heartbeats.Add(1)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// fastQueues starts the fast-path workers once (stopped with the shared environment).
func (e *env) fastQueues(tb testing.TB) *fastWorkers {
	tb.Helper()
	fast.once.Do(func() {
		if fast.regular, fast.err = e.startFastWorker(false); fast.err == nil {
			fast.local, fast.err = e.startFastWorker(true)
		}
	})
	if fast.err != nil {
		tb.Fatalf("bench: starting the fast-path workers: %v", fast.err)
	}
	return &fast
}

// startFastWorker starts a worker with the fast-path workloads (and their regular twins) whose
// blob tool is a local activity when local, and returns its task queue.
func (e *env) startFastWorker(local bool) (string, error) {
	queue := e.id("kortyx-bench-fast")
	blob, err := blobTool()
	if err != nil {
		return "", err
	}
	if local {
		blob = tools.Local(blob)
	}
	set, err := tools.NewSet(blob)
	if err != nil {
		return "", err
	}
	reg := workflows.NewRegistry()
	reg.SetToolNames(set.Names()...)
	reg.SetLocalTools(set.LocalNames()...)
	hist := historyDefinition()
	fastHist := historyDefinition()
	fastHist.ID, fastHist.FastPath = fastHistory, true
	if err := reg.Add(hist, fastHist, askDefinition(askReason, false), askDefinition(askReasonFast, true)); err != nil {
		return "", err
	}
	c, err := e.srv.Client(client.Options{Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))), ConnectionOptions: client.ConnectionOptions{
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(countHeartbeats)}}})
	if err != nil {
		return "", err
	}
	e.cleanups = append(e.cleanups, c.Close)
	// Set up as the programs' workers are (activities.WorkerOptions: cancellation within the
	// heartbeat throttle).
	o := worker.Options{}
	activities.WorkerOptions(&o)
	w := worker.New(c, queue, o)
	workflows.NewRunner(reg).Register(w)
	(&activities.Activities{Stream: e.broker, Providers: providers.NewSet(historyModel, answerModel), Tools: set}).Register(w)
	if err := w.Start(); err != nil {
		return "", err
	}
	e.cleanups = append(e.cleanups, w.Stop)
	return queue, nil
}

// askDefinition is one node: a text question, then a streamed Reason call that answers.
func askDefinition(id string, fastPath bool) *workflows.Definition {
	ask := func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
		answer, err := hooks.AskText(ctx, "q", "Proceed?")
		if err != nil {
			return workflows.NodeResult{}, err
		}
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "go", Model: providers.ModelRef{Provider: answerProvider}, Input: answer})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
	return &workflows.Definition{ID: id, Version: "1", FastPath: fastPath,
		Nodes: map[string]workflows.Node{"ask": {Run: ask}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "ask"}, {From: "ask", To: workflows.End}}}
}

// fastStart starts a run of wf on queue; fast-path runs get workflows.FastPathTaskTimeout, as
// the session gives them.
func (e *env) fastStart(ctx context.Context, id, wf, queue string, input []byte, fastPath bool) (client.WorkflowRun, error) {
	opts := kortyx.StartOptions{RunID: id, TaskQueue: queue}
	if fastPath {
		opts.WorkflowTaskTimeout = workflows.FastPathTaskTimeout
	}
	return kortyx.StartRun(ctx, e.c, contracts.RunInput{Workflow: wf, SessionID: "bench", Input: input}, opts)
}

// runFastLoop runs the history workload of n steps in variant v.
func (e *env) runFastLoop(ctx context.Context, tb testing.TB, v string, n int) (string, contracts.RunResult, error) {
	q := e.fastQueues(tb)
	wf, queue, fastPath := kortyxHistory, q.regular, false
	switch v {
	case variantFast:
		wf, fastPath = fastHistory, true
	case variantFastLocal:
		wf, queue, fastPath = fastHistory, q.local, true
	}
	id := e.id("k-fastloop-" + v)
	var res contracts.RunResult
	input, err := json.Marshal(historyInput{Steps: n, Bytes: loop50Bytes})
	if err != nil {
		return id, res, err
	}
	run, err := e.fastStart(ctx, id, wf, queue, input, fastPath)
	if err != nil {
		return id, res, err
	}
	if err := run.Get(ctx, &res); err != nil {
		return id, res, err
	}
	if res.Status != contracts.StatusCompleted || res.State.Data["answer"] != historyAnswer {
		return id, res, fmt.Errorf("run %s ended %s with %v", id, res.Status, res.State.Data)
	}
	return id, res, nil
}

// BenchmarkFastPathToolLoop50: the 50-step loop of BenchmarkToolLoop50 (50 tool calls of
// 16-byte results, 51 model passes) per step, in the three variants side by side: regular,
// fast (passes local), fast-local-tool (passes and tool local). It also reports the run's
// history size and workflow tasks, and prints the ratios of the fast variants to the regular one.
func BenchmarkFastPathToolLoop50(b *testing.B) {
	e := setup(b)
	e.fastQueues(b)
	got := map[string]*samples{}
	for _, v := range []string{variantRegular, variantFast, variantFastLocal} {
		got[v] = &samples{}
		b.Run(v, func(b *testing.B) {
			var last string
			hb0 := heartbeats.Load()
			b.ResetTimer()
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				id, _, err := e.runFastLoop(ctx, b, v, loop50Steps)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				last = id
			}
			b.StopTimer()
			perStep := ms(b.Elapsed()) / float64(b.N*loop50Steps)
			b.ReportMetric(perStep, "ms/step")
			b.ReportMetric(float64(heartbeats.Load()-hb0)/float64(b.N), "heartbeats/run")
			reportHistory(b, e, last)
			got[v].add(b.N, perStep)
		})
	}
	printFastRatios(b, "ms/step", got)
}

// printFastRatios prints each fast variant's mean over the regular one's.
func printFastRatios(b *testing.B, unit string, got map[string]*samples) {
	reg := got[variantRegular].mean()
	for _, v := range []string{variantFast, variantFastLocal} {
		s, ok := got[v]
		if !ok || reg <= 0 || s.mean() <= 0 {
			continue
		}
		fmt.Printf("Ratio %s %s/regular=%.2f (%s %.3f %s, regular %.3f %s)\n", b.Name(), v, s.mean()/reg, v, s.mean(), unit, reg, unit)
	}
}

// askFast starts the ask workload (fast path or regular) and returns once it waits, idle, for
// an answer (by signal or update).
func (e *env) askFast(ctx context.Context, tb testing.TB, via string, fastPath bool) (*waiting, error) {
	q := e.fastQueues(tb)
	wf := askReason
	if fastPath {
		wf = askReasonFast
	}
	id := e.id("k-askfast-" + via)
	run, err := e.fastStart(ctx, id, wf, q.regular, nil, fastPath)
	if err != nil {
		return nil, err
	}
	qc, err := e.waitChunk(ctx, id, 0, isType(contracts.ChunkInterrupt))
	if err != nil {
		return nil, err
	}
	done, err := e.waitChunk(ctx, id, qc.Offset, isType(contracts.ChunkDone))
	if err != nil {
		return nil, err
	}
	if err := e.waitIdle(ctx, id); err != nil {
		return nil, err
	}
	resp := contracts.Response{Token: qc.Chunk.ResumeToken, RequestID: qc.Chunk.RequestID, Text: "yes"}
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
		if res.Status != contracts.StatusCompleted || res.State.Data["answer"] != answerText {
			return fmt.Errorf("run %s ended %s with %v", id, res.Status, res.State.Data)
		}
		return nil
	}
	return w, nil
}

// BenchmarkFastPathAnswerToChunk: a run waiting for an answer; one iteration is one answer (by
// signal or by update) until the first chunk of the model pass that follows it is in the
// broker, on the regular path and on the fast path side by side.
func BenchmarkFastPathAnswerToChunk(b *testing.B) {
	e := setup(b)
	e.fastQueues(b)
	for _, via := range []string{bySignal, byUpdate} {
		b.Run(via, func(b *testing.B) {
			got := map[string]*samples{}
			for _, v := range []string{variantRegular, variantFast} {
				got[v] = &samples{}
				b.Run(v, func(b *testing.B) {
					hb0 := heartbeats.Load()
					got[v].add(b.N, benchRoundTrips(b, e, func(ctx context.Context) (*waiting, error) {
						return e.askFast(ctx, b, via, v == variantFast)
					}))
					b.ReportMetric(float64(heartbeats.Load()-hb0)/float64(b.N), "heartbeats/run")
				})
			}
			printFastRatios(b, "ms/roundtrip", got)
		})
	}
}

// TestFastPathWorkloadsAgree runs the fast-path workloads once in every variant and checks that
// they do the same work: the same model passes and tool executions and the same answer, with
// the passes (and the local tool) scheduling no activity task on the fast path; and that the
// chunk after an answer is the pass's text-start.
func TestFastPathWorkloadsAgree(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 5
	want := map[string]map[string]int{
		variantRegular:   {protocol.ModelActivityName: n + 1, protocol.ToolActivityName: n},
		variantFast:      {protocol.ToolActivityName: n},
		variantFastLocal: {},
	}
	for _, v := range []string{variantRegular, variantFast, variantFastLocal} {
		p0 := historyModel.Calls()
		id, _, err := e.runFastLoop(ctx, t, v, n)
		require.NoError(t, err, v)
		require.Equal(t, n+1, historyModel.Calls()-p0, "%s: model passes", v)
		require.Equal(t, n, historyToolRuns.get(id), "%s: tool executions", v)
		acts, err := e.activityTypes(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want[v], acts, v)
	}
	for _, fastPath := range []bool{false, true} {
		w, err := e.askFast(ctx, t, bySignal, fastPath)
		require.NoError(t, err)
		rt, err := e.answer(ctx, noTimer{}, w)
		require.NoError(t, err)
		require.Equal(t, contracts.ChunkTextStart, rt.next.Chunk.Type, "fast path %v", fastPath)
		require.NoError(t, w.finish(ctx))
	}
}
