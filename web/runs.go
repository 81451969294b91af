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
	// Error is a failed run's failure: its code and safe message (as its trace's).
	Error *rowError `json:"error,omitempty"`

	historyLength int64                           // the visibility record's, for the spend cache
	closeStatus   enumspb.WorkflowExecutionStatus // Temporal's status of the execution
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

// statusFilters are the visibility conditions of the status filter where they differ from
// [runStatuses]: a child run that asks a question keeps KortyxStatus running (its question is
// its root's, the one the inbox and the waiting gauge count), so running and waiting also match
// the open child runs, and the list keeps those whose state query agrees ([keepStatus]).
var statusFilters = map[string]string{
	"running": "ExecutionStatus = 'Running' AND " + contracts.SearchAttributeStatus + " = 'running'",
	"waiting": "ExecutionStatus = 'Running' AND (" + contracts.SearchAttributeStatus + " = 'waiting' OR (" +
		contracts.SearchAttributeStatus + " = 'running' AND ParentWorkflowId IS NOT NULL))",
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
		if f, wider := statusFilters[v]; wider {
			c = f
		}
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
	if v := value("code"); v != "" {
		if !contracts.Code(v).Declared() {
			issues = append(issues, contracts.Issue{Path: []any{"code"}, Code: "invalid_enum_value", Message: "code must be a Kortyx error code such as EXECUTION_FAILED"})
		}
		conds = append(conds, runStatuses["failed"])
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
	// Visibility lists the open executions first: the page is ordered by start, newest first.
	slices.SortStableFunc(page.Runs, func(a, b runItem) int { return b.StartedAt.Compare(a.StartedAt) })
	o.questions(r.Context(), page.Runs)
	page.Runs = keepStatus(r, page.Runs)
	page.Runs, _ = keepCode(r, page.Runs, o.spends(r.Context(), page.Runs))
	return page, nil
}

// keepStatus keeps the items of the status filter's status (running and waiting are matched
// wider in visibility: [statusFilters]).
func keepStatus(r *http.Request, items []runItem) []runItem {
	want := strings.TrimSpace(r.URL.Query().Get("status"))
	if _, wider := statusFilters[want]; !wider {
		return items
	}
	return slices.DeleteFunc(items, func(it runItem) bool { return it.Status != want })
}

// keepCode keeps the failed items whose error has the code filter's code (a failure's code is
// not a search attribute: the rows are read, then filtered), with their spends.
func keepCode(r *http.Request, items []runItem, spends []runSpend) ([]runItem, []runSpend) {
	code := contracts.Code(strings.TrimSpace(r.URL.Query().Get("code")))
	if code == "" {
		return items, spends
	}
	var keptItems []runItem
	var keptSpends []runSpend
	for i, it := range items {
		if it.Error != nil && it.Error.Code == code {
			keptItems, keptSpends = append(keptItems, it), append(keptSpends, spends[i])
		}
	}
	if keptItems == nil {
		keptItems = []runItem{}
	}
	return keptItems, keptSpends
}

// runOf is the list item of a run's visibility record.
func runOf(e *workflowpb.WorkflowExecutionInfo, now time.Time) runItem {
	sa := e.GetSearchAttributes().GetIndexedFields()
	var agent, status, session string
	_ = decodeKeyword(sa[contracts.SearchAttributeWorkflow], &agent)
	_ = decodeKeyword(sa[contracts.SearchAttributeStatus], &status)
	_ = decodeKeyword(sa[contracts.SearchAttributeSession], &session)
	it := runItem{RunID: e.GetExecution().GetWorkflowId(), Agent: agent, Status: runStatus(status, e.GetStatus()), SessionID: session,
		StartedAt: e.GetStartTime().AsTime(), historyLength: e.GetHistoryLength(), closeStatus: e.GetStatus()}
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
// answered by a worker from its cache), and each running child run for its status: a child
// that asks a question keeps KortyxStatus running (the question is its root's) while it waits,
// and is listed waiting, with its question, as its own trace says. A run that does not answer
// keeps its status and no question.
func (o Options) questions(ctx context.Context, items []runItem) {
	eachAtMost(maxQueries, len(items), func(i int) {
		it := &items[i]
		child := it.ParentRunID != "" && it.Status == string(contracts.StatusRunning)
		if it.Status != string(contracts.StatusWaiting) && !child {
			return
		}
		// A run whose worker is gone holds its query until the timeout: a short one keeps the
		// list from waiting on it (the run is listed without its question).
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		defer cancel()
		v, err := kortyx.Query(qctx, o.Client, it.RunID)
		if err != nil || v.Pending == nil || (child && v.Status != contracts.StatusWaiting) {
			return
		}
		if child {
			it.Status = string(contracts.StatusWaiting)
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

// interrupt is one waiting question of GET /api/interrupts: the run is the root that presents
// it (where it is answered), Asker the child run that asked it, when a child did.
type interrupt struct {
	runItem
	// AgeMs is how long the question has waited.
	AgeMs int64  `json:"ageMs"`
	Asker *asker `json:"asker,omitempty"`
}

// asker is the child run (at any depth) whose question a root presents.
type asker struct {
	RunID string `json:"runId"`
	Agent string `json:"agent"`
	Node  string `json:"node,omitempty"`
	// ParentRunID is the run that started it (the root for a direct child).
	ParentRunID string `json:"parentRunId"`
}

// maxChildDepth bounds the search for the child that asks.
const maxChildDepth = 8

// askerOf finds the child run of runID that asks requestID: the pending child whose own state
// query has that question, then its pending child that has it, and so on; nil when runID asks
// it itself (or no child answers).
func (o Options) askerOf(ctx context.Context, runID, requestID string) *asker {
	var found *asker
	parent := runID
	for range maxChildDepth {
		described, err := o.Client.DescribeWorkflow(ctx, parent, "")
		if err != nil {
			return found
		}
		d := described.RawResponse
		var next *asker
		for _, pc := range d.GetPendingChildren() {
			qctx, cancel := context.WithTimeout(ctx, queryTimeout)
			v, err := kortyx.Query(qctx, o.Client, pc.GetWorkflowId())
			cancel()
			if err == nil && v.Pending != nil && v.Pending.RequestID == requestID {
				next = &asker{RunID: pc.GetWorkflowId(), Agent: v.Workflow, Node: v.Pending.Node, ParentRunID: parent}
				if next.Agent == "" {
					next.Agent = v.State.CurrentWorkflow
				}
				break
			}
		}
		if next == nil {
			return found
		}
		found, parent = next, next.RunID
	}
	return found
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
	eachAtMost(maxQueries, len(out), func(i int) {
		out[i].Asker = o.askerOf(r.Context(), out[i].RunID, out[i].Question.RequestID)
	})
	slices.SortStableFunc(out, func(a, b interrupt) int { return a.Question.AskedAt.Compare(b.Question.AskedAt) })
	return out, nil
}

// isInvalidArgument reports whether Temporal refused a request as malformed (a page token it
// did not issue).
func isInvalidArgument(err error) bool {
	var ia *serviceerror.InvalidArgument
	return errors.As(err, &ia)
}
