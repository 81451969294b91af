package chat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// A checkpoint id carries its session: a request that names only the checkpoint finds its
// session without any index (a fresh process, another process), and is authorized with it.
// Ids without a session (older checkpoints) still go through the index.
func TestCheckpointIDNamesItsSession(t *testing.T) {
	var authorized []sessions.Access
	h, err := NewCheckpointHandler(service(t, lazyClient(t), nil), CheckpointOptions{index: newSessionIndex(10),
		Authorize: func(r *http.Request, a sessions.Access) error {
			authorized = append(authorized, a)
			return contracts.Errorf(contracts.CodeForbidden, "Stop here.") // before Temporal
		},
	})
	require.NoError(t, err)
	id := "cp-0b7e2a4c-5d6f-4a1b-9c8d-7e6f5a4b3c2d@web-s1"
	for _, action := range []string{"rollback", "get", "fork"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/checkpoints", strings.NewReader(`{"action": "`+action+`", "checkpointId": "`+id+`"}`)))
		require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	}
	require.Equal(t, []sessions.Access{
		{Wire: "chat", Action: sessions.ActionRollback, SessionID: "web-s1"},
		{Wire: "chat", Action: sessions.ActionRead, SessionID: "web-s1"},
		{Wire: "chat", Action: sessions.ActionFork, SessionID: "web-s1"},
	}, authorized)

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/checkpoints", strings.NewReader(`{"action": "rollback", "checkpointId": "cp-0b7e2a4c-5d6f-4a1b-9c8d-7e6f5a4b3c2d"}`)))
	require.Equal(t, http.StatusNotFound, w.Code, "an older id this process never saw")
}

// Origins with the port "*" allow their scheme and host on any port, and nothing else.
func TestCORSAnyPort(t *testing.T) {
	h, err := NewCheckpointHandler(service(t, lazyClient(t), nil), CheckpointOptions{AllowUnauthenticated: true,
		CORS: &CORS{AllowedOrigins: []string{"http://localhost:*", "http://[::1]:*"}}})
	require.NoError(t, err)
	pre := func(origin string) int {
		r := httptest.NewRequest(http.MethodOptions, "/api/checkpoints", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for origin, want := range map[string]int{
		"http://localhost:5173": http.StatusNoContent,
		"http://localhost":      http.StatusNoContent,
		"http://[::1]:3000":     http.StatusNoContent,
		"https://localhost:443": http.StatusForbidden,
		"http://localhost.evil": http.StatusForbidden,
		"http://localhost:5x":   http.StatusForbidden,
		"http://localhost:":     http.StatusForbidden,
		"http://127.0.0.1:5173": http.StatusForbidden,
	} {
		require.Equal(t, want, pre(origin), origin)
	}
}

// With lifecycle callbacks, a request without sessionId or clientTurnId is malformed: 400
// INVALID_REQUEST naming the field, before Authorize (which would refuse it as not the
// caller's).
func TestCallbackIDsBeforeAuthorize(t *testing.T) {
	authorized := 0
	h, err := NewHandler(service(t, lazyClient(t), stream.NewMemory(stream.MemoryOptions{})), Options{
		Authorize: func(r *http.Request, a sessions.Access) error {
			authorized++
			return contracts.Errorf(contracts.CodeForbidden, "This session is not yours.")
		},
		OnTurnAccepted: func(context.Context, TurnAccepted) error { return nil },
	})
	require.NoError(t, err)
	for body, fields := range map[string][]string{
		`{"clientTurnId": "t1", "messages": [{"role": "user", "content": "hi"}]}`:                        {"sessionId"},
		`{"sessionId": "s1", "messages": [{"role": "user", "content": "hi"}]}`:                           {"clientTurnId"},
		`{"messages": [{"role": "user", "content": "hi"}]}`:                                              {"sessionId", "clientTurnId"},
		`{"sessionId": "s1", "clientTurnId": "t1", "messages": [{"role": "assistant", "content": "x"}]}`: {"messages"},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(body)))
		require.Equal(t, http.StatusBadRequest, w.Code, body)
		var eb struct {
			Failure contracts.Failure `json:"failure"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &eb))
		require.Equal(t, contracts.CodeInvalidRequest, eb.Failure.Code, body)
		var got []string
		for _, is := range eb.Failure.Issues {
			got = append(got, is.Path[0].(string))
		}
		require.Equal(t, fields, got, body)
	}
	require.Zero(t, authorized, "refused before Authorize")
	// With both ids, Authorize decides.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(`{"sessionId": "s1", "clientTurnId": "t1", "messages": [{"role": "user", "content": "hi"}]}`)))
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Equal(t, 1, authorized)
}
