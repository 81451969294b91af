package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// Wire names are persisted in histories and known to running workflows: their values never
// change (add new ones instead).
func TestWireNamesNeverChange(t *testing.T) {
	for want, got := range map[string]string{
		"kortyx.Run": contracts.RunWorkflowName, "kortyx.Respond": contracts.RespondName, "kortyx.State": contracts.StateQueryName,
		"kortyx.Publish": contracts.PublishActivityName, "kortyx.Model": contracts.ModelActivityName,
		"kortyx.Tool": contracts.ToolActivityName, "kortyx.ListTools": contracts.ListToolsActivityName,
		"kortyx":         contracts.DefaultTaskQueue,
		"kortyx.Session": contracts.SessionWorkflowName, "kortyx.Session.StartTurn": contracts.SessionStartTurnUpdate,
		"kortyx.Session.ResumeTurn": contracts.SessionResumeTurnUpdate, "kortyx.Session.AbortTurn": contracts.SessionAbortTurnUpdate,
		"kortyx.Session.Stop": contracts.SessionStopUpdate, "kortyx.Session.Rollback": contracts.SessionRollbackUpdate,
		"kortyx.Session.Fork": contracts.SessionForkUpdate, "kortyx.Session.Checkpoint": contracts.SessionCheckpointSignal,
		"kortyx.Session.State": contracts.SessionQueryName, "kortyx.Child.Question": contracts.ChildQuestionSignal,
		"kortyx.Budget.Reserve": contracts.BudgetReserveSignal, "kortyx.Budget.Grant": contracts.BudgetGrantSignal,
		"kortyxOwner": contracts.SessionOwnerMemo, "KortyxSession": contracts.SearchAttributeSession,
		"KortyxWorkflow": contracts.SearchAttributeWorkflow, "KortyxStatus": contracts.SearchAttributeStatus,
	} {
		require.Equal(t, want, got)
	}
	require.Equal(t, "kortyx.Session.Checkpoint", contracts.SessionCheckpointQueryName, "the query and the signal share the name")
	require.Equal(t, "kortyx-session:s1", contracts.SessionWorkflowID("s1"))
}
