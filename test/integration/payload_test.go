package integration_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// The agents of the payload tests: "bigagent" calls the tools the model asks for, "confirm"
// with approval. The model (bigModel) asks, by the run's input: "two" big_a + big_b (1.1 MB
// results each) then confirm; "huge" huge (a 2.1 MB result); "text" nothing, and answers with
// 2.1 MB of text.
const bigAgent = "bigagent"

// bigState puts 2.1 MB into the run's data.
const bigState = "bigstate"

const (
	bigResult  = 1100 << 10
	hugeResult = 2100 << 10
)

func bigModel(req providers.Request) fake.Turn {
	for _, m := range req.Messages {
		if m.Role == providers.RoleTool {
			return fake.Text("done")
		}
	}
	switch req.Messages[len(req.Messages)-1].Content {
	case "two":
		return fake.Calls(providers.ToolCall{Name: "big_a", Arguments: json.RawMessage(`{}`)},
			providers.ToolCall{Name: "big_b", Arguments: json.RawMessage(`{}`)},
			providers.ToolCall{Name: "confirm", Arguments: json.RawMessage(`{}`)})
	case "huge":
		return fake.Call("huge", `{}`)
	case "text":
		return fake.Text(strings.Repeat("t", hugeResult))
	}
	return fake.Text("?")
}

func sized(name string, n int) tools.Tool {
	return tools.Tool{Name: name, Description: "Returns " + name + ".", InputSchema: contracts.MustCompileSchema(`{"type":"object"}`),
		Execute: func(ctx context.Context, call tools.Call) (tools.Result, error) {
			return tools.Result{Content: strings.Repeat("x", n)}, nil
		}}
}

func startPayloadWorker(t *testing.T) *inproc {
	t.Helper()
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t), effects: filepath.Join(t.TempDir(), "effects.txt")}
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	node := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model("fake:test"), Input: in.Text(),
			Tools: []string{"big_a", "big_b", "confirm", "huge"}, Timeout: 5 * time.Second,
			ToolExecution: hooks.ToolExecution{Approval: hooks.Only("confirm")}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "answer: " + res.Text[:min(len(res.Text), 10)]}}, nil
	}
	hoard := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		return workflows.NodeResult{Data: map[string]any{"blob": strings.Repeat("b", hugeResult)}}, nil
	}
	require.NoError(t, reg.Add(&workflows.Definition{ID: bigAgent, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: node}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}},
		&workflows.Definition{ID: bigState, Version: "1", Nodes: map[string]workflows.Node{"hoard": {Run: hoard}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "hoard"}}}))
	set, err := tools.NewSet(sized("big_a", bigResult), sized("big_b", bigResult), sized("confirm", 10), sized("huge", hugeResult))
	require.NoError(t, err)
	w := newWorker(tc, e.tq, reg, &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(fake.NewResponder(bigModel)), Tools: set})
	(&testagents.Recorder{File: e.effects}).Register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e
}

// requirePayloadError checks that a response ended with a PAYLOAD_TOO_LARGE error and done.
func requirePayloadError(t *testing.T, resp []contracts.Chunk, what string) contracts.Failure {
	t.Helper()
	require.GreaterOrEqual(t, len(resp), 2, "%v", types(resp))
	tail := resp[len(resp)-2:]
	require.Equal(t, []string{"error", "done"}, types(tail), "%v", types(resp))
	f := tail[0].Failure
	require.NotNil(t, f)
	require.Equal(t, contracts.CodePayloadTooLarge, f.Code, "%+v", f)
	requirePayloadDetails(t, *f, what)
	require.NotContains(t, tail[0].Message, "unexpected")
	return *f
}

// requirePayloadDetails checks the details of a PAYLOAD_TOO_LARGE failure.
func requirePayloadDetails(t *testing.T, f contracts.Failure, what string) {
	t.Helper()
	var d struct {
		What  string `json:"what"`
		Size  int    `json:"size"`
		Limit int    `json:"limit"`
		Fix   string `json:"fix"`
	}
	b, err := json.Marshal(f.Details)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &d))
	require.Equal(t, what, d.What, "%+v", f.Details)
	require.Equal(t, protocol.PayloadLimit, d.Limit)
	require.Greater(t, d.Size, protocol.PayloadLimit)
	require.NotEmpty(t, d.Fix)
	require.Contains(t, f.Message, what)
}

// A turn whose checkpoint would exceed the payload limit (two 1.1 MB tool results, then an
// approval question) fails with PAYLOAD_TOO_LARGE instead of getting its run terminated: the
// stream ends with error and done, and the session takes the next prompt.
func TestCheckpointOverThePayloadLimitFailsTheTurn(t *testing.T) {
	e := startPayloadWorker(t)
	session := "s-" + taskQueue(t)
	t1 := turn(t, e, session, bigAgent, "two")
	resp, _ := nextResponse(t, e.follow, t1.RunID, 0)
	requirePayloadError(t, resp, "the checkpoint of session turn 1")
	require.NotContains(t, types(resp), "interrupt", "a question that cannot be checkpointed is not asked")
	_, err := result(t, tc.GetWorkflow(context.Background(), t1.RunID, ""))
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err), "the run failed (not terminated): %v", err)

	eventually(t, 10*time.Second, "the failed turn to end", func() bool { return sessionView(t, e, session).Active == nil })

	// A final state over the limit, and a turn input over it: refused the same way.
	t2 := turn(t, e, session, bigState, "")
	resp, _ = nextResponse(t, e.follow, t2.RunID, 0)
	requirePayloadError(t, resp, "the run's result (its final state)")
	eventually(t, 10*time.Second, "the failed turn to end", func() bool { return sessionView(t, e, session).Active == nil })
	huge, _ := json.Marshal(strings.Repeat("i", hugeResult))
	_, err = service(e.c, e.tq).Start(context.Background(), session, sessions.TurnRequest{Workflow: testagents.EchoWorkflow, Input: huge})
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err), "%v", err)
	requirePayloadDetails(t, contracts.FailureOf(err), "the turn request")
	require.Equal(t, 413, httpwire.Status(contracts.FailureOf(err)))

	t2 = turn(t, e, session, testagents.EchoWorkflow, "next")
	require.Equal(t, 1, t2.TurnIndex, "the failed turn committed nothing")
	next, _ := nextResponse(t, e.follow, t2.RunID, 0)
	require.Equal(t, []string{"message", "checkpoint", "done"}, types(next))
	require.Equal(t, "Turn 1: next", next[0].Content)
}

// A tool result or model text over the limit fails the run with PAYLOAD_TOO_LARGE, and so
// does StartRun with an input over it.
func TestActivityResultsAndInputsOverThePayloadLimit(t *testing.T) {
	e := startPayloadWorker(t)
	for _, tt := range []struct{ input, what string }{
		{"huge", `the result of tool "huge"`},
		{"text", "the model's answer"},
	} {
		t.Run(tt.input, func(t *testing.T) {
			run := startRun(t, tc, e.tq, bigAgent, tt.input)
			resp, _ := nextResponse(t, e.follow, run.GetID(), 0)
			requirePayloadError(t, resp, tt.what)
			_, err := result(t, run)
			require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err), "%v", err)
		})
	}

	b, _ := json.Marshal(strings.Repeat("i", hugeResult))
	_, err := kortyx.StartRun(context.Background(), tc, contracts.RunInput{Workflow: testagents.EchoWorkflow, Input: b},
		kortyx.StartOptions{TaskQueue: e.tq})
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err), "%v", err)
	requirePayloadDetails(t, contracts.FailureOf(err), "the run input")

	// An answer over the limit is refused before it is sent; the question stays open.
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hi")
	resp, _ := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, resp)
	huge := answer(ask, strings.Repeat("a", hugeResult))
	err = kortyx.Respond(context.Background(), tc, run.GetID(), huge)
	requirePayloadDetails(t, contracts.FailureOf(err), "the answer")
	_, err = kortyx.RespondAndWait(context.Background(), tc, run.GetID(), "", huge)
	requirePayloadDetails(t, contracts.FailureOf(err), "the answer")
	_, err = kortyx.RespondAndWait(context.Background(), tc, run.GetID(), "", answer(ask, "Ada"))
	require.NoError(t, err)
}
