package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/openai"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/kortyxwire"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// statusMessages are the messages of the status chunks among chunks, each checked against
// Kortyx's chunk schema.
func statusMessages(t *testing.T, chunks []contracts.Chunk) []string {
	t.Helper()
	var out []string
	for _, c := range chunks {
		if c.Type == contracts.ChunkStatus {
			var kc kortyxwire.Chunk
			require.NoError(t, json.Unmarshal(must(json.Marshal(c)), &kc))
			require.NoError(t, kortyxwire.Check(kc))
			out = append(out, c.Message)
		}
	}
	return out
}

// Item 17: a tool that fails with a retryable error on every call runs 3 times (the default
// cap), not for 12 minutes; each retry is announced by a status chunk naming the attempt and
// the delay (1 s, then 2 s: the default backoff); the run fails with the tool's code.
func TestFailingToolIsCappedAtThreeCalls(t *testing.T) {
	for _, cs := range []struct {
		name string
		err  error
		code contracts.Code
	}{
		{"plain error", errors.New("dial tcp 10.0.3.7:5432: connection refused"), contracts.CodeExecutionFailed},
		{"declared code", &contracts.Error{Code: contracts.CodePersistenceError, Message: "The orders database did not answer.", Retryable: true}, contracts.CodePersistenceError},
	} {
		t.Run(cs.name, func(t *testing.T) {
			var calls atomic.Int32
			dbQuery, err := tools.Func("db_query", "Queries the orders database.", `{"type":"object"}`,
				func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
					calls.Add(1)
					return "", tools.Retryable(cs.err)
				})
			require.NoError(t, err)
			set, err := tools.NewSet(dbQuery)
			require.NoError(t, err)
			e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
			w := newWorker(e.c, e.tq, reasonAgent(t, "dbagent", "db_query"), &activities.Activities{Stream: e.broker, Tools: set,
				Providers: providers.NewSet(fake.New(fake.Call("db_query", `{}`)).WithID("fake"))})
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)

			run := startRun(t, e.c, e.tq, "dbagent", "count the orders")
			_, err = result(t, run)
			require.Equal(t, cs.code, contracts.CodeOf(err), "err: %v", err)
			require.EqualValues(t, 3, calls.Load(), "tool executions")
			chunks, _ := nextResponse(t, e.follow, run.GetID(), 0)
			require.Equal(t, []string{"tool-call-start", "status", "status", "error", "done"}, types(chunks))
			require.Equal(t, []string{
				"db_query failed (attempt 1 of 3), retrying in 1 s",
				"db_query failed (attempt 2 of 3), retrying in 2 s",
			}, statusMessages(t, chunks))
			st := chunks[1]
			require.Equal(t, "agent", st.Node)
			require.Equal(t, "db_query", st.Tool)
			require.Equal(t, chunks[0].ToolCallID, st.ToolCallID)
			require.Equal(t, cs.code, chunks[3].Failure.Code)
			require.NotContains(t, chunks[1].Message+chunks[2].Message, "10.0.3.7", "a tool's error text stays out of the stream")
		})
	}
}

// Item 17: a model pass whose provider answers 500 every time runs 5 times (the default cap),
// not for 30 minutes, honouring the provider's Retry-After (1 s); each retry is announced by a
// status chunk; the run fails with the provider's code.
func TestFailingProviderIsCappedAtFivePasses(t *testing.T) {
	srv := fakeserver.New(func(providers.Request) fake.Turn {
		return fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 500, Retryable: true,
			Message: "upstream overloaded", Details: map[string]any{"retryAfterMs": 1000}}}
	})
	t.Cleanup(srv.Close)
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	model := openai.New(openai.Options{ID: "fake", BaseURL: srv.URL(), APIKey: "test"})
	w := newWorker(e.c, e.tq, reasonAgent(t, "overloaded"), &activities.Activities{Stream: e.broker,
		Providers: providers.NewSet(model)})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run := startRun(t, e.c, e.tq, "overloaded", "hello")
	_, err := result(t, run)
	require.Equal(t, contracts.CodeProviderHTTPError, contracts.CodeOf(err), "err: %v", err)
	require.Len(t, srv.Requests(), 5, "model passes that reached the provider")
	chunks, _ := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"status", "status", "status", "status", "error", "done"}, types(chunks))
	var want []string
	for n := 1; n <= 4; n++ {
		want = append(want, "model fake:test failed (attempt "+string(rune('0'+n))+" of 5), retrying in 1 s")
	}
	require.Equal(t, want, statusMessages(t, chunks))
	require.Equal(t, "agent", chunks[0].Node)
	require.Equal(t, "reason", chunks[0].ID)
	require.Equal(t, contracts.CodeProviderHTTPError, chunks[4].Failure.Code)
}

// Item 17: an attempt lost to a timeout (here the first one, which outlives the tool's 2 s
// Timeout, as an attempt of a dead worker outlives its heartbeat timeout) does not count
// against the cap: the call fails twice after it, is retried (status "attempt 1 of 3", "attempt
// 2 of 3") and succeeds on Temporal's fourth attempt, which a cap of 3 attempts would not
// have reached.
func TestLostAttemptDoesNotCountAgainstTheCap(t *testing.T) {
	var calls atomic.Int32
	flaky, err := tools.Func("db_query", "Queries the orders database.", `{"type":"object"}`,
		func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
			switch calls.Add(1) {
			case 1: // lost: runs until the attempt's timeout
				<-ctx.Done()
				return "", ctx.Err()
			case 2, 3:
				return "", tools.Retryable(errors.New("connection refused"))
			}
			return "42 orders", nil
		})
	require.NoError(t, err)
	set, err := tools.NewSet(flaky)
	require.NoError(t, err)
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: "lostagent", Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "reason", Model: providers.Model("fake:test"), Input: in.Text(),
				Tools: []string{"db_query"}, ToolExecution: hooks.ToolExecution{Emit: hooks.Switch{On: true}, Timeout: 2 * time.Second}})
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, err
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	e := &inproc{c: tc, broker: stream.NewMemory(stream.MemoryOptions{}), tq: taskQueue(t)}
	w := newWorker(e.c, e.tq, reg, &activities.Activities{Stream: e.broker, Tools: set,
		Providers: providers.NewSet(fake.New(fake.Call("db_query", `{}`), fake.Text("There are 42 orders.")).WithID("fake"))})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run := startRun(t, e.c, e.tq, "lostagent", "count the orders")
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "There are 42 orders.", res.State.Data["answer"])
	require.EqualValues(t, 4, calls.Load(), "one lost attempt, two failures, one success")
	chunks, _ := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"tool-call-start", "status", "status", "tool-call-result", "text-start", "text-delta", "text-delta", "text-delta", "text-delta", "text-end", "done"}, types(chunks))
	require.Equal(t, []string{
		"db_query failed (attempt 1 of 3), retrying in 1 s",
		"db_query failed (attempt 2 of 3), retrying in 2 s",
	}, statusMessages(t, chunks))
}
