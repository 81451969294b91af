package workflows_test

import (
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// The session refuses an answer whose clientTurnId it remembers with another digest
// (CLIENT_TURN_CONFLICT), and reattaches the same digest to the claimed turn.
func TestSessionShellRefusesAClientTurnIDWithOtherContent(t *testing.T) {
	h := newSessionHarness(t)
	_, refused := h.firstTurnAsks(2 * time.Second)
	claim := protocol.ResumeTurnRequest{Token: "tok-1", RequestID: "req-1", ClientTurnID: "c2", Digest: "approve"}
	var claimed, same, none sessionapi.TurnStarted
	var conflict error
	h.update(3*time.Second, protocol.SessionResumeTurnUpdate, claim, &claimed, refused)
	other := claim
	other.Digest = "deny"
	h.update(4*time.Second, protocol.SessionResumeTurnUpdate, other, &none, &conflict)
	h.update(5*time.Second, protocol.SessionResumeTurnUpdate, claim, &same, refused)
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, time.Minute)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionInput{SessionID: "s"})

	require.True(t, temporal.IsCanceledError(h.env.GetWorkflowError()), "%v", h.env.GetWorkflowError())
	require.NoError(t, *refused)
	require.Equal(t, contracts.CodeClientTurnConflict, contracts.CodeOf(conflict), "%v", conflict)
	require.Empty(t, none.RunID)
	require.False(t, claimed.Reattached)
	require.Equal(t, sessionapi.TurnStarted{SessionID: "s", RunID: claimed.RunID, TurnIndex: 2, Reattached: true}, same)
}
