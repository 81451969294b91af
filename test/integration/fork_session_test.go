package integration_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// A fork's run belongs to the fork: while it waits (its state, as kortyx.Query reads it) and
// when it ends (the done chunk's data.config.sessionId, the run's result), its session id is
// the fork's, not its source's; the source's own run keeps the source's.
func TestForkedRunBelongsToTheFork(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	session := "s-" + taskQueue(t)
	t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, _ := nextResponse(t, e.follow, t1.RunID, 0)
	require.Equal(t, []string{"structured-data", "interrupt", "checkpoint", "done"}, types(resp))
	fk, err := service(e.c, "").Fork(ctx, session, sessions.ForkRequest{CheckpointID: resp[2].ID, NewSessionID: "fork-" + session})
	require.NoError(t, err)
	require.Equal(t, "fork-"+session, fk.SessionID)

	// The name, through the fork's session: the run asks for the plan and waits.
	name := fk.Checkpoint.ActivePendingRequests[0]
	ts, err := service(e.c, "").Answer(ctx, fk.SessionID, contracts.Response{Token: name.Token, RequestID: name.RequestID, Text: "Grace"}, sessions.AnswerOptions{ClientTurnID: "f1"})
	require.NoError(t, err)
	require.Equal(t, fk.RunID, ts.RunID)
	require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(checkpointedResponse(t, e, fk.RunID)))
	view, err := kortyx.Query(ctx, e.c, fk.RunID)
	require.NoError(t, err)
	require.Equal(t, fk.SessionID, view.SessionID)
	require.Equal(t, fk.SessionID, view.State.Config.SessionID, "the waiting run's state")

	// The plan: the run completes.
	plan := sessionView(t, e, fk.SessionID).Pending[0]
	_, err = service(e.c, "").Answer(ctx, fk.SessionID, contracts.Response{Token: plan.Token, RequestID: plan.RequestID, Selected: []string{"pro"}}, sessions.AnswerOptions{ClientTurnID: "f2"})
	require.NoError(t, err)
	var res contracts.RunResult
	require.NoError(t, e.c.GetWorkflow(ctx, fk.RunID, "").Get(ctx, &res))
	recordHistory(t, tc, "effects-forked-run", fk.RunID)
	require.Equal(t, fk.SessionID, res.State.Config.SessionID, "the run's result")
	entries, err := e.broker.Read(ctx, fk.RunID, 0, 0)
	require.NoError(t, err)
	last := entries[len(entries)-1].Chunk
	require.Equal(t, contracts.ChunkDone, last.Type)
	var done struct {
		Config struct {
			SessionID string `json:"sessionId"`
		} `json:"config"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(last.Data, &done))
	require.Equal(t, fk.SessionID, done.Config.SessionID, "the done chunk's data.config.sessionId")
	require.Equal(t, map[string]any{"name": "Grace", "plan": "pro"}, done.Data)

	// The source's run, answered in the source, keeps the source's id.
	srcView, err := kortyx.Query(ctx, e.c, t1.RunID)
	require.NoError(t, err)
	require.Equal(t, session, srcView.State.Config.SessionID)
}
