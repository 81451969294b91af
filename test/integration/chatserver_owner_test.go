package integration_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/chatserver"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// Ownership lives in the session workflow: a restarted chatserver (an empty in-memory store)
// still refuses another user, a refused request claims nothing, the session itself refuses a
// turn of another owner, and a fork's transcript rows carry the fork's tokens.
func TestChatServerOwnershipSurvivesRestart(t *testing.T) {
	e := startWorker(t, tc)
	tokens := map[string]string{"alice-token": "alice", "bob-token": "bob"}
	serve := func() (*chatEnv, string) {
		server, err := chatserver.New(chatserver.Options{Client: e.c, Broker: e.broker, TaskQueue: e.tq, Tokens: tokens})
		require.NoError(t, err)
		srv := httptest.NewServer(server)
		t.Cleanup(srv.Close)
		return &chatEnv{inproc: e, url: srv.URL}, srv.URL
	}
	alice, bob := "Authorization: Bearer alice-token", "Authorization: Bearer bob-token"
	session := "own-" + taskQueue(t)
	ctx := context.Background()

	c, _ := serve()
	r := c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello"), alice)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	name := chunkOf(t, r.Chunks(t), contracts.ChunkInterrupt)
	owner, err := service(tc, "").Owner(ctx, session)
	require.NoError(t, err)
	require.Equal(t, "alice", owner)

	// A new server process knows nothing in memory: Bob is still refused everywhere.
	c, url := serve()
	r = c.send(t, prompt(session, "b1", testagents.EffectsWorkflow, "mine now"), bob)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)
	require.Equal(t, contracts.CodeForbidden, decodeError(t, r).Failure.Code)
	r = c.send(t, resumeBody(session, "b2", name, "Mallory", nil), bob)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)
	require.Equal(t, http.StatusForbidden, c.checkpoints(t, map[string]any{"action": "list", "sessionId": session}, nil, bob))
	require.Equal(t, http.StatusForbidden, transcriptStatus(t, url, session, bob))
	// The session itself refuses a prompt of another owner (what a request that raced the
	// owner's first turn past Authorize meets).
	_, err = service(tc, e.tq).Start(ctx, session, sessions.TurnRequest{Input: json.RawMessage(`"x"`), Owner: "bob"})
	require.Equal(t, contracts.CodeForbidden, contracts.CodeOf(err), "%v", err)

	// Alice goes on through the new server.
	r = c.send(t, resumeBody(session, "t2", name, "Ada", nil), alice)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, []string{"t2:user", "t2:assistant"}, ids(transcript(t, url, session, alice)))

	// A refused request claims nothing: Bob's first turn names no registered workflow, and
	// Alice can then take the id.
	fresh := session + "-2"
	r = c.send(t, prompt(fresh, "b1", "no-such-workflow", "hi"), bob)
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)
	require.Equal(t, contracts.CodeUnknownWorkflow, decodeError(t, r).Failure.Code)
	owner, err = service(tc, "").Owner(ctx, fresh)
	require.NoError(t, err)
	require.Empty(t, owner)
	r = c.send(t, prompt(fresh, "t1", testagents.EffectsWorkflow, "hello"), alice)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	fq := chunkOf(t, r.Chunks(t), contracts.ChunkInterrupt)
	freshCP := chunkOf(t, r.Chunks(t), contracts.ChunkCheckpoint)

	// A fork of a checkpoint with an open question belongs to Alice; its transcript rows carry
	// the fork's token and request id, not the source's.
	var fk sessions.ForkResult
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "fork", "sessionId": fresh, "checkpointId": freshCP.ID}, &fk, alice))
	require.Len(t, fk.Reissued, 1)
	require.Equal(t, fq.ResumeToken, fk.Reissued[0].FromToken)
	require.Equal(t, fk.Checkpoint.ActivePendingRequests[0].Token, fk.Reissued[0].Token)
	require.Equal(t, fk.Checkpoint.ActivePendingRequests[0].RequestID, fk.Reissued[0].RequestID)
	owner, err = service(tc, "").Owner(ctx, fk.SessionID)
	require.NoError(t, err)
	require.Equal(t, "alice", owner)
	rows := transcript(t, url, fk.SessionID, alice)
	require.Equal(t, []string{"t1:user", "t1:assistant"}, ids(rows))
	require.Equal(t, []string{fk.Reissued[0].Token, fk.Reissued[0].RequestID}, askedIn(rows[1]))
	// The source keeps its own.
	require.Equal(t, []string{fq.ResumeToken, fq.RequestID}, askedIn(transcript(t, url, fresh, alice)[1]))
	require.Equal(t, http.StatusForbidden, transcriptStatus(t, url, fk.SessionID, bob))
}

// askedIn returns the token and request id of each question in an assistant entry.
func askedIn(e chatserver.Entry) []string {
	var out []string
	for _, p := range e.Message.ContentPieces {
		if p.Type == "interrupt" {
			out = append(out, p.ResumeToken, p.RequestID)
		}
	}
	return out
}

// The example's own mux answers unknown paths and methods with JSON errors too.
func TestChatServerErrorsAreJSON(t *testing.T) {
	e := startWorker(t, tc)
	server, err := chatserver.New(chatserver.Options{Client: e.c, Broker: e.broker, TaskQueue: e.tq, Tokens: map[string]string{"alice-token": "alice"}})
	require.NoError(t, err)
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		method, path string
		status       int
		code         contracts.Code
	}{
		{http.MethodGet, "/nope", http.StatusNotFound, contracts.CodeNotFound},
		{http.MethodGet, "/api/chat", http.StatusMethodNotAllowed, contracts.CodeInvalidRequest},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer alice-token")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body errorBody
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, tc.path)
		require.Equal(t, tc.code, body.Failure.Code, tc.path)
	}
}
