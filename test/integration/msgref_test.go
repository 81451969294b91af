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

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
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
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

// msgrefResult is the text of tool call k: about size bytes, different for every call.
func msgrefResult(k, size int) string {
	return strings.Repeat(fmt.Sprintf("result %03d; ", k), size/12)
}

// msgrefEnv is a worker whose Reason loop calls the tool "big" steps times, then answers.
type msgrefEnv struct {
	tq       string
	broker   stream.Broker
	store    codec.Store
	storeDir string
	codec    *codec.Codec
	size     int // of a tool result
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
// the test (approval: every tool call waits for a human first); tool results of about 100 KB.
func startMsgrefWorker(t *testing.T, c client.Client, steps int, approval bool) *msgrefEnv {
	t.Helper()
	return startMsgrefWorkerSized(t, c, steps, approval, 100<<10)
}

// startMsgrefWorkerSized is startMsgrefWorker with tool results of about size bytes.
func startMsgrefWorkerSized(t *testing.T, c client.Client, steps int, approval bool, size int) *msgrefEnv {
	t.Helper()
	e := &msgrefEnv{tq: taskQueue(t), broker: stream.NewMemory(stream.MemoryOptions{}), size: size}
	var err error
	e.storeDir = filepath.Join(t.TempDir(), "payloads")
	e.store, err = codec.NewDirStore(e.storeDir)
	require.NoError(t, err)
	msgs, err := codec.New(codec.Options{Compress: true, Store: e.store})
	require.NoError(t, err)
	e.codec = msgs
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
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	big, err := tools.Func("big", "Returns a large text.", `{"type":"object"}`, func(_ context.Context, call tools.Call, _ map[string]any) (string, error) {
		e.tools.Add(1)
		var k int
		_, _ = fmt.Sscanf(call.ID, "c%d", &k)
		run, _, _ := strings.Cut(call.IdempotencyKey, ":")
		return msgrefResult(k, e.size) + run, nil // different in every run
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
			if m.Role == providers.RoleTool {
				done++
			}
		}
		if done < steps {
			return fake.Calls(providers.ToolCall{ID: fmt.Sprintf("c%d", done), Name: "big", Arguments: []byte(`{}`)})
		}
		return fake.Text(fmt.Sprintf("read %d results", done))
	})
	w := newWorker(c, e.tq, reg, &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(model), DefaultProvider: fake.ID, Tools: set, Messages: msgs},
		func(o *worker.Options) {
			// The Reason call's journal entry holds every tool result (3 MB for 30 results of
			// 100 KB), encoded in workflow code: under the race detector on a loaded machine
			// that took over the SDK's 1 s deadlock detection once, which panicked the task.
			// This test measures history sizes, not task latency.
			o.DeadlockDetectionTimeout = 20 * time.Second
		})
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
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == protocol.ModelActivityName {
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
func checkFullMessages(t *testing.T, e *msgrefEnv, req providers.Request, k int) {
	t.Helper()
	require.Len(t, req.Messages, 1+2*k)
	require.Equal(t, providers.RoleUser, req.Messages[0].Role)
	require.Equal(t, "go", req.Messages[0].Content)
	for i := range k {
		a, r := req.Messages[1+2*i], req.Messages[2+2*i]
		require.Equal(t, providers.RoleAssistant, a.Role)
		require.Equal(t, []string{fmt.Sprintf("c%d", i)}, []string{a.ToolCalls[0].ID})
		require.Equal(t, providers.RoleTool, r.Role)
		require.Equal(t, fmt.Sprintf("c%d", i), r.ToolCallID)
		var content string // a Go tool's string result reaches the model as JSON
		require.NoError(t, json.Unmarshal([]byte(r.Content), &content))
		require.True(t, strings.HasPrefix(content, msgrefResult(i, e.size)) && len(content) < len(msgrefResult(i, e.size))+60,
			"request %d, tool message %d is the full result (%d bytes)", k, i, len(content))
	}
}

// prefixNodes are the message prefix nodes in e's store by hash: the hash of the node before
// each ("" for a first node).
func prefixNodes(t *testing.T, e *msgrefEnv) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range storeObjects(t, e.store) {
		b, err := e.codec.LoadBytes(context.Background(), o.Hash)
		require.NoError(t, err)
		var n struct {
			Prev string `json:"prev"`
		}
		require.NoError(t, json.Unmarshal(b, &n))
		out[o.Hash] = n.Prev
	}
	return out
}

// Issue 13 item 1: with a message store, each model pass's input in history carries one
// reference to the conversation so far and only the messages added since the last pass (the
// assistant's call and the tool's result), so the last pass's input weighs what the first
// result pass's does, with small and with large tool results; the store holds one prefix node
// per pass; the model sees the full conversation.
func TestMessagesByReference(t *testing.T) {
	const steps = 30
	for _, size := range []int{1 << 10, 100 << 10} {
		t.Run(fmt.Sprintf("%dKB", size>>10), func(t *testing.T) {
			e := startMsgrefWorkerSized(t, tc, steps, false, size)
			run := startRun(t, tc, e.tq, "msgref", "go")
			res, err := result(t, run)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("read %d results", steps), res.State.Data["answer"])

			reqs := e.requests()
			require.Len(t, reqs, steps+1, "one model pass per step and the answer")
			require.Equal(t, int32(steps), e.tools.Load())
			for k, req := range reqs {
				checkFullMessages(t, e, req, k)
			}
			sizes, failures := modelInputs(t, tc, run.GetID())
			require.Len(t, sizes, steps+1)
			require.Empty(t, failures)
			one := len(msgrefResult(0, size))
			require.Less(t, sizes[0], 1<<10, "the first pass carries the user message")
			require.Greater(t, sizes[1], one, "the second carries the first result inline")
			require.Less(t, 2*sizes[steps], 3*sizes[1], "the last pass's input is within 1.5x the first result pass's: %v", sizes)
			require.Less(t, 2*sizes[1], 3*sizes[steps], "the last pass's input is within 1.5x the first result pass's: %v", sizes)
			total := 0
			for _, s := range sizes {
				total += s
			}
			inline := one * steps * (steps + 1) / 2 // what the results alone would weigh inline
			t.Logf("model inputs in history: %d bytes over %d passes (first %d, first result pass %d, last %d); inline they would carry > %d bytes of tool results",
				total, len(sizes), sizes[0], sizes[1], sizes[steps], inline)

			// One prefix node per pass, each linked to the one before: a single chain.
			nodes := prefixNodes(t, e)
			require.Len(t, nodes, steps+1)
			firsts, prevs := 0, map[string]bool{}
			for _, prev := range nodes {
				if prev == "" {
					firsts++
					continue
				}
				_, ok := nodes[prev]
				require.True(t, ok, "a node links to a stored node")
				prevs[prev] = true
			}
			require.Equal(t, 1, firsts)
			require.Len(t, prevs, steps, "every node but the newest is the prev of exactly one")
		})
	}
}

// A prefix node the store lost while the run waited (at an approval): the pass whose prefix
// chain ends in it fails with PAYLOAD_MISSING, runs once more with every message inline (and
// stores the conversation as a new first node), and the run completes.
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
			// Two passes stored a node each (the user message; the first call and result); the
			// store loses the first, which the chain of the next pass's prefix ends in.
			nodes := prefixNodes(t, e)
			require.Len(t, nodes, 2)
			lost := ""
			for h, prev := range nodes {
				if prev == "" {
					lost = h
				}
			}
			ok, err := e.store.Delete(context.Background(), lost, time.Now().Add(time.Hour))
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
		checkFullMessages(t, e, req, k)
	}
	require.Equal(t, int32(steps), e.tools.Load())
	sizes, failures := modelInputs(t, tc, run.GetID())
	require.Len(t, sizes, steps+2, "one pass was sent twice")
	require.Equal(t, []string{string(contracts.CodePayloadMissing)}, failures)
	require.Less(t, sizes[2], 2*len(msgrefResult(0, e.size)), "the failed attempt sent the prefix and one result")
	require.Greater(t, sizes[3], 2*len(msgrefResult(0, e.size)), "the retry carries both results inline")
	require.Less(t, sizes[4], 2*len(msgrefResult(0, e.size)), "the pass after it sends the retry's prefix and one result")
	nodes := prefixNodes(t, e)
	require.Len(t, nodes, steps, "the second pass's node, the retry's new first node, the last pass's")
	firsts := 0
	for _, prev := range nodes {
		if prev == "" {
			firsts++
		}
	}
	require.Equal(t, 1, firsts, "the retried pass stored the conversation as a new first node")
	d, err := tc.DescribeWorkflow(context.Background(), run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
}
