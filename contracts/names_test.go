package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// Wire names are persisted in histories and known to running workflows: their values never
// change (add new ones instead).
func TestWireNamesNeverChange(t *testing.T) {
	for want, got := range map[string]string{
		"kortyx.Run": contracts.RunWorkflowName, "kortyx.Respond": contracts.RespondName, "kortyx.State": contracts.StateQueryName,
		"kortyx.Publish": protocol.PublishActivityName, "kortyx.Model": protocol.ModelActivityName,
		"kortyx.Tool": protocol.ToolActivityName, "kortyx.ListTools": protocol.ListToolsActivityName,
		"kortyx":         contracts.DefaultTaskQueue,
		"kortyx.Session": protocol.SessionWorkflowName, "kortyx.Session.StartTurn": protocol.SessionStartTurnUpdate,
		"kortyx.Session.StartTurnByCaller": protocol.SessionStartTurnByCallerUpdate,
		"kortyx.Session.ResumeTurn":        protocol.SessionResumeTurnUpdate, "kortyx.Session.AbortTurn": protocol.SessionAbortTurnUpdate,
		"kortyx.Session.Stop": protocol.SessionStopUpdate, "kortyx.Session.Rollback": protocol.SessionRollbackUpdate,
		"kortyx.Session.Fork": protocol.SessionForkUpdate, "kortyx.Session.Checkpoint": protocol.SessionCheckpointSignal,
		"kortyx.Session.State": protocol.SessionQueryName, "kortyx.Child.Question": protocol.ChildQuestionSignal,
		"kortyx.Budget.Reserve": protocol.BudgetReserveSignal, "kortyx.Budget.Grant": protocol.BudgetGrantSignal,
		"kortyxOwner": protocol.SessionOwnerMemo, "KortyxSession": contracts.SearchAttributeSession,
		"KortyxWorkflow": contracts.SearchAttributeWorkflow, "KortyxStatus": contracts.SearchAttributeStatus,
	} {
		require.Equal(t, want, got)
	}
	require.Equal(t, "kortyx.Session.Checkpoint", protocol.SessionCheckpointQueryName, "the query and the signal share the name")
	require.Equal(t, "kortyx-session:s1", protocol.SessionWorkflowID("s1"))
}
