package execution

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// listTools reads the tool list of the call's MCP servers once (an activity, recorded in
// history and in the journal) so that every pass, replay and retry sees the same tools.
func (s *Scope) listTools(ctx workflow.Context, key string, spec reasonSpec) ([]protocol.OfferedTool, error) {
	var out []protocol.OfferedTool
	if s.recorded(key+keyList, &out) {
		return out, nil
	}
	// No attempt limit (an attempt lost to a dead worker must not use up a budget), bounded in
	// time; an unreachable server fails the call after three minutes.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 3 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
		Summary:     "list MCP tools", ActivityID: s.run.activityID(s.node, "mcp")})
	s.run.SettleStatus(ctx)
	if err := workflow.ExecuteActivity(actx, protocol.ListToolsActivityName, protocol.ListToolsInput{Servers: spec.MCP}).Get(actx, &out); err != nil {
		return nil, err
	}
	s.record(key+keyList, protocol.JournalEntry{Kind: entryTools, Value: protocol.RawJSON(out), At: workflow.Now(ctx)})
	return out, nil
}

// toolSummary is the summary of a tool call activity: "tool <name>".
func toolSummary(name string) string { return "tool " + name }

// toolCall runs one business tool call, after approval when required.
func (s *Scope) toolCall(ctx workflow.Context, key string, spec reasonSpec, opID string, call providers.ToolCall) (providers.ToolResult, error) {
	var res providers.ToolResult
	emit := spec.EmitTool(call.Name)
	attr := func(c contracts.Chunk) contracts.Chunk {
		c.Node, c.ID, c.OpID, c.Tool, c.ToolCallID = s.node, spec.ID, opID, call.Name, call.ID
		return c
	}
	if spec.Approve(call.Name) {
		meta, _ := json.Marshal(map[string]any{"tool": call.Name, "toolCallId": call.ID, "input": call.Arguments})
		in := contracts.InterruptInput{
			Kind: contracts.InterruptChoice, Question: "Approve " + call.Name + "?", ID: "tool:" + call.ID, Meta: meta,
			Options: []contracts.Option{{ID: "approve", Label: "Approve"}, {ID: "deny", Label: "Deny"}},
		}
		ans, err := s.interruptKeyed(ctx, key+"/approval/"+call.ID, "tool:"+call.ID, in, nil)
		if err != nil {
			return res, err
		}
		if ans.Selected[0] == "deny" {
			res = providers.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: "Tool call denied by user.", IsError: true}
			if emit {
				s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}))
				s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content, IsError: true}))
			}
			return res, nil
		}
	}
	if err := s.run.Reserve(ctx, protocol.LimitToolCalls); err != nil {
		return res, err
	}
	if emit {
		s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}))
		if !s.run.Lean {
			s.run.Flush(ctx)
		}
	}
	in := protocol.ToolCallInput{RunID: s.run.ID, Tool: call.Name, ToolCallID: call.ID, Input: call.Arguments,
		IdempotencyKey: s.run.ID + ":" + opID + ":" + call.ID, MCP: spec.mcpServer(call.Name),
		Node: s.node, Stream: s.run.stream, MaxFailures: spec.ToolFailures}
	var carried []protocol.KeyedChunk
	if s.run.Lean {
		// A lean run hands the chunks queued before the call to the tool activity, which
		// publishes them first (their keys make a retry a no-op): no publish local activity.
		carried = s.run.takeOutbox(ctx)
		in.Chunks = carried
		if protocol.CheckPayload("the tool call", in, "") != nil {
			in.Chunks = nil
			s.run.requeue(carried)
			carried = nil
			s.run.Flush(ctx)
		}
	}
	failed := func(err error) (providers.ToolResult, error) {
		// The carried chunks were perhaps never published: the next flush (at the latest the
		// run's final one) publishes them, deduplicated by their keys.
		s.run.requeue(carried)
		return res, err
	}
	topts := spec.ToolOptions
	topts.Summary = toolSummary(call.Name) // what the Temporal UI shows for the activity
	s.run.SettleStatus(ctx)
	if in.MCP == nil && s.run.localTool(ctx, call.Name) {
		// The same activity, run by this worker inside the workflow task (tools.Local), with
		// the regular call's timeout and retry policy.
		lctx := workflow.WithLocalActivityOptions(ctx, localToolOptions(topts))
		if err := workflow.ExecuteLocalActivity(lctx, protocol.ToolActivityName, in).Get(lctx, &res); err != nil {
			return failed(localActivityError(err, protocol.ToolActivityName))
		}
	} else {
		topts.ActivityID = s.run.activityID(s.node, "tool")
		actx := workflow.WithActivityOptions(ctx, topts)
		if err := workflow.ExecuteActivity(actx, protocol.ToolActivityName, in).Get(actx, &res); err != nil {
			return failed(err)
		}
	}
	if emit {
		if res.Failure != nil {
			// The descriptor's message, not the content: a plain tool error's text is for the
			// model only.
			s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallError, Message: res.Failure.Message, Failure: res.Failure}))
		} else {
			s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content,
				StructuredContent: res.StructuredContent, IsError: res.IsError}))
		}
	}
	return res, nil
}

// localTool reports whether the run executes the worker tool name as a local activity. The
// worker's set (Run.LocalTools) is configuration that may change between deploys, so the run
// records it once, at its first worker tool call, and keeps it: a replay, or a run that waits
// across a deploy, runs every call the way the run started. Runs recorded before local tools
// existed have no record and run every tool as a regular activity.
func (r *Run) localTool(ctx workflow.Context, name string) bool {
	if r.local == nil {
		r.local = map[string]bool{}
		if workflow.GetVersion(ctx, versionLocalTools, workflow.DefaultVersion, 1) >= 1 {
			configured := append([]string{}, r.LocalTools...)
			var names []string
			if err := workflow.SideEffect(ctx, func(workflow.Context) any { return configured }).Get(&names); err != nil {
				// Cannot happen for a list of strings; regular activities are always safe.
				workflow.GetLogger(ctx).Warn("kortyx: reading the recorded local tools failed; tools run as regular activities", "error", err)
			}
			for _, n := range names {
				r.local[n] = true
			}
		}
	}
	return r.local[name]
}

// unboundedLocalWindow stands for "no bound" in the ScheduleToCloseTimeout of a local tool call:
// a regular activity without one is retried until its policy gives up, a local activity
// without one would get only its StartToCloseTimeout.
const unboundedLocalWindow = 10 * 365 * 24 * time.Hour

// localToolOptions are the local activity options of a local tool call: the regular call's
// timeout, retry policy and retry window (heartbeats do not apply to local activities).
func localToolOptions(o workflow.ActivityOptions) workflow.LocalActivityOptions {
	window := o.ScheduleToCloseTimeout
	if window <= 0 {
		window = unboundedLocalWindow
	}
	return workflow.LocalActivityOptions{StartToCloseTimeout: o.StartToCloseTimeout, ScheduleToCloseTimeout: window,
		RetryPolicy: o.RetryPolicy, Summary: o.Summary}
}

// localActivityError is the error of a failed local tool call or model pass (name: the
// activity's wire name) as a regular one reports it: an *temporal.ActivityError of name around
// the cause, which is where the failure's code,
// its "activity" context and a timeout's ACTIVITY_TIMEOUT are read from. The SDK returns a
// local activity's failure without that wrapper (its test environment wraps it, naming the Go
// function); a cancellation is returned as it is, as for a regular call. The cause chain
// (codes, details, timeout type) is kept: the failure is converted to its Temporal form and
// back, with the default failure converter the workers use.
func localActivityError(err error, name string) error {
	if err == nil {
		return nil
	}
	fc := temporal.GetDefaultFailureConverter()
	var ae *temporal.ActivityError
	if errors.As(err, &ae) {
		if ae.ActivityType().GetName() == name {
			return err
		}
		f := fc.ErrorToFailure(ae)
		if info := f.GetActivityFailureInfo(); info != nil {
			info.ActivityType = &commonpb.ActivityType{Name: name}
			return fc.FailureToError(f)
		}
		return err
	}
	if temporal.IsCanceledError(err) {
		return err
	}
	return fc.FailureToError(&failurepb.Failure{Message: "activity error", Source: "GoSDK", Cause: fc.ErrorToFailure(err),
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityType: &commonpb.ActivityType{Name: name}}}})
}
