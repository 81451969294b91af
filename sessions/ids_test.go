package sessions_test

import (
	"context"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// A session id that Temporal cannot carry in a gRPC header is refused before any call, with
// INVALID_SESSION naming the field.
func TestSessionIDsFollowTheIDRule(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{})
	require.NoError(t, err)
	svc, err := sessions.New(sessions.Options{Client: c})
	require.NoError(t, err)
	ctx := context.Background()
	for _, id := range []string{"", " s1", "caf\u00e9", "s-\U0001F600", "a\tb", "a\u200bb"} {
		_, err := svc.Start(ctx, id, sessions.TurnRequest{})
		require.Equal(t, contracts.CodeInvalidSession, contracts.CodeOf(err), "%q", id)
		require.Equal(t, []any{"sessionId"}, contracts.FailureOf(err).Issues[0].Path, "%q", id)
		_, err = svc.Stop(ctx, id, "")
		require.Equal(t, contracts.CodeInvalidSession, contracts.CodeOf(err), "%q", id)
		_, err = svc.View(ctx, id)
		require.Equal(t, contracts.CodeInvalidSession, contracts.CodeOf(err), "%q", id)
	}
}
