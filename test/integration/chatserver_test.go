package integration_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/chatserver"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// The chatserver example: authentication in front of the handlers, sessions owned by their
// users, and the transcript kept by the lifecycle callbacks through an interrupted turn, its answer, a fork
// and a rollback.
func TestChatServerExample(t *testing.T) {
	e := startWorker(t, tc)
	server, err := chatserver.New(chatserver.Options{Client: e.c, Broker: e.broker, TaskQueue: e.tq,
		Tokens: map[string]string{"alice-token": "alice", "bob-token": "bob"}})
	require.NoError(t, err)
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	c := &chatEnv{inproc: e, url: srv.URL}
	alice, bob := "Authorization: Bearer alice-token", "Authorization: Bearer bob-token"
	session := "chat-" + taskQueue(t)

	r := c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello"))
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Equal(t, `Bearer realm="kortyx"`, r.Header.Get("WWW-Authenticate"))
	r = c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello"), "Authorization: Bearer forged")
	require.Equal(t, http.StatusUnauthorized, r.Status)

	r = c.send(t, prompt(session, "t1", testagents.EffectsWorkflow, "hello"), alice)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	name := chunkOf(t, r.Chunks(t), contracts.ChunkInterrupt)
	cp1 := chunkOf(t, r.Chunks(t), contracts.ChunkCheckpoint)

	// Bob can neither answer, stop, list nor read Alice's session.
	r = c.send(t, resumeBody(session, "b1", name, "Mallory", nil), bob)
	require.Equal(t, http.StatusForbidden, r.Status)
	require.Equal(t, contracts.CodeForbidden, decodeError(t, r).Failure.Code)
	resp := post(t, srv.URL+"/api/chat/stop", map[string]any{"sessionId": session}, bob)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, http.StatusForbidden, c.checkpoints(t, map[string]any{"action": "list", "sessionId": session}, nil, bob))
	require.Equal(t, http.StatusForbidden, transcriptStatus(t, srv.URL, session, bob))

	// Alice answers; the transcript holds both turns, the first one interrupted with its token.
	r = c.send(t, resumeBody(session, "t2", name, "Ada", nil), alice)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	entries := transcript(t, srv.URL, session, alice)
	require.Len(t, entries, 4)
	require.Equal(t, []string{"t1:user", "t1:assistant", "t2:user", "t2:assistant"}, ids(entries))
	require.Equal(t, "hello", entries[0].Content)
	require.Equal(t, sessions.Status("interrupted"), entries[1].Status)
	require.Equal(t, name.ResumeToken, entries[1].Message.ContentPieces[1].ResumeToken)
	require.Equal(t, cp1.ID, entries[1].Message.CheckpointID)
	require.Equal(t, []int{1, 1, 2, 2}, turnIndexes(entries))

	// A fork of the first checkpoint belongs to Alice and starts with the first turn's transcript.
	var fk sessions.ForkResult
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "fork", "sessionId": session, "checkpointId": cp1.ID}, &fk, alice))
	require.Equal(t, []string{"t1:user", "t1:assistant"}, ids(transcript(t, srv.URL, fk.SessionID, alice)))
	require.Equal(t, http.StatusForbidden, transcriptStatus(t, srv.URL, fk.SessionID, bob))
	// Bob cannot fork into a session id Alice owns.
	require.Equal(t, http.StatusForbidden, c.checkpoints(t, map[string]any{"action": "fork", "sessionId": session, "checkpointId": cp1.ID, "newSessionId": fk.SessionID}, nil, bob))

	// A rollback to the first checkpoint cuts the transcript back to it.
	require.Equal(t, http.StatusOK, c.checkpoints(t, map[string]any{"action": "rollback", "sessionId": session, "checkpointId": cp1.ID}, nil, alice))
	require.Equal(t, []string{"t1:user", "t1:assistant"}, ids(transcript(t, srv.URL, session, alice)))
}

func transcriptStatus(t *testing.T, base, session, auth string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/transcript?sessionId="+session, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth[len("Authorization: "):])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func transcript(t *testing.T, base, session, auth string) []chatserver.Entry {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/transcript?sessionId="+session, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth[len("Authorization: "):])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out []chatserver.Entry
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

func ids(entries []chatserver.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

func turnIndexes(entries []chatserver.Entry) []int {
	out := make([]int, len(entries))
	for i, e := range entries {
		out[i] = e.TurnIndex
	}
	return out
}
