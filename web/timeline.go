package web

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Timeline is what a run did, from its Temporal history (and its state query).
type Timeline struct {
	RunID     string `json:"runId"`
	Workflow  string `json:"workflow"`
	SessionID string `json:"sessionId,omitempty"`
	// Status is the run's status from the state query ("" when the query failed, e.g. no
	// worker) or, once closed, Temporal's (completed, failed, canceled, terminated, …).
	Status string `json:"status"`
	// Nodes are the nodes the run entered, in order (from its checkpoints).
	Nodes       []string        `json:"nodes"`
	Usage       contracts.Usage `json:"usage"`
	ModelPasses int             `json:"modelPasses"`
	ToolCalls   int             `json:"toolCalls"`
	Entries     []Entry         `json:"entries"`
}

// Entry is one event of a timeline, in history order.
type Entry struct {
	// Kind: started, node, model, tool, question, answer, child, checkpoint, ended.
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	Node string    `json:"node,omitempty"`
	// Duration from the activity's scheduling to its completion (model, tool, child).
	DurationMs int64 `json:"durationMs,omitempty"`
	Attempts   int   `json:"attempts,omitempty"`
	// model
	Model        string           `json:"model,omitempty"`
	Usage        *contracts.Usage `json:"usage,omitempty"`
	FinishReason string           `json:"finishReason,omitempty"`
	// tool
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	// question, answer
	RequestID string                    `json:"requestId,omitempty"`
	Question  *contracts.InterruptInput `json:"question,omitempty"`
	Answer    json.RawMessage           `json:"answer,omitempty"`
	// child
	ChildRunID string `json:"childRunId,omitempty"`
	// checkpoint
	CheckpointID string `json:"checkpointId,omitempty"`
	TurnIndex    *int   `json:"turnIndex,omitempty"`
	// started, ended, child
	Status string `json:"status,omitempty"`
}

type pendingActivity struct {
	at    time.Time
	entry Entry
}

// BuildTimeline reads runID's history (and, while the run is open, its state query), decoding
// payloads with Temporal's default data converter. An unknown run is NOT_FOUND.
func BuildTimeline(ctx context.Context, c client.Client, runID string) (*Timeline, error) {
	return buildTimeline(ctx, c, nil, runID)
}

// Timeline is [BuildTimeline] decoding payloads with o.DataConverter (the client's, e.g. with
// the payload codec of package codec) and reading with o.Client.
func (o Options) Timeline(ctx context.Context, runID string) (*Timeline, error) {
	return buildTimeline(ctx, o.Client, o.DataConverter, runID)
}

func buildTimeline(ctx context.Context, c client.Client, dc converter.DataConverter, runID string) (*Timeline, error) {
	tl := &Timeline{RunID: runID, Nodes: []string{}, Entries: []Entry{}}
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	decode := func(p *commonpb.Payloads, v any) bool {
		return p != nil && len(p.Payloads) > 0 && dc.FromPayloads(p, v) == nil
	}
	acts := map[int64]*pendingActivity{}
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
		at := ev.GetEventTime().AsTime()
		switch a := ev.Attributes.(type) {
		case *historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes:
			var start protocol.RunStart
			if decode(a.WorkflowExecutionStartedEventAttributes.GetInput(), &start) {
				tl.Workflow = start.Workflow
				tl.SessionID = start.SessionID
			}
			tl.Entries = append(tl.Entries, Entry{Kind: "started", At: at, Status: "started"})
		case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
			s := a.ActivityTaskScheduledEventAttributes
			e := Entry{At: at}
			switch s.GetActivityType().GetName() {
			case contracts.ModelActivityName:
				var in contracts.ModelPassInput
				if !decode(s.GetInput(), &in) {
					continue
				}
				e.Kind, e.Node, e.Model = "model", in.Node, in.Model.Model
				if in.Model.Provider != "" {
					e.Model = in.Model.Provider + "/" + in.Model.Model
				}
			case contracts.ToolActivityName:
				var in contracts.ToolCallInput
				if !decode(s.GetInput(), &in) {
					continue
				}
				e.Kind, e.Tool, e.Arguments = "tool", in.Tool, in.Input
			default:
				continue
			}
			acts[ev.GetEventId()] = &pendingActivity{at: at, entry: e}
		case *historypb.HistoryEvent_ActivityTaskStartedEventAttributes:
			if p := acts[a.ActivityTaskStartedEventAttributes.GetScheduledEventId()]; p != nil {
				p.entry.Attempts = int(a.ActivityTaskStartedEventAttributes.GetAttempt())
			}
		case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
			s := a.ActivityTaskCompletedEventAttributes
			p := acts[s.GetScheduledEventId()]
			if p == nil {
				continue
			}
			e := p.entry
			e.DurationMs = at.Sub(p.at).Milliseconds()
			switch e.Kind {
			case "model":
				var out contracts.ModelResponse
				if decode(s.GetResult(), &out) {
					u := out.Usage
					e.Usage, e.FinishReason = &u, out.FinishReason.Unified
					tl.Usage = tl.Usage.Add(u)
				}
				tl.ModelPasses++
			case "tool":
				var out contracts.ToolResult
				if decode(s.GetResult(), &out) {
					e.Result = out.Content
					if out.Failure != nil {
						e.Error = out.Failure.Message
					}
				}
				tl.ToolCalls++
			}
			tl.Entries = append(tl.Entries, e)
		case *historypb.HistoryEvent_ActivityTaskFailedEventAttributes:
			s := a.ActivityTaskFailedEventAttributes
			if p := acts[s.GetScheduledEventId()]; p != nil {
				e := p.entry
				e.DurationMs = at.Sub(p.at).Milliseconds()
				e.Error = s.GetFailure().GetMessage()
				tl.Entries = append(tl.Entries, e)
			}
		case *historypb.HistoryEvent_StartChildWorkflowExecutionInitiatedEventAttributes:
			s := a.StartChildWorkflowExecutionInitiatedEventAttributes
			children[ev.GetEventId()] = &pendingActivity{at: at, entry: Entry{Kind: "child", At: at, ChildRunID: s.GetWorkflowId()}}
		case *historypb.HistoryEvent_ChildWorkflowExecutionCompletedEventAttributes:
			tl.Entries = appendChild(tl.Entries, children, a.ChildWorkflowExecutionCompletedEventAttributes.GetInitiatedEventId(), at, "completed")
		case *historypb.HistoryEvent_ChildWorkflowExecutionFailedEventAttributes:
			tl.Entries = appendChild(tl.Entries, children, a.ChildWorkflowExecutionFailedEventAttributes.GetInitiatedEventId(), at, "failed")
		case *historypb.HistoryEvent_ChildWorkflowExecutionCanceledEventAttributes:
			tl.Entries = appendChild(tl.Entries, children, a.ChildWorkflowExecutionCanceledEventAttributes.GetInitiatedEventId(), at, "canceled")
		case *historypb.HistoryEvent_SignalExternalWorkflowExecutionInitiatedEventAttributes:
			s := a.SignalExternalWorkflowExecutionInitiatedEventAttributes
			if s.GetSignalName() != contracts.SessionCheckpointSignal {
				continue
			}
			var rep protocol.CheckpointReport
			if !decode(s.GetInput(), &rep) || rep.Checkpoint == nil {
				continue
			}
			cp := rep.Checkpoint
			for _, n := range cp.Nodes {
				if len(tl.Nodes) == 0 || tl.Nodes[len(tl.Nodes)-1] != n {
					tl.Nodes = append(tl.Nodes, n)
					tl.Entries = append(tl.Entries, Entry{Kind: "node", At: at, Node: n})
				}
			}
			for _, p := range cp.ActivePendingRequests {
				if _, ok := answers[p.RequestID]; ok {
					continue
				}
				q := p.Input
				answers[p.RequestID] = len(tl.Entries)
				tl.Entries = append(tl.Entries, Entry{Kind: "question", At: at, Node: p.Node, RequestID: p.RequestID, Question: &q})
			}
			turn := cp.TurnIndex
			tl.Entries = append(tl.Entries, Entry{Kind: "checkpoint", At: at, CheckpointID: cp.ID, TurnIndex: &turn})
		case *historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes:
			s := a.WorkflowExecutionUpdateAcceptedEventAttributes
			if s.GetAcceptedRequest().GetInput().GetName() != contracts.RespondName {
				continue
			}
			tl.Entries = appendAnswer(tl.Entries, decode, s.GetAcceptedRequest().GetInput().GetArgs(), at)
		case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
			s := a.WorkflowExecutionSignaledEventAttributes
			if s.GetSignalName() != contracts.RespondName {
				continue
			}
			tl.Entries = appendAnswer(tl.Entries, decode, s.GetInput(), at)
		case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes:
			tl.Entries = append(tl.Entries, Entry{Kind: "ended", At: at, Status: "completed"})
			tl.Status = "completed"
		case *historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes:
			tl.Entries = append(tl.Entries, Entry{Kind: "ended", At: at, Status: "failed", Error: a.WorkflowExecutionFailedEventAttributes.GetFailure().GetMessage()})
			tl.Status = "failed"
		case *historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes:
			tl.Entries = append(tl.Entries, Entry{Kind: "ended", At: at, Status: "cancelled"})
			tl.Status = "cancelled"
		case *historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes:
			tl.Entries = append(tl.Entries, Entry{Kind: "ended", At: at, Status: "terminated"})
			tl.Status = "terminated"
		case *historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes:
			tl.Entries = append(tl.Entries, Entry{Kind: "ended", At: at, Status: "continued-as-new"})
		}
	}
	if !found {
		return nil, notFound(runID, nil)
	}
	if tl.Status == "" {
		// Running or waiting: ask the run (a failed query leaves the status unknown).
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if v, err := kortyx.Query(qctx, c, runID); err == nil {
			tl.Status = string(v.Status)
			if v.Pending != nil {
				if _, ok := answers[v.Pending.RequestID]; !ok {
					q := v.Pending.Input
					tl.Entries = append(tl.Entries, Entry{Kind: "question", At: v.Pending.CreatedAt, Node: v.Pending.Node, RequestID: v.Pending.RequestID, Question: &q})
				}
			}
		}
	}
	return tl, nil
}

func appendChild(entries []Entry, children map[int64]*pendingActivity, initiated int64, at time.Time, status string) []Entry {
	p := children[initiated]
	if p == nil {
		return entries
	}
	e := p.entry
	e.DurationMs, e.Status = at.Sub(p.at).Milliseconds(), status
	return append(entries, e)
}

// appendAnswer adds an answer entry; the resume token is never shown.
func appendAnswer(entries []Entry, decode func(*commonpb.Payloads, any) bool, args *commonpb.Payloads, at time.Time) []Entry {
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
	if slices.ContainsFunc(entries, func(e Entry) bool {
		return e.Kind == "answer" && e.RequestID == r.RequestID && bytes.Equal(e.Answer, b)
	}) {
		return entries
	}
	return append(entries, Entry{Kind: "answer", At: at, RequestID: r.RequestID, Answer: b})
}

func notFound(runID string, err error) error {
	return &contracts.Error{Code: contracts.CodeNotFound, Message: "No run " + runID + " in this namespace.", Err: err}
}
