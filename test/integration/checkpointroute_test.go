package integration_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/chatserver"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
)

// rawCheckpoints posts a checkpoint route request and returns its status and body.
func (c *chatEnv) rawCheckpoints(t *testing.T, body any, headers ...string) (int, string) {
	t.Helper()
	resp := post(t, c.url+"/api/checkpoints", body, headers...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// createdAts returns every createdAt value in a JSON document.
func createdAts(t *testing.T, doc string) []any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(doc), &v), doc)
	var out []any
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "createdAt" {
					out = append(out, e)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// Issue 19 item 6: the checkpoint route answers in Kortyx's shapes whether or not the request
// names its session: list of an unknown session is [] (Kortyx's store), every createdAt is a
// number (milliseconds), rollback's head is the checkpoint id. Item 8: a fork onto a session
// id that exists is refused with a message of ours, not Temporal's text.
func TestCheckpointRouteKortyxShapes(t *testing.T) {
	c := startChat(t, chat.Options{}, chat.CheckpointOptions{})
	session := "shapes-" + c.tq

	status, body := c.rawCheckpoints(t, map[string]any{"action": "list", "sessionId": session})
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "[]\n", body, "no such session: no checkpoints")

	r := c.send(t, prompt(session, "t1", testagents.EchoWorkflow, "hi"))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	cp := chunkOf(t, r.Chunks(t), contracts.ChunkCheckpoint)
	require.Regexp(t, `^cp-[0-9a-f-]{36}@`+session+`$`, cp.ID, "the id carries its session")

	eventually(t, 30*time.Second, "the turn's checkpoint listed", func() bool {
		_, body = c.rawCheckpoints(t, map[string]any{"action": "list", "sessionId": session})
		return strings.Contains(body, cp.ID)
	})
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list, 2, body)
	for _, at := range createdAts(t, body) {
		require.IsType(t, float64(0), at, "createdAt is milliseconds: %s", body)
	}
	start := list[0]["id"].(string)

	status, body = c.rawCheckpoints(t, map[string]any{"action": "get", "sessionId": session, "checkpointId": cp.ID})
	require.Equal(t, http.StatusOK, status, body)
	require.NotEmpty(t, createdAts(t, body))
	for _, at := range createdAts(t, body) {
		require.IsType(t, float64(0), at, body)
	}

	for name, req := range map[string]map[string]any{
		"with sessionId":    {"action": "rollback", "sessionId": session, "checkpointId": start},
		"without sessionId": {"action": "rollback", "checkpointId": start},
	} {
		status, body = c.rawCheckpoints(t, req)
		require.Equal(t, http.StatusOK, status, "%s: %s", name, body)
		var rb map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &rb))
		require.Equal(t, start, rb["head"], "%s: head is the checkpoint id: %s", name, body)
		require.Equal(t, start, rb["headCheckpoint"].(map[string]any)["id"], name)
		for _, at := range createdAts(t, body) {
			require.IsType(t, float64(0), at, "%s: %s", name, body)
		}
	}

	// An id naming a session that does not exist: get null, rollback and fork 404.
	ghost := "cp-0b7e2a4c-5d6f-4a1b-9c8d-7e6f5a4b3c2d@ghost-" + c.tq
	status, body = c.rawCheckpoints(t, map[string]any{"action": "get", "checkpointId": ghost})
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "null\n", body)
	for _, action := range []string{"rollback", "fork"} {
		status, body = c.rawCheckpoints(t, map[string]any{"action": action, "checkpointId": ghost})
		require.Equal(t, http.StatusNotFound, status, "%s: %s", action, body)
		require.Contains(t, body, `"code":"NOT_FOUND"`, action)
		require.Contains(t, body, `not found`, action)
	}

	// A fork onto a session that exists.
	other := "shapes-other-" + c.tq
	require.Equal(t, http.StatusOK, c.send(t, prompt(other, "o1", testagents.EchoWorkflow, "hi")).Status)
	status, body = c.rawCheckpoints(t, map[string]any{"action": "fork", "sessionId": session, "checkpointId": start, "newSessionId": other})
	require.Equal(t, http.StatusBadRequest, status, body)
	var eb errorBody
	require.NoError(t, json.Unmarshal([]byte(body), &eb))
	want := `Session "` + other + `" already exists: fork into another newSessionId, or send none.`
	require.Equal(t, want, eb.Error)
	require.Equal(t, contracts.CodeInvalidSession, eb.Failure.Code)
	require.Equal(t, want, eb.Failure.Message)
	require.Nil(t, eb.Failure.Cause)
}

// Issue 19 item 12: the chatserver example refuses a chat request without sessionId (or
// clientTurnId) with 400 INVALID_REQUEST naming the field, before any ownership check; the
// transcript route too.
func TestChatServerMissingIDsAre400(t *testing.T) {
	e := startWorker(t, tc)
	server, err := chatserver.New(chatserver.Options{Client: e.c, Broker: e.broker, TaskQueue: e.tq,
		Tokens: map[string]string{"alice-token": "alice"}})
	require.NoError(t, err)
	hs := httptest.NewServer(server)
	t.Cleanup(hs.Close)
	srv := hs.URL
	c := &chatEnv{inproc: e, url: srv}
	alice := "Authorization: Bearer alice-token"
	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"no sessionId":    {prompt("", "t1", testagents.EchoWorkflow, "hi"), "sessionId"},
		"no clientTurnId": {prompt("chat-"+e.tq, "", testagents.EchoWorkflow, "hi"), "clientTurnId"},
	} {
		r := c.send(t, tc.body, alice)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Body)
		eb := decodeError(t, r)
		require.Equal(t, contracts.CodeInvalidRequest, eb.Failure.Code, name)
		require.Len(t, eb.Failure.Issues, 1, name)
		require.Equal(t, []any{tc.field}, eb.Failure.Issues[0].Path, name)
		require.Contains(t, eb.Error, tc.field, name)
	}
	req, err := http.NewRequest(http.MethodGet, srv+"/api/transcript", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", b)
	require.Contains(t, string(b), `"code":"INVALID_REQUEST"`)
	require.Contains(t, string(b), `sessionId is required`)
}

// Issue 19 item 5: Kortyx's rollback and fork name only the checkpoint. They work on an API
// process restarted after the chat, and on another API process than the chat's: the
// checkpoint id carries its session, nothing is looked up in a process's memory.
func TestCheckpointByIDAcrossAPIProcesses(t *testing.T) {
	redis := redistest.Start(t)
	c := startCluster(t, redis, map[string]proc{"cpid-w1": {}}, 0)
	api := func() (*program, string) {
		p := startProcess(t, c.tq, []string{"--api-only"}, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0")
		return p, p.apiURL(t)
	}
	pa, a := api()
	_, b := api()
	session := "cpid-" + c.tq
	ask, cp1, last := askHello(t, a, session)
	answerHello(t, a, session, "t2", ask, last, "Ada")

	// Process A restarts: the new process has seen no checkpoint.
	_ = pa.cmd.Process.Kill()
	_ = pa.cmd.Wait()
	_, a2 := api()
	r := mpPost(t, a2+"/api/chat/checkpoints", map[string]any{"action": "rollback", "checkpointId": cp1.ID})
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	var head struct {
		Head string `json:"head"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &head))
	require.Equal(t, cp1.ID, head.Head, "Kortyx's shape")
	var rb sessions.RollbackResult
	require.NoError(t, json.Unmarshal(fromKortyx([]byte(r.Body)), &rb))
	require.Equal(t, session, rb.SessionID)
	require.Equal(t, cp1.ID, rb.Head.ID)
	require.Len(t, rb.ActivePendingRequests, 1)
	answerHello(t, a2, session, "t3", ask, -1, "Grace")

	// Process B never served this session.
	r = mpPost(t, b+"/api/checkpoints", map[string]any{"action": "fork", "checkpointId": cp1.ID})
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	var fk sessions.ForkResult
	require.NoError(t, json.Unmarshal(fromKortyx([]byte(r.Body)), &fk))
	require.Equal(t, cp1.ID, fk.ForkedFrom)
	require.Regexp(t, `@`+fk.SessionID+`$`, fk.Checkpoint.ID, "the fork's checkpoint carries the fork's session")
	require.Len(t, fk.Checkpoint.ActivePendingRequests, 1)
	forkAsk := fk.Checkpoint.ActivePendingRequests[0]
	answerHello(t, b, fk.SessionID, "f1", contracts.Chunk{ResumeToken: forkAsk.Token, RequestID: forkAsk.RequestID}, -1, "Linus")
	// And a rollback in the fork, by the fork's checkpoint id alone, on A's restarted process.
	r = mpPost(t, a2+"/api/chat/checkpoints", map[string]any{"action": "rollback", "checkpointId": fk.Checkpoint.ID})
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"sessionId":"`+fk.SessionID+`"`)
}

// fromKortyx turns a checkpoint route answer (Kortyx's shapes) into the JSON of the contracts
// types the tests decode it into: createdAt milliseconds back to RFC 3339, rollback's head the
// summary in headCheckpoint.
func fromKortyx(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if ms, ok := e.(float64); ok && k == "createdAt" {
					x[k] = time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	if m, ok := v.(map[string]any); ok {
		if head, ok := m["headCheckpoint"]; ok {
			m["head"] = head
			delete(m, "headCheckpoint")
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// Issue 19 items 4, 6 and 7: the dev-mode worker serves the checkpoint route also at Kortyx's
// example path /api/chat/checkpoints, and answers the preflights of pages on loopback origins
// (any port) and of KORTYX_CORS_ORIGINS with 204, others with 403.
func TestDevWorkerCheckpointPathAndCORS(t *testing.T) {
	p := startProcess(t, taskQueue(t), nil, "TEMPORAL_ADDRESS=", "KORTYX_ROOT="+t.TempDir(), "TEMPORAL_CLI_PATH="+tcliPath,
		"KORTYX_DEV_PORT=0", "KORTYX_DEV_UI_PORT=-1", "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_CORS_ORIGINS=https://app.example.com")
	base := p.apiURL(t)
	preflight := func(path, origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/api/chat", "/api/chat/stop", "/api/checkpoints", "/api/chat/checkpoints"} {
		for _, origin := range []string{"http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8081", "https://app.example.com"} {
			resp := preflight(path, origin)
			require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s from %s", path, origin)
			require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), path)
			require.Equal(t, "POST, OPTIONS", resp.Header.Get("Access-Control-Allow-Methods"), path)
			require.Equal(t, "Content-Type, Authorization, Last-Event-ID, X-Kortyx-Resumable", resp.Header.Get("Access-Control-Allow-Headers"), path)
		}
		resp := preflight(path, "https://evil.example")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), path)
	}

	req, err := http.NewRequest(http.MethodPost, base+"/api/chat/checkpoints", strings.NewReader(`{"action":"list","sessionId":"nobody"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://localhost:5173")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	require.Equal(t, "[]\n", string(b))
	require.Equal(t, "http://localhost:5173", resp.Header.Get("Access-Control-Allow-Origin"))
}
