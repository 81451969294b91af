package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// downBroker is a broker whose store does not answer.
type downBroker struct{ stream.Broker }

func (downBroker) Ping(context.Context) error {
	return errors.New("dial tcp 10.0.0.7:6379: connection refused")
}

// noTemporal is a client every call of which would panic: nothing may reach Temporal.
type noTemporal struct{ client.Client }

// A broker that does not answer stops a turn before anything is sent to Temporal, on every wire
// (they all start and answer through the service): STREAM_UNAVAILABLE, retryable, no address.
func TestStartNeedsTheBroker(t *testing.T) {
	svc, err := sessions.New(sessions.Options{Client: noTemporal{}, Broker: downBroker{stream.NewMemory(stream.MemoryOptions{})}})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = svc.Start(ctx, "s1", sessions.TurnRequest{Workflow: "hello", Input: json.RawMessage(`"hi"`)})
	f := contracts.FailureOf(err)
	require.Equal(t, contracts.CodeStreamUnavailable, f.Code)
	require.True(t, f.Retryable)
	require.Equal(t, "The stream store (Redis) does not answer, so no turn was started; try again shortly.", f.Message)
	_, err = svc.Answer(ctx, "s1", contracts.Response{Token: "t", RequestID: "r", Text: "Ada"}, sessions.AnswerOptions{})
	require.Equal(t, contracts.CodeStreamUnavailable, contracts.CodeOf(err))
}
