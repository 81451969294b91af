package hooks

import (
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// ReasonOptions is a model call (spec F3.5, F3.6). The zero value of every field works. The
// fields (documented on the type this aliases: go doc
// github.com/kortyx-go/kortyx/internal/execution.ReasonOptions):
//
//   - ID: a stable id for the call within its node (recommended), copied into its chunks.
//   - Model: the model as data, e.g. providers.Model("openai:gpt-4.1-mini"); an empty provider
//     uses the worker's default.
//   - System, Messages, Input: the system prompt, the conversation so far, and the last user
//     message (appended when not empty).
//   - Options: generation options (temperature, max output tokens, stop, reasoning, response
//     format, provider options).
//   - Silent: publish no text chunks. Buffered: call the model without streaming.
//   - Tools: worker tools the model may call. MCP: MCP servers whose tools it may call (their
//     list is read once per call and recorded).
//   - ToolExecution: the tool loop ([ToolExecution]).
//   - Outputs, Interrupts: output contracts (emit, return) and interrupt contracts
//     ([Outputs], [Interrupts]; docs/contracts.md).
//   - OutputSchema: a JSON final answer valid against the schema (in the result's Output).
//   - SchemaCorrections: repair passes for an invalid output value (nil: 1; see [Corrections]).
//   - Timeout, Retry: one model pass attempt's timeout (default 5 minutes) and retry policy
//     (default: no attempt limit, for at most max(6 × Timeout, 10 min)).
type ReasonOptions = execution.ReasonOptions

// Outputs are the output contracts of a Reason call, by name: Emit contracts publish a value
// and let the loop continue, Return contracts finish the call with one value, MaxEmissions
// bounds the emitted values (default 16).
type Outputs = execution.Outputs

// Interrupts are the interrupt contracts of a Reason call: Contracts by name, Mode "optional"
// (default) or "required" (the model must ask at least once), MaxRequests (default 1).
type Interrupts = execution.Interrupts

// ToolExecution configures the tool loop of [Reason]: MaxSteps (model passes, default 3), Emit
// (tool chunks), Approval (ask a human before each call), MaxResultChars (default 32,000; -1:
// unbounded), MissingReturnCorrections, and one tool call attempt's Timeout (default 2
// minutes) and Retry policy.
type ToolExecution = execution.ToolExecution

// Switch is "a bool, or per tool": On applies to every tool except those listed in Tools.
type Switch = execution.Switch

// ReasonResult is the result of a [Reason] call: the final Text, OpID, Usage summed over its
// passes, FinishReason, Warnings, the tool calls and results, every model pass (Steps), the
// values of output contracts (Emissions, Returned), the questions asked
// through interrupt contracts (InterruptHistory) and the validated Output of OutputSchema.
type ReasonResult = execution.ReasonResult

// MCPServer names an MCP server (streamable HTTP) whose tools the model may call
// ([ReasonOptions].MCP): URL, Include and Exclude (tool names or path.Match globs), Prefix
// (model-facing names become "<prefix>_<name>"). Credentials are configured on the worker, per
// URL, never here: this value is recorded in workflow history.
type MCPServer = protocol.MCPServer

// Corrections returns a SchemaCorrections value.
func Corrections(n int) *int { return &n }

// Only is a Switch that is on for the named tools.
func Only(tools ...string) Switch {
	m := make(map[string]bool, len(tools))
	for _, t := range tools {
		m[t] = true
	}
	return Switch{Tools: m}
}

// Reason calls a model, durably: every model pass and every tool call is an activity recorded
// in history, so a crash, a worker restart or a retried node reuses the passes and tool calls
// that completed. Activities are at least once: a worker that dies after a pass or a tool ran
// but before Temporal recorded its completion runs it again, with the same
// tools.Call.IdempotencyKey, which a tool with side effects uses to make its effect once. Text streams to the run's stream as text-start / text-delta / text-end chunks
// (node, id, opId, segmentId "step-<n>") unless Silent. When the model calls tools, each call
// runs in the order requested — after a human approves it, when Approval says so — and every
// call gets exactly one result before the next pass; a tool error or invalid arguments reach the
// model as an isError result it can correct. Usage is added once to the run's token usage.
//
// Errors carry codes: provider codes (PROVIDER_HTTP_ERROR, …), REASON_MAX_STEPS_REACHED,
// UNKNOWN_TOOL, INVALID_TOOL_CALL, PAYLOAD_TOO_LARGE, and EXECUTION_CANCELLED when a human
// cancels at an approval.
func Reason(ctx workflow.Context, opts ReasonOptions) (ReasonResult, error) {
	s, err := execution.From(ctx, "Reason")
	if err != nil {
		return ReasonResult{}, err
	}
	return s.Reason(ctx, opts)
}
