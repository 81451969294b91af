package workflows

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

const cappedYAML = `
id: capped
version: "1"
budget: {maxTokens: 5000, period: month, onBudgetExhausted: fail}
nodes:
  a: {run: a}
edges: [[__start__, a], [a, __end__]]
`

// An agent's shared budget from YAML (docs/budgets.md); a bad one is an INVALID_DEFINITION
// issue at "budget".
func TestLoadAgentBudget(t *testing.T) {
	d, err := Load([]byte(cappedYAML))
	require.NoError(t, err)
	require.Equal(t, &contracts.ScopeBudget{MaxTokens: 5000, Period: "month", OnBudgetExhausted: "fail"}, d.Budget)
	for src, msg := range map[string]string{
		"budget: {maxTokens: -1}":            "cannot be negative",
		"budget: {period: week}":             `budget period "week"`,
		"budget: {tokens: 5}":                "tokens",
		"budget: {onBudgetExhausted: later}": "onBudgetExhausted",
	} {
		_, err := Load([]byte("id: x\nversion: \"1\"\n" + src + "\nnodes: {a: {run: a}}\nedges: [[__start__, a], [a, __end__]]\n"))
		require.Error(t, err, src)
		require.Contains(t, err.Error(), msg, src)
		require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err), src)
	}
}

// The shared budgets a new run is put under: its agent's own budget, else the worker's agent
// budget; and the worker's tenant budget for a run with a tenant.
func TestScopeBudgets(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.RegisterNode("a", func(workflow.Context, NodeInput) (NodeResult, error) { return NodeResult{}, nil }))
	d, err := Load([]byte(cappedYAML))
	require.NoError(t, err)
	require.NoError(t, reg.Add(d))
	require.NoError(t, reg.Add(&Definition{ID: "plain", Version: "1", Nodes: map[string]Node{"a": {RunName: "a"}},
		Edges: []Edge{{From: Start, To: "a"}, {From: "a", To: End}}}))
	capped := protocol.LedgerConfig{Scope: "agent", Key: "capped", Budget: *d.Budget}
	require.Equal(t, []protocol.LedgerConfig{capped}, reg.scopeBudgets("capped", "acme"))
	require.Nil(t, reg.scopeBudgets("plain", "acme"))

	require.NoError(t, reg.SetAgentBudget(contracts.ScopeBudget{MaxTokens: 100}))
	require.NoError(t, reg.SetTenantBudget(contracts.ScopeBudget{MaxCost: 5, Period: "day"}))
	tenant := protocol.LedgerConfig{Scope: "tenant", Key: "acme", Budget: contracts.ScopeBudget{MaxCost: 5, Period: "day"}}
	require.Equal(t, []protocol.LedgerConfig{capped, tenant}, reg.scopeBudgets("capped", "acme"), "the agent's own budget wins")
	require.Equal(t, []protocol.LedgerConfig{{Scope: "agent", Key: "plain", Budget: contracts.ScopeBudget{MaxTokens: 100}}}, reg.scopeBudgets("plain", ""),
		"no tenant: no tenant budget")
	require.Error(t, reg.SetTenantBudget(contracts.ScopeBudget{MaxTokens: -1}))
}
