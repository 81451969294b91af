package triage_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/triage"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

func TestTriageReviseThenOpen(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	broker := stream.NewMemory()
	reg := workflows.NewRegistry()
	require.NoError(t, triage.Register(reg))
	workflows.NewRunner(reg).Register(env)
	(&activities.Activities{Stream: broker}).Register(env)

	answer := func(at time.Duration, resp func(p contracts.PendingRequest) contracts.Response) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(contracts.StateQueryName)
			require.NoError(t, err)
			var view contracts.RunView
			require.NoError(t, v.Get(&view))
			require.NotNil(t, view.Pending)
			env.SignalWorkflow(contracts.RespondName, resp(*view.Pending))
		}, at)
	}
	answer(time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: []string{"revise"}}
	})
	answer(2*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Text: "Refund the double charge"}
	})
	answer(3*time.Minute, func(p contracts.PendingRequest) contracts.Response {
		return contracts.Response{Token: p.Token, RequestID: p.RequestID, Selected: []string{"open"}}
	})
	env.ExecuteWorkflow(contracts.RunWorkflowName, contracts.RunInput{Workflow: triage.WorkflowID, Input: json.RawMessage(`"I was charged twice on my invoice"`)})
	require.NoError(t, env.GetWorkflowError())
	var res contracts.RunResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "billing", res.State.Data["topic"])
	require.Equal(t, "T-LOW-ID", res.State.Data["ticketId"]) // from "default-test-workflow-id"

	entries, err := broker.Read(context.Background(), "default-test-workflow-id", 0, 0)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		c := e.Chunk
		switch c.Type {
		case contracts.ChunkStructuredData:
			got = append(got, string(c.Type)+":"+string(c.Kind))
		case contracts.ChunkInterrupt:
			var in contracts.InterruptInput
			require.NoError(t, json.Unmarshal(c.Input, &in))
			got = append(got, "interrupt:"+string(in.Kind))
		default:
			got = append(got, string(c.Type))
		}
	}
	draft := func(words int) []string {
		out := []string{"structured-data:set"}
		for range words {
			out = append(out, "structured-data:text-delta")
		}
		return append(out, "structured-data:append", "structured-data:final")
	}
	var want []string
	want = append(want, draft(7)...) // "I was charged twice on my invoice"
	want = append(want, "interrupt:choice", "done", "interrupt:text", "done")
	want = append(want, draft(4)...) // "Refund the double charge"
	want = append(want, "interrupt:choice", "done", "message", "done")
	require.Equal(t, want, got)
	last := entries[len(entries)-2].Chunk
	require.Equal(t, "Opened billing ticket T-LOW-ID: Refund the double charge", last.Content)
}
