package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// overLimit is a string whose JSON is over the payload limit.
var overLimit = strings.Repeat("x", protocol.PayloadLimit)

// newPayloadHarness is a harness whose workflow tasks may take long: encoding megabytes of
// state in workflow code takes seconds under the race detector.
func newPayloadHarness(t *testing.T, defs ...*workflows.Definition) *harness {
	h := newHarness(t, defs...)
	h.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	return h
}

// requirePayloadFailure checks that the run failed with code (PAYLOAD_TOO_LARGE, or
// WORKFLOW_CALL_FAILED caused by it), that the PAYLOAD_TOO_LARGE is about what, and that the
// stream ended with error and done.
func requirePayloadFailure(t *testing.T, h *harness, code contracts.Code, what string) {
	t.Helper()
	_, err := h.result()
	require.Equal(t, code, contracts.CodeOf(err), "%v", err)
	chunks := h.chunks()
	require.GreaterOrEqual(t, len(chunks), 2)
	tail := chunks[len(chunks)-2:]
	require.Equal(t, contracts.ChunkError, tail[0].Type, "%v", h.types())
	require.Equal(t, contracts.ChunkDone, tail[1].Type)
	f := tail[0].Failure
	require.Equal(t, code, f.Code)
	if code != contracts.CodePayloadTooLarge {
		require.NotNil(t, f.Cause, "%+v", f)
		f = f.Cause
	}
	require.Equal(t, contracts.CodePayloadTooLarge, f.Code)
	var d struct {
		What  string `json:"what"`
		Size  int    `json:"size"`
		Limit int    `json:"limit"`
		Fix   string `json:"fix"`
	}
	b, err := json.Marshal(f.Details) // numbers are float64 once they crossed Temporal
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &d))
	require.Equal(t, what, d.What, "%+v", f.Details)
	require.Equal(t, protocol.PayloadLimit, d.Limit)
	require.Greater(t, d.Size, protocol.PayloadLimit)
	require.NotEmpty(t, d.Fix)
}

func TestContinueAsNewOverThePayloadLimitFails(t *testing.T) {
	h := newPayloadHarness(t, def("hoard", map[string]workflows.NodeFunc{
		"fill": returns(workflows.NodeResult{Data: map[string]any{"blob": overLimit}}),
		"next": returns(workflows.NodeResult{}),
	}, "__start__>fill", "fill>next"))
	b, _ := json.Marshal("go")
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: "hoard", Input: b, ContinueAsNewAfterNodes: 1})
	require.True(t, h.env.IsWorkflowCompleted())
	requirePayloadFailure(t, h, contracts.CodePayloadTooLarge, "the run's state carried into continue-as-new")
}

func TestChildCallInputOverThePayloadLimitFails(t *testing.T) {
	started := 0
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "research", Workflow: "upper", Input: map[string]any{"topic": overLimit}})
			return workflows.NodeResult{}, err
		},
	}, "__start__>call")
	h := newPayloadHarness(t, parent, child("upper", map[string]workflows.NodeFunc{"up": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		started++
		return upper(ctx, in)
	}}, "__start__>up"))
	h.run("parent", "go")
	requirePayloadFailure(t, h, contracts.CodeWorkflowCallFailed, `the input of workflow call "research"`)
	require.Zero(t, started, "the child never started")
}

func TestChildQuestionOverThePayloadLimitFails(t *testing.T) {
	parent := def("parent", map[string]workflows.NodeFunc{
		"call": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Workflow(ctx, hooks.WorkflowCall{ID: "ask", Workflow: "asker", Input: map[string]any{"topic": "x"}})
			return workflows.NodeResult{}, err
		},
	}, "__start__>call")
	asker := child("asker", map[string]workflows.NodeFunc{
		"fill": returns(workflows.NodeResult{Data: map[string]any{"blob": overLimit}}),
		"ask": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.AskText(ctx, "q", "Which?")
			return workflows.NodeResult{Data: map[string]any{"summary": "s"}}, err
		},
	}, "__start__>fill", "fill>ask")
	h := newPayloadHarness(t, parent, asker)
	h.run("parent", "go")
	requirePayloadFailure(t, h, contracts.CodeWorkflowCallFailed, `the question of child workflow "default-test-workflow-id/call#1/ask" with its state`)
	require.NotContains(t, h.types(), "interrupt")
}

// A session whose state stays over the limit without its older snapshots does not continue as
// new (which would fail): it goes on in its execution. (Its head is too large for a next
// turn's run, which StartTurn refuses with PAYLOAD_TOO_LARGE.)
func TestSessionOverThePayloadLimitDoesNotContinueAsNew(t *testing.T) {
	h := newPayloadHarness(t, def("echo", map[string]workflows.NodeFunc{"n": returns(workflows.NodeResult{})}, "__start__>n"))
	// The runs are stand-ins: the test sends their reports itself.
	h.env.OnWorkflow(contracts.RunWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in protocol.RunStart) (contracts.RunResult, error) {
			return contracts.RunResult{}, nil
		})
	b, _ := json.Marshal("hi")
	var turns []sessionapi.TurnStarted
	startTurn := func(id string) {
		h.env.UpdateWorkflow(protocol.SessionStartTurnUpdate, id, &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("turn %s: %v", id, err) },
			OnComplete: func(res any, err error) {
				require.NoError(t, err)
				turns = append(turns, res.(sessionapi.TurnStarted))
			},
		}, sessionapi.TurnRequest{Workflow: "echo", Input: b})
	}
	h.env.RegisterDelayedCallback(func() { startTurn("t1") }, time.Second)
	h.env.RegisterDelayedCallback(func() {
		run := turns[0].RunID
		snap := protocol.RunSnapshot{State: contracts.GraphState{Data: map[string]any{"blob": overLimit}}}
		h.env.SignalWorkflow(protocol.SessionCheckpointSignal, protocol.CheckpointReport{RunID: run, TurnEnded: true,
			Checkpoint: &protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp-1", SessionID: "s", RunID: run, TurnIndex: 1, Workflow: "echo", ActivePendingRequests: []contracts.PendingRequest{}}, Snapshot: &snap}})
	}, 2*time.Second)
	var refused error
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(protocol.SessionStartTurnUpdate, "t2", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { refused = err },
			OnComplete: func(res any, err error) { refused = err },
		}, sessionapi.TurnRequest{Input: b})
	}, 3*time.Second)
	var view sessionapi.SessionView
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(protocol.SessionQueryName)
		require.NoError(t, err)
		require.NoError(t, v.Get(&view))
	}, 4*time.Second)
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, time.Minute)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s"}, ContinueAsNewAfter: 1})
	require.True(t, temporal.IsCanceledError(h.env.GetWorkflowError()), "the session ran until cancelled: %v", h.env.GetWorkflowError())
	require.Len(t, turns, 1)
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(refused), "the next turn's run would start from the head's state: %v", refused)
	require.Contains(t, contracts.FailureOf(refused).Message, "the input of the turn's run")
	require.Equal(t, "cp-1", view.Head)
	require.Nil(t, view.Active, "the refused turn left nothing active")
}
