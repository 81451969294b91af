package aisdk

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
)

// askTool is the tool name under which a question that is not a tool approval reaches the
// client: a tool call "kortyx_ask" whose input is the question (see [askInput]), answered with
// addToolOutput.
const askTool = "kortyx_ask"

// part is one UI message chunk of the AI SDK's stream (uiMessageChunkSchema of `ai` 7): the
// fields each type uses, JSON in the SDK's camelCase.
type part struct {
	Type         string          `json:"type"`
	ID           string          `json:"id,omitempty"`
	Delta        *string         `json:"delta,omitempty"`
	ToolCallID   string          `json:"toolCallId,omitempty"`
	ToolName     string          `json:"toolName,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	ErrorText    string          `json:"errorText,omitempty"`
	ApprovalID   string          `json:"approvalId,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	FinishReason string          `json:"finishReason,omitempty"`
	Reason       string          `json:"reason,omitempty"`
}

// The finish reasons of the finish chunk.
const (
	finishStop      = "stop"       // the run completed the response
	finishToolCalls = "tool-calls" // the response ends with a question (a tool call to answer)
	finishError     = "error"      // the response ended with an error
	finishOther     = "other"      // the run was cancelled
)

// mapper turns one response's chunks (Kortyx's, as the run published them) into UI message
// chunks. It keeps what the mapping needs across chunks: open text parts, the tool calls whose
// input the client holds, the structured streams' values, the finish reason.
type mapper struct {
	// steer is the request of a steering message: the response is read from where the run
	// took it in (sessions.Service.FollowSteer).
	steer *sessions.TurnRequest
	// known are the tool calls the client's message already holds (an approval answered by this
	// request): their input is not announced again; the value says whether the call was
	// approved.
	known map[string]bool
	// announced are the tool calls whose input this response announced.
	announced map[string]bool
	open      map[string]bool // text parts started and not ended
	// step is set while a step is open; output when a tool output came in it (the next text
	// or tool call then starts a new step, as the AI SDK's steps of a tool loop do).
	step, output bool
	data         map[string]*sessions.StructuredState
	messages     int // text parts made of message chunks
	finish       string
	// schema returns the response schema the session keeps for an open question (nil: none
	// known, or no session to ask).
	schema func(requestID string) json.RawMessage
	// cancel is the kortyx_ask call this request cancelled (nil: it cancelled none); the
	// response ends it ([mapper.endCancelled]).
	cancel *cancelledCall
}

// cancelledCall is a kortyx_ask call that a request cancelled (addToolOutput with
// output-error): its id and the errorText the client gave.
type cancelledCall struct {
	toolCallID, errorText string
}

func newMapper(known map[string]bool) *mapper {
	return &mapper{known: known, announced: map[string]bool{}, open: map[string]bool{}, data: map[string]*sessions.StructuredState{}}
}

// textID is the id of the text part of a model pass's segment.
func textID(c contracts.Chunk) string {
	return "text-" + c.OpID + "-" + c.SegmentID
}

func str(s string) *string { return &s }

// chunk returns the UI message chunks for c: the session chunk (written first by the handler)
// opens the message, the first content of a step opens the step ([mapper.begin]), done closes
// them. See docs/aisdk.md for the table.
func (m *mapper) chunk(c contracts.Chunk) []any {
	switch c.Type {
	case contracts.ChunkSession:
		return []any{part{Type: "start"}}
	case contracts.ChunkTextStart:
		id := textID(c)
		m.open[id] = true
		return append(m.begin(true), part{Type: "text-start", ID: id})
	case contracts.ChunkTextDelta:
		id := textID(c)
		var out []any
		if !m.open[id] {
			m.open[id] = true
			out = append(m.begin(true), part{Type: "text-start", ID: id})
		}
		return append(out, part{Type: "text-delta", ID: id, Delta: str(c.Delta)})
	case contracts.ChunkTextEnd:
		id := textID(c)
		if !m.open[id] {
			return nil
		}
		delete(m.open, id)
		return []any{part{Type: "text-end", ID: id}}
	case contracts.ChunkMessage:
		m.messages++
		id := fmt.Sprintf("message-%d", m.messages)
		return append(m.begin(true), part{Type: "text-start", ID: id}, part{Type: "text-delta", ID: id, Delta: str(c.Content)}, part{Type: "text-end", ID: id})
	case contracts.ChunkToolCallStart:
		return m.announce(c.ToolCallID, c.Tool, c.Input)
	case contracts.ChunkToolCallResult:
		if approved, ok := m.known[c.ToolCallID]; ok && !approved {
			m.output = m.step
			return []any{part{Type: "tool-output-denied", ToolCallID: c.ToolCallID}}
		}
		out := m.announce(c.ToolCallID, c.Tool, nil)
		m.output = m.step
		if c.IsError {
			return append(out, part{Type: "tool-output-error", ToolCallID: c.ToolCallID, ErrorText: c.Content})
		}
		return append(out, part{Type: "tool-output-available", ToolCallID: c.ToolCallID, Output: toolOutput(c)})
	case contracts.ChunkToolCallError:
		msg := c.Message
		if c.Failure != nil && c.Failure.Message != "" {
			msg = c.Failure.Message
		}
		out := m.announce(c.ToolCallID, c.Tool, nil)
		m.output = m.step
		return append(out, part{Type: "tool-output-error", ToolCallID: c.ToolCallID, ErrorText: msg})
	case contracts.ChunkStructuredData:
		st, err := sessions.ApplyStructured(m.data[c.StreamID], c)
		if err != nil {
			return nil // a malformed chunk is skipped; the part keeps its last good value
		}
		m.data[c.StreamID] = st
		b, _ := json.Marshal(st.Data)
		return append(m.begin(false), part{Type: dataType(st.DataType), ID: c.StreamID, Data: b})
	case contracts.ChunkStructuredInvalidated:
		st, ok := m.data[c.StreamID]
		if !ok {
			return nil
		}
		delete(m.data, c.StreamID)
		return []any{part{Type: dataType(st.DataType), ID: c.StreamID, Data: json.RawMessage("null")}}
	case contracts.ChunkInterrupt:
		m.finish = finishToolCalls
		return m.question(c)
	case contracts.ChunkCancelled:
		m.finish = finishOther
		return append(m.endCancelled(c), part{Type: "abort", Reason: c.Reason})
	case contracts.ChunkError:
		m.finish = finishError
		return []any{part{Type: "error", ErrorText: errorText(c)}}
	case contracts.ChunkDone:
		out := m.endTexts()
		if m.finish == "" {
			m.finish = finishStop
		}
		if m.step {
			m.step = false
			out = append(out, part{Type: "finish-step"})
		}
		return append(out, part{Type: "finish", FinishReason: m.finish})
	}
	if c.Type == contracts.ChunkStatus && c.Steer != nil {
		// Where the run took a steering message in (docs/steering.md).
		b, _ := json.Marshal(c.Steer)
		return []any{part{Type: "data-kortyx-steer", ID: c.Steer.ID, Data: b}}
	}
	// status, transition, checkpoint, limit-reached, resume-rejected, text-invalidated: not
	// mapped (docs/aisdk.md says why).
	return nil
}

// endCancelled returns, in the response to a cancel, the chunks that end the cancelled
// question: a step of its own after it (the open step, if any, ends with its texts) that holds
// the call's output-error again (the client's errorText, else the reason). The AI SDK's lastAssistantMessageIsCompleteWithToolCalls reads the message's last step: with
// the question's output-error there, sendAutomaticallyWhen sends the cancel again, which finds
// the question gone. The output-error in the new step is what makes the step reach the chat's
// messages: the SDK writes the message when a part changes, not on start-step, and it updates
// the call's part where it is (in the question's step), so the new step stays empty.
func (m *mapper) endCancelled(c contracts.Chunk) []any {
	if m.cancel == nil {
		return nil
	}
	text := m.cancel.errorText
	if text == "" {
		text = c.Reason // errorText is required
	}
	if text == "" {
		text = "Cancelled."
	}
	var out []any
	if m.step {
		out = append(m.endTexts(), part{Type: "finish-step"})
	}
	m.step, m.output = true, false
	return append(out, part{Type: "start-step"}, part{Type: "tool-output-error", ToolCallID: m.cancel.toolCallID, ErrorText: text})
}

// endTexts returns the text-end chunks of the text parts still open.
func (m *mapper) endTexts() []any {
	out := make([]any, 0, len(m.open)+2)
	for _, id := range slices.Sorted(maps.Keys(m.open)) {
		out = append(out, part{Type: "text-end", ID: id})
	}
	clear(m.open)
	return out
}

// announce returns the chunks that give the client tool call id's input, unless it has it.
func (m *mapper) announce(id, tool string, input json.RawMessage) []any {
	if _, ok := m.known[id]; ok || m.announced[id] {
		return nil
	}
	m.announced[id] = true
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return append(m.begin(true), part{Type: "tool-input-start", ToolCallID: id, ToolName: tool},
		part{Type: "tool-input-available", ToolCallID: id, ToolName: tool, Input: input})
}

// begin returns the step boundary due before content: start-step when no step is open; with
// split, finish-step and start-step when a tool output came in the open step (text or a tool
// call after tool outputs is the model's next step).
func (m *mapper) begin(split bool) []any {
	switch {
	case !m.step:
		m.step, m.output = true, false
		return []any{part{Type: "start-step"}}
	case split && m.output:
		m.output = false
		return []any{part{Type: "finish-step"}, part{Type: "start-step"}}
	}
	return nil
}

// dataType is the type of the data part of a structured stream.
func dataType(t string) string {
	if t == "" {
		t = "structured"
	}
	return "data-" + t
}

// toolOutput is a tool result's output: its structured content, else its content as JSON when
// it is JSON, else the content as a string.
func toolOutput(c contracts.Chunk) json.RawMessage {
	if len(c.StructuredContent) > 0 {
		return c.StructuredContent
	}
	if s := strings.TrimSpace(c.Content); s != "" && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(c.Content)
	return b
}

// errorText is the errorText of an error chunk: "CODE: message" (the message alone when the
// chunk has no failure code). The message is the failure's public one.
func errorText(c contracts.Chunk) string {
	msg := c.Message
	var code contracts.Code
	if c.Failure != nil {
		code = c.Failure.Code
		if c.Failure.Message != "" {
			msg = c.Failure.Message
		}
	}
	if code == "" {
		return msg
	}
	return string(code) + ": " + msg
}

// questionID is the id under which a question reaches the client (the approval id of a tool
// approval, the tool call id of a kortyx_ask call): its request id and resume token, which the
// answer sends back. A request id ("human-<uuid>") and a token (base64url) have no ".".
func questionID(requestID, token string) string { return requestID + "." + token }

// parseQuestionID splits a question id into its request id and token.
func parseQuestionID(id string) (requestID, token string, ok bool) {
	requestID, token, ok = strings.Cut(id, ".")
	return requestID, token, ok && requestID != "" && token != ""
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

// askInput is the input of a kortyx_ask tool call: the question, and the JSON schema of the
// output that answers it.
type askInput struct {
	Question      string             `json:"question"`
	Kind          string             `json:"kind"`
	Options       []contracts.Option `json:"options,omitempty"`
	Schema        json.RawMessage    `json:"schema,omitempty"`
	Request       json.RawMessage    `json:"request,omitempty"`
	Contract      string             `json:"contract,omitempty"`
	SchemaID      string             `json:"schemaId,omitempty"`
	SchemaVersion string             `json:"schemaVersion,omitempty"`
	Meta          json.RawMessage    `json:"meta,omitempty"`
	Node          string             `json:"node,omitempty"`
}

// question returns the chunks of an interrupt: a tool approval becomes the tool's call (unless
// the client has it) and a tool-approval-request; any other question a kortyx_ask call.
func (m *mapper) question(c contracts.Chunk) []any {
	var in contracts.InterruptInput
	_ = json.Unmarshal(c.Input, &in)
	id := questionID(c.RequestID, c.ResumeToken)
	if meta, ok := approval(in); ok {
		return append(m.announce(meta.ToolCallID, meta.Tool, meta.Input),
			part{Type: "tool-approval-request", ApprovalID: id, ToolCallID: meta.ToolCallID})
	}
	ask := askInput{Question: in.Question, Kind: string(in.Kind), Options: in.Options, Schema: in.AnswerSchema(), Request: in.Request,
		Contract: in.Contract, SchemaID: in.SchemaID, SchemaVersion: in.SchemaVersion, Meta: in.Meta, Node: c.Node}
	if ask.Schema == nil && m.schema != nil {
		ask.Schema = m.schema(c.RequestID)
	}
	b, _ := json.Marshal(ask)
	return m.announce(id, askTool, b)
}
