package chat

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// pingBroker is an in-memory broker whose store answers Ping with err.
type pingBroker struct {
	stream.Broker
	err   error
	pings int
}

func (b *pingBroker) Ping(context.Context) error {
	b.pings++
	return b.err
}

// A broker whose store does not answer: the chat route refuses the turn with 503
// STREAM_UNAVAILABLE (retryable) before any Temporal call (the client here dials nothing) and
// before OnTurnAccepted; the cause stays out of the body. Prompts and answers alike.
func TestTurnRefusedWhenBrokerDown(t *testing.T) {
	b := &pingBroker{Broker: stream.NewMemory(stream.MemoryOptions{}), err: errors.New("dial tcp 127.0.0.1:6399: connect: connection refused")}
	accepted := 0
	h, err := NewHandler(service(t, lazyClient(t), b), Options{AllowUnauthenticated: true,
		OnTurnAccepted: func(context.Context, TurnAccepted) error { accepted++; return nil }})
	require.NoError(t, err)
	for _, body := range []string{
		`{"sessionId": "s1", "clientTurnId": "t1", "messages": [{"role": "user", "content": "hi"}]}`,
		`{"sessionId": "s1", "clientTurnId": "t2", "messages": [{"role": "user", "content": "Ada", "metadata": {"resume": {"token": "tok", "requestId": "r1"}}}]}`,
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(body)))
		require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var eb struct {
			Error   string            `json:"error"`
			Failure contracts.Failure `json:"failure"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &eb), w.Body.String())
		require.Equal(t, contracts.CodeStreamUnavailable, eb.Failure.Code)
		require.True(t, eb.Failure.Retryable)
		require.Equal(t, "The stream store (Redis) does not answer, so no turn was started; try again shortly.", eb.Error)
		require.NotContains(t, w.Body.String(), "connection refused")
	}
	require.Equal(t, 2, b.pings)
	require.Zero(t, accepted, "no turn accepted")

	// A bad request is refused as such before the check.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(`{"messages": []}`)))
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	require.Equal(t, 2, b.pings)
}
