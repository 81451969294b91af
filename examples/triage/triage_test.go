package triage_test

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/triage"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

func TestTriageReviseThenOpen(t *testing.T) {
	reg := workflows.NewRegistry()
	require.NoError(t, triage.Register(reg))
	env := kortyxtest.New(reg, kortyxtest.Options{})

	// The confirmation is asked twice: revise first, then open.
	env.OnQuestion("confirm", kortyxtest.Select("revise"), kortyxtest.Select("open"))
	env.OnQuestion("summary", kortyxtest.Text("Refund the double charge"))
	res, err := env.Run(triage.WorkflowID, "I was charged twice on my invoice")
	require.NoError(t, err)
	require.Equal(t, "billing", res.State.Data["topic"])
	require.Equal(t, "T-LOW-ID", res.State.Data["ticketId"]) // from "default-test-workflow-id"

	chunks := env.Chunks()
	var got []string
	for _, c := range chunks {
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
	last := chunks[len(chunks)-2]
	require.Equal(t, "Opened billing ticket T-LOW-ID: Refund the double charge", last.Content)
}
