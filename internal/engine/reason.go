package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// maxPayloadBytes is Temporal's payload limit; a model pass whose input would exceed it fails
// early with PAYLOAD_TOO_LARGE instead of failing the workflow task.
const maxPayloadBytes = 2 << 20

// ReasonSpec is a normalized hooks.Reason call.
type ReasonSpec struct {
	ID       string
	Model    contracts.ModelRef
	Messages []contracts.ModelMessage
	Options  contracts.CallOptions
	Stream   bool
	Emit     bool
	Tools    []string
	MCP      []contracts.MCPServer
	MaxSteps int
	// EmitTool and Approve say, per tool name, whether tool chunks are published and whether a
	// human approves each call first.
	EmitTool func(name string) bool
	Approve  func(name string) bool
	// MaxResultChars bounds the tool result text sent back to the model (0: no bound).
	MaxResultChars int
	ModelOptions   workflow.ActivityOptions
	ToolOptions    workflow.ActivityOptions

	mcpTools []contracts.OfferedTool // recorded tool list of the MCP servers
}

// offered returns every tool name the model may call.
func (spec ReasonSpec) offered() []string {
	out := append([]string(nil), spec.Tools...)
	for _, t := range spec.mcpTools {
		out = append(out, t.Name)
	}
	return out
}

// mcpServer returns the MCP server of a tool, or nil for a worker tool.
func (spec ReasonSpec) mcpServer(name string) *contracts.MCPServer {
	for _, t := range spec.mcpTools {
		if t.Name == name {
			srv := spec.MCP[t.Server]
			return &srv
		}
	}
	return nil
}

// listTools reads the tool list of the call's MCP servers once (an activity, recorded in
// history and in the journal) so that every pass, replay and retry sees the same tools.
func (s *Scope) listTools(ctx workflow.Context, key string, spec ReasonSpec) ([]contracts.OfferedTool, error) {
	var out []contracts.OfferedTool
	if s.recorded(key+"/tools", &out) {
		return out, nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 5}})
	if err := workflow.ExecuteActivity(actx, contracts.ListToolsActivityName, contracts.ListToolsInput{Servers: spec.MCP}).Get(actx, &out); err != nil {
		return nil, err
	}
	s.record(key+"/tools", contracts.JournalEntry{Kind: "tools", Value: contracts.RawJSON(out), At: workflow.Now(ctx)})
	return out, nil
}

// Reason runs a model call with its tool loop (spec F3.5, F3.6). Every model pass and every
// tool call is an activity whose result is recorded in the journal, so a node retry (or a run
// started from a snapshot) replays recorded passes, tool results and approvals without paying
// for them again; a completed call returns its recorded result.
func (s *Scope) Reason(ctx workflow.Context, spec ReasonSpec) (contracts.ReasonResult, error) {
	key, err := s.key("reason", spec.ID)
	if err != nil {
		return contracts.ReasonResult{}, err
	}
	var res contracts.ReasonResult
	if s.recorded(key, &res) {
		return res, nil
	}
	res = contracts.ReasonResult{ID: spec.ID, OpID: s.opID(ctx, key), Steps: []contracts.ReasonStep{}}
	if len(spec.MCP) > 0 {
		mcp, err := s.listTools(ctx, key, spec)
		if err != nil {
			return contracts.ReasonResult{}, err
		}
		spec.mcpTools = mcp
	}
	msgs := append([]contracts.ModelMessage(nil), spec.Messages...)
	seen := map[string]bool{}
	for step := 0; ; step++ {
		resp, err := s.modelPass(ctx, key, step, spec, res.OpID, msgs)
		if err != nil {
			return contracts.ReasonResult{}, err
		}
		merge(&res, resp)
		st := contracts.ReasonStep{Index: step, Text: resp.Text, ToolCalls: resp.ToolCalls, Usage: resp.Usage, FinishReason: resp.FinishReason}
		if len(resp.ToolCalls) == 0 {
			res.Text, res.FinishReason = resp.Text, resp.FinishReason
			res.Steps = append(res.Steps, st)
			break
		}
		if err := checkCalls(resp.ToolCalls, spec.offered(), seen); err != nil {
			return contracts.ReasonResult{}, err
		}
		if step+1 >= spec.MaxSteps {
			// No pass is left to read the results: do not run the tools at all.
			return contracts.ReasonResult{}, &contracts.Error{Code: contracts.CodeReasonMaxSteps,
				Message: fmt.Sprintf("hooks.Reason tool loop reached maxSteps (%d) before producing a final response; increase ToolExecution.MaxSteps.", spec.MaxSteps),
				Details: map[string]any{"maxSteps": spec.MaxSteps, "modelPasses": step + 1}}
		}
		msgs = append(msgs, contracts.ModelMessage{Role: contracts.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation})
		for _, call := range resp.ToolCalls {
			tr, err := s.toolCall(ctx, key, spec, res.OpID, call)
			if err != nil {
				return contracts.ReasonResult{}, err
			}
			st.ToolResults = append(st.ToolResults, tr)
			res.ToolCalls = append(res.ToolCalls, call)
			res.ToolResults = append(res.ToolResults, tr)
			content := tr.Content
			if spec.MaxResultChars > 0 && len(content) > spec.MaxResultChars {
				content = content[:spec.MaxResultChars] + fmt.Sprintf("\n[truncated: %d more characters]", len(tr.Content)-spec.MaxResultChars)
			}
			msgs = append(msgs, contracts.ModelMessage{Role: contracts.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: content, IsError: tr.IsError})
		}
		res.Steps = append(res.Steps, st)
	}
	s.record(key, contracts.JournalEntry{Kind: "reason", Value: contracts.RawJSON(res), At: workflow.Now(ctx)})
	return res, nil
}

// recorded decodes the journal entry under key into v.
func (s *Scope) recorded(key string, v any) bool {
	e, ok := s.journal(key)
	return ok && len(e.Value) > 0 && json.Unmarshal(e.Value, v) == nil
}

// opID returns the operation id of a Reason call: new (recorded in history) on first use, the
// journaled one when a retried node calls it again, so tool idempotency keys stay the same.
func (s *Scope) opID(ctx workflow.Context, key string) string {
	var id string
	if s.recorded(key+"/op", &id) {
		return id
	}
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.NewString() }).Get(&id)
	s.record(key+"/op", contracts.JournalEntry{Kind: "reason-op", Value: contracts.RawJSON(id), At: workflow.Now(ctx)})
	return id
}

func merge(res *contracts.ReasonResult, resp contracts.ModelResponse) {
	res.Usage = res.Usage.Add(resp.Usage)
	for _, w := range resp.Warnings {
		dup := false
		for _, have := range res.Warnings {
			dup = dup || have == w
		}
		if !dup {
			res.Warnings = append(res.Warnings, w)
		}
	}
	for _, k := range workflow.DeterministicKeys(resp.ProviderMetadata) {
		if res.ProviderMetadata == nil {
			res.ProviderMetadata = map[string]any{}
		}
		res.ProviderMetadata[k] = resp.ProviderMetadata[k]
	}
}

// checkCalls rejects empty or repeated tool call ids (across the whole operation) and tools
// that were not offered, before any call of the turn runs.
func checkCalls(calls []contracts.ToolCall, offered []string, seen map[string]bool) error {
	for _, c := range calls {
		if c.ID == "" || seen[c.ID] {
			return &contracts.Error{Code: contracts.CodeInvalidToolCall, Message: "Model returned duplicate or empty tool call IDs.",
				Details: map[string]any{"toolCallId": c.ID}}
		}
		seen[c.ID] = true
		known := false
		for _, name := range offered {
			known = known || name == c.Name
		}
		if !known {
			return &contracts.Error{Code: contracts.CodeUnknownTool, Message: fmt.Sprintf("Model requested unknown tool %q from hooks.Reason.", c.Name),
				Details: map[string]any{"tool": c.Name}}
		}
	}
	return nil
}

func (s *Scope) modelPass(ctx workflow.Context, key string, step int, spec ReasonSpec, opID string, msgs []contracts.ModelMessage) (contracts.ModelResponse, error) {
	pkey := key + "/pass/" + strconv.Itoa(step)
	var resp contracts.ModelResponse
	if s.recorded(pkey, &resp) {
		return resp, nil
	}
	in := contracts.ModelPassInput{
		RunID: s.run.ID, Node: s.node, HookID: spec.ID, OpID: opID, SegmentID: "step-" + strconv.Itoa(step),
		Model: spec.Model, Messages: msgs, Tools: spec.Tools, Options: spec.Options, Stream: spec.Stream, Emit: spec.Emit,
		MCP: spec.MCP,
	}
	for _, t := range spec.mcpTools {
		in.MCPTools = append(in.MCPTools, t.Name)
	}
	if b, err := json.Marshal(in); err != nil {
		return resp, contracts.Errorf(contracts.CodeInvalidRequest, "hooks.Reason: the model call cannot be encoded: %v", err)
	} else if len(b) > maxPayloadBytes {
		return resp, &contracts.Error{Code: contracts.CodePayloadTooLarge,
			Message: fmt.Sprintf("hooks.Reason: the model call is %d bytes, over Temporal's %d-byte payload limit; shorten the history or bound tool results (ToolExecution.MaxResultChars)", len(b), maxPayloadBytes),
			Details: map[string]any{"bytes": len(b), "limit": maxPayloadBytes}}
	}
	s.run.Flush(ctx)
	actx := workflow.WithActivityOptions(ctx, spec.ModelOptions)
	if err := workflow.ExecuteActivity(actx, contracts.ModelActivityName, in).Get(actx, &resp); err != nil {
		return resp, err
	}
	s.run.AddUsage(resp.Usage)
	s.record(pkey, contracts.JournalEntry{Kind: "model-pass", Value: contracts.RawJSON(resp), At: workflow.Now(ctx)})
	return resp, nil
}

// toolCall runs one tool call, after approval when required; a recorded result is reused.
func (s *Scope) toolCall(ctx workflow.Context, key string, spec ReasonSpec, opID string, call contracts.ToolCall) (contracts.ToolResult, error) {
	tkey := key + "/tool/" + call.ID
	var res contracts.ToolResult
	if s.recorded(tkey, &res) {
		return res, nil
	}
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
			res = contracts.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: "Tool call denied by user.", IsError: true}
			if emit {
				s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}))
				s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content, IsError: true}))
			}
			s.record(tkey, contracts.JournalEntry{Kind: "tool", Value: contracts.RawJSON(res), At: workflow.Now(ctx)})
			return res, nil
		}
	}
	if emit {
		s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}))
		s.run.Flush(ctx)
	}
	in := contracts.ToolCallInput{RunID: s.run.ID, Tool: call.Name, ToolCallID: call.ID, Input: call.Arguments,
		IdempotencyKey: s.run.ID + ":" + opID + ":" + call.ID, MCP: spec.mcpServer(call.Name)}
	actx := workflow.WithActivityOptions(ctx, spec.ToolOptions)
	if err := workflow.ExecuteActivity(actx, contracts.ToolActivityName, in).Get(actx, &res); err != nil {
		return res, err
	}
	if emit {
		if res.Failure != nil {
			s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallError, Message: res.Content, Failure: res.Failure}))
		} else {
			s.run.Emit(attr(contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content,
				StructuredContent: res.StructuredContent, IsError: res.IsError}))
		}
	}
	s.record(tkey, contracts.JournalEntry{Kind: "tool", Value: contracts.RawJSON(res), At: workflow.Now(ctx)})
	return res, nil
}
