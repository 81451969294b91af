package web

import (
	"context"

	"github.com/kortyx-go/kortyx/providers"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// DefaultActionPrice is the price per million Temporal actions the studio estimates with when
// Options.ActionPrice is nil: the base rate, in US dollars, of Temporal Cloud's pricing page
// before its 2025 plans (which price actions by plan and tier). Your contract sets yours; the figure is an estimate (see [Options].ActionPrice).
const DefaultActionPrice = 25.0

// DefaultCurrency is the currency of the figures when Options.Currency is "".
const DefaultCurrency = "USD"

// actionCounter counts the billable Temporal actions of one execution's history with the rules
// docs/performance.md cites (Temporal Cloud's "Actions" page): a start by a client (a child's is
// billed on its parent, a continued run's on the run that continued), each signal received
// (the one of a Signal-With-Start is its start's), each update accepted, each activity attempt,
// each timer, one per workflow task that recorded markers (all the markers of one task are one
// action), each search-attribute upsert (TemporalChangeVersion alone is exempt), two per child
// workflow, each continue-as-new. Queries, heartbeats and rejected updates are not in a history,
// so they are not counted.
type actionCounter struct {
	total   int
	lastWFT int64 // the latest WorkflowTaskCompleted event
	marked  int64 // the workflow task whose markers were counted last
	// anyMarker says that a marker was counted (marked is then meaningful).
	anyMarker bool
}

func (a *actionCounter) count(ev *historypb.HistoryEvent) {
	switch ev.GetEventType() {
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		at := ev.GetWorkflowExecutionStartedEventAttributes()
		if at.GetParentWorkflowExecution() == nil && at.GetContinuedExecutionRunId() == "" {
			a.total++
		}
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		if ev.GetEventId() != 2 {
			a.total++
		}
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, enums.EVENT_TYPE_TIMER_STARTED,
		enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		a.total++
	case enums.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		a.total += int(ev.GetActivityTaskStartedEventAttributes().GetAttempt())
	case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
		a.lastWFT = ev.GetEventId()
	case enums.EVENT_TYPE_MARKER_RECORDED:
		if !a.anyMarker || a.marked != a.lastWFT {
			a.anyMarker, a.marked = true, a.lastWFT
			a.total++
		}
	case enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		f := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
		if _, ok := f["TemporalChangeVersion"]; ok && len(f) == 1 {
			return
		}
		a.total++
	case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		a.total += 2
	}
}

// actionPrice is the price per million actions the figures use.
func (o Options) actionPrice() float64 {
	if o.ActionPrice == nil {
		return DefaultActionPrice
	}
	return *o.ActionPrice
}

// currency is the currency of the figures.
func (o Options) currency() string {
	if o.Currency == "" {
		return DefaultCurrency
	}
	return o.Currency
}

// runSpend is what a run used: its model passes' tokens by model and its Temporal actions.
type runSpend struct {
	models  spend
	actions int
}

// spendOfTimeline is tl's spend.
func (o Options) spendOfTimeline(tl *timeline) runSpend {
	return runSpend{models: o.byModel(tl), actions: tl.Temporal.actions.total}
}

// add adds other to s.
func (s *runSpend) add(other runSpend) {
	if s.models == nil {
		s.models = spend{}
	}
	s.models.add(other.models)
	s.actions += other.actions
}

// costOf prices s: its tokens under o.Prices, its actions at o's price per million, in o's
// currency.
func (o Options) costOf(s runSpend) runCost {
	c := priced(s.models, o.Prices)
	c.Currency, c.Actions, c.ActionPrice = o.currency(), s.actions, o.actionPrice()
	c.ActionsCost = float64(s.actions) * c.ActionPrice / 1e6
	return c
}

// rollup is a run's figures with those of its child runs (and theirs) added.
type rollup struct {
	// Runs counts the run and the child runs added (at most maxRollupRuns in all).
	Runs  int             `json:"runs"`
	Usage providers.Usage `json:"usage"`
	Cost  runCost         `json:"cost"`
	// Truncated says that the run has more descendants than the roll-up reads.
	Truncated bool `json:"truncated,omitempty"`
}

// maxRollupRuns bounds the runs one roll-up reads.
const maxRollupRuns = 100

// traceView is the answer of GET /api/runs/{id}: the run's timeline with its cost in the
// studio's currency and its Temporal actions, and, for a run with child runs, the roll-up.
type traceView struct {
	*timeline
	Rollup *rollup `json:"rollup,omitempty"`
}

// trace serves GET /api/runs/{id}.
func (o Options) trace(ctx context.Context, runID string) (*traceView, error) {
	tl, err := o.timeline(ctx, runID)
	if err != nil {
		return nil, err
	}
	own := o.spendOfTimeline(tl)
	tl.Cost = o.costOf(own)
	v := &traceView{timeline: tl}
	kids := childRuns(tl)
	if len(kids) == 0 {
		return v, nil
	}
	r := &rollup{Runs: 1}
	all := runSpend{}
	all.add(own)
	seen := map[string]bool{runID: true}
	read := 1
	for len(kids) > 0 { // a generation of descendants at a time, at most maxQueries at once
		var level []string
		for _, id := range kids {
			if seen[id] {
				continue
			}
			if read == maxRollupRuns {
				r.Truncated = true
				break
			}
			seen[id] = true
			level = append(level, id)
			read++
		}
		tls := make([]*timeline, len(level))
		eachAtMost(maxQueries, len(level), func(i int) {
			tls[i], _ = buildTimeline(ctx, o.Client, o.DataConverter, level[i], false) // one that is gone (retention) adds nothing
		})
		kids = nil
		for _, ctl := range tls {
			if ctl == nil {
				continue
			}
			r.Runs++
			all.add(o.spendOfTimeline(ctl))
			kids = append(kids, childRuns(ctl)...)
		}
	}
	r.Usage, r.Cost = all.models.total(), o.costOf(all)
	v.Rollup = r
	return v, nil
}

// childRuns are the ids of the child runs tl started.
func childRuns(tl *timeline) []string {
	var out []string
	for _, e := range tl.Entries {
		if e.Kind == "child" && e.ChildRunID != "" {
			out = append(out, e.ChildRunID)
		}
	}
	return out
}
