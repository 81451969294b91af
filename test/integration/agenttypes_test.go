package integration_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/stream/sseclient"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// listIDs runs `temporal workflow list --query q` against the dev server and returns the
// workflow IDs it prints.
func listIDs(t *testing.T, q string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, tcliPath, "workflow", "list", "--address", srv.Address(), "--query", q, "-o", "json").Output()
	require.NoError(t, err)
	var rows []struct {
		Execution struct {
			WorkflowID string `json:"workflowId"`
		} `json:"execution"`
	}
	require.NoError(t, json.Unmarshal(out, &rows), "%s", out)
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, r.Execution.WorkflowID)
	}
	return ids
}

// Item 9: an agent is a workflow type of its own name. A plain client.ExecuteWorkflow of type
// "hello" runs it: the workflow ID is the stream id (read through the run stream route), the
// question is answered by kortyx.Respond, and the CLI finds the run by WorkflowType and by the
// Kortyx search attributes.
func TestAgentIsItsOwnWorkflowType(t *testing.T) {
	e := startWorker(t, tc)
	hs := httptest.NewServer(sse.Handler(e.broker))
	defer hs.Close()
	follow := (&sseclient.Client{BaseURL: hs.URL}).Follow
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	id := "agent-" + taskQueue(t)
	session := "s-" + id
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.tq}, "hello",
		contracts.RunInput{Input: json.RawMessage(`"hi"`), SessionID: session})
	require.NoError(t, err)
	chunks, at := nextResponse(t, follow, id, 0)
	require.Equal(t, []string{"interrupt", "done"}, types(chunks))
	ask, _ := interruptOf(t, chunks)
	eventually(t, 20*time.Second, "the run to be listed as waiting", func() bool {
		w, err := kortyx.ListWaiting(ctx, tc, session)
		return err == nil && len(w) == 1 && w[0].RunID == id && w[0].Workflow == "hello"
	})
	require.NoError(t, kortyx.Respond(ctx, tc, id, answer(ask, "Ada")))
	chunks, _ = nextResponse(t, follow, id, at)
	require.Equal(t, []string{"message", "done"}, types(chunks))
	require.Equal(t, "Hello, Ada!", chunks[0].Content)
	var res contracts.RunResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, contracts.StatusCompleted, res.Status)

	q := `WorkflowType="hello" AND WorkflowId="` + id + `"`
	eventually(t, 20*time.Second, "the CLI to list the run by its type and attributes", func() bool {
		return slicesEqual(listIDs(t, q), []string{id}) &&
			slicesEqual(listIDs(t, q+` AND KortyxWorkflow="hello" AND KortyxStatus="completed" AND KortyxSession="`+session+`"`), []string{id})
	})

	// A bare JSON string is the user message.
	bare := id + "-bare"
	_, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: bare, TaskQueue: e.tq}, "hello", "hi")
	require.NoError(t, err)
	chunks, _ = nextResponse(t, follow, bare, 0)
	require.Equal(t, []string{"interrupt", "done"}, types(chunks))
	require.NoError(t, tc.CancelWorkflow(ctx, bare, ""))
}

// An input that names another workflow, or that is neither a RunInput nor a string, fails the
// run with INVALID_INPUT: error and done on its stream.
func TestAgentTypeRefusesOtherInput(t *testing.T) {
	e := startWorker(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, in := range []any{contracts.RunInput{Workflow: "echo"}, 42, map[string]any{"message": "hi"}} {
		id := "agent-bad-" + taskQueue(t) + "-" + string(rune('a'+i))
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.tq}, "hello", in)
		require.NoError(t, err)
		err = run.Get(ctx, nil)
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, string(contracts.CodeInvalidInput), ae.Type())
		chunks, _ := nextResponse(t, e.follow, id, 0)
		require.Equal(t, []string{"error", "done"}, types(chunks))
		require.Equal(t, contracts.CodeInvalidInput, chunks[0].Failure.Code)
		require.True(t, strings.Contains(chunks[0].Message, `workflow type "hello"`), chunks[0].Message)
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// A run of an agent type continues as new under the same type (not kortyx.Run).
func TestAgentTypeContinuesAsItself(t *testing.T) {
	e := startWorker(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := "agent-loop-" + taskQueue(t)
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.tq}, testagents.LoopWorkflow,
		contracts.RunInput{Input: json.RawMessage(`{"steps":3}`), ContinueAsNewAfterNodes: 1})
	require.NoError(t, err)
	first := run.GetRunID()
	var res contracts.RunResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, contracts.StatusCompleted, res.Status)
	f, err := tc.DescribeWorkflow(ctx, id, first)
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, f.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	d, err := tc.DescribeWorkflow(ctx, id, "")
	require.NoError(t, err)
	require.NotEqual(t, first, d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	require.Equal(t, testagents.LoopWorkflow, d.RawResponse.GetWorkflowExecutionInfo().GetType().GetName())
}
