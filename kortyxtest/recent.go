package kortyxtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// RecentOptions select the histories [ReplayRecent] replays.
type RecentOptions struct {
	// Workflow is a workflow type (kortyx.Run, kortyx.Session, an agent's own type), an agent
	// id (runs whose KortyxWorkflow search attribute is it), or one workflow ID. Required.
	Workflow string
	// Limit bounds the number of executions replayed, newest first (default 20).
	Limit int
	// Since keeps the executions started within that long before now (0: no bound).
	Since time.Duration
	// Replay configures each replay (its WorkflowID is set per history).
	Replay ReplayOptions
}

// RecentResult is the outcome of replaying one execution.
type RecentResult struct {
	WorkflowID, RunID, Type string
	Status                  string // the execution's status when it was listed (Running, Completed…)
	// Err is nil when today's code makes the decisions the history recorded, else the
	// replayer's error (a non-determinism error names the node or the activity id that differs).
	Err error
}

// ReplayRecent lists the recent executions (open and closed) that opts.Workflow selects and
// replays each history against reg as [Replay] does: the check to run before deploying a
// change, against the histories of the runs in flight and recently finished. It returns one
// result per execution, newest first; the error is for listing or fetching, not for replays.
func ReplayRecent(ctx context.Context, c client.Client, reg *workflows.Registry, opts RecentOptions) ([]RecentResult, error) {
	w := strings.TrimSpace(opts.Workflow)
	if w == "" {
		return nil, contracts.Errorf(contracts.CodeInvalidInput, "kortyxtest.ReplayRecent: name a workflow type, an agent id or a workflow ID")
	}
	if strings.ContainsAny(w, `'"\`) {
		return nil, contracts.Errorf(contracts.CodeInvalidInput, "kortyxtest.ReplayRecent: %q cannot be a workflow type or id (quotes and backslashes are not allowed)", w)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 20
	}
	q := fmt.Sprintf("(WorkflowType = '%s' OR WorkflowId = '%s' OR %s = '%s')", w, w, contracts.SearchAttributeWorkflow, w)
	if opts.Since > 0 {
		q += fmt.Sprintf(" AND StartTime > '%s'", time.Now().Add(-opts.Since).UTC().Format(time.RFC3339Nano))
	}
	var out []RecentResult
	var token []byte
	for len(out) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: int32(limit), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("kortyxtest.ReplayRecent: listing %s: %w", q, err)
		}
		for _, e := range resp.GetExecutions() {
			if len(out) == limit {
				break
			}
			r := RecentResult{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(),
				Type: e.GetType().GetName(), Status: strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")}
			h, err := FetchHistory(ctx, c, r.WorkflowID, r.RunID)
			if err != nil {
				return nil, err
			}
			o := opts.Replay
			o.WorkflowID = r.WorkflowID
			r.Err = Replay(reg, h, o)
			out = append(out, r)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return out, nil
}
