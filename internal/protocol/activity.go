package protocol

import (
	"encoding/json"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// The payloads of the model, tool and list-tools activities: what the run's workflow code sends
// the worker and gets back. Only Kortyx's workflows and activities exchange them.

// ModelPassResult is the result of the model activity ([ModelActivityName]): the provider's
// response and what the activity adds to it.
type ModelPassResult struct {
	providers.Response
	// FieldsPublished: a streamed output pass published provisional fields of its value (so a
	// value that fails validation must be invalidated).
	FieldsPublished bool `json:"fieldsPublished,omitempty"`
	// StoredPrefix is the conversation prefix the worker keeps in its message store after the
	// pass: the pass's whole message list (Count messages), as a chain of stored nodes whose
	// newest is Hash. A later pass whose first Count messages are these sends them as
	// [ModelPassInput.Prefix]. Nil on a worker without a message store (or when it failed).
	StoredPrefix *MessagePrefix `json:"storedPrefix,omitempty"`
	// Ledger are the grants of the pass's reservations at shared budgets' ledgers
	// ([ModelPassInput].Ledger); LedgerShort is the first of them, by scope, that left too
	// little for the pass, which then did not call the model.
	Ledger      []LedgerGrant `json:"ledger,omitempty"`
	LedgerShort string        `json:"ledgerShort,omitempty"`
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
	RunID     string              `json:"runId"`
	Node      string              `json:"node"`
	HookID    string              `json:"hookId,omitempty"`
	OpID      string              `json:"opId"`
	SegmentID string              `json:"segmentId"`
	Model     providers.ModelRef  `json:"model"`
	Messages  []providers.Message `json:"messages"`
	// Tools names the worker tools offered to the model; the worker resolves their definitions.
	Tools []string `json:"tools,omitempty"`
	// MCP are MCP servers whose tools named in MCPTools (as recorded when the call started) are
	// offered too.
	MCP      []MCPServer           `json:"mcp,omitempty"`
	MCPTools []string              `json:"mcpTools,omitempty"`
	Options  providers.CallOptions `json:"options"`
	// Stream asks the provider to stream; Emit publishes text chunks to the run's stream.
	Stream bool `json:"stream"`
	Emit   bool `json:"emit"`
	// ControlTools are tools defined by the call itself (output and interrupt contracts).
	ControlTools []providers.ToolDefinition `json:"controlTools,omitempty"`
	// Structured, when set, makes a streamed pass publish structured-data chunks of this
	// stream (the declared fields as they arrive) instead of text chunks.
	Structured *StructuredStream `json:"structured,omitempty"`
	// Prefix, when set, is the start of the conversation sent by reference: the worker reads
	// its Count messages from its message store and puts them before Messages, which then are
	// only the messages after them. A prefix the worker cannot read fails the pass with
	// [contracts.CodePayloadMissing] (or [contracts.CodePersistenceError], [contracts.CodePayloadCodec]); the workflow then
	// sends every message inline.
	Prefix *MessagePrefix `json:"prefix,omitempty"`
	// MaxFailures caps the provider errors of the pass (counted apart from attempts lost to
	// dead workers or timeouts): the failure that reaches it is final, with the provider's
	// code; each earlier one publishes a status chunk before the retry. 0: no cap.
	MaxFailures int `json:"maxFailures,omitempty"`
	// Chunks are workflow-side chunks queued before the pass, which the pass publishes first
	// (instead of a publish local activity of their own; runs recorded before publish them so).
	Chunks []KeyedChunk `json:"chunks,omitempty"`
	// Ledger are the reservations the pass makes at shared budgets' ledgers before it calls
	// the model (docs/budgets.md); a grant that leaves less than the pass's input and one
	// output token stops the pass before the model (ModelPassResult.LedgerShort), and one that
	// leaves less than its maximum output lowers that.
	Ledger []LedgerAsk `json:"ledger,omitempty"`
}

// StructuredStream describes the structured-data stream of a generation pass.
type StructuredStream struct {
	StreamID      string                              `json:"streamId"`
	DataType      string                              `json:"dataType"`
	SchemaID      string                              `json:"schemaId,omitempty"`
	SchemaVersion string                              `json:"schemaVersion,omitempty"`
	Fields        map[string]contracts.StructuredKind `json:"fields"`
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
	// Chunks are workflow-side chunks queued before the call (a lean run's), which the call
	// publishes first to Stream (else RunID), as a model pass does.
	Chunks []KeyedChunk `json:"chunks,omitempty"`
}

// AddUsage returns the field-wise sum of two usages.
func AddUsage(u, o providers.Usage) providers.Usage {
	return providers.Usage{Input: u.Input + o.Input, Output: u.Output + o.Output, Total: u.Total + o.Total,
		Reasoning: u.Reasoning + o.Reasoning, CacheRead: u.CacheRead + o.CacheRead, CacheWrite: u.CacheWrite + o.CacheWrite}
}
