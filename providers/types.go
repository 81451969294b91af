package providers

import (
	"encoding/json"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// The types of a model pass, what a provider reads and returns. They are plain data with no
// effects, so workflow code uses them too (hooks.Reason takes a [ModelRef] and returns usage,
// tool calls and finish reasons of these types).

// ModelRef names a model as plain data: a provider id, a model id and options
// (spec F7.1). Node code passes it to hooks.Reason; the worker resolves the provider.
type ModelRef struct {
	Provider string         `json:"provider"`
	Model    string         `json:"model"`
	Options  map[string]any `json:"options,omitempty"`
}

// Model parses "provider:model" (e.g. "openai:gpt-4.1-mini"); a string without a colon names a
// model of the worker's default provider.
func Model(s string) ModelRef {
	if p, m, ok := strings.Cut(s, ":"); ok {
		return ModelRef{Provider: p, Model: m}
	}
	return ModelRef{Model: s}
}

// String renders the reference as "provider:model".
func (m ModelRef) String() string {
	if m.Provider == "" {
		return m.Model
	}
	return m.Provider + ":" + m.Model
}

// Roles of a model message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a model conversation (spec F7.1).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message requested.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID and Name identify the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	Name       string `json:"name,omitempty"`
	// StructuredContent is the JSON result of a tool, when it returned one.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// IsError marks a tool result that reports a failure to the model.
	IsError bool `json:"isError,omitempty"`
	// Continuation is opaque provider data to send back with this message.
	Continuation json.RawMessage `json:"continuation,omitempty"`
}

// ToolCall is a call of a tool requested by a model.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolDefinition is what a model is told about a tool.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ToolResult is the one result every tool call gets before the next model pass.
type ToolResult struct {
	ToolCallID        string          `json:"toolCallId"`
	Name              string          `json:"name"`
	Content           string          `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Failure describes why the tool failed (invalid arguments, an error of the tool); it is
	// reported in tool-call-error chunks, while the model sees Content.
	Failure *contracts.Failure `json:"failure,omitempty"`
}

// ResponseFormat asks for text (default), a JSON object, or JSON valid against Schema.
type ResponseFormat struct {
	Type   string          `json:"type"` // "text", "json" or "json-schema"
	Schema json.RawMessage `json:"schema,omitempty"`
	Name   string          `json:"name,omitempty"`
}

// ReasoningOptions configures reasoning models.
type ReasoningOptions struct {
	Effort          string `json:"effort,omitempty"` // "low", "medium", "high"
	MaxTokens       int    `json:"maxTokens,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

// CallOptions are the generation options of a model pass. A provider that cannot honour one
// returns a [Warning] for it; none is dropped silently.
type CallOptions struct {
	Temperature     *float64          `json:"temperature,omitempty"`
	MaxOutputTokens int               `json:"maxOutputTokens,omitempty"`
	StopSequences   []string          `json:"stopSequences,omitempty"`
	Reasoning       *ReasoningOptions `json:"reasoning,omitempty"`
	ResponseFormat  *ResponseFormat   `json:"responseFormat,omitempty"`
	// ProviderOptions are keyed by provider id; each provider reads its own object
	// (providers.DecodeOptions), e.g. {"openai": {"seed": 7}}.
	ProviderOptions map[string]any `json:"providerOptions,omitempty"`
}

// Usage is normalized token usage (Total defaults to Input+Output, plus Reasoning when reported
// apart); it is defined in contracts, whose failure descriptors report the usage of a failed pass.
type Usage = contracts.Usage

// Unified finish reasons.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishContentFilter = "content-filter"
	FinishToolCalls     = "tool-calls"
	FinishError         = "error"
	FinishOther         = "other"
)

// FinishReason says why a model pass ended: Unified is one of the Finish* values, Raw the
// provider's own word. It is defined in contracts, whose failure descriptors report it.
type FinishReason = contracts.FinishReason

// Warning kinds.
const (
	WarningUnsupported   = "unsupported"
	WarningCompatibility = "compatibility"
	WarningDeprecated    = "deprecated"
	WarningOther         = "other"
)

// Warning reports an option a provider did not honour, or another caveat.
type Warning struct {
	Type    string `json:"type"`
	Setting string `json:"setting,omitempty"`
	Message string `json:"message"`
}

// Response is the result of one model pass.
type Response struct {
	Text             string          `json:"text"`
	ToolCalls        []ToolCall      `json:"toolCalls,omitempty"`
	Usage            Usage           `json:"usage"`
	FinishReason     FinishReason    `json:"finishReason"`
	Warnings         []Warning       `json:"warnings,omitempty"`
	ProviderMetadata map[string]any  `json:"providerMetadata,omitempty"`
	Continuation     json.RawMessage `json:"continuation,omitempty"`
}
