package web

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// overview is the answer of GET /api/overview: what an operator looks at first.
type overview struct {
	// Since is the start of the window (the last hour, to the second) and Now when the figures
	// were read.
	Since time.Time `json:"since"`
	Now   time.Time `json:"now"`
	// Runs counts the runs started since Since by status (running, waiting, completed, failed,
	// cancelled: each one, 0 included), as GET /api/runs?status=…&from=<since> lists them.
	Runs map[string]int `json:"runs"`
	// Waiting counts the open questions of every waiting run (whenever it started) by how long
	// they have waited; WaitingTotal is their sum.
	Waiting      []ageBucket `json:"waiting"`
	WaitingTotal int         `json:"waitingTotal"`
	// Failures counts the runs started since Since that failed, by the code of their failure,
	// most first; FailuresRead says how many failed runs were read (at most maxOverviewRuns).
	Failures     []codeCount `json:"failures"`
	FailuresRead int         `json:"failuresRead"`
}

// ageBucket is a range of question ages: from FromMs (inclusive) to ToMs (exclusive; 0: no
// upper bound).
type ageBucket struct {
	Label  string `json:"label"`
	FromMs int64  `json:"fromMs"`
	ToMs   int64  `json:"toMs,omitempty"`
	Count  int    `json:"count"`
}

// codeCount is how many failed runs failed with Code.
type codeCount struct {
	Code  string `json:"code"`
	Count int    `json:"count"`
}

// overviewWindow is the window of the runs' and failures' figures.
const overviewWindow = time.Hour

// maxOverviewRuns bounds the waiting runs and the failed runs one overview reads.
const maxOverviewRuns = 500

// ageBuckets are the waiting questions' age ranges.
var ageBuckets = []ageBucket{
	{Label: "under 10 min", FromMs: 0, ToMs: (10 * time.Minute).Milliseconds()},
	{Label: "10 min to 1 h", FromMs: (10 * time.Minute).Milliseconds(), ToMs: time.Hour.Milliseconds()},
	{Label: "1 h to 1 day", FromMs: time.Hour.Milliseconds(), ToMs: (24 * time.Hour).Milliseconds()},
	{Label: "over 1 day", FromMs: (24 * time.Hour).Milliseconds()},
}

// overviewCache keeps what does not change for a run: a failed run's failure code (by run id)
// and a waiting run's question time (by run id and history length, which stay while it waits).
type overviewCache struct {
	mu    sync.Mutex
	codes map[string]string
	asked map[string]time.Time
}

func (c *overviewCache) code(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.codes[id]
	return v, ok
}

func (c *overviewCache) putCode(id, code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.codes == nil || len(c.codes) >= maxCachedSpends {
		c.codes = map[string]string{}
	}
	c.codes[id] = code
}

func (c *overviewCache) askedAt(key string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.asked[key]
	return v, ok
}

func (c *overviewCache) putAsked(key string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asked == nil || len(c.asked) >= maxCachedSpends {
		c.asked = map[string]time.Time{}
	}
	c.asked[key] = t
}

// overview serves GET /api/overview (filters agent, session and q as for GET /api/runs): the
// runs of the last hour by status, from visibility counts (one count grouped by execution
// status, where the server groups, and one each for running and waiting); the waiting
// questions by age (each waiting run's question time from its state query, once per wait);
// the last hour's failures by code (each failed run's close event, once per run).
func (o Options) overview(r *http.Request) (any, error) {
	now := time.Now()
	since := now.Add(-overviewWindow).UTC().Truncate(time.Second)
	q := r.URL.Query()
	for _, k := range []string{"status", "from", "to", "pageSize", "pageToken"} {
		q.Del(k)
	}
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	base, err := runsQuery(r2)
	if err != nil {
		return nil, err
	}
	window := base + " AND StartTime >= '" + since.Format(time.RFC3339Nano) + "'"
	ov := overview{Since: since, Now: now.UTC(), Runs: map[string]int{}, Waiting: slices.Clone(ageBuckets), Failures: []codeCount{}}
	ctx := r.Context()
	if err := o.countByStatus(ctx, window, ov.Runs); err != nil {
		return nil, err
	}
	if n := o.waitingChildren(ctx, window); n > 0 {
		// As GET /api/runs lists them: a child that asks keeps KortyxStatus running.
		ov.Runs[string(contracts.StatusRunning)] -= n
		ov.Runs[string(contracts.StatusWaiting)] += n
	}
	ages, err := o.waitingAges(ctx, base+" AND "+runStatuses["waiting"], now)
	if err != nil {
		return nil, err
	}
	for _, a := range ages {
		for i := range ov.Waiting {
			b := &ov.Waiting[i]
			if a >= b.FromMs && (b.ToMs == 0 || a < b.ToMs) {
				b.Count++
				ov.WaitingTotal++
				break
			}
		}
	}
	codes, read, err := o.failureCodes(ctx, window+" AND "+runStatuses["failed"])
	if err != nil {
		return nil, err
	}
	ov.FailuresRead = read
	for c, n := range codes {
		ov.Failures = append(ov.Failures, codeCount{Code: c, Count: n})
	}
	slices.SortFunc(ov.Failures, func(a, b codeCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Code, b.Code)
	})
	return ov, nil
}

// countByStatus fills in the runs of query by status: one count grouped by execution status
// for the closed ones (or one count each where the server does not group) and one count each
// for running and waiting, whose difference is the KortyxStatus of a running execution.
func (o Options) countByStatus(ctx context.Context, query string, out map[string]int) error {
	count := func(q string) (int, error) {
		resp, err := o.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: o.Namespace, Query: q})
		if err != nil {
			return 0, err
		}
		return int(resp.GetCount()), nil
	}
	// A run that closes between the counts would be counted open and closed: the closed ones
	// are counted before and after the open ones, again until both agree (at most 3 times).
	var closed map[string]int
	for try := 0; ; try++ {
		before, err := o.countClosed(ctx, query, count)
		if err != nil {
			return err
		}
		for _, s := range []string{"running", "waiting"} {
			n, err := count(query + " AND " + runStatuses[s])
			if err != nil {
				return err
			}
			out[s] = n
		}
		after, err := o.countClosed(ctx, query, count)
		if err != nil {
			return err
		}
		closed = after
		if maps.Equal(before, after) || try == 2 {
			break
		}
	}
	maps.Copy(out, closed)
	return nil
}

// countClosed counts the closed runs of query by status: one count grouped by execution
// status, or one count each where the server does not group.
func (o Options) countClosed(ctx context.Context, query string, count func(string) (int, error)) (map[string]int, error) {
	out := map[string]int{"completed": 0, "failed": 0, "cancelled": 0}
	closed := map[string]string{"Completed": "completed", "Failed": "failed", "Terminated": "failed", "TimedOut": "failed", "Canceled": "cancelled"}
	resp, err := o.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: o.Namespace, Query: query + " GROUP BY ExecutionStatus"})
	if err == nil {
		for _, g := range resp.GetGroups() {
			vals := g.GetGroupValues()
			if len(vals) != 1 {
				continue
			}
			var status string
			if decodeKeyword(vals[0], &status) != nil {
				continue
			}
			if s, ok := closed[status]; ok {
				out[s] += int(g.GetCount())
			}
		}
		return out, nil
	}
	if !isInvalidArgument(err) {
		return nil, err
	}
	for _, s := range []string{"completed", "failed", "cancelled"} { // no GROUP BY on this server
		n, err := count(query + " AND " + runStatuses[s])
		if err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, nil
}

// waitingAges are the ages, in milliseconds, of the open questions of query's runs.
func (o Options) waitingAges(ctx context.Context, query string, now time.Time) ([]int64, error) {
	resp, err := o.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: o.Namespace, PageSize: maxOverviewRuns, Query: query})
	if err != nil {
		return nil, err
	}
	asked := make([]*time.Time, len(resp.Executions))
	eachAtMost(maxQueries, len(resp.Executions), func(i int) {
		e := resp.Executions[i]
		key := fmt.Sprintf("%s@%d", e.GetExecution().GetWorkflowId(), e.GetHistoryLength())
		if t, ok := o.overviewCache.askedAt(key); ok {
			asked[i] = &t
			return
		}
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		defer cancel()
		v, err := kortyx.Query(qctx, o.Client, e.GetExecution().GetWorkflowId())
		if err != nil || v.Pending == nil {
			return // no worker answers, or it no longer waits: not counted
		}
		t := v.Pending.CreatedAt
		o.overviewCache.putAsked(key, t)
		asked[i] = &t
	})
	var out []int64
	for _, t := range asked {
		if t != nil {
			out = append(out, max(now.Sub(*t).Milliseconds(), 0))
		}
	}
	return out, nil
}

// failureCodes counts query's failed runs by the code of their failure (at most
// maxOverviewRuns of them), from each one's close event.
func (o Options) failureCodes(ctx context.Context, query string) (map[string]int, int, error) {
	resp, err := o.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: o.Namespace, PageSize: maxOverviewRuns, Query: query})
	if err != nil {
		return nil, 0, err
	}
	codes := make([]string, len(resp.Executions))
	eachAtMost(maxQueries, len(resp.Executions), func(i int) {
		e := resp.Executions[i]
		id := e.GetExecution().GetWorkflowId() + "/" + e.GetExecution().GetRunId()
		if c, ok := o.overviewCache.code(id); ok {
			codes[i] = c
			return
		}
		c, ok := o.failureCode(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), e.GetStatus())
		if ok {
			o.overviewCache.putCode(id, c)
		}
		codes[i] = c
	})
	out := map[string]int{}
	for _, c := range codes {
		out[c]++
	}
	return out, len(codes), nil
}

// failureCode is the code a closed run failed with: its failure's type (a contracts.Code
// crosses Temporal as an ApplicationError's type, [contracts.CodeOf]), TERMINATED or
// TIMED_OUT for a run Temporal ended, EXECUTION_FAILED for a failure without a type (and,
// with ok false, for a close event that could not be read).
func (o Options) failureCode(ctx context.Context, id, runID string, status enums.WorkflowExecutionStatus) (code string, ok bool) {
	if e := endedByTemporal(status); e != nil {
		return string(e.Code), true
	}
	it := o.Client.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return string(contracts.CodeExecutionFailed), false
		}
		for f := ev.GetWorkflowExecutionFailedEventAttributes().GetFailure(); f != nil; f = f.GetCause() {
			if t := f.GetApplicationFailureInfo().GetType(); t != "" {
				return t, true
			}
		}
	}
	return string(contracts.CodeExecutionFailed), true
}

// maxOverviewChildren bounds the open child runs the overview asks for their state.
const maxOverviewChildren = 100

// waitingChildren counts the open child runs of query that wait for an answer: a child that
// asks a question keeps KortyxStatus running (its question is its root's), and the runs list,
// its own trace and its parent's show it waiting, so the overview counts it so too (each child's
// state query, as the runs list asks it; at most maxOverviewChildren are asked).
func (o Options) waitingChildren(ctx context.Context, query string) int {
	resp, err := o.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: o.Namespace, PageSize: maxOverviewChildren,
		Query: query + " AND " + runStatuses[string(contracts.StatusRunning)] + " AND ParentWorkflowId IS NOT NULL"})
	if err != nil {
		return 0
	}
	now := time.Now()
	items := make([]runItem, 0, len(resp.Executions))
	for _, e := range resp.Executions {
		items = append(items, runOf(e, now))
	}
	o.questions(ctx, items)
	n := 0
	for _, it := range items {
		if it.Status == string(contracts.StatusWaiting) {
			n++
		}
	}
	return n
}
