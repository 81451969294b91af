package agui

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
)

// event is one AG-UI event (EventSchema of @ag-ui/core 1.0): the fields each type uses.
type event struct {
	Type         string          `json:"type"`
	ThreadID     string          `json:"threadId,omitempty"`
	RunID        string          `json:"runId,omitempty"`
	StepName     string          `json:"stepName,omitempty"`
	MessageID    string          `json:"messageId,omitempty"`
	Role         string          `json:"role,omitempty"`
	ToolCallID   string          `json:"toolCallId,omitempty"`
	ToolCallName string          `json:"toolCallName,omitempty"`
	Delta        json.RawMessage `json:"delta,omitempty"` // a string (text, tool arguments) or a JSON Patch
	Content      *string         `json:"content,omitempty"`
	Snapshot     json.RawMessage `json:"snapshot,omitempty"`
	Outcome      *outcome        `json:"outcome,omitempty"`
	Message      string          `json:"message,omitempty"`
	Code         string          `json:"code,omitempty"`
	// Name and Value: a CUSTOM event's.
	Name  string `json:"name,omitempty"`
	Value any    `json:"value,omitempty"`
}

// outcome is RUN_FINISHED's outcome: success, interrupt (with the questions) or cancelled.
type outcome struct {
	Type       string      `json:"type"`
	Interrupts []interrupt `json:"interrupts,omitempty"`
}

// interrupt is a question of the run (InterruptSchema): answered by the next run's resume
// entry whose interruptId is ID.
type interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	Metadata       questionMeta    `json:"metadata"`
}

// questionMeta is an interrupt's metadata: the Kortyx question behind it.
type questionMeta struct {
	Kind          string             `json:"kind"` // text, choice, multi-choice, custom or approval
	Options       []contracts.Option `json:"options,omitempty"`
	Node          string             `json:"node,omitempty"`
	Tool          string             `json:"tool,omitempty"`
	Input         json.RawMessage    `json:"input,omitempty"`
	Request       json.RawMessage    `json:"request,omitempty"`
	Contract      string             `json:"contract,omitempty"`
	SchemaID      string             `json:"schemaId,omitempty"`
	SchemaVersion string             `json:"schemaVersion,omitempty"`
}

// The interrupt reasons.
const (
	reasonApproval = "tool_approval"  // a tool approval: payload {"approved": true|false}
	reasonInput    = "input_required" // any other question: payload per responseSchema
)

// approvalSchema is the responseSchema of a tool approval.
const approvalSchema = `{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]}`

// mapper turns one response's chunks (Kortyx's, as the run published them) into AG-UI events.
// It keeps what the mapping needs across chunks: the open step, texts and tool calls, the
// state, the questions and how the response ends.
type mapper struct {
	threadID, runID string
	n               int               // ids made
	texts           map[string]string // open text segments: message id by opId/segmentId
	announced       map[string]bool   // tool calls announced in this response
	step            string            // the open step (a node), "" when none
	state           map[string]any    // the state so far; nil until the first snapshot
	base            json.RawMessage   // the input's state, the snapshot's base
	data            map[string]*sessions.StructuredState
	asked           []interrupt
	cancelled, over bool
	// schema returns the response schema the session keeps for an open question (nil: none).
	schema func(requestID string) json.RawMessage
}

func newMapper(threadID, runID string, state json.RawMessage) *mapper {
	return &mapper{threadID: threadID, runID: runID, texts: map[string]string{}, announced: map[string]bool{}, base: state,
		data: map[string]*sessions.StructuredState{}}
}

// id returns a new id for a message of this run: unique in the thread, the same when the
// response is read again.
func (m *mapper) id() string {
	m.n++
	return fmt.Sprintf("%s-%d", m.runID, m.n)
}

func str(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// chunk returns the events of c. See docs/agui.md for the table.
func (m *mapper) chunk(c contracts.Chunk) []any {
	if m.over {
		return nil // after RUN_ERROR nothing more is sent
	}
	switch c.Type {
	case contracts.ChunkSession:
		return []any{event{Type: "RUN_STARTED", ThreadID: m.threadID, RunID: m.runID}}
	case contracts.ChunkTextStart, contracts.ChunkTextDelta:
		key := c.OpID + "/" + c.SegmentID
		out := m.enter(c.Node)
		id, open := m.texts[key]
		if !open {
			id = m.id()
			m.texts[key] = id
			out = append(out, event{Type: "TEXT_MESSAGE_START", MessageID: id, Role: "assistant"})
		}
		if c.Delta != "" {
			out = append(out, event{Type: "TEXT_MESSAGE_CONTENT", MessageID: id, Delta: str(c.Delta)})
		}
		return out
	case contracts.ChunkTextEnd:
		key := c.OpID + "/" + c.SegmentID
		id, open := m.texts[key]
		if !open {
			return nil
		}
		delete(m.texts, key)
		return []any{event{Type: "TEXT_MESSAGE_END", MessageID: id}}
	case contracts.ChunkMessage:
		id := m.id()
		return append(m.enter(c.Node), event{Type: "TEXT_MESSAGE_START", MessageID: id, Role: "assistant"},
			event{Type: "TEXT_MESSAGE_CONTENT", MessageID: id, Delta: str(c.Content)}, event{Type: "TEXT_MESSAGE_END", MessageID: id})
	case contracts.ChunkToolCallStart:
		return append(m.enter(c.Node), m.announce(c.ToolCallID, c.Tool, c.Input)...)
	case contracts.ChunkToolCallResult:
		content := toolContent(c)
		return append(m.enter(c.Node), event{Type: "TOOL_CALL_RESULT", MessageID: m.id(), ToolCallID: c.ToolCallID, Content: &content, Role: "tool"})
	case contracts.ChunkToolCallError:
		msg := c.Message
		if c.Failure != nil && c.Failure.Message != "" {
			msg = c.Failure.Message
		}
		return append(m.enter(c.Node), event{Type: "TOOL_CALL_RESULT", MessageID: m.id(), ToolCallID: c.ToolCallID, Content: &msg, Role: "tool"})
	case contracts.ChunkStructuredData:
		return append(m.enter(c.Node), m.structured(c)...)
	case contracts.ChunkStructuredInvalidated:
		return m.invalidated(c)
	case contracts.ChunkInterrupt:
		return append(m.enter(c.Node), m.question(c)...)
	case contracts.ChunkCancelled:
		m.cancelled = true
	case contracts.ChunkError:
		m.over = true
		return []any{runError(c)}
	case contracts.ChunkDone:
		return m.finish()
	}
	if c.Type == contracts.ChunkStatus && c.Steer != nil {
		// Where the run took a steering message in (docs/steering.md).
		return []any{event{Type: "CUSTOM", Name: "kortyx.steer", Value: c.Steer}}
	}
	// status, transition, checkpoint, limit-reached, resume-rejected, text-invalidated: not
	// mapped (docs/agui.md says why).
	return nil
}

// enter returns the step events due before a chunk of node: the open step's STEP_FINISHED and
// the node's STEP_STARTED when the node changes.
func (m *mapper) enter(node string) []any {
	if node == "" || node == m.step {
		return nil
	}
	var out []any
	if m.step != "" {
		out = append(out, event{Type: "STEP_FINISHED", StepName: m.step})
	}
	m.step = node
	return append(out, event{Type: "STEP_STARTED", StepName: node})
}

// finish returns the events that end the response: the open texts' ends, the open step's end
// and RUN_FINISHED with its outcome.
func (m *mapper) finish() []any {
	out := make([]any, 0, len(m.texts)+2)
	for _, key := range slices.Sorted(maps.Keys(m.texts)) {
		out = append(out, event{Type: "TEXT_MESSAGE_END", MessageID: m.texts[key]})
	}
	clear(m.texts)
	if m.step != "" {
		out = append(out, event{Type: "STEP_FINISHED", StepName: m.step})
		m.step = ""
	}
	o := &outcome{Type: "success"}
	switch {
	case m.cancelled:
		o.Type = "cancelled"
	case len(m.asked) > 0:
		o = &outcome{Type: "interrupt", Interrupts: m.asked}
	}
	m.over = true
	return append(out, event{Type: "RUN_FINISHED", ThreadID: m.threadID, RunID: m.runID, Outcome: o})
}

// runError is the RUN_ERROR of an error chunk: the failure's public message and its code.
func runError(c contracts.Chunk) event {
	e := event{Type: "RUN_ERROR", Message: c.Message, Code: string(contracts.CodeExecutionFailed)}
	if c.Failure != nil {
		if c.Failure.Message != "" {
			e.Message = c.Failure.Message
		}
		if c.Failure.Code != "" {
			e.Code = string(c.Failure.Code)
		}
	}
	if e.Message == "" {
		e.Message = "The run failed."
	}
	return e
}

// announce returns the events of tool call id with its input, unless this response announced
// it already.
func (m *mapper) announce(id, tool string, input json.RawMessage) []any {
	if m.announced[id] {
		return nil
	}
	m.announced[id] = true
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return []any{event{Type: "TOOL_CALL_START", ToolCallID: id, ToolCallName: tool},
		event{Type: "TOOL_CALL_ARGS", ToolCallID: id, Delta: str(string(input))}, event{Type: "TOOL_CALL_END", ToolCallID: id}}
}

// toolContent is a tool result's content: its structured content as JSON text when it has
// one, else its content.
func toolContent(c contracts.Chunk) string {
	if len(c.StructuredContent) > 0 {
		return string(c.StructuredContent)
	}
	return c.Content
}

// structured returns the state event of a structured-data chunk: the stream's value so far
// under its streamId. The response's first is a STATE_SNAPSHOT (the input's state, when it is
// an object, with the value), the next ones STATE_DELTA (a JSON Patch "add").
func (m *mapper) structured(c contracts.Chunk) []any {
	st, err := sessions.ApplyStructured(m.data[c.StreamID], c)
	if err != nil {
		return nil // a malformed chunk is skipped; the state keeps the stream's last good value
	}
	m.data[c.StreamID] = st
	if m.state == nil {
		m.state = map[string]any{}
		_ = json.Unmarshal(m.base, &m.state)
		if m.state == nil {
			m.state = map[string]any{}
		}
		m.state[c.StreamID] = st.Data
		b, _ := json.Marshal(m.state)
		return []any{event{Type: "STATE_SNAPSHOT", Snapshot: b}}
	}
	m.state[c.StreamID] = st.Data
	patch, _ := json.Marshal([]any{map[string]any{"op": "add", "path": pointer(c.StreamID), "value": st.Data}})
	return []any{event{Type: "STATE_DELTA", Delta: patch}}
}

// invalidated returns the STATE_DELTA that removes an invalidated stream from the state.
func (m *mapper) invalidated(c contracts.Chunk) []any {
	if _, ok := m.state[c.StreamID]; !ok {
		return nil
	}
	delete(m.state, c.StreamID)
	delete(m.data, c.StreamID)
	patch, _ := json.Marshal([]any{map[string]any{"op": "remove", "path": pointer(c.StreamID)}})
	return []any{event{Type: "STATE_DELTA", Delta: patch}}
}

// pointer is the JSON Pointer of a top-level key.
func pointer(key string) string {
	return "/" + strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// approvalMeta is the meta of a tool approval question (internal/execution's toolCall).
type approvalMeta struct {
	Tool       string          `json:"tool"`
	ToolCallID string          `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
}

// approval returns the tool call of a tool approval question: a choice between "approve" and
// "deny" whose id is "tool:<toolCallId>" and whose meta names the tool, the call and its input.
func approval(in contracts.InterruptInput) (approvalMeta, bool) {
	var meta approvalMeta
	if in.Kind != contracts.InterruptChoice || len(in.Options) != 2 || in.Options[0].ID != "approve" || in.Options[1].ID != "deny" ||
		json.Unmarshal(in.Meta, &meta) != nil || meta.ToolCallID == "" || meta.Tool == "" || in.ID != "tool:"+meta.ToolCallID {
		return approvalMeta{}, false
	}
	return meta, true
}

// question records the interrupt of a question for RUN_FINISHED; a tool approval's call is
// announced first (unless it was), so the interrupt's toolCallId names a call the client has.
func (m *mapper) question(c contracts.Chunk) []any {
	var in contracts.InterruptInput
	_ = json.Unmarshal(c.Input, &in)
	q := interrupt{ID: interruptID(c.RequestID, c.ResumeToken), Reason: reasonInput, Message: in.Question,
		Metadata: questionMeta{Kind: string(in.Kind), Options: in.Options, Node: c.Node}}
	if meta, ok := approval(in); ok {
		q.Reason, q.ToolCallID, q.ResponseSchema = reasonApproval, meta.ToolCallID, json.RawMessage(approvalSchema)
		q.Metadata = questionMeta{Kind: "approval", Node: c.Node, Tool: meta.Tool, Input: meta.Input}
		m.asked = append(m.asked, q)
		return m.announce(meta.ToolCallID, meta.Tool, meta.Input)
	}
	q.ResponseSchema = in.AnswerSchema()
	if in.Kind == contracts.InterruptCustom {
		q.Metadata.Request, q.Metadata.Contract, q.Metadata.SchemaID, q.Metadata.SchemaVersion = in.Request, in.Contract, in.SchemaID, in.SchemaVersion
		if m.schema != nil {
			q.ResponseSchema = m.schema(c.RequestID)
		}
	}
	m.asked = append(m.asked, q)
	return nil
}
