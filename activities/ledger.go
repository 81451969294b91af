package activities

import (
	"context"
	"fmt"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
)

// reserveLedgers makes a model pass's reservations at its shared budgets' ledgers
// (docs/budgets.md): one update each, started with its ledger when the ledger does not exist
// yet, deduplicated by the run's reservation number so that a retried pass gets the grant it
// got before. It returns the grants, the output the pass may write (0: unchanged), and the
// scope whose grant left too little for the pass ("": none).
func reserveLedgers(ctx context.Context, in protocol.ModelPassInput) (grants []protocol.LedgerGrant, output int, short string, err error) {
	if len(in.Ledger) == 0 {
		return nil, 0, "", nil
	}
	if !activity.IsActivity(ctx) {
		return nil, 0, "", contracts.Errorf(contracts.CodeExecutionFailed, "a shared budget's reservation runs in a model pass's activity")
	}
	c := activity.GetClient(ctx)
	if c == nil {
		return nil, 0, "", contracts.ToTemporal(contracts.Errorf(contracts.CodeExecutionFailed, "the worker has no Temporal client to reach the budget's ledger"))
	}
	queue := activity.GetInfo(ctx).TaskQueue
	for _, ask := range in.Ledger {
		start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID: ask.ID, TaskQueue: queue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			StaticSummary:            "budget ledger of " + ask.Config.Scope + " " + ask.Config.Key,
		}, protocol.LedgerWorkflowName, protocol.LedgerStart{Scope: ask.Config.Scope, Key: ask.Config.Key, Window: ask.Window})
		h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateID: fmt.Sprintf("%s:%d", ask.RunID, ask.Seq), UpdateName: protocol.LedgerReserveUpdate,
				Args: []any{ask.Reserve()}, WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err != nil {
			return nil, 0, "", fmt.Errorf("reserving at the %s budget's ledger %s: %w", ask.Config.Scope, ask.ID, err)
		}
		var g protocol.LedgerGrant
		if err := h.Get(ctx, &g); err != nil {
			return nil, 0, "", fmt.Errorf("reserving at the %s budget's ledger %s: %w", ask.Config.Scope, ask.ID, err)
		}
		grants = append(grants, g)
		allowed := ask.Allowed(g)
		if allowed < 1 && short == "" {
			short = ask.Config.Scope
		}
		if allowed < ask.Output && (output == 0 || allowed < output) {
			output = allowed
		}
	}
	return grants, output, short, nil
}
