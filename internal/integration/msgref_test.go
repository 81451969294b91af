package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

// msgrefResult is the text of tool call k: ~100 KB, different for every call.
func msgrefResult(k int) string {
	return strings.Repeat(fmt.Sprintf("result %03d; ", k), 100<<10/12)
}

// msgrefEnv is a worker whose Reason loop calls the tool "big" steps times, then answers.
type msgrefEnv struct {
	tq       string
	broker   *stream.Memory
	store    *codec.DirStore
	storeDir string
	mu       sync.Mutex
	reqs     []providers.Request
	tools    atomic.Int32
}

func (e *msgrefEnv) requests() []providers.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]providers.Request(nil), e.reqs...)
}

// startMsgrefWorker starts the worker on client c, with the message store over a directory of
// the test (approval: every tool call waits for a human first).
func startMsgrefWorker(t *testing.T, c client.Client, steps int, approval bool) *msgrefEnv {
	t.Helper()
	e := &msgrefEnv{tq: taskQueue(t), broker: stream.NewMemory()}
	var err error
	e.storeDir = filepath.Join(t.TempDir(), "payloads")
	e.store, err = codec.NewDirStore(e.storeDir)
	require.NoError(t, err)
	msgs, err := codec.New(codec.Options{Compress: true, Store: e.store})
	require.NoError(t, err)
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "msgref", Version: "1", Nodes: map[string]workflows.Node{"agent": {
		Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{Input: in.Text(), Tools: []string{"big"},
				ToolExecution: hooks.ToolExecution{MaxSteps: steps + 1, MaxResultChars: -1, Approval: hooks.Switch{On: approval}}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text, "steps": len(res.Steps)}}, nil
		}}},
		Edges: []workflows.Edge{{From: contracts.StartNode, To: "agent"}}}))
	big, err := tools.Func("big", "Returns a large text.", `{"type":"object"}`, func(_ context.Context, call tools.Call, _ map[string]any) (string, error) {
		e.tools.Add(1)
		var k int
		_, _ = fmt.Sscanf(call.ID, "c%d", &k)
		run, _, _ := strings.Cut(call.IdempotencyKey, ":")
		return msgrefResult(k) + run, nil // different in every run
	})
	require.NoError(t, err)
	set, err := tools.NewSet(big)
	require.NoError(t, err)
	model := fake.NewResponder(func(req providers.Request) fake.Turn {
		e.mu.Lock()
		e.reqs = append(e.reqs, req)
		e.mu.Unlock()
		done := 0
		for _, m := range req.Messages {
			if m.Role == contracts.RoleTool {
				done++
			}
		}
		if done < steps {
			return fake.Calls(contracts.ToolCall{ID: fmt.Sprintf("c%d", done), Name: "big", Arguments: []byte(`{}`)})
		}
		return fake.Text(fmt.Sprintf("read %d results", done))
	})
	w := app.NewWorker(c, app.Config{TaskQueue: e.tq}, reg, &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set, Messages: msgs})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

func (e *msgrefEnv) follow(ctx context.Context, runID string, after int64, until stream.Until, fn func(int64, contracts.Chunk) error) error {
	return stream.Follow(ctx, e.broker, runID, after, until, func(en stream.Entry) error { return fn(en.Offset, en.Chunk) })
}

func storeObjects(t *testing.T, s codec.Store) []codec.Object {
	t.Helper()
	var out []codec.Object
	require.NoError(t, s.List(context.Background(), func(o codec.Object) error { out = append(out, o); return nil }))
	return out
}

// modelInputs are the sizes of the kortyx.Model inputs scheduled in the run's history, and
// the failure types of the model passes that failed.
func modelInputs(t *testing.T, c client.Client, runID string) (sizes []int, failures []string) {
	t.Helper()
	model := map[int64]bool{}
	for _, ev := range history(t, c, runID).Events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == contracts.ModelActivityName {
			model[ev.GetEventId()] = true
			sizes = append(sizes, proto.Size(a.GetInput()))
		}
		if a := ev.GetActivityTaskFailedEventAttributes(); a != nil && model[a.GetScheduledEventId()] {
			failures = append(failures, a.GetFailure().GetApplicationFailureInfo().GetType())
		}
	}
	return sizes, failures
}

// checkFullMessages: the provider saw every message of request k in full (user, then an
// assistant call and the tool's result per step).
func checkFullMessages(t *testing.T, req providers.Request, k int) {
	t.Helper()
	require.Len(t, req.Messages, 1+2*k)
	require.Equal(t, contracts.RoleUser, req.Messages[0].Role)
	require.Equal(t, "go", req.Messages[0].Content)
	for i := range k {
		a, r := req.Messages[1+2*i], req.Messages[2+2*i]
		require.Equal(t, contracts.RoleAssistant, a.Role)
		require.Equal(t, []string{fmt.Sprintf("c%d", i)}, []string{a.ToolCalls[0].ID})
		require.Equal(t, contracts.RoleTool, r.Role)
		require.Equal(t, fmt.Sprintf("c%d", i), r.ToolCallID)
		var content string // a Go tool's string result reaches the model as JSON
		require.NoError(t, json.Unmarshal([]byte(r.Content), &content))
		require.True(t, strings.HasPrefix(content, msgrefResult(i)) && len(content) < len(msgrefResult(i))+60,
			"request %d, tool message %d is the full result (%d bytes)", k, i, len(content))
	}
}

// Issue 13 item 1: with a message store, each model pass's input in history carries the
// newest messages inline and every earlier large message by reference, so the input stays
// about one tool result per step; each large message is stored once; the model sees the
// full conversation.
func TestMessagesByReference(t *testing.T) {
	const steps = 30
	e := startMsgrefWorker(t, tc, steps, false)
	run := startRun(t, tc, e.tq, "msgref", "go")
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("read %d results", steps), res.State.Data["answer"])

	reqs := e.requests()
	require.Len(t, reqs, steps+1, "one model pass per step and the answer")
	require.Equal(t, int32(steps), e.tools.Load())
	for k, req := range reqs {
		checkFullMessages(t, req, k)
	}
	sizes, failures := modelInputs(t, tc, run.GetID())
	require.Len(t, sizes, steps+1)
	require.Empty(t, failures)
	one := len(msgrefResult(0))
	require.Less(t, sizes[0], 2<<10, "the first pass carries the user message")
	require.Greater(t, sizes[1], one, "the second carries the first result inline")
	require.Less(t, sizes[steps], 2*sizes[1], "the last carries one result inline and references: %v", sizes)
	total := 0
	for _, s := range sizes {
		total += s
	}
	inline := one * steps * (steps + 1) / 2 // what the results alone would weigh inline
	require.Less(t, total, 2*steps*one, "model inputs in history: %d bytes (inline: > %d)", total, inline)
	t.Logf("model inputs in history: %d bytes over %d passes (last %d, first result pass %d); inline they would carry > %d bytes of tool results",
		total, len(sizes), sizes[steps], sizes[1], inline)

	// One object per tool result (the only messages of at least contracts.MessageRefMin).
	objs := storeObjects(t, e.store)
	require.Len(t, objs, steps)
}

// A reference the store lost while the run waited (at an approval): the pass that sends it
// fails with PAYLOAD_MISSING, runs once more with every message inline, and the run completes.
func TestMessageRefMissingFallsBackInline(t *testing.T) {
	const steps = 3
	e := startMsgrefWorker(t, tc, steps, true)
	run := startRun(t, tc, e.tq, "msgref", "go")
	at := int64(0)
	for k := range steps {
		var chunks []contracts.Chunk
		chunks, at = nextResponse(t, e.follow, run.GetID(), at)
		ask, in := interruptOf(t, chunks)
		require.Equal(t, "tool:c"+fmt.Sprint(k), in.ID)
		if k == 1 {
			// The first result is stored (the second pass read it inline); the store loses it.
			objs := storeObjects(t, e.store)
			require.Len(t, objs, 1)
			ok, err := e.store.Delete(context.Background(), objs[0].Hash, time.Now().Add(time.Hour))
			require.NoError(t, err)
			require.True(t, ok)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, tc.SignalWorkflow(ctx, run.GetID(), "", contracts.RespondName, answer(ask, "", "approve")))
		cancel()
	}
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("read %d results", steps), res.State.Data["answer"])
	reqs := e.requests()
	require.Len(t, reqs, steps+1, "the failed attempt never reached the model")
	for k, req := range reqs {
		checkFullMessages(t, req, k)
	}
	require.Equal(t, int32(steps), e.tools.Load())
	sizes, failures := modelInputs(t, tc, run.GetID())
	require.Len(t, sizes, steps+2, "one pass was sent twice")
	require.Equal(t, []string{string(contracts.CodePayloadMissing)}, failures)
	require.Greater(t, sizes[3], 2*len(msgrefResult(0)), "the retry carries both results inline")
	require.Len(t, storeObjects(t, e.store), steps, "the retried pass stored the lost result again")
	d, err := tc.DescribeWorkflow(context.Background(), run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
}
