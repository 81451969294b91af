package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

// Two prompts that reach the session together while a question is open: the first one
// cancels the question's run (a blocking command) before its turn is active. The second must
// wait for it and be refused as busy, not start a second run beside it.
func TestSessionPromptsDuringACancelDoNotBothStart(t *testing.T) {
	h := newSessionHarness(t)
	h.env.OnRequestCancelExternalWorkflow(mock.Anything, mock.Anything, mock.Anything).Return(nil)
	b, _ := json.Marshal("hi")
	_, refused := h.firstTurnAsks(3 * time.Second)
	codes := map[string]contracts.Code{}
	done := 0
	h.env.RegisterDelayedCallback(func() {
		for _, id := range []string{"p1", "p2"} {
			h.env.UpdateWorkflow(protocol.SessionStartTurnUpdate, id, &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) { codes[id], done = contracts.CodeOf(err), done+1 },
				OnComplete: func(_ any, err error) {
					codes[id], done = "", done+1
					if err != nil {
						codes[id] = contracts.CodeOf(err)
					}
				},
			}, sessionapi.TurnRequest{Workflow: "echo", Input: b})
		}
	}, 5*time.Second)
	var v sessionapi.SessionView
	h.view(8*time.Second, &v)
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, 9*time.Second)
	h.env.ExecuteWorkflow(protocol.SessionWorkflowName, protocol.SessionInput{SessionID: "s"})

	require.NoError(t, *refused)
	require.Equal(t, 2, done)
	require.Equal(t, map[string]contracts.Code{"p1": "", "p2": contracts.CodeSessionBusy}, codes)
	require.Len(t, h.runs, 2, "the first turn's run and one prompt's run")
	require.NotNil(t, v.Active)
	require.Equal(t, 2, v.Active.TurnIndex)
}
