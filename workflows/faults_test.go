package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// dbSecret is what a failing tool's error says: an internal address and a password.
const dbSecret = `dial tcp 10.0.3.7:5432: password authentication failed for user "orders" (password "hunter2")`

// TestRetryableToolErrorReachesClientsAsSafeFailure: a retryable tool error that exhausts its
// retries fails the run with EXECUTION_FAILED "An unexpected error occurred." naming the
// activity; the error's text is in no chunk, and stays in the Temporal failure.
func TestRetryableToolErrorReachesClientsAsSafeFailure(t *testing.T) {
	var runs atomic.Int32
	vault, err := tools.Func("vault", "Reads the vault.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			runs.Add(1)
			return "", tools.Retryable(errors.New(dbSecret))
		})
	require.NoError(t, err)
	set, err := tools.NewSet(vault)
	require.NoError(t, err)
	model := fake.New(fake.Call("vault", `{}`), fake.Text("unreachable"))
	h := newHarness(t, def("agent", map[string]workflows.NodeFunc{
		"agent": reasonNode(hooks.ReasonOptions{ID: "a", Tools: []string{"vault"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true},
			Retry: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}}}, nil),
	}, "__start__>agent"))
	h.acts.Providers, h.acts.DefaultProvider, h.acts.Tools = providers.NewSet(model), fake.ID, set
	h.run("agent", "open the vault")

	_, werr := h.result()
	require.Error(t, werr)
	require.Contains(t, werr.Error(), "hunter2", "the full error stays in Temporal")
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(werr))
	require.EqualValues(t, 3, runs.Load())
	require.Equal(t, 1, model.Calls())
	require.Equal(t, []string{"tool-call-start", "error", "done"}, h.types())
	e := h.chunks()[1]
	require.Equal(t, "An unexpected error occurred.", e.Message)
	b, err := json.Marshal(e.Failure)
	require.NoError(t, err)
	// (The test environment reports no retry state; a real server adds "retryState".)
	require.JSONEq(t, `{"version":1,"code":"EXECUTION_FAILED","category":"internal","message":"An unexpected error occurred.",
		"retryable":false,"context":{"activity":"kortyx.Tool"}}`, string(b))
	all, err := json.Marshal(h.chunks())
	require.NoError(t, err)
	for _, leak := range []string{"hunter2", "10.0.3.7", "password", "TOOL_RETRY"} {
		require.NotContains(t, string(all), leak)
	}
}

// lostAttempts mocks an activity: its first n attempts fail as if their worker had died (a
// heartbeat timeout), later ones run real.
func lostAttempts[In, Out any](n int32, attempts *atomic.Int32, real func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		if attempts.Add(1) <= n {
			var zero Out
			return zero, temporal.NewHeartbeatTimeoutError()
		}
		return real(ctx, in)
	}
}

// TestLostAttemptsDoNotExhaustTheDefaultRetries: a model pass and a tool call that lose more
// attempts to dead workers than the old budgets (5 and 3) still complete with the default
// retry policies; the tool ran once.
func TestLostAttemptsDoNotExhaustTheDefaultRetries(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Text("Shipped."))
	var res hooks.ReasonResult
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"agent": reasonNode(hooks.ReasonOptions{ID: "a", Tools: []string{"lookup_order"}}, &res),
	}, "__start__>agent")
	var modelAttempts, toolAttempts atomic.Int32
	h.env.OnActivity(protocol.ModelActivityName, mock.Anything, mock.Anything).Return(lostAttempts(8, &modelAttempts, h.acts.Model))
	h.env.OnActivity(protocol.ToolActivityName, mock.Anything, mock.Anything).Return(lostAttempts(6, &toolAttempts, h.acts.Tool))
	h.run("agent", "where is A-1?")

	_, err := h.result()
	require.NoError(t, err)
	require.Equal(t, "Shipped.", res.Text)
	require.EqualValues(t, 8+1+1, modelAttempts.Load(), "8 lost attempts, then the two passes")
	require.EqualValues(t, 6+1, toolAttempts.Load())
	require.Equal(t, 1, box.n("lookup_order"))
	require.Equal(t, 2, model.Calls())
	// The first pass (the tool call) ran on attempt 9; the lost attempts published nothing, so
	// nothing is invalidated; the answer streams on its first attempt.
	require.Equal(t, []string{"text-start", "text-delta", "text-end", "done"}, h.types())
	require.Equal(t, "step-1", h.chunks()[0].SegmentID)
}

// TestModelPassThatNeverCompletesSaysWhy: a model pass whose attempts are all lost fails the run
// with ACTIVITY_TIMEOUT naming the activity and the timeout.
func TestModelPassThatNeverCompletesSaysWhy(t *testing.T) {
	model := fake.New(fake.Text("unreachable"))
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"agent": reasonNode(hooks.ReasonOptions{ID: "a"}, nil),
	}, "__start__>agent")
	var attempts atomic.Int32
	h.env.OnActivity(protocol.ModelActivityName, mock.Anything, mock.Anything).Return(lostAttempts(1<<30, &attempts, h.acts.Model))
	h.run("agent", "hello")

	_, err := h.result()
	require.Equal(t, contracts.CodeActivityTimeout, contracts.CodeOf(err))
	// The test environment stops an unlimited policy after 10 attempts (a real server retries
	// until the schedule-to-close timeout: see TestReasonActivityOptions).
	require.EqualValues(t, 10, attempts.Load(), "more attempts than the old budget of 5")
	require.Equal(t, []string{"error", "done"}, h.types())
	f := h.chunks()[0].Failure
	require.Equal(t, contracts.CodeActivityTimeout, f.Code)
	require.Equal(t, "Activity kortyx.Model did not complete in time (Heartbeat timeout).", f.Message)
	require.Equal(t, "kortyx.Model", f.Context["activity"])
	require.Equal(t, "Heartbeat", f.Context["timeout"])
	require.False(t, strings.Contains(h.chunks()[0].Message, "activity error"))
}

// TestUnreachableMCPServerFailsWithinItsRetryWindow: reading an MCP tool list is retried with
// no attempt limit for at most 3 minutes; then the run fails naming the activity.
func TestUnreachableMCPServerFailsWithinItsRetryWindow(t *testing.T) {
	model := fake.New(fake.Text("unreachable"))
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"agent": reasonNode(hooks.ReasonOptions{ID: "a", MCP: []hooks.MCPServer{{URL: "http://127.0.0.1:1/mcp"}}}, nil),
	}, "__start__>agent")
	var attempts atomic.Int32
	h.env.OnActivity(protocol.ListToolsActivityName, mock.Anything, mock.Anything).Return(
		func(context.Context, protocol.ListToolsInput) ([]protocol.OfferedTool, error) {
			attempts.Add(1)
			return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		})
	start := h.env.Now()
	h.run("agent", "hello")

	_, err := h.result()
	require.Equal(t, contracts.CodeExecutionFailed, contracts.CodeOf(err))
	// Backoff 1 s doubling up to 30 s: the 3-minute window ends after 10 attempts (1+2+…+30+30+30
	// = 151 s, the next would start at 181 s), more than the old budget of 5. (The test
	// environment also caps an unlimited policy at 10 attempts.)
	require.EqualValues(t, 10, attempts.Load())
	require.Equal(t, 151*time.Second, h.env.Now().Sub(start))
	require.Equal(t, 0, model.Calls())
	require.Equal(t, []string{"error", "done"}, h.types())
	f := h.chunks()[0].Failure
	require.Equal(t, "An unexpected error occurred.", f.Message)
	require.Equal(t, map[string]any{"activity": protocol.ListToolsActivityName}, f.Context)
}

// TestToolCallThatNeverCompletesSaysWhy: a tool call whose attempts are all lost fails the run
// with ACTIVITY_TIMEOUT naming kortyx.Tool.
func TestToolCallThatNeverCompletesSaysWhy(t *testing.T) {
	box := &toolbox{}
	model := fake.New(fake.Call("lookup_order", `{"orderId":"A-1"}`), fake.Text("unreachable"))
	h := reasonHarness(t, model, box, map[string]workflows.NodeFunc{
		"agent": reasonNode(hooks.ReasonOptions{ID: "a", Tools: []string{"lookup_order"}}, nil),
	}, "__start__>agent")
	var attempts atomic.Int32
	h.env.OnActivity(protocol.ToolActivityName, mock.Anything, mock.Anything).Return(lostAttempts(1<<30, &attempts, h.acts.Tool))
	h.run("agent", "where is A-1?")

	_, err := h.result()
	require.Equal(t, contracts.CodeActivityTimeout, contracts.CodeOf(err))
	require.EqualValues(t, 10, attempts.Load(), "more attempts than the old budget of 3 (10: the test environment's cap)")
	require.Equal(t, 0, box.n("lookup_order"))
	require.Equal(t, 1, model.Calls())
	require.Equal(t, []string{"error", "done"}, h.types())
	f := h.chunks()[0].Failure
	require.Equal(t, "Activity kortyx.Tool did not complete in time (Heartbeat timeout).", f.Message)
	require.Equal(t, map[string]any{"activity": protocol.ToolActivityName, "timeout": "Heartbeat"}, f.Context)
}

// TestPlainToolErrorTextIsForTheModelOnly: a tool's plain (non-retryable) error reaches the
// model as an isError result with its text, and clients as a tool-call-error with the safe
// descriptor; a *contracts.Error keeps its own message for both.
func TestPlainToolErrorTextIsForTheModelOnly(t *testing.T) {
	vault, err := tools.Func("vault", "Reads the vault.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			return "", errors.New(dbSecret)
		})
	require.NoError(t, err)
	locked, err := tools.Func("locked", "A locked drawer.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			return "", contracts.DomainError("LOCKED", "The drawer is locked.", nil)
		})
	require.NoError(t, err)
	set, err := tools.NewSet(vault, locked)
	require.NoError(t, err)
	model := fake.New(fake.Calls(providers.ToolCall{Name: "vault"}, providers.ToolCall{Name: "locked"}), fake.Text("Sorry."))
	h := newHarness(t, def("agent", map[string]workflows.NodeFunc{
		"agent": reasonNode(hooks.ReasonOptions{ID: "a", Tools: []string{"vault", "locked"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}}}, nil),
	}, "__start__>agent"))
	h.acts.Providers, h.acts.DefaultProvider, h.acts.Tools = providers.NewSet(model), fake.ID, set
	h.run("agent", "open the vault")

	_, err = h.result()
	require.NoError(t, err)
	msgs := model.Requests()[1].Messages // user, assistant, tool, tool
	require.True(t, msgs[2].IsError)
	require.Equal(t, dbSecret, msgs[2].Content, "the model reads the tool's error")
	require.Equal(t, "The drawer is locked.", msgs[3].Content)
	require.Equal(t, []string{"tool-call-start", "tool-call-error", "tool-call-start", "tool-call-error",
		"text-start", "text-delta", "text-end", "done"}, h.types())
	c := h.chunks()
	require.Equal(t, "An unexpected error occurred.", c[1].Message)
	require.Equal(t, contracts.CodeExecutionFailed, c[1].Failure.Code)
	require.Equal(t, "The drawer is locked.", c[3].Message)
	require.Equal(t, contracts.CodeDomainError, c[3].Failure.Code)
	require.Equal(t, "LOCKED", c[3].Failure.DomainCode)
	all, err := json.Marshal(c)
	require.NoError(t, err)
	require.NotContains(t, string(all), "hunter2")
	require.NotContains(t, string(all), "10.0.3.7")
}

// TestChunksBeforeAFailedPassAreKept: a structured-data chunk queued before a model pass goes
// with the pass, which publishes it first. A pass that fails without having published it (here
// every attempt fails before the activity runs) gives it back to the run: the client still
// gets it, before the error.
func TestChunksBeforeAFailedPassAreKept(t *testing.T) {
	model := fake.New(fake.Text("unreachable"))
	h := reasonHarness(t, model, nil, map[string]workflows.NodeFunc{
		"agent": func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{DataType: "plan", Data: map[string]any{"step": 1}}); err != nil {
				return workflows.NodeResult{}, err
			}
			return reasonNode(hooks.ReasonOptions{ID: "a"}, nil)(ctx, in)
		},
	}, "__start__>agent")
	var attempts atomic.Int32
	h.env.OnActivity(protocol.ModelActivityName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in protocol.ModelPassInput) (protocol.ModelPassResult, error) {
			attempts.Add(1)
			require.Len(t, in.Chunks, 1, "the queued chunk goes with the pass")
			return protocol.ModelPassResult{}, temporal.NewNonRetryableApplicationError("the provider refused the request", "PROVIDER_REFUSED", nil)
		})
	h.run("agent", "hello")

	_, err := h.result()
	require.Error(t, err)
	require.EqualValues(t, 1, attempts.Load())
	require.Equal(t, []string{"structured-data", "error", "done"}, h.types())
	require.Equal(t, "plan", h.chunks()[0].DataType)
}
