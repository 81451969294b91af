package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

// transcriptStates is the part of GET /api/sessions/{id}/transcript that tells a session's
// history: each turn's run, session, state and prompt.
type transcriptStates struct {
	SessionID       string `json:"sessionId"`
	Head            string `json:"head"`
	ParentSessionID string `json:"parentSessionId"`
	ForkedFrom      string `json:"forkedFrom"`
	Truncated       bool   `json:"truncated"`
	Turns           []struct {
		RunID     string          `json:"runId"`
		SessionID string          `json:"sessionId"`
		State     string          `json:"state"`
		Input     json.RawMessage `json:"input"`
	} `json:"turns"`
}

// A session's transcript says which turns a rollback discarded, and a fork's begins with the
// turns it inherited from its parent (and a fork of that fork's first checkpoint with those
// too); /api/config names the default model and the currency.
func TestStudioTranscriptStates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return registerAgents(reg)
	}
	tq := fmt.Sprintf("web-studio-states-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, o)
	svc, err := sessions.New(sessions.Options{Client: tc, TaskQueue: tq})
	require.NoError(t, err)
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, DefaultModel: "openai:gpt-4.1-mini", Currency: "EUR"})

	// turn runs a prompt of the echo agent to its end and returns its run once the session
	// lists its checkpoint.
	turn := func(session, text string) string {
		t.Helper()
		before, _ := svc.View(ctx, session) // a new session has no view yet
		ts, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: text, Workflow: echoWorkflow, Input: json.RawMessage(fmt.Sprintf("%q", text))})
		require.NoError(t, err)
		require.NoError(t, tc.GetWorkflow(ctx, ts.RunID, "").Get(ctx, nil))
		require.Eventually(t, func() bool {
			v, err := svc.View(ctx, session)
			return err == nil && v.Active == nil && len(v.Checkpoints) > len(before.Checkpoints) && v.Head != before.Head
		}, 30*time.Second, 100*time.Millisecond)
		return ts.RunID
	}
	// states reads the transcript until it lists n turns (visibility is eventually consistent).
	states := func(session string, n int) transcriptStates {
		t.Helper()
		var tr transcriptStates
		require.Eventually(t, func() bool {
			tr = transcriptStates{}
			code, body := getRaw(t, h, "/api/sessions/"+url.PathEscape(session)+"/transcript")
			require.Equal(t, http.StatusOK, code, "%s", body)
			require.NoError(t, json.Unmarshal(body, &tr))
			return len(tr.Turns) == n
		}, 30*time.Second, 200*time.Millisecond)
		return tr
	}
	type row struct{ run, session, state, input string }
	rows := func(tr transcriptStates) []row {
		var out []row
		for _, t := range tr.Turns {
			out = append(out, row{t.RunID, t.SessionID, t.State, string(t.Input)})
		}
		return out
	}

	source := fmt.Sprintf("studio-states-%d", time.Now().UnixNano())
	one, two, three := turn(source, "one"), turn(source, "two"), turn(source, "three")
	tr := states(source, 3)
	require.Equal(t, []row{{one, source, "live", `"one"`}, {two, source, "live", `"two"`}, {three, source, "live", `"three"`}}, rows(tr))

	// Roll back to turn 1: two and three are rolled back; a new turn is live.
	v, err := svc.View(ctx, source)
	require.NoError(t, err)
	require.Len(t, v.Checkpoints, 4)
	_, err = svc.Rollback(ctx, source, v.Checkpoints[1].ID)
	require.NoError(t, err)
	four := turn(source, "four")
	tr = states(source, 4)
	require.Equal(t, []row{{one, source, "live", `"one"`}, {two, source, "rolledBack", `"two"`}, {three, source, "rolledBack", `"three"`}, {four, source, "live", `"four"`}}, rows(tr))
	v, err = svc.View(ctx, source)
	require.NoError(t, err)
	require.Equal(t, v.Head, tr.Head)
	require.Empty(t, tr.ParentSessionID)

	// A fork from the head (turn 2, of "four") inherits one and four, not the rolled-back turns.
	f, err := svc.Fork(ctx, source, sessions.ForkRequest{CheckpointID: v.Head})
	require.NoError(t, err)
	five := turn(f.SessionID, "five")
	tr = states(f.SessionID, 3)
	require.Equal(t, []row{{one, source, "inherited", `"one"`}, {four, source, "inherited", `"four"`}, {five, f.SessionID, "live", `"five"`}}, rows(tr))
	require.Equal(t, source, tr.ParentSessionID)
	require.Equal(t, v.Head, tr.ForkedFrom)

	// A fork of the fork's first checkpoint (the copy it began with) inherits what the fork
	// inherited; one of the fork's own later checkpoint inherits its turn too.
	fv, err := svc.View(ctx, f.SessionID)
	require.NoError(t, err)
	g, err := svc.Fork(ctx, f.SessionID, sessions.ForkRequest{CheckpointID: fv.Checkpoints[0].ID})
	require.NoError(t, err)
	tr = states(g.SessionID, 2)
	require.Equal(t, []row{{one, source, "inherited", `"one"`}, {four, source, "inherited", `"four"`}}, rows(tr))
	k, err := svc.Fork(ctx, f.SessionID, sessions.ForkRequest{CheckpointID: fv.Head})
	require.NoError(t, err)
	tr = states(k.SessionID, 3)
	require.Equal(t, []row{{one, source, "inherited", `"one"`}, {four, source, "inherited", `"four"`}, {five, f.SessionID, "inherited", `"five"`}}, rows(tr))

	// A fork of a session's start (turn 0) inherits nothing.
	z, err := svc.Fork(ctx, source, sessions.ForkRequest{CheckpointID: v.Checkpoints[0].ID})
	require.NoError(t, err)
	tr = states(z.SessionID, 0)
	require.Equal(t, source, tr.ParentSessionID)

	var cfg map[string]any
	code, body := getRaw(t, h, "/api/config")
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.NoError(t, json.Unmarshal(body, &cfg))
	require.Equal(t, "openai:gpt-4.1-mini", cfg["defaultModel"])
	require.Equal(t, "EUR", cfg["currency"])
}
