package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// env is the shared benchmark environment: one dev server, one client, one worker on a unique
// task queue, one in-memory broker.
type env struct {
	srv    *devserver.Server
	c      client.Client
	w      worker.Worker
	broker stream.Broker
	queue  string
	seq    atomic.Int64
	// cleanups run in reverse order when the environment closes (extra workers and clients).
	cleanups []func()
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
)

// TestMain owns the shared environment: it is started by the first test or benchmark that needs
// it (so "go test -run X" with nothing to run starts no server) and stopped here.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.close()
	}
	removeBuilds()
	os.Exit(code)
}

// builds holds the programs the benchmarks build, and is removed when they end: each binary is
// tens of megabytes, and a directory left behind per run fills the disk.
var builds struct {
	sync.Mutex
	dir string
}

// buildProgram builds the package pkg (relative to the module root) into the shared build
// directory under the name name.
func buildProgram(name, pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	builds.Lock()
	defer builds.Unlock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "kortyx-bench-")
		if err != nil {
			return "", err
		}
		builds.dir = dir
	}
	bin := filepath.Join(builds.dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

func removeBuilds() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir) // the process ends: nothing is left to do on failure
		builds.dir = ""
	}
}

// setup returns the shared environment, starting it on first use. A missing Temporal CLI or a
// server that does not start fails the caller: these benchmarks are meaningless without one.
func setup(tb testing.TB) *env {
	tb.Helper()
	setupOnce.Do(func() { shared, setupErr = start() })
	if setupErr != nil {
		tb.Fatalf("bench: %v", setupErr)
	}
	return shared
}

func start() (*env, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	bin, err := devserver.Find(root)
	if err != nil {
		return nil, fmt.Errorf("the benchmarks need the Temporal CLI to start a dev server and did not find it: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		BinaryPath:       bin,
		UIPort:           -1,
		SearchAttributes: protocol.SearchAttributeNames(),
	})
	if err != nil {
		return nil, err
	}
	e := &env{srv: srv, broker: stream.NewMemory(stream.MemoryOptions{}), queue: "kortyx-bench-" + uuid.NewString()}
	quiet := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if e.c, err = srv.Client(client.Options{Logger: quiet}); err != nil {
		e.close()
		return nil, err
	}
	reg := workflows.NewRegistry()
	if err := reg.Add(definitions()...); err != nil {
		e.close()
		return nil, err
	}
	w := worker.New(e.c, e.queue, worker.Options{})
	workflows.NewRunner(reg).Register(w)
	acts := &activities.Activities{Stream: e.broker}
	if err := registerReason(reg, acts, w); err != nil {
		e.close()
		return nil, err
	}
	if err := registerLocalTool(reg, acts, w); err != nil {
		e.close()
		return nil, err
	}
	acts.Register(w)
	registerPlain(w, e.broker)
	if err := w.Start(); err != nil {
		e.close()
		return nil, err
	}
	e.w = w
	return e, nil
}

func (e *env) close() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	if e.w != nil {
		e.w.Stop()
	}
	if e.c != nil {
		e.c.Close()
	}
	_ = e.srv.Stop()
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// id returns a new workflow ID.
func (e *env) id(prefix string) string {
	return fmt.Sprintf("bench-%s-%d", prefix, e.seq.Add(1))
}

// runKortyx starts a Kortyx run of workflow wf and waits for its result, as a client would.
func (e *env) runKortyx(ctx context.Context, wf string) (string, contracts.RunResult, error) {
	id := e.id("k-" + wf)
	var res contracts.RunResult
	run, err := kortyx.StartRun(ctx, e.c, contracts.RunInput{Workflow: wf, SessionID: "bench"},
		kortyx.StartOptions{RunID: id, TaskQueue: e.queue})
	if err != nil {
		return id, res, err
	}
	if err := run.Get(ctx, &res); err != nil {
		return id, res, err
	}
	if res.Status != contracts.StatusCompleted {
		return id, res, fmt.Errorf("run %s ended %s", id, res.Status)
	}
	return id, res, nil
}

// runPlain starts plain workflow wf with args and waits for its result.
func (e *env) runPlain(ctx context.Context, wf string, result any, args ...any) (string, error) {
	id := e.id("p-" + wf)
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.queue}, wf, args...)
	if err != nil {
		return id, err
	}
	return id, run.Get(ctx, result)
}

// stats counts the history events of a closed workflow by type.
type stats struct {
	events int
	byType map[enumspb.EventType]int
}

func (s stats) count(t enumspb.EventType) int { return s.byType[t] }

func (e *env) history(ctx context.Context, id string) (stats, error) {
	s := stats{byType: map[enumspb.EventType]int{}}
	it := e.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return s, err
		}
		s.events++
		s.byType[ev.GetEventType()]++
	}
	return s, nil
}

// waitChunk returns the first entry of the run's stream after offset after that matches ok,
// waiting for it.
func (e *env) waitChunk(ctx context.Context, id string, after int64, ok func(contracts.Chunk) bool) (stream.Entry, error) {
	return waitChunkOn(ctx, e.broker, id, after, ok)
}

// waitChunkOn is waitChunk on broker.
func waitChunkOn(ctx context.Context, broker stream.Broker, id string, after int64, ok func(contracts.Chunk) bool) (stream.Entry, error) {
	for {
		entries, err := broker.Read(ctx, id, after, 0)
		if err != nil {
			return stream.Entry{}, err
		}
		for _, en := range entries {
			if ok(en.Chunk) {
				return en, nil
			}
			after = en.Offset
		}
		if err := broker.Wait(ctx, id, after); err != nil {
			return stream.Entry{}, fmt.Errorf("waiting for a chunk of %s after offset %d: %w", id, after, err)
		}
	}
}

// waitIdle waits until the workflow has no workflow task scheduled or running, so that an answer
// sent next meets a run that is really waiting (not one still finishing the task that asked).
func (e *env) waitIdle(ctx context.Context, id string) error {
	for {
		d, err := e.c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return err
		}
		if d.RawResponse.GetPendingWorkflowTask() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("workflow %s still has a pending workflow task", id))
		case <-time.After(time.Millisecond):
		}
	}
}

func isType(t contracts.ChunkType) func(contracts.Chunk) bool {
	return func(c contracts.Chunk) bool { return c.Type == t }
}
