package workflows_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// ledgerEnv is a test environment running the shared budgets' ledger workflow.
func ledgerEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Ledger, workflow.RegisterOptions{Name: protocol.LedgerWorkflowName})
	return env
}

// reserve sends a reservation update at test time d and keeps its grant or error.
func reserve(env *testsuite.TestWorkflowEnvironment, d time.Duration, q protocol.LedgerReserve, got *protocol.LedgerGrant, gotErr *error) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(protocol.LedgerReserveUpdate, q.RunID+"-"+d.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { *gotErr = err },
			OnComplete: func(res any, err error) {
				if g, ok := res.(protocol.LedgerGrant); ok {
					*got = g
				}
				*gotErr = err
			},
		}, q)
	}, d)
}

// The ledger workflow: grants what is left, the same grant again for the same reservation, a
// bad reservation rejected by the validator; a settlement replaces the run's grant by its
// spend; a ledger whose period is over ends once no run holds a grant.
func TestLedgerWorkflow(t *testing.T) {
	env := ledgerEnv(t)
	b := contracts.ScopeBudget{MaxTokens: 100}
	var g1, g1again, g2 protocol.LedgerGrant
	var e1, e1again, e2, bad error
	reserve(env, time.Second, protocol.LedgerReserve{RunID: "a", Seq: 1, Tokens: 70, Budget: b}, &g1, &e1)
	reserve(env, 2*time.Second, protocol.LedgerReserve{RunID: "a", Seq: 1, Tokens: 70, Budget: b}, &g1again, &e1again)
	reserve(env, 3*time.Second, protocol.LedgerReserve{RunID: "b", Seq: 1, Tokens: 70, Budget: b}, &g2, &e2)
	var ignored protocol.LedgerGrant
	reserve(env, 4*time.Second, protocol.LedgerReserve{RunID: "", Seq: 1, Tokens: 1, Budget: b}, &ignored, &bad)
	var mid protocol.LedgerView
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(protocol.LedgerStateQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
		env.SignalWorkflow(protocol.LedgerSettleSignal, protocol.LedgerSettle{RunID: "a", Tokens: 12})
	}, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(protocol.LedgerSettleSignal, protocol.LedgerSettle{RunID: "b", Tokens: 20})
	}, 6*time.Second)
	// The period (2020-01) is long over: the ledger ends when its last run settled.
	env.ExecuteWorkflow(protocol.LedgerWorkflowName, protocol.LedgerStart{Scope: "agent", Key: "support", Window: "2020-01"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, e1)
	require.NoError(t, e1again)
	require.NoError(t, e2)
	require.Error(t, bad, "a reservation without a run is rejected")
	require.Equal(t, 70, g1.Tokens)
	require.Equal(t, g1, g1again)
	require.Equal(t, 30, g2.Tokens, "what is left")
	require.Equal(t, 100, g2.UsedTokens)
	require.Equal(t, 100, mid.Tokens)
	require.Len(t, mid.Live, 2)
}

// A ledger continued as new carries its state: what settled runs spent and the live runs'
// grants.
func TestLedgerContinuesAsNew(t *testing.T) {
	env := ledgerEnv(t)
	b := contracts.ScopeBudget{MaxTokens: 100}
	var g protocol.LedgerGrant
	var e error
	reserve(env, time.Second, protocol.LedgerReserve{RunID: "a", Seq: 1, Tokens: 40, Budget: b}, &g, &e)
	var g2 protocol.LedgerGrant
	var e2 error
	reserve(env, 2*time.Second, protocol.LedgerReserve{RunID: "b", Seq: 1, Tokens: 40, Budget: b}, &g2, &e2)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(protocol.LedgerSettleSignal, protocol.LedgerSettle{RunID: "a", Tokens: 5})
	}, 3*time.Second)
	env.ExecuteWorkflow(protocol.LedgerWorkflowName, protocol.LedgerStart{Scope: "tenant", Key: "acme", ContinueAsNewAfter: 1})
	require.NoError(t, e)
	require.NoError(t, e2)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	var next protocol.LedgerStart
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "acme", next.Key)
	require.NotNil(t, next.State)
	require.Equal(t, 5, next.State.SpentTokens)
	require.Equal(t, 1, next.State.Settled)
	require.Equal(t, 40, next.State.Runs["b"].Tokens)
	require.Equal(t, 100, next.State.Budget.MaxTokens)
}
