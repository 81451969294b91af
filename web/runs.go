package web

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// runItem is one run of GET /api/runs.
type runItem struct {
	RunID string `json:"runId"`
	// Agent is the run's workflow (KortyxWorkflow).
	Agent string `json:"agent"`
	// Status is running, waiting, completed, failed or cancelled.
	Status    string `json:"status"`
	SessionID string `json:"sessionId,omitempty"`
	// ParentRunID is the run that started this one as a child ("" for a top-level run or a
	// session's turn).
	ParentRunID string     `json:"parentRunId,omitempty"`
	StartedAt   time.Time  `json:"startedAt"`
	ClosedAt    *time.Time `json:"closedAt,omitempty"`
	// DurationMs is from the start to the close, or to now for a run that has not closed.
	DurationMs int64 `json:"durationMs"`
	// Question is the open question of a waiting run.
	Question *question `json:"question,omitempty"`
	// Usage and Cost are the run's own model passes' tokens and their cost (as in its trace;
	// a child run's are on its own row); absent when its history could not be read.
	Usage *providers.Usage `json:"usage,omitempty"`
	Cost  *runCost         `json:"cost,omitempty"`

	historyLength int64 // the visibility record's, for the spend cache
}

// question is a waiting run's open question.
type question struct {
	RequestID string                   `json:"requestId"`
	Token     string                   `json:"token"`
	Node      string                   `json:"node"`
	Kind      contracts.InterruptKind  `json:"kind"`
	Text      string                   `json:"question"`
	Input     contracts.InterruptInput `json:"input"`
	AskedAt   time.Time                `json:"askedAt"`
}

// runPage is the answer of GET /api/runs.
type runPage struct {
	Runs []runItem `json:"runs"`
	// NextPageToken asks for the next page (pageToken=…); "" on the last page.
	NextPageToken string `json:"nextPageToken"`
}

const (
	defaultRunPage = 50
	maxRunPage     = 200
)

// runStatuses are the values of the status filter, and the visibility condition of each: an
// open run's KortyxStatus, a closed run's Temporal status.
var runStatuses = map[string]string{
	"running":   "ExecutionStatus = 'Running' AND " + contracts.SearchAttributeStatus + " = 'running'",
	"waiting":   "ExecutionStatus = 'Running' AND " + contracts.SearchAttributeStatus + " = 'waiting'",
	"completed": "ExecutionStatus = 'Completed'",
	"failed":    "ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut')",
	"cancelled": "ExecutionStatus = 'Canceled'",
}

// runsQuery is the visibility query of a GET /api/runs request: every run (an execution with
// a KortyxWorkflow, whichever workflow type started it) that matches the filters, leaving out
// the generations a run closed by continuing as new.
func runsQuery(r *http.Request) (string, error) {
	q := r.URL.Query()
	var issues []contracts.Issue
	value := func(key string) string {
		v := strings.TrimSpace(q.Get(key))
		if strings.ContainsAny(v, `'"\`) {
			issues = append(issues, contracts.Issue{Path: []any{key}, Code: "invalid_string", Message: key + " must not contain quotes or backslashes"})
			return ""
		}
		return v
	}
	conds := []string{contracts.SearchAttributeWorkflow + " IS NOT NULL", "ExecutionStatus != 'ContinuedAsNew'"}
	if v := value("agent"); v != "" {
		conds = append(conds, contracts.SearchAttributeWorkflow+" = '"+v+"'")
	}
	if v := value("session"); v != "" {
		conds = append(conds, contracts.SearchAttributeSession+" = '"+v+"'")
	}
	if v := value("status"); v != "" {
		c, ok := runStatuses[v]
		if !ok {
			issues = append(issues, contracts.Issue{Path: []any{"status"}, Code: "invalid_enum_value", Message: "status must be one of running, waiting, completed, failed, cancelled"})
		}
		conds = append(conds, c)
	}
	for key, op := range map[string]string{"from": ">=", "to": "<="} {
		v := value(key)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			issues = append(issues, contracts.Issue{Path: []any{key}, Code: "invalid_date", Message: key + " must be an RFC 3339 time such as 2026-12-01T09:00:00Z"})
			continue
		}
		conds = append(conds, "StartTime "+op+" '"+t.UTC().Format(time.RFC3339Nano)+"'")
	}
	if v := value("q"); v != "" {
		conds = append(conds, "(WorkflowId STARTS_WITH '"+v+"' OR "+contracts.SearchAttributeSession+" STARTS_WITH '"+v+"' OR "+
			contracts.SearchAttributeWorkflow+" STARTS_WITH '"+v+"')")
	}
	if len(issues) > 0 {
		slices.SortFunc(issues, func(a, b contracts.Issue) int { return strings.Compare(fmt.Sprint(a.Path), fmt.Sprint(b.Path)) })
		return "", &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Fix the filters.", Issues: issues}
	}
	return strings.Join(conds, " AND "), nil
}

// pageSize is the pageSize parameter (default [defaultRunPage], at most [maxRunPage]).
func pageSize(r *http.Request) (int32, error) {
	v := r.URL.Query().Get("pageSize")
	if v == "" {
		return defaultRunPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxRunPage {
		return 0, contracts.Errorf(contracts.CodeInvalidRequest, "pageSize must be a number from 1 to %d.", maxRunPage)
	}
	return int32(n), nil
}

// runs serves GET /api/runs: the runs that match the filters (agent, status, session, from, to,
// q: a prefix of the run id, the session id or the agent), newest first, a page at a time, from
// Temporal visibility and, for waiting runs, their state query.
func (o Options) runs(r *http.Request) (any, error) {
	query, err := runsQuery(r)
	if err != nil {
		return nil, err
	}
	size, err := pageSize(r)
	if err != nil {
		return nil, err
	}
	token, err := base64.RawURLEncoding.DecodeString(r.URL.Query().Get("pageToken"))
	if err != nil {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "pageToken is not a token of this route: pass the nextPageToken of the previous page.")
	}
	resp, err := o.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace, PageSize: size, NextPageToken: token, Query: query,
	})
	if err != nil {
		if len(token) > 0 && isInvalidArgument(err) {
			return nil, contracts.Errorf(contracts.CodeInvalidRequest, "pageToken is not a token of this route: pass the nextPageToken of the previous page.")
		}
		return nil, err
	}
	page := runPage{Runs: []runItem{}, NextPageToken: base64.RawURLEncoding.EncodeToString(resp.NextPageToken)}
	now := time.Now()
	for _, e := range resp.Executions {
		page.Runs = append(page.Runs, runOf(e, now))
	}
	o.questions(r.Context(), page.Runs)
	o.spends(r.Context(), page.Runs)
	return page, nil
}

// runOf is the list item of a run's visibility record.
func runOf(e *workflowpb.WorkflowExecutionInfo, now time.Time) runItem {
	sa := e.GetSearchAttributes().GetIndexedFields()
	var agent, status, session string
	_ = decodeKeyword(sa[contracts.SearchAttributeWorkflow], &agent)
	_ = decodeKeyword(sa[contracts.SearchAttributeStatus], &status)
	_ = decodeKeyword(sa[contracts.SearchAttributeSession], &session)
	it := runItem{RunID: e.GetExecution().GetWorkflowId(), Agent: agent, Status: runStatus(status, e.GetStatus()), SessionID: session,
		StartedAt: e.GetStartTime().AsTime(), historyLength: e.GetHistoryLength()}
	if p := e.GetParentExecution().GetWorkflowId(); p != "" && !strings.HasPrefix(p, sessionPrefix) {
		it.ParentRunID = p
	}
	end := now
	if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && e.GetCloseTime() != nil {
		closed := e.GetCloseTime().AsTime()
		it.ClosedAt, end = &closed, closed
	}
	it.DurationMs = end.Sub(it.StartedAt).Milliseconds()
	return it
}

// maxQueries is how many state queries the lists send at once, and queryTimeout how long each
// may take.
const (
	maxQueries   = 8
	queryTimeout = 3 * time.Second
)

// questions asks each waiting run of items for its open question (the run's state query,
// answered by a worker from its cache). A run that does not answer keeps no question.
func (o Options) questions(ctx context.Context, items []runItem) {
	eachAtMost(maxQueries, len(items), func(i int) {
		it := &items[i]
		if it.Status != string(contracts.StatusWaiting) {
			return
		}
		// A run whose worker is gone holds its query until the timeout: a short one keeps the
		// list from waiting on it (the run is listed without its question).
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		defer cancel()
		v, err := kortyx.Query(qctx, o.Client, it.RunID)
		if err != nil || v.Pending == nil {
			return
		}
		p := v.Pending
		it.Question = &question{RequestID: p.RequestID, Token: p.Token, Node: p.Node, Kind: p.Input.Kind, Text: p.Input.Question, Input: p.Input, AskedAt: p.CreatedAt}
	})
}

// eachAtMost calls fn(0) … fn(n-1), at most limit at a time, and returns when all have.
func eachAtMost(limit, n int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// interrupt is one waiting question of GET /api/interrupts.
type interrupt struct {
	runItem
	// AgeMs is how long the question has waited.
	AgeMs int64 `json:"ageMs"`
}

// maxInterrupts bounds the inbox.
const maxInterrupts = 500

// interrupts serves GET /api/interrupts: every open question of every waiting run of the
// namespace (agent and session filters as for runs), oldest first, with its age.
func (o Options) interrupts(r *http.Request) (any, error) {
	query, err := runsQuery(r)
	if err != nil {
		return nil, err
	}
	query += " AND " + runStatuses["waiting"]
	var items []runItem
	var token []byte
	now := time.Now()
	for len(items) < maxInterrupts {
		resp, err := o.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: o.Namespace, PageSize: maxRunPage, NextPageToken: token, Query: query,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.Executions {
			items = append(items, runOf(e, now))
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	o.questions(r.Context(), items)
	o.spends(r.Context(), items)
	out := []interrupt{}
	for _, it := range items {
		if it.Question != nil {
			out = append(out, interrupt{runItem: it, AgeMs: now.Sub(it.Question.AskedAt).Milliseconds()})
		}
	}
	slices.SortStableFunc(out, func(a, b interrupt) int { return a.Question.AskedAt.Compare(b.Question.AskedAt) })
	return out, nil
}

// isInvalidArgument reports whether Temporal refused a request as malformed (a page token it
// did not issue).
func isInvalidArgument(err error) bool {
	var ia *serviceerror.InvalidArgument
	return errors.As(err, &ia)
}
