package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/web"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// codecEnv sets the codec variables of the environment and returns the configuration and a
// client that uses the codec, as a worker, the API and the starter get them.
func codecEnv(t *testing.T, env map[string]string) (app.Config, client.Client) {
	t.Helper()
	for _, k := range []string{"KORTYX_CODEC_KEYS", "KORTYX_CODEC_KEY_ID", "KORTYX_CODEC_COMPRESS", "KORTYX_PAYLOAD_STORE",
		"KORTYX_PAYLOAD_THRESHOLD", "KORTYX_PAYLOAD_TTL", "KORTYX_REDIS_URL"} {
		t.Setenv(k, env[k])
	}
	t.Setenv("TEMPORAL_ADDRESS", srv.Address())
	t.Setenv("KORTYX_ROOT", t.TempDir())
	cfg := app.ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.NotNil(t, cfg.Codec)
	cfg.Logger = nil
	c, err := app.Dial(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return cfg, c
}

// historyBytes is the run's history as Temporal stores and returns it, read with a client that
// has no codec: payload data appears in it byte for byte.
func historyBytes(t *testing.T, runID string) []byte {
	t.Helper()
	b, err := proto.Marshal(history(t, tc, runID))
	require.NoError(t, err)
	return b
}

func secretText(t *testing.T) string {
	return fmt.Sprintf("zebra-secret-%d", time.Now().UnixNano())
}

// Issue 13 item 2: with encryption on, a history read straight from Temporal contains no user
// text; the worker, the client, the replayer and the /codec endpoint all decode it.
func TestCodecEncryptsHistory(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	cfg, c := codecEnv(t, map[string]string{"KORTYX_CODEC_KEYS": "old:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 16)) + ",k1:" + key, "KORTYX_CODEC_KEY_ID": "k1"})

	// Control: without the codec the same run writes the user's text into history.
	plain := startWorker(t, tc)
	control := secretText(t)
	run := startRun(t, tc, plain.tq, testagents.ToolAgentWorkflow, control)
	_, err := result(t, run)
	require.NoError(t, err)
	require.Contains(t, string(historyBytes(t, run.GetID())), control)

	e := startWorker(t, c)
	secret := secretText(t)
	run = startRun(t, c, e.tq, testagents.ToolAgentWorkflow, secret)
	res, err := result(t, run)
	require.NoError(t, err)
	state, err := json.Marshal(res.State)
	require.NoError(t, err)
	require.Contains(t, string(state), "recorded ", "the client decodes the result")

	raw := historyBytes(t, run.GetID())
	require.NotContains(t, string(raw), secret)
	require.Contains(t, string(raw), "binary/kortyx-aesgcm")

	// Every payload of the history is encrypted with k1 (none left as json/plain).
	h := history(t, tc, run.GetID())
	payloads := historyPayloads(h)
	require.NotEmpty(t, payloads)
	for _, p := range payloads {
		require.Equal(t, "binary/kortyx-aesgcm", string(p.Metadata["encoding"]), "%v", p)
		require.Equal(t, "k1", string(p.Metadata["kortyx-key-id"]))
	}

	// The replayer decodes it with the same converter, and not without.
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{DataConverter: codec.DataConverter(cfg.Codec)}))
	require.Error(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{}))

	// The /codec endpoint of the API decodes the start event's input for the Temporal UI.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, addr, err := app.ServeHTTP(ctx, "127.0.0.1:0", app.API{Client: c, Broker: e.broker, TaskQueue: e.tq, Codec: cfg.Codec,
		TemporalUIURL: "http://127.0.0.1:8233"})
	require.NoError(t, err)
	input := h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput()
	body, err := protojson.Marshal(input)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/codec/decode", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://127.0.0.1:8233")
	req.Header.Set("X-Namespace", "default")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(out))
	require.Equal(t, "http://127.0.0.1:8233", resp.Header.Get("Access-Control-Allow-Origin"))
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(out, &decoded))
	require.Len(t, decoded.Payloads, 1)
	require.Equal(t, "json/plain", string(decoded.Payloads[0].Metadata["encoding"]))
	require.Contains(t, string(decoded.Payloads[0].Data), secret)

	// The Temporal CLI shows the decoded history through the same endpoint.
	startInput := func(args ...string) *commonpb.Payload {
		out, err := exec.Command(tcliPath, append([]string{"workflow", "show", "--address", srv.Address(), "--workflow-id", run.GetID(), "-o", "json"}, args...)...).Output()
		require.NoError(t, err)
		h, err := kortyxtest.ReadHistory(bytes.NewReader(out))
		require.NoError(t, err)
		return h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	}
	require.Equal(t, "binary/kortyx-aesgcm", string(startInput().Metadata["encoding"]))
	shown := startInput("--codec-endpoint", "http://"+addr+"/codec")
	require.Equal(t, "json/plain", string(shown.Metadata["encoding"]))
	require.True(t, strings.Contains(string(shown.Data), secret), "%s", shown.Data)
}

// historyPayloads are the payloads of the events that carry user data: inputs and results.
func historyPayloads(h *historypb.History) []*commonpb.Payload {
	var ps []*commonpb.Payload
	add := func(p *commonpb.Payloads) { ps = append(ps, p.GetPayloads()...) }
	for _, ev := range h.Events {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			add(ev.GetWorkflowExecutionStartedEventAttributes().GetInput())
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			add(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult())
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			add(ev.GetActivityTaskScheduledEventAttributes().GetInput())
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			add(ev.GetActivityTaskCompletedEventAttributes().GetResult())
		case enums.EVENT_TYPE_MARKER_RECORDED:
			for _, p := range ev.GetMarkerRecordedEventAttributes().GetDetails() {
				add(p)
			}
		}
	}
	return ps
}

// Issue 13 item 1: payloads over the threshold are stored by content hash and history keeps a
// reference; a payload missing from the store is PAYLOAD_MISSING naming the hash.
func TestCodecClaimCheck(t *testing.T) {
	store := filepath.Join(t.TempDir(), "payloads")
	cfg, c := codecEnv(t, map[string]string{"KORTYX_PAYLOAD_STORE": store, "KORTYX_PAYLOAD_THRESHOLD": "200", "KORTYX_CODEC_COMPRESS": "false"})
	e := startWorker(t, c)
	secret := secretText(t) + strings.Repeat(" padding", 40)
	run := startRun(t, c, e.tq, testagents.ToolAgentWorkflow, secret)
	_, err := result(t, run)
	require.NoError(t, err)

	raw := historyBytes(t, run.GetID())
	require.NotContains(t, string(raw), secret, "the input is over the threshold: only its reference is in history")
	refs := 0
	for _, p := range historyPayloads(history(t, tc, run.GetID())) {
		if string(p.Metadata["encoding"]) == "binary/kortyx-ref" {
			refs++
			require.Regexp(t, `^sha256:[0-9a-f]{64}$`, string(p.Data))
		}
	}
	require.Positive(t, refs)
	var files []string
	require.NoError(t, filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	require.Positive(t, len(files))
	require.LessOrEqual(t, len(files), refs, "one file per distinct content")

	// The store loses the payloads: reading the run's input names the missing hash.
	require.NoError(t, os.RemoveAll(store))
	input := history(t, tc, run.GetID()).Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput()
	err = codec.DataConverter(cfg.Codec).FromPayloads(input, new(any))
	require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), string(input.Payloads[0].Data))
}

// Without codec variables nothing changes: no codec, no data converter in the client options
// (Temporal's default, so payload bytes are what they were), no /codec route; a bad variable
// stops the program at start.
func TestCodecOffChangesNothing(t *testing.T) {
	for _, k := range []string{"KORTYX_CODEC_KEYS", "KORTYX_CODEC_KEY_ID", "KORTYX_CODEC_COMPRESS", "KORTYX_PAYLOAD_STORE"} {
		t.Setenv(k, "")
	}
	t.Setenv("TEMPORAL_ADDRESS", srv.Address())
	cfg := app.ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Nil(t, cfg.Codec)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, addr, err := app.ServeHTTP(ctx, "127.0.0.1:0", app.API{Client: tc, Broker: startWorker(t, tc).broker})
	require.NoError(t, err)
	resp, err := http.Post("http://"+addr+"/codec/decode", "application/json", strings.NewReader(`{"payloads":[]}`))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	t.Setenv("KORTYX_CODEC_KEYS", "k1:not-base64!")
	cfg = app.ConfigFromEnv()
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(cfg.Err()), "%v", cfg.Err())
	_, err = app.Dial(cfg)
	require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err), "%v", err)
}

// The codec can be switched on while runs are in flight: a run that waits with plain payloads
// written by a worker without the codec is answered and finished by a worker with it; the
// answer is encrypted in history, the earlier payloads stay what they were.
func TestCodecSwitchedOnInFlight(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))
	_, c := codecEnv(t, map[string]string{"KORTYX_CODEC_KEYS": "k1:" + key})
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	e := &inproc{broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	newWorker := func(c client.Client) worker.Worker {
		w := newWorker(c, e.tq, reg, &activities.Activities{Stream: e.broker,
			Providers: providers.NewSet(fake.NewResponder(testagents.Responder(false)))})
		require.NoError(t, w.Start())
		return w
	}
	plain := newWorker(tc)
	run := startRun(t, tc, e.tq, "hello", "hi")
	chunks, at := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"interrupt", "done"}, types(chunks))
	ask, _ := interruptOf(t, chunks)
	// The chunks are published inside the workflow task that asks (a local activity): stop the
	// worker only once that task completed (its status upsert is visible), or the task would
	// wait for its timeout and be run again elsewhere.
	eventually(t, 10*time.Second, "the question's workflow task to complete", func() bool { return statusAttribute(t, tc, run.GetID()) == "waiting" })
	plain.Stop()
	// The answer's workflow task goes to the task queue, not to the stopped worker's sticky
	// queue, where it would wait for the sticky timeout first (once, in a clean-clone run, it
	// had not reached the new worker 30 s later).
	resetSticky(t, run.GetID())

	encrypting := newWorker(c)
	defer encrypting.Stop()
	name := fmt.Sprintf("Zed%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, kortyx.Respond(ctx, c, run.GetID(), answer(ask, name)))
	chunks, _ = nextResponse(t, e.follow, run.GetID(), at)
	require.Equal(t, []string{"message", "done"}, types(chunks))
	require.Equal(t, "Hello, "+name+"!", chunks[0].Content)
	var res contracts.RunResult
	require.NoError(t, c.GetWorkflow(ctx, run.GetID(), "").Get(ctx, &res))
	require.Equal(t, contracts.StatusCompleted, res.Status)

	require.NotContains(t, string(historyBytes(t, run.GetID())), name, "the answer and what was made of it are encrypted")
	h := history(t, tc, run.GetID())
	require.Equal(t, "json/plain", string(h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0].GetMetadata()["encoding"]))
	last := h.Events[len(h.Events)-1].GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads()[0]
	require.Equal(t, "binary/kortyx-aesgcm", string(last.GetMetadata()["encoding"]))
}

// A payload missing from the store while a run is in flight: the worker that has to replay the
// run fails its workflow task with the codec's message naming the hash (the codec panics in
// workflow code; a conversion error would make the Go SDK fail the whole run); the run keeps
// running, and when the store is back the retried task replays and the run continues.
func TestCodecMissingPayloadInFlight(t *testing.T) {
	store := filepath.Join(t.TempDir(), "payloads")
	_, c := codecEnv(t, map[string]string{"KORTYX_PAYLOAD_STORE": store, "KORTYX_PAYLOAD_THRESHOLD": "200", "KORTYX_CODEC_COMPRESS": "false"})
	reg, err := examples.Registry()
	require.NoError(t, err)
	e := &inproc{broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	newWorker := func() worker.Worker {
		w := newWorker(c, e.tq, reg, &activities.Activities{Stream: e.broker,
			Providers: providers.NewSet(fake.NewResponder(testagents.Responder(false)))})
		require.NoError(t, w.Start())
		return w
	}
	first := newWorker()
	run := startRun(t, c, e.tq, "hello", strings.Repeat("long input ", 40))
	chunks, at := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"interrupt", "done"}, types(chunks))
	ask, _ := interruptOf(t, chunks)
	ref := string(history(t, tc, run.GetID()).Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0].GetData())
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, ref)
	first.Stop()
	// The answer's workflow task goes to the task queue, not to the stopped worker's sticky
	// queue: there it would time out first (5 s), and a task that timed out leaves the failures
	// of its later attempts out of the history, where this test looks for the first one (a
	// clean-clone run once waited 30 s for it in vain).
	resetSticky(t, run.GetID())

	saved := store + ".saved"
	require.NoError(t, os.Rename(store, saved))
	worker.PurgeStickyWorkflowCache() // the next workflow task replays the history
	second := newWorker()
	defer second.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", contracts.RespondName, answer(ask, "Ada")))
	var failure string
	eventually(t, 30*time.Second, "a failed workflow task", func() bool {
		for _, ev := range history(t, tc, run.GetID()).Events {
			if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
				failure = a.GetFailure().GetMessage()
				return true
			}
		}
		return false
	})
	require.Contains(t, failure, ref)
	require.Contains(t, failure, "is not in the payload store")
	d, err := tc.DescribeWorkflow(ctx, run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())

	// The store comes back: the retried workflow task replays and the run answers.
	require.NoError(t, os.Rename(saved, store))
	chunks, _ = nextResponse(t, e.follow, run.GetID(), at)
	require.Equal(t, []string{"message", "done"}, types(chunks))
	require.Equal(t, "Hello, Ada!", chunks[0].Content)
}

// The programs share the codec of the environment: a worker process and the starter, both
// with KORTYX_CODEC_KEYS, run an agent with questions; its history holds none of the answers.
func TestCodecProgramsShareTheCodec(t *testing.T) {
	for _, k := range []string{"KORTYX_CODEC_KEY_ID", "KORTYX_CODEC_COMPRESS", "KORTYX_PAYLOAD_STORE", "KORTYX_PAYLOAD_THRESHOLD"} {
		t.Setenv(k, "")
	}
	t.Setenv("KORTYX_CODEC_KEYS", "k1:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)))
	tq := taskQueue(t)
	w := startWorkerProcess(t, srv.Address(), tq, filepath.Join(t.TempDir(), "effects.txt"))
	env := []string{"TEMPORAL_ADDRESS=" + srv.Address(), "KORTYX_TASK_QUEUE=" + tq, "KORTYX_STREAM_URL=http://" + w.addr}
	out, errOut, err := starter(t, env, "Quentinella\n2\n", "run", "effects", "hi")
	require.NoError(t, err, errOut)
	require.Contains(t, out, "intake: Welcome Quentinella, you are on pro.")
	m := regexp.MustCompile(`run (run-[0-9a-f-]+) completed`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	raw := string(historyBytes(t, m[1]))
	require.NotContains(t, raw, "Quentinella")
	require.Contains(t, raw, "binary/kortyx-aesgcm")
}

// With the codec on, a session's owner memo is encrypted like every payload: SessionOwner still
// reads the owner (through the session's query, which the client decodes), and the memo holds
// no plain owner name.
func TestCodecSessionOwner(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))
	_, c := codecEnv(t, map[string]string{"KORTYX_CODEC_KEYS": "k1:" + key, "KORTYX_CODEC_KEY_ID": "k1"})
	e := startWorker(t, c)
	ctx := context.Background()
	session := "codec-owner-" + taskQueue(t)
	_, err := service(c, e.tq).Start(ctx, session, sessions.TurnRequest{Workflow: testagents.EchoWorkflow, Input: json.RawMessage(`"hi"`), Owner: "alice-owner"})
	require.NoError(t, err)
	owner, err := service(c, "").Owner(ctx, session)
	require.NoError(t, err)
	require.Equal(t, "alice-owner", owner)

	d, err := tc.DescribeWorkflow(ctx, protocol.SessionWorkflowID(session), "")
	require.NoError(t, err)
	memo := d.RawResponse.GetWorkflowExecutionInfo().GetMemo().GetFields()[protocol.SessionOwnerMemo]
	require.NotNil(t, memo)
	require.Equal(t, "binary/kortyx-aesgcm", string(memo.GetMetadata()["encoding"]))
	require.NotContains(t, string(memo.GetData()), "alice-owner")
}

// The run inspector decodes an encrypted history with the client's converter: the timeline of a
// tool run shows the tool's arguments; with Temporal's default converter it could not.
func TestCodecTimeline(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	cfg, c := codecEnv(t, map[string]string{"KORTYX_CODEC_KEYS": "k1:" + key, "KORTYX_CODEC_KEY_ID": "k1"})
	e := startWorker(t, c)
	run := startRun(t, c, e.tq, testagents.ToolAgentWorkflow, secretText(t))
	_, err := result(t, run)
	require.NoError(t, err)

	tl := timelineOf(t, web.Options{Client: c, AllowUnauthenticated: true, DataConverter: codec.DataConverter(cfg.Codec)}, run.GetID())
	require.Positive(t, tl.ToolCalls)
	var tools int
	for _, en := range tl.Entries {
		if en.Kind == "tool" {
			tools++
			require.NotEmpty(t, en.Tool)
			require.NotEmpty(t, en.Arguments)
		}
	}
	require.Equal(t, tl.ToolCalls, tools)

	plain := timelineOf(t, web.Options{Client: c, AllowUnauthenticated: true}, run.GetID())
	require.Zero(t, plain.ToolCalls, "the default converter cannot read the encrypted activity inputs")
}

// runTimeline is the part of GET /api/runs/{id}/timeline that TestCodecTimeline reads.
type runTimeline struct {
	ToolCalls int `json:"toolCalls"`
	Entries   []struct {
		Kind      string          `json:"kind"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"entries"`
}

// timelineOf gets runID's timeline from the run inspector's route served with o.
func timelineOf(t *testing.T, o web.Options, runID string) runTimeline {
	t.Helper()
	rec := httptest.NewRecorder()
	web.Handler(o).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/runs/"+url.PathEscape(runID)+"/timeline", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var tl runTimeline
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &tl))
	return tl
}

// resetSticky sends the next workflow task of workflowID to its task queue rather than to the
// sticky queue of the worker that ran its last one (a stopped worker's sticky queue holds it
// until the sticky timeout).
func resetSticky(t *testing.T, workflowID string) {
	t.Helper()
	_, err := tc.WorkflowService().ResetStickyTaskQueue(context.Background(), &workflowservice.ResetStickyTaskQueueRequest{
		Namespace: "default", Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID}})
	require.NoError(t, err)
}
