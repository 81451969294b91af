package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"
)

// historyConfig is one way of running the history workload: the converter of the client and
// worker, and what else the worker's activities are given.
type historyConfig struct {
	name string
	// claimCheck: the codec with compression and a payload store (a directory), default
	// threshold — what KORTYX_PAYLOAD_STORE=<dir> configures.
	claimCheck bool
	// msgRefs: model passes send the conversation so far by one reference to its stored prefix
	// (activities.Config.Messages).
	msgRefs bool
	// configure, when set, adjusts the worker's activities (store: the claim-check store, nil
	// without claim check).
	configure func(acts *activities.Activities, store codec.Store) error
}

// historyConfigs are the configurations BenchmarkHistoryGrowth and TestHistoryAgree run. To add
// one (e.g. messages by reference once the model pass input can carry them), append a row.
var historyConfigs = []historyConfig{
	{name: "inline"},
	{name: "claimcheck", claimCheck: true},
	{name: "claimcheck+msgref", claimCheck: true, msgRefs: true, configure: func(acts *activities.Activities, store codec.Store) error {
		// What KORTYX_PAYLOAD_STORE configures on a worker: the claim check and the model
		// passes' conversation prefix by reference, in the same store.
		cdc, err := codec.New(codec.Options{Compress: true, Store: store})
		acts.Messages = cdc
		return err
	}},
}

// historyWorker is a client and worker (own task queue) of one configuration.
type historyWorker struct {
	cfg   historyConfig
	c     client.Client
	queue string
	store *countingStore // nil without claim check
}

var (
	historyWorkersMu sync.Mutex
	historyWorkers   = map[string]*historyWorker{}
)

// historyWorker returns the worker of cfg, starting it on first use (stopped with the shared
// environment). The inline configuration is the shared environment's own worker.
func (e *env) historyWorker(tb testing.TB, cfg historyConfig) *historyWorker {
	tb.Helper()
	historyWorkersMu.Lock()
	defer historyWorkersMu.Unlock()
	if hw := historyWorkers[cfg.name]; hw != nil {
		return hw
	}
	hw, err := e.startHistoryWorker(tb, cfg)
	if err != nil {
		tb.Fatalf("history worker %s: %v", cfg.name, err)
	}
	historyWorkers[cfg.name] = hw
	return hw
}

func (e *env) startHistoryWorker(tb testing.TB, cfg historyConfig) (*historyWorker, error) {
	if !cfg.claimCheck && cfg.configure == nil {
		return &historyWorker{cfg: cfg, c: e.c, queue: e.queue}, nil
	}
	hw := &historyWorker{cfg: cfg, queue: "kortyx-bench-history-" + cfg.name + "-" + uuid.NewString()}
	opts := client.Options{Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))}
	var store codec.Store
	if cfg.claimCheck {
		dir, err := os.MkdirTemp("", "kortyx-bench-payloads-")
		if err != nil {
			return nil, err
		}
		e.cleanups = append(e.cleanups, func() { _ = os.RemoveAll(dir) })
		ds, err := codec.NewDirStore(dir)
		if err != nil {
			return nil, err
		}
		hw.store = &countingStore{Store: ds, sizes: map[string]int{}}
		store = hw.store
		cdc, err := codec.New(codec.Options{Compress: true, Store: hw.store})
		if err != nil {
			return nil, err
		}
		opts.DataConverter = codec.DataConverter(cdc)
	}
	c, err := e.srv.Client(opts)
	if err != nil {
		return nil, err
	}
	e.cleanups = append(e.cleanups, c.Close)
	hw.c = c
	reg := workflows.NewRegistry()
	if err := reg.Add(historyDefinition()); err != nil {
		return nil, err
	}
	w := worker.New(c, hw.queue, worker.Options{})
	workflows.NewRunner(reg).Register(w)
	acts := &activities.Activities{Stream: e.broker}
	if err := reasonActivities(acts); err != nil {
		return nil, err
	}
	if cfg.configure != nil {
		if err := cfg.configure(acts, store); err != nil {
			return nil, err
		}
	}
	acts.Register(w)
	if err := w.Start(); err != nil {
		return nil, err
	}
	e.cleanups = append(e.cleanups, w.Stop)
	return hw, nil
}

// countingStore is a codec.Store that counts the bytes of the distinct payloads written to it.
type countingStore struct {
	codec.Store
	mu    sync.Mutex
	sizes map[string]int
	total int64
}

func (s *countingStore) Put(ctx context.Context, hash string, data []byte) error {
	if err := s.Store.Put(ctx, hash, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sizes[hash]; !ok {
		s.sizes[hash] = len(data)
		s.total += int64(len(data))
	}
	return nil
}

func (s *countingStore) stats() (payloads int, bytes int64) {
	if s == nil {
		return 0, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sizes), s.total
}

// historyCase is one measured history run.
type historyCase struct {
	Config string `json:"config"`
	Steps  int    `json:"steps"`
	Bytes  int    `json:"bytes"`
	// Status is "completed", "failed <code>" (the run ended with that error code) or
	// "timeout" (the run had not closed after historyCaseTimeout and was terminated).
	Status string `json:"status"`
	Tools  int    `json:"tools"` // tool executions
	Passes int    `json:"passes"`
	Events int    `json:"events"`
	// HistoryBytes is the sum of proto.Size of every event GetWorkflowHistory returns;
	// TemporalBytes is what the server counts (DescribeWorkflowExecution's historySizeBytes).
	HistoryBytes  int64  `json:"historyBytes"`
	TemporalBytes int64  `json:"temporalBytes"`
	LargestEvent  int    `json:"largestEvent"`
	LargestType   string `json:"largestType"` // event type of LargestEvent
	// FirstStep and LastStep are the bytes of the events of step 1 and of the last step that
	// ran a tool; a step is every event from its model pass's ActivityTaskScheduled up to the
	// next model pass's.
	FirstStep int64 `json:"firstStep"`
	LastStep  int64 `json:"lastStep"`
	// Unique is the content the tools produced (Tools × Bytes): each result is distinct.
	Unique int64   `json:"unique"`
	Ratio  float64 `json:"ratio"` // HistoryBytes / Unique
	// Refs counts claim-check references in history; StorePayloads and StoreBytes are what the
	// run added to the payload store (distinct hashes, bytes as stored: compressed).
	Refs          int     `json:"refs"`
	StorePayloads int     `json:"storePayloads"`
	StoreBytes    int64   `json:"storeBytes"`
	Error         string  `json:"error,omitempty"`
	Seconds       float64 `json:"seconds"`
}

// historyCaseTimeout bounds one run of the history workload.
const historyCaseTimeout = 3 * time.Minute

// claimCheckThreshold is the codec's default claim-check threshold (64 KiB, docs/codec.md).
const claimCheckThreshold = 64 << 10

// runHistoryCase runs the history workload once with hw and measures its history. A run that
// fails is a result (Status); an error is returned only when the run could not be started or
// its history not read.
func (e *env) runHistoryCase(hw *historyWorker, steps, size int) (historyCase, error) {
	hc := historyCase{Config: hw.cfg.name, Steps: steps, Bytes: size}
	ctx, cancel := context.WithTimeout(context.Background(), historyCaseTimeout)
	defer cancel()
	id := e.id("history-" + hw.cfg.name)
	input, err := json.Marshal(historyInput{Steps: steps, Bytes: size})
	if err != nil {
		return hc, err
	}
	storeN0, storeB0 := hw.store.stats()
	passes0 := historyModel.Calls()
	t0 := time.Now()
	run, err := kortyx.StartRun(ctx, hw.c, contracts.RunInput{Workflow: kortyxHistory, SessionID: "bench", Input: input},
		kortyx.StartOptions{RunID: id, TaskQueue: hw.queue})
	if err != nil {
		return hc, err
	}
	var res contracts.RunResult
	err = run.Get(ctx, &res)
	hc.Seconds = time.Since(t0).Seconds()
	switch {
	case err == nil && res.Status == contracts.StatusCompleted:
		hc.Status = "completed"
	case err == nil:
		hc.Status = "ended " + string(res.Status)
	case ctx.Err() != nil:
		hc.Status = "timeout"
		tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = hw.c.TerminateWorkflow(tctx, id, "", "history benchmark timeout")
		tcancel()
	default:
		hc.Status, hc.Error = "failed", err.Error()
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			hc.Status = "failed " + app.Type()
			hc.Error = app.Message()
		}
	}
	hc.Tools = historyToolRuns.get(id)
	hc.Passes = historyModel.Calls() - passes0 // one run at a time
	n1, b1 := hw.store.stats()
	hc.StorePayloads, hc.StoreBytes = n1-storeN0, b1-storeB0
	hctx, hcancel := context.WithTimeout(context.Background(), time.Minute)
	defer hcancel()
	if err := e.historyBytes(hctx, id, &hc); err != nil {
		return hc, err
	}
	d, err := e.c.DescribeWorkflow(hctx, id, "")
	if err != nil {
		return hc, err
	}
	hc.TemporalBytes = d.RawResponse.GetWorkflowExecutionInfo().GetHistorySizeBytes()
	hc.Unique = int64(hc.Tools) * int64(size)
	if hc.Unique > 0 {
		hc.Ratio = float64(hc.HistoryBytes) / float64(hc.Unique)
	}
	return hc, nil
}

var refEncoding = []byte("binary/kortyx-ref")

// historyBytes reads the run's history and fills the event and byte counts of hc.
func (e *env) historyBytes(ctx context.Context, id string, hc *historyCase) error {
	var perStep []int64 // index: model passes scheduled so far
	step := 0
	it := e.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == protocol.ModelActivityName {
			step++
		}
		raw, err := proto.Marshal(ev)
		if err != nil {
			return err
		}
		for len(perStep) <= step {
			perStep = append(perStep, 0)
		}
		perStep[step] += int64(len(raw))
		hc.Events++
		hc.HistoryBytes += int64(len(raw))
		if len(raw) > hc.LargestEvent {
			hc.LargestEvent, hc.LargestType = len(raw), strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
		}
		hc.Refs += bytes.Count(raw, refEncoding)
	}
	if hc.Tools >= 1 && len(perStep) > 1 {
		hc.FirstStep = perStep[1]
	}
	if last := hc.Tools; last >= 1 && last < len(perStep) {
		hc.LastStep = perStep[last]
	}
	return nil
}

// line formats hc as one "History" line of the benchmark output (read by bench/cmd/report).
func (hc historyCase) line() string {
	j, _ := json.Marshal(hc)
	return "History " + string(j)
}

// historySizes are the loops BenchmarkHistoryGrowth measures: steps × bytes per tool result.
var historySizes = []historyInput{
	{10, 1 << 10}, {50, 1 << 10}, {200, 1 << 10},
	{10, 100 << 10}, {50, 100 << 10}, {200, 100 << 10},
}

// BenchmarkHistoryGrowth runs the history workload (hooks.Reason, one tool call per model pass,
// each tool result Bytes long) for every configuration and size once per iteration and prints
// one "History {json}" line per run: events, history bytes, bytes of the first and last step,
// the ratio to the unique content, and how a run that fails failed. Run it with -benchtime 1x.
// KORTYX_BENCH_HISTORY_MAX_STEPS leaves out the longer loops (make bench sets 50: the 200-step
// rows are three quarters of the stage's steps).
func BenchmarkHistoryGrowth(b *testing.B) {
	e := setup(b)
	maxSteps := math.MaxInt
	if v, err := strconv.Atoi(os.Getenv("KORTYX_BENCH_HISTORY_MAX_STEPS")); err == nil && v > 0 {
		maxSteps = v
	}
	for _, cfg := range historyConfigs {
		hw := e.historyWorker(b, cfg)
		for _, sz := range historySizes {
			if sz.Steps > maxSteps {
				continue
			}
			b.Run(fmt.Sprintf("%s/steps=%d/kb=%d", cfg.name, sz.Steps, sz.Bytes>>10), func(b *testing.B) {
				for range b.N {
					hc, err := e.runHistoryCase(hw, sz.Steps, sz.Bytes)
					if err != nil {
						b.Fatal(err)
					}
					fmt.Println(hc.line())
					b.ReportMetric(float64(hc.HistoryBytes), "history-bytes")
					b.ReportMetric(float64(hc.Events), "events")
					b.ReportMetric(float64(hc.LastStep), "bytes/last-step")
					b.ReportMetric(float64(hc.Tools), "steps-done")
				}
			})
		}
	}
}

// TestHistoryAgree runs a short history loop in every configuration, with small and large tool
// results, and checks the work and what history holds: the same tool executions and model
// passes everywhere; claim-check references only with the claim check and only for the large
// results; the large results' bytes out of history with the claim check.
func TestHistoryAgree(t *testing.T) {
	e := setup(t)
	const steps = 3
	for _, cfg := range historyConfigs {
		hw := e.historyWorker(t, cfg)
		for _, size := range []int{1 << 10, 100 << 10} {
			t.Run(fmt.Sprintf("%s/%d", cfg.name, size), func(t *testing.T) {
				hc, err := e.runHistoryCase(hw, steps, size)
				require.NoError(t, err)
				t.Log(hc.line())
				require.Equal(t, "completed", hc.Status, hc.Error)
				require.Equal(t, steps, hc.Tools, "tool executions")
				require.Equal(t, steps+1, hc.Passes, "model passes")
				require.Equal(t, int64(steps*size), hc.Unique)
				require.Positive(t, hc.FirstStep)
				require.Positive(t, hc.LastStep)
				switch {
				case !cfg.claimCheck:
					require.Zero(t, hc.Refs, "no references without the claim check")
					require.Zero(t, hc.StorePayloads)
					// Inline, every tool result is in history at least twice (its activity's
					// result and the next pass's input).
					require.Greater(t, hc.HistoryBytes, int64(2*steps*size))
				case size < claimCheckThreshold && cfg.msgRefs:
					require.Zero(t, hc.Refs, "1 KB results stay inline under the threshold")
					require.Equal(t, steps+1, hc.StorePayloads, "one message prefix node per model pass")
					require.Less(t, 2*hc.LastStep, 3*hc.FirstStep, "a step's bytes do not grow with the conversation")
				case size < claimCheckThreshold:
					require.Zero(t, hc.Refs, "1 KB results stay inline under the threshold")
				default:
					require.Positive(t, hc.Refs, "100 KB results go to the store")
					require.GreaterOrEqual(t, hc.StorePayloads, steps, "one stored payload per tool result at least")
					require.Less(t, hc.HistoryBytes, int64(size), "history keeps references, not the results")
				}
			})
		}
	}
}
