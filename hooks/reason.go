package hooks

import (
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/engine"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ReasonOptions is a model call (spec F3.5, F3.6). The zero value of every field works.
type ReasonOptions struct {
	// ID is a stable id for this call within its node (recommended); it is copied into the
	// text and tool chunks. Without it the call is identified by its position.
	ID string
	// Model names the model as data, e.g. contracts.Model("openai:gpt-4.1-mini"); an empty
	// Provider uses the worker's default provider.
	Model contracts.ModelRef
	// System is the system prompt.
	System string
	// Messages is the conversation so far (before Input).
	Messages []contracts.ModelMessage
	// Input is appended as the last user message when not empty.
	Input string
	// Options are the generation options (temperature, max output tokens, stop sequences,
	// reasoning, response format, provider options).
	Options contracts.CallOptions
	// Silent publishes no text chunks (Kortyx emit: false).
	Silent bool
	// Buffered calls the model without streaming (Kortyx stream: false). Without it the call
	// streams unless the model's options say {"streaming": false}.
	Buffered bool
	// Tools names worker tools the model may call.
	Tools []string
	// MCP adds the tools of MCP servers; their list is read once per call and recorded, so
	// replays and retries see the same tools.
	MCP []contracts.MCPServer
	// ToolExecution configures the tool loop.
	ToolExecution ToolExecution
	// Timeout bounds one model pass (default 5 minutes); Retry is its retry policy (default: up
	// to 5 attempts with exponential backoff; non-retryable provider errors stop at once).
	Timeout time.Duration
	Retry   *temporal.RetryPolicy
}

// ToolExecution configures the tool loop of [Reason].
type ToolExecution struct {
	// MaxSteps bounds the model passes of the call (default 3, minimum 1).
	MaxSteps int
	// Emit publishes tool-call-start / tool-call-result / tool-call-error chunks.
	Emit Switch
	// Approval asks a human "Approve <tool>?" before each call (interrupt id "tool:<callId>").
	Approval Switch
	// MaxResultChars bounds the text of a tool result sent back to the model (default 32,000;
	// -1: unbounded); the full result stays in the [contracts.ReasonResult].
	MaxResultChars int
	// Timeout bounds one tool call (default 2 minutes); Retry is its retry policy (default 3
	// attempts; only retryable tool errors are retried).
	Timeout time.Duration
	Retry   *temporal.RetryPolicy
}

// Switch is "a bool, or per tool": On applies to every tool except those listed in Tools.
type Switch struct {
	On    bool
	Tools map[string]bool
}

// For reports the setting for a tool.
func (s Switch) For(tool string) bool {
	if v, ok := s.Tools[tool]; ok {
		return v
	}
	return s.On
}

// All is a Switch that is on for every tool.
var All = Switch{On: true}

// Only is a Switch that is on for the named tools.
func Only(tools ...string) Switch {
	m := make(map[string]bool, len(tools))
	for _, t := range tools {
		m[t] = true
	}
	return Switch{Tools: m}
}

// Reason calls a model, durably: every model pass and every tool call is an activity recorded
// in history, so a crash, a worker restart or a retried node never pays for a pass or runs a
// tool twice. Text streams to the run's stream as text-start / text-delta / text-end chunks
// (node, id, opId, segmentId "step-<n>") unless Silent. When the model calls tools, each call
// runs in the order requested — after a human approves it, when Approval says so — and every
// call gets exactly one result before the next pass; a tool error or invalid arguments reach the
// model as an isError result it can correct. Usage is added once to the run's token usage.
//
// Errors carry codes: provider codes (PROVIDER_HTTP_ERROR, …), REASON_MAX_STEPS_REACHED,
// UNKNOWN_TOOL, INVALID_TOOL_CALL, PAYLOAD_TOO_LARGE, and EXECUTION_CANCELLED when a human
// cancels at an approval.
func Reason(ctx workflow.Context, opts ReasonOptions) (contracts.ReasonResult, error) {
	s, err := engine.From(ctx, "Reason")
	if err != nil {
		return contracts.ReasonResult{}, err
	}
	spec, err := reasonSpec(opts)
	if err != nil {
		return contracts.ReasonResult{}, err
	}
	return s.Reason(ctx, spec)
}

func reasonSpec(opts ReasonOptions) (engine.ReasonSpec, error) {
	bad := func(format string, args ...any) (engine.ReasonSpec, error) {
		return engine.ReasonSpec{}, contracts.Errorf(contracts.CodeInvalidRequest, "hooks.Reason: "+format, args...)
	}
	var msgs []contracts.ModelMessage
	if opts.System != "" {
		msgs = append(msgs, contracts.ModelMessage{Role: contracts.RoleSystem, Content: opts.System})
	}
	msgs = append(msgs, opts.Messages...)
	if strings.TrimSpace(opts.Input) != "" {
		msgs = append(msgs, contracts.ModelMessage{Role: contracts.RoleUser, Content: opts.Input})
	}
	if len(msgs) == 0 {
		return bad("nothing to send: give Input, Messages or System")
	}
	if r := opts.Options.Reasoning; r != nil && r.IncludeThoughts && opts.Options.ResponseFormat != nil && opts.Options.ResponseFormat.Type != "text" {
		return bad("Reasoning.IncludeThoughts cannot be combined with a JSON response format")
	}
	te := opts.ToolExecution
	if te.MaxSteps < 0 {
		return bad("ToolExecution.MaxSteps must be at least 1, not %d", te.MaxSteps)
	}
	if te.MaxSteps == 0 {
		te.MaxSteps = 3
	}
	seen := map[string]bool{}
	for _, t := range opts.Tools {
		if t == "" || seen[t] {
			return bad("tool names must be non-empty and listed once (got %q)", t)
		}
		seen[t] = true
	}
	maxChars := te.MaxResultChars
	switch {
	case maxChars == 0:
		maxChars = 32_000
	case maxChars < 0:
		maxChars = 0
	}
	stream := !opts.Buffered
	if v, ok := opts.Model.Options["streaming"].(bool); ok && !v {
		stream = false
	}
	modelRetry := opts.Retry
	if modelRetry == nil {
		modelRetry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5}
	}
	toolRetry := te.Retry
	if toolRetry == nil {
		toolRetry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 3}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	toolTimeout := te.Timeout
	if toolTimeout <= 0 {
		toolTimeout = 2 * time.Minute
	}
	mo := workflow.ActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: modelRetry}
	if stream {
		mo.HeartbeatTimeout = time.Minute
	}
	return engine.ReasonSpec{
		ID: opts.ID, Model: opts.Model, Messages: msgs, Options: opts.Options,
		Stream: stream, Emit: !opts.Silent, Tools: opts.Tools, MCP: opts.MCP, MaxSteps: te.MaxSteps,
		EmitTool: te.Emit.For, Approve: te.Approval.For, MaxResultChars: maxChars,
		ModelOptions: mo,
		ToolOptions:  workflow.ActivityOptions{StartToCloseTimeout: toolTimeout, RetryPolicy: toolRetry},
	}, nil
}
