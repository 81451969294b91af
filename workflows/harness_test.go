package workflows_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

const testRunID = "default-test-workflow-id" // the workflow ID the test environment uses

// harness runs the run workflow in Temporal's test environment with an in-memory broker.
type harness struct {
	t       *testing.T
	env     *testsuite.TestWorkflowEnvironment
	broker  stream.Broker
	acts    *activities.Activities // set Providers and Tools before running
	reg     *workflows.Registry
	effects atomic.Int32 // executions of the "sideEffect" activity
}

func newHarness(t *testing.T, defs ...*workflows.Definition) *harness {
	t.Helper()
	h := &harness{t: t, env: newEnv(), broker: stream.NewMemory(stream.MemoryOptions{})}
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(defs...))
	workflows.NewRunner(reg).Register(h.env)
	h.reg = reg
	h.acts = &activities.Activities{Stream: h.broker}
	h.acts.Register(h.env)
	h.env.RegisterActivityWithOptions(func(ctx context.Context) error {
		h.effects.Add(1)
		return nil
	}, activity.RegisterOptions{Name: "sideEffect"})
	return h
}

// sideEffect runs the counting activity from node code.
func sideEffect(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, "sideEffect").Get(ctx, nil)
}

func (h *harness) run(workflow string, input any) {
	h.t.Helper()
	b, err := json.Marshal(input)
	require.NoError(h.t, err)
	h.env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: workflow, Input: b, SessionID: "s-1"})
	require.True(h.t, h.env.IsWorkflowCompleted())
}

func (h *harness) result() (contracts.RunResult, error) {
	var res contracts.RunResult
	err := h.env.GetWorkflowError()
	if err == nil {
		require.NoError(h.t, h.env.GetWorkflowResult(&res))
	}
	return res, err
}

func (h *harness) chunks() []contracts.Chunk {
	h.t.Helper()
	entries, err := h.broker.Read(context.Background(), testRunID, 0, 0)
	require.NoError(h.t, err)
	out := make([]contracts.Chunk, len(entries))
	for i, e := range entries {
		out[i] = e.Chunk
	}
	return out
}

func (h *harness) types() []string {
	var out []string
	for _, c := range h.chunks() {
		out = append(out, string(c.Type))
	}
	return out
}

func (h *harness) view() contracts.RunView {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(contracts.StateQueryName)
	require.NoError(h.t, err)
	var view contracts.RunView
	require.NoError(h.t, v.Get(&view))
	return view
}

// signalAt answers the pending request by signal at test time d.
func (h *harness) signalAt(d time.Duration, answer func(p contracts.PendingRequest) contracts.Response) {
	h.env.RegisterDelayedCallback(func() {
		v := h.view()
		require.NotNil(h.t, v.Pending, "run is not waiting at %s", d)
		h.env.SignalWorkflow(contracts.RespondName, answer(*v.Pending))
	}, d)
}

// updateAt answers the pending request by update at test time d and reports the outcome.
func (h *harness) updateAt(d time.Duration, answer func(p contracts.PendingRequest) contracts.Response, done func(contracts.RespondResult, error)) {
	h.env.RegisterDelayedCallback(func() {
		v := h.view()
		var p contracts.PendingRequest
		if v.Pending != nil {
			p = *v.Pending
		}
		h.env.UpdateWorkflow(contracts.RespondName, "u-"+d.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { done(contracts.RespondResult{}, err) },
			OnComplete: func(res any, err error) {
				var out contracts.RespondResult
				if r, ok := res.(contracts.RespondResult); ok {
					out = r
				}
				done(out, err)
			},
		}, answer(p))
	}, d)
}

func text(s string) func(contracts.PendingRequest) contracts.Response {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: s}
	}
}

func selected(ids ...string) func(contracts.PendingRequest) contracts.Response {
	return func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: ids}
	}
}

// def builds a definition from nodes and edges written as "from>to" or "from>to?when".
func def(id string, nodes map[string]workflows.NodeFunc, edges ...string) *workflows.Definition {
	d := &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{}}
	for name, fn := range nodes {
		d.Nodes[name] = workflows.Node{Run: fn}
	}
	for _, e := range edges {
		var from, to, when string
		rest := e
		if i := indexOf(rest, '?'); i >= 0 {
			when, rest = rest[i+1:], rest[:i]
		}
		i := indexOf(rest, '>')
		from, to = rest[:i], rest[i+1:]
		d.Edges = append(d.Edges, workflows.Edge{From: from, To: to, When: when})
	}
	return d
}

func indexOf(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// returns is a node that returns res.
func returns(res workflows.NodeResult) workflows.NodeFunc {
	return func(workflow.Context, workflows.NodeInput) (workflows.NodeResult, error) { return res, nil }
}

// newEnv returns a test environment that logs only warnings and errors.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	return s.NewTestWorkflowEnvironment()
}
