package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"
)

var (
	root     string            // module root
	srv      *devserver.Server // the package's dev server
	tc       client.Client     // client of srv
	tcliPath string            // the temporal CLI
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	env, err := testenv.Start("the integration tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	root, tcliPath, srv, tc = env.Root, env.CLI, env.Server, env.Client
	// The worker programs these tests start on srv (outside dev mode) have no model key: they
	// answer from the scripted fake servers, which such a worker only starts when asked.
	if os.Getenv("KORTYX_FAKE_MODELS") == "" {
		_ = os.Setenv("KORTYX_FAKE_MODELS", "1")
	}
	// The programs built for the tests (binary) are removed with the run: about 230 MB each.
	defer func() {
		if buildDir != "" {
			_ = os.RemoveAll(buildDir)
		}
	}()
	return m.Run()
}

// quietLogger is a Temporal SDK logger that logs errors only.
func quietLogger() log.Logger { return testenv.QuietLogger() }

func dial(addr string) (client.Client, error) {
	return client.Dial(client.Options{HostPort: addr, Logger: quietLogger()})
}

// taskQueue returns a task queue of the test's own.
func taskQueue(t *testing.T) string {
	return "it-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano()%1e6)
}

// inproc is a worker running in the test process.
type inproc struct {
	c       client.Client
	broker  stream.Broker
	tq      string
	effects string
}

func startWorker(t *testing.T, c client.Client) *inproc {
	t.Helper()
	e := &inproc{c: c, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t), effects: filepath.Join(t.TempDir(), "effects.txt")}
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	rec := &testagents.Recorder{File: e.effects}
	set, err := tools.NewSet(rec.Tool())
	require.NoError(t, err)
	w := newWorker(c, e.tq, reg, &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(fake.NewResponder(testagents.Responder(false))), Tools: set})
	rec.Register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

// follower reads a run's stream: from a broker in the test process or over HTTP.
type follower func(ctx context.Context, runID string, after int64, until stream.Until, fn func(id int64, c contracts.Chunk) error) error

func (e *inproc) follow(ctx context.Context, runID string, after int64, until stream.Until, fn func(int64, contracts.Chunk) error) error {
	return stream.Follow(ctx, e.broker, runID, after, until, func(en stream.Entry) error { return fn(en.Offset, en.Chunk) })
}

func httpFollower(addr string) follower {
	sc := &sseclient.Client{BaseURL: "http://" + addr}
	return sc.Follow
}

// nextResponse reads one response (up to its done) after offset and returns its chunks and the
// offset of its done.
func nextResponse(t *testing.T, f follower, runID string, after int64) ([]contracts.Chunk, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []contracts.Chunk
	last := after
	require.NoError(t, f(ctx, runID, after, stream.UntilResponse, func(id int64, c contracts.Chunk) error {
		out = append(out, c)
		last = id
		return nil
	}))
	return out, last
}

// interruptOf returns the interrupt chunk of a response.
func interruptOf(t *testing.T, chunks []contracts.Chunk) (contracts.Chunk, contracts.InterruptInput) {
	t.Helper()
	for _, c := range chunks {
		if c.Type == contracts.ChunkInterrupt {
			var in contracts.InterruptInput
			require.NoError(t, json.Unmarshal(c.Input, &in))
			return c, in
		}
	}
	t.Fatalf("no interrupt in %v", types(chunks))
	return contracts.Chunk{}, contracts.InterruptInput{}
}

func types(chunks []contracts.Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = string(c.Type)
	}
	return out
}

func answer(c contracts.Chunk, text string, selected ...string) contracts.Response {
	return contracts.Response{Token: c.ResumeToken, RequestID: c.RequestID, Text: text, Selected: selected}
}

func startRun(t *testing.T, c client.Client, tq, wf, input string) client.WorkflowRun {
	t.Helper()
	b, _ := json.Marshal(input)
	run, err := kortyx.StartRun(context.Background(), c, contracts.RunInput{Workflow: wf, Input: b, SessionID: "it-session"},
		kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	return run
}

func result(t *testing.T, run client.WorkflowRun) (contracts.RunResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res contracts.RunResult
	err := run.Get(ctx, &res)
	return res, err
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// eventually polls cond every 50 ms until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isWaiting(t *testing.T, c client.Client, runID string) bool {
	runs, err := kortyx.ListWaiting(context.Background(), c, "")
	require.NoError(t, err)
	return slices.ContainsFunc(runs, func(r kortyx.WaitingRun) bool { return r.RunID == runID })
}

// statusAttribute reads the KortyxStatus search attribute without a worker.
func statusAttribute(t *testing.T, c client.Client, runID string) string {
	t.Helper()
	d, err := c.DescribeWorkflow(context.Background(), runID, "")
	require.NoError(t, err)
	p := d.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeStatus]
	var s string
	if p != nil {
		require.NoError(t, json.Unmarshal(p.GetData(), &s))
	}
	return s
}

func historyLength(t *testing.T, c client.Client, runID string) int {
	t.Helper()
	return len(history(t, c, runID).Events)
}

func history(t *testing.T, c client.Client, runID string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), runID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	return h
}

// recordHistory saves the run's history for the replay test when KORTYX_RECORD_HISTORIES=1.
func recordHistory(t *testing.T, c client.Client, name, runID string) {
	t.Helper()
	if os.Getenv("KORTYX_RECORD_HISTORIES") != "1" {
		return
	}
	raw, err := protojson.Marshal(history(t, c, runID))
	require.NoError(t, err)
	b, err := json.MarshalIndent(recorded{WorkflowID: runID, History: raw}, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join("testdata", "replay"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join("testdata", "replay", name+".json"), b, 0o644))
}

// recorded is a history kept under testdata/replay.
type recorded struct {
	WorkflowID string          `json:"workflowId"`
	History    json.RawMessage `json:"history"`
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binary builds a program of the module once per test process.
func binary(t *testing.T, pkg string) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "kortyx-it-bin")
		if buildErr != nil {
			return
		}
		for _, p := range []string{"./test/testworker", "./starter", "./worker", "./examples/ownworker"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, filepath.Base(p)), p)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", p, err, out)
				return
			}
		}
	})
	require.NoError(t, buildErr)
	return filepath.Join(buildDir, filepath.Base(pkg))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
