package contracts

import (
	"encoding/json"
	"strings"
)

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

// ModelMessage is one message of a model conversation (spec F7.1).
type ModelMessage struct {
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
	Failure *Failure `json:"failure,omitempty"`
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

// Usage is normalized token usage; Total defaults to Input+Output(+Reasoning when reported apart).
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	Total      int `json:"total"`
	Reasoning  int `json:"reasoning,omitempty"`
	CacheRead  int `json:"cacheRead,omitempty"`
	CacheWrite int `json:"cacheWrite,omitempty"`
}

// Add returns the field-wise sum.
func (u Usage) Add(o Usage) Usage {
	return Usage{Input: u.Input + o.Input, Output: u.Output + o.Output, Total: u.Total + o.Total,
		Reasoning: u.Reasoning + o.Reasoning, CacheRead: u.CacheRead + o.CacheRead, CacheWrite: u.CacheWrite + o.CacheWrite}
}

// IsZero reports whether nothing was used.
func (u Usage) IsZero() bool { return u == Usage{} }

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
// provider's own word.
type FinishReason struct {
	Unified string `json:"unified"`
	Raw     string `json:"raw,omitempty"`
}

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

// ModelResponse is the result of one model pass.
type ModelResponse struct {
	Text             string          `json:"text"`
	ToolCalls        []ToolCall      `json:"toolCalls,omitempty"`
	Usage            Usage           `json:"usage"`
	FinishReason     FinishReason    `json:"finishReason"`
	Warnings         []Warning       `json:"warnings,omitempty"`
	ProviderMetadata map[string]any  `json:"providerMetadata,omitempty"`
	Continuation     json.RawMessage `json:"continuation,omitempty"`
	// FieldsPublished: a streamed output pass published provisional fields of its value (so a
	// value that fails validation must be invalidated).
	FieldsPublished bool `json:"fieldsPublished,omitempty"`
	// StoredPrefix is the conversation prefix the worker keeps in its message store after the
	// pass: the pass's whole message list (Count messages), as a chain of stored nodes whose
	// newest is Hash. A later pass whose first Count messages are these sends them as
	// [ModelPassInput.Prefix]. Nil on a worker without a message store (or when it failed).
	StoredPrefix *MessagePrefix `json:"storedPrefix,omitempty"`
}

// MessagePrefix names the first Count messages of a conversation kept in a worker's message
// store: Hash is the newest node of a chain; each node holds the messages added since the
// node before it (Prev) and the count of messages up to its end.
type MessagePrefix struct {
	Count int    `json:"count"`
	Hash  string `json:"hash"`
}

// MaxPrefixNodes bounds the chain of a [MessagePrefix]: a worker reading a longer chain fails
// the pass (the run then sends it inline), and one storing a node that would make the chain
// longer stores the whole conversation as a new first node instead.
const MaxPrefixNodes = 10000

// ModelPassInput is the input of the model activity ([ModelActivityName]).
type ModelPassInput struct {
	RunID     string         `json:"runId"`
	Node      string         `json:"node"`
	HookID    string         `json:"hookId,omitempty"`
	OpID      string         `json:"opId"`
	SegmentID string         `json:"segmentId"`
	Model     ModelRef       `json:"model"`
	Messages  []ModelMessage `json:"messages"`
	// Tools names the worker tools offered to the model; the worker resolves their definitions.
	Tools []string `json:"tools,omitempty"`
	// MCP are MCP servers whose tools named in MCPTools (as recorded when the call started) are
	// offered too.
	MCP      []MCPServer `json:"mcp,omitempty"`
	MCPTools []string    `json:"mcpTools,omitempty"`
	Options  CallOptions `json:"options"`
	// Stream asks the provider to stream; Emit publishes text chunks to the run's stream.
	Stream bool `json:"stream"`
	Emit   bool `json:"emit"`
	// ControlTools are tools defined by the call itself (output and interrupt contracts).
	ControlTools []ToolDefinition `json:"controlTools,omitempty"`
	// Structured, when set, makes a streamed pass publish structured-data chunks of this
	// stream (the declared fields as they arrive) instead of text chunks.
	Structured *StructuredStream `json:"structured,omitempty"`
	// Prefix, when set, is the start of the conversation sent by reference: the worker reads
	// its Count messages from its message store and puts them before Messages, which then are
	// only the messages after them. A prefix the worker cannot read fails the pass with
	// [CodePayloadMissing] (or [CodePersistenceError], [CodePayloadCodec]); the workflow then
	// sends every message inline.
	Prefix *MessagePrefix `json:"prefix,omitempty"`
	// MaxFailures caps the provider errors of the pass (counted apart from attempts lost to
	// dead workers or timeouts): the failure that reaches it is final, with the provider's
	// code; each earlier one publishes a status chunk before the retry. 0: no cap.
	MaxFailures int `json:"maxFailures,omitempty"`
}

// StructuredStream describes the structured-data stream of a generation pass.
type StructuredStream struct {
	StreamID      string                `json:"streamId"`
	DataType      string                `json:"dataType"`
	SchemaID      string                `json:"schemaId,omitempty"`
	SchemaVersion string                `json:"schemaVersion,omitempty"`
	Fields        map[string]StreamMode `json:"fields"`
}

// MCPServer names an MCP server (streamable HTTP) whose tools a model may call. Credentials are
// configured on the worker, per URL, never here: this value is recorded in workflow history.
type MCPServer struct {
	URL     string   `json:"url"`
	Include []string `json:"include,omitempty"` // tool names or path.Match globs; empty = all
	Exclude []string `json:"exclude,omitempty"`
	Prefix  string   `json:"prefix,omitempty"` // model-facing names become "<prefix>_<name>"
}

// ListToolsInput is the input of the list-tools activity ([ListToolsActivityName]).
type ListToolsInput struct {
	Servers []MCPServer `json:"servers"`
}

// OfferedTool is a tool of an MCP server, as recorded for a run.
type OfferedTool struct {
	Name   string `json:"name"`
	Server int    `json:"server"` // index in ListToolsInput.Servers
}

// ToolCallInput is the input of the tool activity ([ToolActivityName]).
type ToolCallInput struct {
	RunID      string          `json:"runId"`
	Tool       string          `json:"tool"`
	ToolCallID string          `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
	// IdempotencyKey is "<workflowID>:<opId>:<toolCallId>": stable across retries, crash
	// recovery and continue-as-new. Tools with side effects use it to act once.
	IdempotencyKey string `json:"idempotencyKey"`
	// MCP is the server of an MCP tool; nil for worker tools.
	MCP *MCPServer `json:"mcp,omitempty"`
	// Node is the node whose Reason call made the tool call, and Stream the stream its status
	// chunks go to (a child run's is its root's; empty: RunID).
	Node   string `json:"node,omitempty"`
	Stream string `json:"stream,omitempty"`
	// MaxFailures caps the retryable errors of the call (counted apart from attempts lost to
	// dead workers or timeouts): the error that reaches it is final, with the tool's code;
	// each earlier one publishes a status chunk before the retry. 0: no cap.
	MaxFailures int `json:"maxFailures,omitempty"`
}

// ReasonStep is one model pass of a hooks.Reason call, with the tool calls it requested and
// their results.
type ReasonStep struct {
	Index int `json:"index"`
	// Kind is "" for a pass of the tool loop and "output" for a pass that generates or repairs
	// the value of an output contract (or of OutputSchema).
	Kind         string       `json:"kind,omitempty"`
	Text         string       `json:"text,omitempty"`
	ToolCalls    []ToolCall   `json:"toolCalls,omitempty"`
	ToolResults  []ToolResult `json:"toolResults,omitempty"`
	Usage        Usage        `json:"usage"`
	FinishReason FinishReason `json:"finishReason"`
}

// ReasonResult is the result of a hooks.Reason call (spec F3.5).
type ReasonResult struct {
	ID               string         `json:"id,omitempty"`
	OpID             string         `json:"opId"`
	Text             string         `json:"text"`
	Usage            Usage          `json:"usage"`
	FinishReason     FinishReason   `json:"finishReason"`
	ProviderMetadata map[string]any `json:"providerMetadata,omitempty"`
	Warnings         []Warning      `json:"warnings,omitempty"`
	ToolCalls        []ToolCall     `json:"toolCalls,omitempty"`
	ToolResults      []ToolResult   `json:"toolResults,omitempty"`
	Steps            []ReasonStep   `json:"steps"`
	// Emissions are the values published through emit contracts, in order.
	Emissions []Emission `json:"emissions,omitempty"`
	// Returned is the value of the return contract that finished the call.
	Returned *Emission `json:"returned,omitempty"`
	// InterruptHistory lists the questions asked through interrupt contracts and their answers.
	InterruptHistory []InterruptRecord `json:"interruptHistory,omitempty"`
	// Output is the validated JSON answer when OutputSchema was given.
	Output json.RawMessage `json:"output,omitempty"`
}
