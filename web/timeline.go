package web

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// timeline is what a run did, from its Temporal history (and its state query).
type timeline struct {
	RunID     string `json:"runId"`
	Workflow  string `json:"workflow"`
	SessionID string `json:"sessionId,omitempty"`
	// Status is the run's status from the state query ("" when the query failed, e.g. no
	// worker) or, once closed, Temporal's (completed, failed, canceled, terminated, …).
	Status string `json:"status"`
	// Input is the run's input (RunInput.Input) and Output the data of its final state, once it
	// completed: the payload viewer's values, decoded through the codec.
	Input  json.RawMessage `json:"input,omitempty"`
	Output any             `json:"output,omitempty"`
	// Arrival says how the turn's message reached its session while another turn ran:
	// "enqueue" or "interrupt" (docs/steering.md; "" for a turn that started at once).
	Arrival string `json:"arrival,omitempty"`
	// Node is the node an open run is in now (its state query: where a waiting run waits).
	Node string `json:"node,omitempty"`
	// Nodes are the nodes the run entered, in order (from its checkpoints).
	Nodes       []string        `json:"nodes"`
	Usage       providers.Usage `json:"usage"`
	ModelPasses int             `json:"modelPasses"`
	ToolCalls   int             `json:"toolCalls"`
	Entries     []timelineEntry `json:"entries"`
	// Internal are the run's own activities (kortyx.ListTools, kortyx.Publish) that completed
	// at their first attempt, in history order, each with its node when known: the page folds
	// them. One that is pending, failed or was retried is an entry.
	Internal []timelineEntry `json:"internal"`
	// StartedAt and ClosedAt bound the run (ClosedAt nil while it is open); DurationMs is to
	// the close, or to now.
	StartedAt  time.Time  `json:"startedAt"`
	ClosedAt   *time.Time `json:"closedAt,omitempty"`
	DurationMs int64      `json:"durationMs"`
	// Temporal is what the run cost on Temporal's side, counted from its history.
	Temporal temporalCounts `json:"temporal"`
	// Cost is the run's tokens by model and their cost under Options.Prices.
	Cost runCost `json:"cost"`
	// Failure is a failed run's failure (as on its ended entry).
	Failure *failureView `json:"failure,omitempty"`
	// Budget is the run's token and money budget and its spend against it (nil: none).
	Budget *budgetView `json:"budget,omitempty"`

	byModel map[string]providers.Usage // the model passes' usage by "provider:model"
	// limits are the run's own limits (its input) and start the worker's budget it recorded.
	limits *contracts.Limits
	start  *protocol.BudgetStart
	spend  *contracts.Spend // the result's, or a live run's state's (spendLive)
	// spendLive: spend is a running run's, as its state query said.
	spendLive bool
}

// budgetView is a run's budget (docs/budgets.md) and what it spent of it.
type budgetView struct {
	// MaxTokens and MaxCost are the budget (0: none), in Currency; with the allowances a
	// Continue gave once the run has ended.
	MaxTokens int     `json:"maxTokens,omitempty"`
	MaxCost   float64 `json:"maxCost,omitempty"`
	Currency  string  `json:"currency,omitempty"`
	// Tokens and Cost are the spend, its children's included: with Final, the run's result's;
	// for a live run, what its state says; otherwise (a run that failed, or did not answer the
	// query) its own model passes, priced by the table it recorded.
	Tokens int     `json:"tokens"`
	Cost   float64 `json:"cost"`
	Final  bool    `json:"final"`
	// Scopes are the shared budgets (an agent's, a tenant's) the run ran under: what this run
	// used of each and what its ledger granted it (GET /api/budgets/{scope}/{key} reads the
	// ledger's total).
	Scopes []contracts.ScopeSpend `json:"scopes,omitempty"`
}

// budgetOf builds the run's budget view from what its history holds.
func (tl *timeline) budgetOf() *budgetView {
	var def contracts.Limits
	if tl.start != nil {
		def = tl.start.Default
	}
	l := protocol.BudgetOver(protocol.BudgetOf(def), tl.limits)
	var scopes []contracts.ScopeSpend
	if tl.spend != nil {
		scopes = tl.spend.Scopes
	}
	if scopes == nil && tl.start != nil {
		for _, c := range tl.start.Ledgers {
			scopes = append(scopes, contracts.ScopeSpend{Scope: c.Scope, Key: c.Key})
		}
	}
	if !protocol.HasBudget(l) && len(scopes) == 0 {
		return nil
	}
	v := &budgetView{MaxTokens: l.MaxTokens, MaxCost: l.MaxCost, Scopes: scopes}
	var pricing *protocol.Pricing
	if tl.start != nil {
		pricing = tl.start.Pricing
	}
	if pricing != nil {
		v.Currency = pricing.Currency
	}
	if s := tl.spend; s != nil {
		v.Tokens, v.Cost, v.Final = s.Tokens, s.Cost, !tl.spendLive
		v.MaxTokens, v.MaxCost = s.MaxTokens, s.MaxCost
		if !protocol.HasBudget(l) {
			v.MaxTokens, v.MaxCost = 0, 0
		}
		if s.Currency != "" {
			v.Currency = s.Currency
		}
		return v
	}
	keys := make([]string, 0, len(tl.byModel))
	for k := range tl.byModel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		u := tl.byModel[k]
		t := u.Total
		if t == 0 {
			t = u.Input + u.Output + u.Reasoning
		}
		v.Tokens += t
		if pricing != nil {
			provider, model, ok := strings.Cut(k, ":")
			if !ok {
				provider, model = "", k
			}
			v.Cost += pricing.Prices[pricing.Key(provider, model)].Cost(u)
		}
	}
	return v
}

// temporalCounts are a run's Temporal cost drivers, counted from its history events (this
// generation's: a run that continued as new counts its later generations on its own).
type temporalCounts struct {
	Events        int `json:"events"`
	WorkflowTasks int `json:"workflowTasks"`
	// Activities are the activities scheduled; ActivityAttempts their attempts (retries
	// included: an activity's last attempt number).
	Activities       int `json:"activities"`
	ActivityAttempts int `json:"activityAttempts"`
	// LocalActivities are the local activity markers (kortyx.Publish, local tools).
	LocalActivities  int `json:"localActivities"`
	Markers          int `json:"markers"`
	SignalsReceived  int `json:"signalsReceived"`
	SignalsSent      int `json:"signalsSent"`
	Updates          int `json:"updates"`
	Timers           int `json:"timers"`
	Children         int `json:"children"`
	SearchAttributes int `json:"searchAttributeUpserts"`
	ContinuedAsNew   int `json:"continuedAsNew"`

	actions actionCounter // the billable actions (actions.go), in the trace's cost
}

// count adds ev to the counts.
func (c *temporalCounts) count(ev *historypb.HistoryEvent) {
	c.Events++
	c.actions.count(ev)
	switch ev.GetEventType() {
	case enums.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
		c.WorkflowTasks++
	case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		c.Activities++
	case enums.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		c.ActivityAttempts += int(ev.GetActivityTaskStartedEventAttributes().GetAttempt())
	case enums.EVENT_TYPE_MARKER_RECORDED:
		c.Markers++
		if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == localActivityMarker {
			c.LocalActivities++
		}
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		c.SignalsReceived++
	case enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
		c.SignalsSent++
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
		c.Updates++
	case enums.EVENT_TYPE_TIMER_STARTED:
		c.Timers++
	case enums.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		c.Children++
	case enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		c.SearchAttributes++
	case enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		c.ContinuedAsNew++
	}
}

// localActivityMarker and sideEffectMarker are the marker names the Go SDK records for a local
// activity and a side effect.
const (
	localActivityMarker = "LocalActivity"
	sideEffectMarker    = "SideEffect"
)

// timelineEntry is one event of a timeline, in history order.
type timelineEntry struct {
	// Kind: started, node, model, tool, activity (any other activity: Activity names it),
	// question, answer, steer (a steering message arrived: Text, SteerID), steered (the run took
	// it in before pass Step of Node's Reason call, as its turn's checkpoint says), child,
	// checkpoint, ended.
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	Node string    `json:"node,omitempty"`
	// Duration from the activity's scheduling to its completion (model, tool, child).
	DurationMs int64 `json:"durationMs,omitempty"`
	Attempts   int   `json:"attempts,omitempty"`
	// model
	Model        string           `json:"model,omitempty"`
	Usage        *providers.Usage `json:"usage,omitempty"`
	FinishReason string           `json:"finishReason,omitempty"`
	// Text is the pass's text; Local says it ran as a local activity (a fast tool, or a model
	// pass of an agent on the fast path), whose marker records no input: no node, model or
	// arguments, and its duration is not known.
	Text  string `json:"text,omitempty"`
	Local bool   `json:"local,omitempty"`
	// tool
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	// question, answer
	RequestID string                    `json:"requestId,omitempty"`
	Question  *contracts.InterruptInput `json:"question,omitempty"`
	Answer    json.RawMessage           `json:"answer,omitempty"`
	// steer, steered
	SteerID string `json:"steerId,omitempty"`
	Step    *int   `json:"step,omitempty"`
	// child
	ChildRunID string `json:"childRunId,omitempty"`
	// checkpoint
	CheckpointID string `json:"checkpointId,omitempty"`
	TurnIndex    *int   `json:"turnIndex,omitempty"`
	// started, ended, child
	Status string `json:"status,omitempty"`
	// activity: its type; Internal says it is one of the run's own activities (tool listing,
	// publishing) rather than a model pass or tool call.
	Activity string `json:"activity,omitempty"`
	Internal bool   `json:"internal,omitempty"`
	// Failure is a failed activity's, tool call's or run's (ended) failure; LastFailure the
	// failure of the attempt before the last of an activity that was retried.
	Failure     *failureView `json:"failure,omitempty"`
	LastFailure *failureView `json:"lastFailure,omitempty"`
	// Pending describes an activity that has not finished (the run's pending activities, as
	// the Temporal UI shows them); such an entry's duration is until now.
	Pending *pendingState `json:"pending,omitempty"`

	priceKey string // model: the price table's key, "provider:model"
}

// pendingState is an unfinished activity's state (DescribeWorkflowExecution's PendingActivities).
type pendingState struct {
	// State is scheduled, started, cancel-requested or paused.
	State string `json:"state"`
	// Attempt is the attempt running or next; MaximumAttempts 0 means no limit (the
	// activity is bounded by its schedule-to-close timeout, ExpiresAt, instead).
	Attempt         int `json:"attempt"`
	MaximumAttempts int `json:"maximumAttempts"`
	// LastFailure is the failure of the attempt before.
	LastFailure *failureView `json:"lastFailure,omitempty"`
	// NextAttemptAt is when the next attempt starts (while it waits to retry).
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	ExpiresAt     *time.Time `json:"expiresAt,omitempty"`
}

type pendingActivity struct {
	at    time.Time
	entry timelineEntry
	done  bool
}

// timeline reads runID's history (and, while the run is open, its state query) with o.Client,
// decoding payloads with o.DataConverter (the client's, e.g. with the payload codec of package
// codec; nil: Temporal's default data converter). An unknown run is NOT_FOUND.
func (o Options) timeline(ctx context.Context, runID string) (*timeline, error) {
	tl, err := buildTimeline(ctx, o.Client, o.DataConverter, runID, true)
	if err != nil {
		return nil, err
	}
	tl.Cost = priced(o.byModel(tl), o.Prices) // passes that named no model: the worker's default
	tl.Budget = tl.budgetOf()
	return tl, nil
}

// buildTimeline reads runID's history; live adds, for a run that has not closed, its pending
// activities and children (DescribeWorkflowExecution, and each pending child's state query).
func buildTimeline(ctx context.Context, c client.Client, dc converter.DataConverter, runID string, live bool) (*timeline, error) {
	tl := &timeline{RunID: runID, Nodes: []string{}, Entries: []timelineEntry{}, Internal: []timelineEntry{}, byModel: map[string]providers.Usage{}}
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	decode := func(p *commonpb.Payloads, v any) bool {
		return p != nil && len(p.Payloads) > 0 && dc.FromPayloads(p, v) == nil
	}
	desc := newDescriber(dc)
	acts := map[int64]*pendingActivity{}
	byID := map[string]*pendingActivity{} // activity id → its latest scheduling
	var lastFailed *timelineEntry         // the latest activity that failed or timed out
	children := map[int64]*pendingActivity{}
	answers := map[string]int{} // requestId → index of its question entry
	it := c.GetWorkflowHistory(ctx, runID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	found := false
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, notFound(runID, err)
		}
		found = true
		tl.Temporal.count(ev)
		at := ev.GetEventTime().AsTime()
		switch a := ev.Attributes.(type) {
		case *historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes:
			var start protocol.RunStart
			if decode(a.WorkflowExecutionStartedEventAttributes.GetInput(), &start) {
				tl.Workflow = start.Workflow
				tl.SessionID = start.SessionID
				tl.Input = start.Input
				tl.Arrival = start.Arrival
				tl.limits = start.Limits
				if r := start.Start; r != nil && len(r.Seed) > 0 {
					tl.start = startBudget(r.Budget) // recorded for it by its session or parent
				}
			}
			tl.StartedAt = at
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "started", At: at, Status: "started"})
		case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
			s := a.ActivityTaskScheduledEventAttributes
			e := timelineEntry{At: at}
			switch s.GetActivityType().GetName() {
			case protocol.ModelActivityName:
				var in protocol.ModelPassInput
				if !decode(s.GetInput(), &in) {
					continue
				}
				e.Kind, e.Node, e.Model = "model", in.Node, in.Model.Model
				e.priceKey = in.Model.Model
				if in.Model.Provider != "" {
					e.Model = in.Model.Provider + "/" + in.Model.Model
					e.priceKey = in.Model.Provider + ":" + in.Model.Model
				}
			case protocol.ToolActivityName:
				var in protocol.ToolCallInput
				if !decode(s.GetInput(), &in) {
					continue
				}
				e.Kind, e.Tool, e.Arguments = "tool", in.Tool, in.Input
			default:
				e.Kind, e.Activity = "activity", s.GetActivityType().GetName()
				e.Internal = strings.HasPrefix(e.Activity, "kortyx.")
			}
			if e.Node == "" {
				e.Node = nodeOfActivity(s.GetActivityId())
			}
			p := &pendingActivity{at: at, entry: e}
			acts[ev.GetEventId()] = p
			byID[s.GetActivityId()] = p
		case *historypb.HistoryEvent_ActivityTaskStartedEventAttributes:
			s := a.ActivityTaskStartedEventAttributes
			if p := acts[s.GetScheduledEventId()]; p != nil {
				p.entry.Attempts = int(s.GetAttempt())
				// The attempt before's failure, with its place, as a pending activity's.
				if f := desc.view(s.GetLastFailure()); f != nil {
					f.Activity, f.Attempt, f.Node = activityName(p.entry), max(p.entry.Attempts-1, 1), p.entry.Node
					p.entry.LastFailure = f
				}
			}
		case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
			s := a.ActivityTaskCompletedEventAttributes
			p := acts[s.GetScheduledEventId()]
			if p == nil {
				continue
			}
			p.done = true
			e := p.entry
			e.DurationMs = at.Sub(p.at).Milliseconds()
			tl.complete(e, func(v any) bool { return decode(s.GetResult(), v) })
		case *historypb.HistoryEvent_ActivityTaskFailedEventAttributes:
			s := a.ActivityTaskFailedEventAttributes
			if p := acts[s.GetScheduledEventId()]; p != nil {
				lastFailed = tl.failActivity(p, at, desc.view(s.GetFailure()))
			}
		case *historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes:
			s := a.ActivityTaskTimedOutEventAttributes
			if p := acts[s.GetScheduledEventId()]; p != nil {
				lastFailed = tl.failActivity(p, at, desc.timedOut(s.GetFailure(), activityName(p.entry)))
			}
		case *historypb.HistoryEvent_MarkerRecordedEventAttributes:
			m := a.MarkerRecordedEventAttributes
			if m.GetMarkerName() == sideEffectMarker && tl.start == nil {
				// A lean run's start record (its id seed) holds the worker's budget.
				var rec struct {
					Seed   []byte                `json:"seed"`
					Budget *protocol.BudgetStart `json:"budget"`
				}
				if decode(m.GetDetails()["data"], &rec) && len(rec.Seed) > 0 {
					tl.start = startBudget(rec.Budget)
				}
				continue
			}
			var data struct {
				ActivityType string
				Attempt      int
			}
			if m.GetMarkerName() != localActivityMarker || !decode(m.GetDetails()["data"], &data) {
				continue
			}
			e := timelineEntry{At: at, Local: true, Attempts: data.Attempt}
			switch data.ActivityType {
			case protocol.ModelActivityName:
				e.Kind = "model"
			case protocol.ToolActivityName:
				e.Kind = "tool"
			default:
				e.Kind, e.Activity, e.Internal = "activity", data.ActivityType, strings.HasPrefix(data.ActivityType, "kortyx.")
			}
			if f := m.GetFailure(); f != nil {
				v := desc.view(f)
				v.Activity, v.Attempt = activityName(e), e.Attempts
				e.Error, e.Failure = v.Message, v
				tl.Entries = append(tl.Entries, e)
				continue
			}
			if data.ActivityType == protocol.PublishActivityName {
				var res protocol.PublishResult
				if decode(m.GetDetails()["result"], &res) && res.Report != nil {
					tl.report(*res.Report, at, answers)
				}
			}
			tl.complete(e, func(v any) bool { return decode(m.GetDetails()["result"], v) })
		case *historypb.HistoryEvent_StartChildWorkflowExecutionInitiatedEventAttributes:
			s := a.StartChildWorkflowExecutionInitiatedEventAttributes
			children[ev.GetEventId()] = &pendingActivity{at: at, entry: timelineEntry{Kind: "child", At: at, ChildRunID: s.GetWorkflowId()}}
		case *historypb.HistoryEvent_ChildWorkflowExecutionCompletedEventAttributes:
			tl.Entries = appendChild(tl.Entries, children, a.ChildWorkflowExecutionCompletedEventAttributes.GetInitiatedEventId(), at, "completed")
		case *historypb.HistoryEvent_ChildWorkflowExecutionFailedEventAttributes:
			tl.Entries = appendChild(tl.Entries, children, a.ChildWorkflowExecutionFailedEventAttributes.GetInitiatedEventId(), at, "failed")
		case *historypb.HistoryEvent_ChildWorkflowExecutionCanceledEventAttributes:
			tl.Entries = appendChild(tl.Entries, children, a.ChildWorkflowExecutionCanceledEventAttributes.GetInitiatedEventId(), at, "canceled")
		case *historypb.HistoryEvent_SignalExternalWorkflowExecutionInitiatedEventAttributes:
			s := a.SignalExternalWorkflowExecutionInitiatedEventAttributes
			if s.GetSignalName() != protocol.SessionCheckpointSignal {
				continue
			}
			var rep protocol.CheckpointReport
			if decode(s.GetInput(), &rep) {
				tl.report(rep, at, answers)
			}
		case *historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes:
			s := a.WorkflowExecutionUpdateAcceptedEventAttributes
			if s.GetAcceptedRequest().GetInput().GetName() != contracts.RespondName {
				continue
			}
			tl.Entries = appendAnswer(tl.Entries, decode, s.GetAcceptedRequest().GetInput().GetArgs(), at)
		case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
			s := a.WorkflowExecutionSignaledEventAttributes
			if s.GetSignalName() == protocol.SteerSignal {
				var m protocol.SteerMessage
				if decode(s.GetInput(), &m) {
					tl.Entries = append(tl.Entries, timelineEntry{Kind: "steer", At: at, Text: m.Content, SteerID: m.ID})
				}
				continue
			}
			if s.GetSignalName() != contracts.RespondName {
				continue
			}
			tl.Entries = appendAnswer(tl.Entries, decode, s.GetInput(), at)
		case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes:
			var res contracts.RunResult
			if decode(a.WorkflowExecutionCompletedEventAttributes.GetResult(), &res) {
				tl.Output = res.State.Data
				tl.spend = res.State.Runtime.Spend
			}
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "ended", At: at, Status: "completed"})
			tl.Status = "completed"
		case *historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes:
			v := desc.view(a.WorkflowExecutionFailedEventAttributes.GetFailure())
			if lastFailed != nil && v.Activity != "" && v.Activity == lastFailed.Failure.Activity {
				// The run failed with its last failed activity's failure (its descriptor names
				// the activity): its attempt and node are that activity's.
				v.Attempt = lastFailed.Failure.Attempt
				if v.Node == "" {
					v.Node = lastFailed.Node
				}
			}
			tl.Failure = v
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "ended", At: at, Status: "failed", Error: v.Message, Failure: v})
			tl.Status = "failed"
		case *historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes:
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "ended", At: at, Status: "cancelled"})
			tl.Status = "cancelled"
		case *historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes:
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "ended", At: at, Status: "terminated"})
			tl.Status = "terminated"
		case *historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes:
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "ended", At: at, Status: "continued-as-new"})
		}
	}
	if !found {
		return nil, notFound(runID, nil)
	}
	end := time.Now()
	if last := tl.Entries[len(tl.Entries)-1]; last.Kind == "ended" {
		closed := last.At
		tl.ClosedAt, end = &closed, closed
	}
	tl.DurationMs = end.Sub(tl.StartedAt).Milliseconds()
	if live && tl.ClosedAt == nil {
		if err := tl.addPending(ctx, c, desc, runID, byID, children); err != nil {
			return nil, err
		}
	}
	if tl.Status == "" {
		// Running or waiting: ask the run (a failed query leaves the status unknown).
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		defer cancel()
		if v, err := kortyx.Query(qctx, c, runID); err == nil {
			tl.Status, tl.Node = string(v.Status), v.Node
			if s := v.State.Runtime.Spend; s != nil {
				tl.spend, tl.spendLive = s, true
			}
			if v.Pending != nil {
				if _, ok := answers[v.Pending.RequestID]; !ok {
					q := v.Pending.Input
					tl.Entries = append(tl.Entries, timelineEntry{Kind: "question", At: v.Pending.CreatedAt, Node: v.Pending.Node, RequestID: v.Pending.RequestID, Question: &q})
				}
			}
		}
	}
	tl.Budget = tl.budgetOf()
	return tl, nil
}

// complete adds a model pass or tool call that completed, its result decoded by result.
func (tl *timeline) complete(e timelineEntry, result func(any) bool) {
	switch e.Kind {
	case "activity":
		if e.Internal && e.Attempts <= 1 {
			tl.Internal = append(tl.Internal, e)
			return
		}
	case "model":
		var out providers.Response
		if result(&out) {
			u := out.Usage
			e.Usage, e.FinishReason, e.Text = &u, out.FinishReason.Unified, out.Text
			tl.Usage = protocol.AddUsage(tl.Usage, u)
			tl.byModel[e.priceKey] = protocol.AddUsage(tl.byModel[e.priceKey], u)
		}
		tl.ModelPasses++
	case "tool":
		var out providers.ToolResult
		if result(&out) {
			e.Result = out.Content
			if out.IsError {
				// The text the model was given is the tool's own error; the descriptor's message
				// of a plain Go error is the generic one, so the error shows the text with the
				// descriptor's code.
				e.Result, e.Error = "", out.Content
				e.Failure = &failureView{Code: contracts.CodeExecutionFailed, Message: out.Content, Activity: protocol.ToolActivityName, Attempt: e.Attempts}
				if out.Failure != nil {
					e.Failure.Code = out.Failure.Code
				}
			}
		}
		tl.ToolCalls++
	}
	tl.Entries = append(tl.Entries, e)
}

// failActivity adds the entry of an activity that failed (or timed out) with v, and returns a
// copy of it.
func (tl *timeline) failActivity(p *pendingActivity, at time.Time, v *failureView) *timelineEntry {
	p.done = true
	e := p.entry
	e.DurationMs = at.Sub(p.at).Milliseconds()
	v.Activity, v.Attempt, v.Node = activityName(e), e.Attempts, e.Node
	e.Error, e.Failure = v.Message, v
	tl.Entries = append(tl.Entries, e)
	return &e
}

// activityName is the activity type of an activity entry.
func activityName(e timelineEntry) string {
	switch e.Kind {
	case "model":
		return protocol.ModelActivityName
	case "tool":
		return protocol.ToolActivityName
	}
	return e.Activity
}

// nodeOfActivity is the node in an activity id of the form "<node>/<kind>#<n>" (the ids a run
// gives its hooks' activities), "" for another id.
func nodeOfActivity(id string) string {
	node, rest, ok := strings.Cut(id, "/")
	if !ok || !strings.Contains(rest, "#") {
		return ""
	}
	return node
}

// addPending adds the activities and children of an open run that have not finished, from
// DescribeWorkflowExecution: each activity with its attempt, last failure and next retry; each
// child with its own status (its state query: a child asking a question is waiting).
func (tl *timeline) addPending(ctx context.Context, c client.Client, desc describer, runID string, byID map[string]*pendingActivity, children map[int64]*pendingActivity) error {
	described, err := c.DescribeWorkflow(ctx, runID, "")
	if err != nil {
		return notFound(runID, err)
	}
	d := described.RawResponse
	now := time.Now()
	var added []timelineEntry
	for _, pa := range d.GetPendingActivities() {
		e := timelineEntry{Kind: "activity", At: pa.GetScheduledTime().AsTime(), Activity: pa.GetActivityType().GetName()}
		if p := byID[pa.GetActivityId()]; p != nil && !p.done {
			e = p.entry
			e.At = p.at
		}
		if e.Kind == "activity" {
			e.Internal = strings.HasPrefix(e.Activity, "kortyx.")
			if e.Node == "" {
				e.Node = nodeOfActivity(pa.GetActivityId())
			}
		}
		ps := &pendingState{State: pendingActivityState(pa), Attempt: int(pa.GetAttempt()), MaximumAttempts: int(pa.GetMaximumAttempts())}
		if f := desc.view(pa.GetLastFailure()); f != nil {
			f.Activity, f.Attempt, f.Node = activityName(e), max(ps.Attempt-1, 1), e.Node
			ps.LastFailure = f
		}
		if t := pa.GetNextAttemptScheduleTime(); t != nil {
			at := t.AsTime()
			ps.NextAttemptAt = &at
		}
		if t := pa.GetExpirationTime(); t != nil && !t.AsTime().IsZero() && t.AsTime().Unix() > 0 {
			at := t.AsTime()
			ps.ExpiresAt = &at
		}
		e.Attempts, e.Pending, e.DurationMs = ps.Attempt, ps, now.Sub(e.At).Milliseconds()
		added = append(added, e)
	}
	for _, pc := range d.GetPendingChildren() {
		p := children[pc.GetInitiatedId()]
		if p == nil {
			continue
		}
		e := p.entry
		e.Status, e.DurationMs = string(contracts.StatusRunning), now.Sub(p.at).Milliseconds()
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		if v, err := kortyx.Query(qctx, c, e.ChildRunID); err == nil && v.Status != "" {
			e.Status = string(v.Status)
		}
		cancel()
		added = append(added, e)
	}
	slices.SortStableFunc(added, func(a, b timelineEntry) int { return a.At.Compare(b.At) })
	tl.Entries = append(tl.Entries, added...)
	return nil
}

// pendingActivityState is a pending activity's state as the trace names it.
func pendingActivityState(pa *workflowpb.PendingActivityInfo) string {
	if pa.GetPaused() {
		return "paused"
	}
	switch pa.GetState() {
	case enums.PENDING_ACTIVITY_STATE_STARTED:
		return "started"
	case enums.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED:
		return "cancel-requested"
	case enums.PENDING_ACTIVITY_STATE_PAUSED, enums.PENDING_ACTIVITY_STATE_PAUSE_REQUESTED:
		return "paused"
	}
	return "scheduled"
}

func appendChild(entries []timelineEntry, children map[int64]*pendingActivity, initiated int64, at time.Time, status string) []timelineEntry {
	p := children[initiated]
	if p == nil {
		return entries
	}
	e := p.entry
	e.DurationMs, e.Status = at.Sub(p.at).Milliseconds(), status
	return append(entries, e)
}

// appendAnswer adds an answer entry; the resume token is never shown.
func appendAnswer(entries []timelineEntry, decode func(*commonpb.Payloads, any) bool, args *commonpb.Payloads, at time.Time) []timelineEntry {
	var r contracts.Response
	if !decode(args, &r) {
		return entries
	}
	var answer any
	switch {
	case r.Cancel:
		answer = map[string]bool{"cancel": true}
	case len(r.Selected) > 0:
		answer = r.Selected
	case len(r.Value) > 0:
		answer = r.Value
	default:
		answer = r.Text
	}
	b, _ := json.Marshal(answer) // strings, lists and raw JSON encode
	// An answer an update validator refused is not accepted and never reaches here; a signal
	// may still be refused by the run (its rejection is in the state query), and a later,
	// different answer to the same question is another entry. Only a repeat of an answer
	// already shown (the same request and the same answer) adds none.
	if slices.ContainsFunc(entries, func(e timelineEntry) bool {
		return e.Kind == "answer" && e.RequestID == r.RequestID && bytes.Equal(e.Answer, b)
	}) {
		return entries
	}
	return append(entries, timelineEntry{Kind: "answer", At: at, RequestID: r.RequestID, Answer: b})
}

func notFound(runID string, err error) error {
	return &contracts.Error{Code: contracts.CodeNotFound, Message: "No run " + runID + " in this namespace.", Err: err}
}

// report adds what a run's checkpoint report to its session shows: the nodes run, the questions
// asked, the steering messages taken in, the checkpoint. A run signals it from the workflow, or
// (execution.ReportWithPublishVersion) its publish local activity does and returns it.
func (tl *timeline) report(rep protocol.CheckpointReport, at time.Time, answers map[string]int) {
	if rep.Checkpoint == nil {
		return
	}
	cp := rep.Checkpoint
	for _, n := range cp.Nodes {
		if len(tl.Nodes) == 0 || tl.Nodes[len(tl.Nodes)-1] != n {
			tl.Nodes = append(tl.Nodes, n)
			tl.Entries = append(tl.Entries, timelineEntry{Kind: "node", At: at, Node: n})
		}
	}
	for _, p := range cp.ActivePendingRequests {
		if _, ok := answers[p.RequestID]; ok {
			continue
		}
		q := p.Input
		answers[p.RequestID] = len(tl.Entries)
		tl.Entries = append(tl.Entries, timelineEntry{Kind: "question", At: at, Node: p.Node, RequestID: p.RequestID, Question: &q})
	}
	for _, st := range cp.Effects.Steered {
		step := st.Step
		tl.Entries = append(tl.Entries, timelineEntry{Kind: "steered", At: at, Node: st.Node, Text: st.Content, SteerID: st.ID, Step: &step})
	}
	turn := cp.TurnIndex
	tl.Entries = append(tl.Entries, timelineEntry{Kind: "checkpoint", At: at, CheckpointID: cp.ID, TurnIndex: &turn})
}

// startBudget is the worker's budget a lean run's start record holds (none: an empty one).
func startBudget(b *protocol.BudgetStart) *protocol.BudgetStart {
	if b == nil {
		return &protocol.BudgetStart{}
	}
	return b
}
