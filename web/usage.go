package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"go.temporal.io/api/workflowservice/v1"
)

// spend is what a run's model passes used, by price key ("provider:model"), read from its
// history.
type spend map[string]providers.Usage

// spendCache keeps the spend of runs whose history does not change: a closed run's, and a
// waiting run's while its history keeps the length visibility recorded when it began to wait
// (a waiting run adds no events; an answer changes its status, so its record and length). An
// API process so reads such a run once, not on every refresh of a list or of the inbox; a
// running run is read on each request.
type spendCache struct {
	mu   sync.Mutex
	runs map[string]runFacts
}

// runFacts are what a list row reads from a run's history: its spend (tokens by model, Temporal
// actions) and, for a failed run, its failure.
type runFacts struct {
	spend runSpend
	err   *rowError
}

// maxCachedSpends bounds the cache; past it, it starts over (the cost of a miss is one
// history read).
const maxCachedSpends = 5000

func (c *spendCache) get(key string) (runFacts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.runs[key]
	return s, ok
}

func (c *spendCache) put(key string, s runFacts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil || len(c.runs) >= maxCachedSpends {
		c.runs = map[string]runFacts{}
	}
	c.runs[key] = s
}

// spendKey is it's key in the spend cache ("" when its spend may still change).
func spendKey(it runItem) string {
	switch {
	case it.ClosedAt != nil:
		return it.RunID
	case it.Status == string(contracts.StatusWaiting) && it.historyLength > 0:
		return fmt.Sprintf("%s@%d", it.RunID, it.historyLength)
	}
	return ""
}

// factsOf returns it's spend (each model pass's usage by model, passes that name no model
// under the worker's default: o.DefaultModel, else "default"; its Temporal actions) and, for a
// failed run, its failure's code and safe message.
func (o Options) factsOf(ctx context.Context, it runItem) (runFacts, error) {
	key := spendKey(it)
	if key != "" && o.cache != nil {
		if s, ok := o.cache.get(key); ok {
			return s, nil
		}
	}
	tl, err := buildTimeline(ctx, o.Client, o.DataConverter, it.RunID, false)
	if err != nil {
		return runFacts{}, err
	}
	f := runFacts{spend: o.spendOfTimeline(tl)}
	if tl.Failure != nil {
		f.err = &rowError{Code: tl.Failure.Code, Message: tl.Failure.Message}
	}
	if key != "" && o.cache != nil {
		o.cache.put(key, f)
	}
	return f, nil
}

// byModel moves the usage of the passes that named no model to the worker's default model.
func (o Options) byModel(tl *timeline) spend {
	s := spend(tl.byModel)
	if u, ok := s[""]; ok {
		delete(s, "")
		key := o.DefaultModel
		if key == "" {
			key = "default"
		}
		s[key] = protocol.AddUsage(s[key], u)
	}
	return s
}

// total is the sum of a spend's usage.
func (s spend) total() providers.Usage {
	var u providers.Usage
	for _, m := range s {
		u = protocol.AddUsage(u, m)
	}
	return u
}

// add adds other's usage to s.
func (s spend) add(other spend) {
	for k, u := range other {
		s[k] = protocol.AddUsage(s[k], u)
	}
}

// spends fills in the usage and cost of each item, and a failed one's error, reading at most
// maxQueries histories at a time. An item whose history cannot be read keeps none (its usage,
// cost and error are absent).
func (o Options) spends(ctx context.Context, items []runItem) []runSpend {
	out := make([]runSpend, len(items))
	eachAtMost(maxQueries, len(items), func(i int) {
		it := &items[i]
		f, err := o.factsOf(ctx, *it)
		if err != nil {
			return
		}
		it.Usage, it.Cost = o.rowFigures(f.spend)
		if it.Status == string(contracts.StatusFailed) {
			it.Error = f.err
			if it.Error == nil {
				it.Error = endedByTemporal(it.closeStatus)
			}
		}
		out[i] = f.spend
	})
	return out
}

// rowFigures are a row's usage and cost: s's total and its price under o.Prices, with its
// Temporal actions.
func (o Options) rowFigures(s runSpend) (*providers.Usage, *runCost) {
	u, c := s.models.total(), o.costOf(s)
	return &u, &c
}

// costRow is one group of GET /api/cost.
type costRow struct {
	// Key is the group's agent or session id.
	Key   string          `json:"key"`
	Runs  int             `json:"runs"`
	Usage providers.Usage `json:"usage"`
	Cost  runCost         `json:"cost"`
}

// costRun is one run of a cost report's most expensive runs, its child runs rolled up into it.
type costRun struct {
	RunID     string    `json:"runId"`
	Agent     string    `json:"agent"`
	Status    string    `json:"status"`
	SessionID string    `json:"sessionId,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// Own is the run's own figures; Total adds those of its child runs (and theirs) that the
	// report read, Children counts them.
	Own      costRow `json:"own"`
	Children int     `json:"children"`
	Total    costRow `json:"total"`
}

// costReport is the answer of GET /api/cost.
type costReport struct {
	GroupBy string    `json:"groupBy"`
	Rows    []costRow `json:"rows"`
	Total   costRow   `json:"total"`
	// Runs are the maxCostTopRuns most expensive runs that no other run of the report started
	// (by the cost of their tokens and actions, children included), most expensive first.
	Runs []costRun `json:"runs"`
	// Truncated says that more runs matched than the report reads (maxCostRuns): the figures
	// are those of the newest maxCostRuns.
	Truncated bool `json:"truncated"`
}

// maxCostRuns bounds the runs one cost report reads, and maxCostTopRuns the runs it lists.
const (
	maxCostRuns    = 1000
	maxCostTopRuns = 20
)

// cost serves GET /api/cost: the tokens, Temporal actions and cost of the runs that match the
// filters of GET /api/runs, grouped by agent or session (groupBy), most expensive first. By
// agent, each run counts under its own agent (a child run under the child's); by session, a
// child run counts under the session of the run that started it (when the report read it). The
// most expensive runs follow, each with its child runs rolled up into it.
func (o Options) cost(r *http.Request) (any, error) {
	groupBy := r.URL.Query().Get("groupBy")
	if groupBy == "" {
		groupBy = "agent"
	}
	if groupBy != "agent" && groupBy != "session" {
		return nil, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Fix the filters.",
			Issues: []contracts.Issue{{Path: []any{"groupBy"}, Code: "invalid_enum_value", Message: "groupBy must be agent or session"}}}
	}
	query, err := runsQuery(r)
	if err != nil {
		return nil, err
	}
	var items []runItem
	var token []byte
	rep := costReport{GroupBy: groupBy, Rows: []costRow{}, Runs: []costRun{}}
	for {
		resp, err := o.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: o.Namespace, PageSize: maxRunPage, NextPageToken: token, Query: query,
		})
		if err != nil {
			return nil, err
		}
		now := time.Now()
		for _, e := range resp.Executions {
			if len(items) == maxCostRuns {
				rep.Truncated = true
				break
			}
			items = append(items, runOf(e, now))
		}
		if token = resp.NextPageToken; len(token) == 0 || rep.Truncated {
			break
		}
	}
	spends := o.spends(r.Context(), items)
	items, spends = keepCode(r, items, spends)
	byID := map[string]int{}
	for i, it := range items {
		byID[it.RunID] = i
	}
	// root is the run of the report that started i, or started the run that started it, …
	root := func(i int) int {
		for depth := 0; depth < maxCostRuns; depth++ {
			j, ok := byID[items[i].ParentRunID]
			if !ok || items[i].ParentRunID == "" {
				break
			}
			i = j
		}
		return i
	}
	groups := map[string]*runSpend{}
	index := map[string]int{}
	all := runSpend{}
	tops := map[int]*costRun{}
	rolled := map[int]*runSpend{}
	for i, it := range items {
		top := root(i)
		key := it.Agent
		if groupBy == "session" {
			key = items[top].SessionID
		}
		j, ok := index[key]
		if !ok {
			j = len(rep.Rows)
			index[key] = j
			rep.Rows = append(rep.Rows, costRow{Key: key})
			groups[key] = &runSpend{}
		}
		rep.Rows[j].Runs++
		groups[key].add(spends[i])
		all.add(spends[i])
		if tops[top] == nil {
			t := items[top]
			tops[top] = &costRun{RunID: t.RunID, Agent: t.Agent, Status: t.Status, SessionID: t.SessionID, StartedAt: t.StartedAt}
			rolled[top] = &runSpend{}
		}
		rolled[top].add(spends[i])
		if i != top {
			tops[top].Children++
		}
	}
	for i := range rep.Rows {
		s := groups[rep.Rows[i].Key]
		rep.Rows[i].Usage, rep.Rows[i].Cost = s.models.total(), o.costOf(*s)
	}
	slices.SortStableFunc(rep.Rows, func(a, b costRow) int { return byCost(a.Cost, b.Cost, a.Key, b.Key) })
	rep.Total = costRow{Key: "total", Runs: len(items), Usage: all.models.total(), Cost: o.costOf(all)}
	for i, t := range tops {
		t.Own = costRow{Key: t.RunID, Runs: 1, Usage: spends[i].models.total(), Cost: o.costOf(spends[i])}
		t.Total = costRow{Key: t.RunID, Runs: 1 + t.Children, Usage: rolled[i].models.total(), Cost: o.costOf(*rolled[i])}
		rep.Runs = append(rep.Runs, *t)
	}
	slices.SortStableFunc(rep.Runs, func(a, b costRun) int { return byCost(a.Total.Cost, b.Total.Cost, a.RunID, b.RunID) })
	if len(rep.Runs) > maxCostTopRuns {
		rep.Runs = rep.Runs[:maxCostTopRuns]
	}
	return rep, nil
}

// byCost orders by cost (tokens and actions), highest first, then by key.
func byCost(a, b runCost, ka, kb string) int {
	ta, tb := a.Total+a.ActionsCost, b.Total+b.ActionsCost
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return strings.Compare(ka, kb)
}
