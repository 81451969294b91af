package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/httpwire"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
)

// Request is a parsed chat request body (spec F6.6). Unknown top-level keys are allowed;
// messages are strict. Ids are trimmed and blank ones absent.
type Request struct {
	SessionID    string          `json:"sessionId,omitempty"`
	ClientTurnID string          `json:"clientTurnId,omitempty"`
	WorkflowID   string          `json:"workflowId,omitempty"`
	Stream       *bool           `json:"stream,omitempty"`
	Context      json.RawMessage `json:"context,omitempty"`
	Messages     []Message       `json:"messages"`
	// Busy is what to do with the message when the session's turn is still running
	// (docs/steering.md): "reject", "enqueue", "interrupt" or "steer"; "" takes Options.Busy.
	Busy string `json:"busy,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role      string          `json:"role"`
	Content   string          `json:"content"`
	ID        string          `json:"id,omitempty"`
	Timestamp json.RawMessage `json:"timestamp,omitempty"`
	Metadata  *Metadata       `json:"metadata,omitempty"`
}

// Metadata is a message's metadata; Resume makes the message an answer to a question.
type Metadata struct {
	Resume *Resume                    `json:"resume,omitempty"`
	Extra  map[string]json.RawMessage `json:"-"`
}

// Resume is metadata.resume (spec F6.2): the token and request id of the question, and the
// answer as selected ids (a string or a list), a choice or choices ({id}), a value, or cancel.
// Kortyx's client sends {token, requestId, selected: [...]} only: a custom question's answer
// comes from it as one selected string holding a JSON object (see [Resume.Response]).
type Resume struct {
	Token     string          `json:"token"`
	RequestID string          `json:"requestId"`
	Selected  json.RawMessage `json:"selected,omitempty"`
	Choice    *struct {
		ID string `json:"id"`
	} `json:"choice,omitempty"`
	Choices []struct {
		ID string `json:"id"`
	} `json:"choices,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	Cancel bool            `json:"cancel,omitempty"`
}

// UnmarshalJSON keeps the keys of metadata other than resume.
func (m *Metadata) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	if r, ok := all["resume"]; ok && string(r) != "null" {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		m.Resume = &Resume{}
		if err := dec.Decode(m.Resume); err != nil {
			return fmt.Errorf("metadata.resume: %w", err)
		}
		delete(all, "resume")
	}
	m.Extra = all
	return nil
}

// MarshalJSON writes metadata back with its other keys.
func (m Metadata) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	for k, v := range m.Extra {
		out[k] = v
	}
	if m.Resume != nil {
		out["resume"] = m.Resume
	}
	return json.Marshal(out)
}

// last returns the last message (zero when there is none).
func (r *Request) last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// ResumeOf returns the resume metadata of the last message, if any.
func (r *Request) ResumeOf() *Resume {
	if m := r.last().Metadata; m != nil {
		return m.Resume
	}
	return nil
}

// Input is the content (trimmed) of the latest non-empty user message.
func (r *Request) input() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" && strings.TrimSpace(m.Content) != "" {
			return strings.TrimSpace(m.Content)
		}
	}
	return ""
}

// Response turns resume metadata into the answer of a question. Without a value, a single
// selected string that is a JSON object is also the answer's value: that is how a Kortyx client
// answers a custom question (its useChat sends what the user typed as selected: [text]).
func (res *Resume) response(content string) contracts.Response {
	out := contracts.Response{Token: strings.TrimSpace(res.Token), RequestID: strings.TrimSpace(res.RequestID), Value: res.Value, Cancel: res.Cancel}
	if len(res.Selected) > 0 {
		var one string
		var many []string
		switch {
		case json.Unmarshal(res.Selected, &one) == nil:
			out.Selected = []string{one}
		case json.Unmarshal(res.Selected, &many) == nil:
			out.Selected = many
		}
	}
	if len(out.Value) == 0 && len(out.Selected) == 1 {
		// A Kortyx client can only send selected ids: a custom question is answered with the
		// JSON object as the one "selected" string. It becomes the value too; a text or choice
		// question still reads selected.
		if v := []byte(strings.TrimSpace(out.Selected[0])); len(v) > 0 && v[0] == '{' {
			var obj map[string]json.RawMessage
			if json.Unmarshal(v, &obj) == nil {
				out.Value = v
			}
		}
	}
	if res.Choice != nil {
		out.Selected = append(out.Selected, res.Choice.ID)
	}
	for _, c := range res.Choices {
		out.Selected = append(out.Selected, c.ID)
	}
	if len(out.Selected) == 0 && len(out.Value) == 0 && !out.Cancel {
		out.Text = strings.TrimSpace(content)
	}
	return out
}

// maxClientTurnIDLength is the longest clientTurnId (spec F6.6); session ids may have
// [contracts.MaxIDLength] characters.
const maxClientTurnIDLength = 128

func invalid(format string, args ...any) error {
	return contracts.Errorf(contracts.CodeInvalidRequest, format, args...)
}

// parseRequest reads and validates a chat request body of at most limit bytes.
func parseRequest(r *http.Request, limit int64) (*Request, error) {
	body, err := httpwire.ReadBody(nil, r, limit)
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, invalid("Request body is not valid JSON.")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, invalid("Request body must be a JSON object.")
	}
	req := &Request{}
	var issues []contracts.Issue
	str := func(key string, max int) string {
		raw, ok := top[key]
		if !ok || string(raw) == "null" {
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			issues = append(issues, contracts.Issue{Path: []any{key}, Code: "invalid_type", Message: key + " must be a string"})
			return ""
		}
		s = strings.TrimSpace(s)
		if max > 0 && len(s) > max {
			issues = append(issues, contracts.Issue{Path: []any{key}, Code: "too_big", Message: fmt.Sprintf("%s must have at most %d characters", key, max)})
		}
		return s
	}
	// id reads an id field: checked against the one id rule (contracts.CheckID), and at most max
	// characters.
	id := func(key string, max int) string {
		s := str(key, 0)
		if s == "" {
			return ""
		}
		if err := contracts.CheckID(key, s); err != nil {
			issues = append(issues, err.Issues...)
		} else if len(s) > max {
			issues = append(issues, contracts.Issue{Path: []any{key}, Code: "too_big", Message: fmt.Sprintf("%s must have at most %d characters", key, max)})
		}
		return s
	}
	req.SessionID = id("sessionId", contracts.MaxIDLength)
	req.ClientTurnID = id("clientTurnId", maxClientTurnIDLength)
	req.WorkflowID = str("workflowId", 256)
	if req.Busy = str("busy", 16); sessions.CheckBusy(req.Busy) != nil {
		issues = append(issues, contracts.Issue{Path: []any{"busy"}, Code: "invalid_value", Message: "busy must be reject, enqueue, interrupt or steer"})
	}
	if raw, ok := top["stream"]; ok && string(raw) != "null" {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			issues = append(issues, contracts.Issue{Path: []any{"stream"}, Code: "invalid_type", Message: "stream must be a boolean"})
		}
		req.Stream = &b
	}
	if raw, ok := top["context"]; ok && string(raw) != "null" {
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil {
			issues = append(issues, contracts.Issue{Path: []any{"context"}, Code: "invalid_type", Message: "context must be an object"})
		}
		req.Context = raw
	}
	raw, ok := top["messages"]
	if !ok {
		issues = append(issues, contracts.Issue{Path: []any{"messages"}, Code: "required", Message: "messages is required"})
	} else {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			issues = append(issues, contracts.Issue{Path: []any{"messages"}, Code: "invalid_type", Message: "messages must be a list"})
		}
		for i, m := range list {
			dec := json.NewDecoder(bytes.NewReader(m))
			dec.DisallowUnknownFields()
			var msg Message
			if err := dec.Decode(&msg); err != nil {
				issues = append(issues, contracts.Issue{Path: []any{"messages", i}, Code: "invalid_message", Message: err.Error()})
				continue
			}
			switch msg.Role {
			case "user", "assistant", "system":
			default:
				issues = append(issues, contracts.Issue{Path: []any{"messages", i, "role"}, Code: "invalid_enum", Message: "role must be user, assistant or system"})
			}
			msg.ID = strings.TrimSpace(msg.ID)
			req.Messages = append(req.Messages, msg)
		}
		if len(list) == 0 && len(issues) == 0 {
			issues = append(issues, contracts.Issue{Path: []any{"messages"}, Code: "too_small", Message: "messages must not be empty"})
		}
	}
	if len(issues) > 0 {
		return nil, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid.", Issues: issues}
	}
	return req, nil
}
