package contracts

import (
	"encoding/json"
)

// ChunkType names one kind of stream event. The wire values are Kortyx's (spec F6.3), plus
// [ChunkResumeRejected] and [ChunkTextInvalidated] of this port, which Kortyx clients ignore.
type ChunkType string

// Chunk types of the wire protocol. Kortyx's wire also has "tool-result", which this port never
// produces (a client may still receive it from a Kortyx server).
const (
	ChunkSession               ChunkType = "session"
	ChunkTrace                 ChunkType = "trace"
	ChunkStatus                ChunkType = "status"
	ChunkTextStart             ChunkType = "text-start"
	ChunkTextDelta             ChunkType = "text-delta"
	ChunkTextEnd               ChunkType = "text-end"
	ChunkMessage               ChunkType = "message"
	ChunkToolCallStart         ChunkType = "tool-call-start"
	ChunkToolCallResult        ChunkType = "tool-call-result"
	ChunkToolCallError         ChunkType = "tool-call-error"
	ChunkStructuredData        ChunkType = "structured-data"
	ChunkStructuredInvalidated ChunkType = "structured-data-invalidated"
	ChunkInterrupt             ChunkType = "interrupt"
	ChunkTransition            ChunkType = "transition"
	ChunkCheckpoint            ChunkType = "checkpoint"
	ChunkLimitReached          ChunkType = "limit-reached"
	ChunkCancelled             ChunkType = "cancelled"
	ChunkError                 ChunkType = "error"
	ChunkDone                  ChunkType = "done"

	// ChunkResumeRejected (this port): an answer sent by signal was rejected; the run keeps
	// waiting for the same request. Carries RequestID and Failure.
	ChunkResumeRejected ChunkType = "resume-rejected"
	// ChunkTextInvalidated (this port): the text of segment SegmentID of operation OpID is void —
	// its model pass failed midway and was retried under a new segment id. Carries OpID and
	// SegmentID. Clients and the finalized-message builder drop that segment's text.
	ChunkTextInvalidated ChunkType = "text-invalidated"
)

// StructuredKind is the kind of a structured-data chunk (spec F3.3). The first three are also
// the stream modes of a streamed output field ([OutputContract].StreamFields, spec F3.7), which
// says how the field is published while the model writes it.
type StructuredKind string

// Structured-data kinds.
const (
	StructuredSet       StructuredKind = "set"        // the field's value once it is complete
	StructuredAppend    StructuredKind = "append"     // each completed item of an array
	StructuredTextDelta StructuredKind = "text-delta" // the growing text of a string
	StructuredFinal     StructuredKind = "final"      // the validated whole (not a stream mode)
)

// Chunk is one event of a run's stream, serialized as one JSON object with a "type" field.
// Which fields are set depends on Type (spec F6.3); JSON values that may legitimately be
// false, 0 or null are kept as raw JSON so that their presence survives a round trip.
type Chunk struct {
	Type ChunkType `json:"type"`

	// Common attribution.
	Node      string `json:"node,omitempty"`
	ID        string `json:"id,omitempty"` // hook id; checkpoint id for "checkpoint"
	OpID      string `json:"opId,omitempty"`
	SegmentID string `json:"segmentId,omitempty"`

	// session, checkpoint
	SessionID string `json:"sessionId,omitempty"`
	TurnIndex *int   `json:"turnIndex,omitempty"`
	Label     string `json:"label,omitempty"`

	// trace
	TraceID      string `json:"traceId,omitempty"`
	SpanID       string `json:"spanId,omitempty"`
	RootSpanName string `json:"rootSpanName,omitempty"`

	// text-delta, structured text-delta
	Delta string `json:"delta,omitempty"`

	// message, tool-call-result, tool-result
	Content string `json:"content,omitempty"`

	// status, tool-call-error, error
	Message string   `json:"message,omitempty"`
	Failure *Failure `json:"failure,omitempty"`

	// tool calls
	Tool              string          `json:"tool,omitempty"`
	ToolCallID        string          `json:"toolCallId,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`

	// structured-data
	StreamID      string          `json:"streamId,omitempty"`
	DataType      string          `json:"dataType,omitempty"`
	Kind          StructuredKind  `json:"kind,omitempty"`
	SchemaID      string          `json:"schemaId,omitempty"`
	SchemaVersion string          `json:"schemaVersion,omitempty"`
	Path          string          `json:"path,omitempty"`
	Value         json.RawMessage `json:"value,omitempty"`
	Items         json.RawMessage `json:"items,omitempty"`
	CheckpointID  string          `json:"checkpointId,omitempty"`

	// interrupt, resume-rejected
	RequestID   string          `json:"requestId,omitempty"`
	ResumeToken string          `json:"resumeToken,omitempty"`
	Workflow    string          `json:"workflow,omitempty"`
	Meta        json.RawMessage `json:"meta,omitempty"`

	// interrupt: InterruptInput; tool-call-start: the tool input.
	Input json.RawMessage `json:"input,omitempty"`

	// transition
	TransitionTo string          `json:"transitionTo,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`

	// limit-reached, cancelled
	RunID    string `json:"runId,omitempty"`
	Limit    string `json:"limit,omitempty"`
	Maximum  int    `json:"maximum,omitempty"`
	Consumed int    `json:"consumed,omitempty"`
	Reason   string `json:"reason,omitempty"`

	// limit-reached and status chunks of a run's budget (Limit "maxTokens" or "maxCost").
	Budget *BudgetStatus `json:"budget,omitempty"`
	// Steer is set on the status chunk that shows where a run took a steering message in.
	Steer *Steer `json:"steer,omitempty"`

	// structured final: the object; done: the final graph state.
	Data json.RawMessage `json:"data,omitempty"`
}

// InterruptInput is the "input" object of an interrupt chunk: what the client shows the human.
type InterruptInput struct {
	Kind          InterruptKind   `json:"kind"`
	Multiple      bool            `json:"multiple"`
	Question      string          `json:"question,omitempty"`
	ID            string          `json:"id,omitempty"`
	SchemaID      string          `json:"schemaId,omitempty"`
	SchemaVersion string          `json:"schemaVersion,omitempty"`
	Meta          json.RawMessage `json:"meta,omitempty"`
	Options       []Option        `json:"options"`
	Contract      string          `json:"contract,omitempty"`
	Request       json.RawMessage `json:"request,omitempty"`
}

// AnswerSchema is the JSON Schema of the value that answers the question, as a wire shows it to
// a client that fills a form or a tool output: a non-empty string (text), one option id
// (choice, a tool approval's approve or deny included), one or more distinct option ids
// (multi-choice); nil for the other kinds (a custom question's schema is its response schema,
// which the session keeps).
func (in InterruptInput) AnswerSchema() json.RawMessage {
	ids := make([]string, 0, len(in.Options))
	for _, o := range in.Options {
		ids = append(ids, o.ID)
	}
	var s any
	switch in.Kind {
	case InterruptText:
		s = map[string]any{"type": "string", "minLength": 1}
	case InterruptChoice:
		s = map[string]any{"type": "string", "enum": ids}
	case InterruptMultiChoice:
		s = map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": ids}, "minItems": 1, "uniqueItems": true}
	default:
		return nil
	}
	b, _ := json.Marshal(s)
	return b
}

// Steer is a message sent to a session while its turn ran, with the policy "steer", as the
// turn's run took it into its conversation (docs/steering.md).
type Steer struct {
	// ID is the session's id of the message.
	ID           string `json:"id"`
	ClientTurnID string `json:"clientTurnId,omitempty"`
	// Content is the message's text, added to the conversation as a user message.
	Content string `json:"content"`
	// Node and Step say where it was taken in: before the model pass Step (0-based) of the
	// Reason call of Node.
	Node string `json:"node,omitempty"`
	Step int    `json:"step"`
}
