package chat

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// Every 5xx of the routes is logged on Options.Logger with its cause; 4xx are not.
func TestFiveHundredsAreLoggedWithTheirCause(t *testing.T) {
	var logs bytes.Buffer
	h, err := NewHandler(service(t, lazyClient(t), stream.NewMemory(stream.MemoryOptions{})), Options{AllowUnauthenticated: true,
		Logger:         slog.New(slog.NewTextHandler(&logs, nil)),
		OnTurnAccepted: func(context.Context, TurnAccepted) error { return errors.New("the transcript database is down") },
		// Handled, so that only the route's own log line is written.
		OnLifecycleError: func(LifecycleError) {}})
	require.NoError(t, err)
	do := func(body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(body)))
		return w
	}
	w := do(`{"sessionId": "caf` + "\u00e9" + `", "clientTurnId": "t1", "messages": [{"role": "user", "content": "hi"}]}`)
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	require.Empty(t, logs.String())

	w = do(`{"sessionId": "s1", "clientTurnId": "t1", "messages": [{"role": "user", "content": "hi"}]}`)
	require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	require.NotContains(t, w.Body.String(), "database")
	require.Contains(t, logs.String(), "status=503")
	require.Contains(t, logs.String(), "code=CHAT_LIFECYCLE_HOOK_FAILED")
	require.Contains(t, logs.String(), `cause="the transcript database is down"`)
	require.Contains(t, logs.String(), "path=/api/chat")
}
