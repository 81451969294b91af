package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// maxBudgets bounds the ledgers GET /api/budgets lists.
const maxBudgets = 200

// budgets answers GET /api/budgets: the shared budgets' ledgers (an agent's, a tenant's, per
// period: docs/budgets.md) that are open, newest first, each with what it counts as used
// against its budget (its state query). ?scope=agent|tenant keeps one scope.
func (o Options) budgets(r *http.Request) (any, error) {
	scope := strings.TrimSpace(r.URL.Query().Get("scope"))
	if scope != "" && scope != contracts.ScopeAgent && scope != contracts.ScopeTenant {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "scope %q is not %q or %q", scope, contracts.ScopeAgent, contracts.ScopeTenant)
	}
	queue, err := o.ledgerQueue(r)
	if err != nil {
		return nil, err
	}
	query := "WorkflowType = '" + protocol.LedgerWorkflowName + "' AND ExecutionStatus = 'Running' AND TaskQueue = '" + queue + "'"
	if scope != "" {
		query += " AND WorkflowId STARTS_WITH '" + strings.TrimSuffix(protocol.LedgerID(queue, scope, "", ""), "/") + "/'"
	}
	resp, err := o.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace, PageSize: maxBudgets, Query: query,
	})
	if err != nil {
		return nil, err
	}
	out := []protocol.LedgerView{}
	for _, e := range resp.GetExecutions() {
		if e.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		v, err := o.ledger(r.Context(), e.GetExecution().GetWorkflowId())
		if err != nil {
			continue // ended since it was listed
		}
		out = append(out, v)
	}
	return map[string]any{"budgets": out}, nil
}

// budget answers GET /api/budgets/{scope}/{key}: one ledger (?window=2026-12 for a budget with
// a period; default: none).
func (o Options) budget(r *http.Request) (any, error) {
	scope, key := r.PathValue("scope"), r.PathValue("key")
	if scope != contracts.ScopeAgent && scope != contracts.ScopeTenant {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "scope %q is not %q or %q", scope, contracts.ScopeAgent, contracts.ScopeTenant)
	}
	if key == "" {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "name the agent or the tenant")
	}
	queue, err := o.ledgerQueue(r)
	if err != nil {
		return nil, err
	}
	v, err := o.ledger(r.Context(), protocol.LedgerID(queue, scope, key, strings.TrimSpace(r.URL.Query().Get("window"))))
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, contracts.Errorf(contracts.CodeNotFound, "no %s budget of %q has a ledger: none of its runs made a model pass under it yet", scope, key)
	}
	return v, err
}

// ledgerQueue is the task queue whose ledgers a request reads: ?queue=, else the Studio's.
func (o Options) ledgerQueue(r *http.Request) (string, error) {
	q := strings.TrimSpace(r.URL.Query().Get("queue"))
	if q == "" {
		q = o.TaskQueue
	}
	if q == "" || strings.ContainsAny(q, "'\"\\") {
		return "", contracts.Errorf(contracts.CodeInvalidRequest, "name the workers' task queue (?queue=)")
	}
	return q, nil
}

// ledger reads a ledger's state.
func (o Options) ledger(ctx context.Context, id string) (protocol.LedgerView, error) {
	var v protocol.LedgerView
	res, err := o.Client.QueryWorkflow(ctx, id, "", protocol.LedgerStateQuery)
	if err != nil {
		return v, err
	}
	return v, res.Get(&v)
}
