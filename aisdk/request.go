package aisdk

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// request is a chat request of the AI SDK's DefaultChatTransport: the chat id, its messages,
// the trigger, and the fields of its body option this wire reads (agent, context).
type request struct {
	ID       string          `json:"id"`
	Messages []uiMessage     `json:"messages"`
	Trigger  string          `json:"trigger"`
	Agent    string          `json:"agent"`
	Context  json.RawMessage `json:"context"`
	// Busy is what to do when the chat's turn is still running (docs/steering.md): "reject",
	// "enqueue", "interrupt" or "steer"; "" takes Options.Busy.
	Busy string `json:"busy"`
}

// uiMessage is a UIMessage: only what this wire reads of it.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart is one part of a UIMessage: text, step-start or a tool part ("tool-<name>",
// "dynamic-tool").
type uiPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	State      string          `json:"state"`
	Output     json.RawMessage `json:"output"`
	ErrorText  string          `json:"errorText"`
	Approval   *struct {
		ID       string `json:"id"`
		Approved *bool  `json:"approved"`
	} `json:"approval"`
}

func (p uiPart) tool() string {
	if p.Type == "dynamic-tool" {
		return p.ToolName
	}
	name, _ := strings.CutPrefix(p.Type, "tool-")
	return name
}

// turn is what a request asks: a prompt (Text) or an answer (Answer; ToolCallID and Approved
// for a tool approval; ToolCallID and ErrorText for a kortyx_ask call cancelled with
// output-error).
type turn struct {
	Text       string
	Answer     *contracts.Response
	ToolCallID string
	Approved   bool
	ErrorText  string
}

func invalid(format string, args ...any) error {
	return contracts.Errorf(contracts.CodeInvalidRequest, format, args...)
}

// decodeError is the error of a body that does not decode into a request: the field of the
// wrong type and the JSON type it must have, never the decoder's text (which names Go types).
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return invalid("Request body must be a JSON object {id, messages, ...}.")
	}
	var path []any
	for _, k := range strings.Split(te.Field, ".") {
		path = append(path, k)
	}
	want := "a JSON value of another type"
	switch te.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int64, reflect.Float64:
		want = "a number"
	}
	return &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid.",
		Issues: []contracts.Issue{{Path: path, Code: "invalid_type", Message: te.Field + " must be " + want}}}
}

// parseRequest reads a chat request of at most limit bytes and what it asks.
func parseRequest(r *http.Request, limit int64) (*request, turn, error) {
	body, err := httpwire.ReadBody(nil, r, limit)
	if err != nil {
		return nil, turn{}, err
	}
	req := &request{}
	if err := json.Unmarshal(body, req); err != nil {
		return nil, turn{}, decodeError(err)
	}
	req.ID, req.Agent = strings.TrimSpace(req.ID), strings.TrimSpace(req.Agent)
	if err := checkID(req.ID); err != nil {
		return nil, turn{}, err
	}
	if len(req.Context) > 0 && string(req.Context) != "null" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(req.Context, &obj) != nil {
			return nil, turn{}, invalid("context must be a JSON object.")
		}
	} else {
		req.Context = nil
	}
	if req.Trigger == "regenerate-message" {
		return nil, turn{}, invalid("Regenerating a message is not supported: the session keeps the history; roll back to a checkpoint instead.")
	}
	if len(req.Messages) == 0 {
		return nil, turn{}, invalid("messages must not be empty.")
	}
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "user":
		var text []string
		for _, p := range last.Parts {
			if p.Type == "text" && strings.TrimSpace(p.Text) != "" {
				text = append(text, strings.TrimSpace(p.Text))
			}
		}
		if len(text) == 0 {
			return nil, turn{}, invalid("The last message has no text to send.")
		}
		return req, turn{Text: strings.Join(text, "\n")}, nil
	case "assistant":
		if t, ok := answer(last); ok {
			return req, t, nil
		}
		return nil, turn{}, invalid("The last message answers no question: answer a %s call with addToolOutput or a tool approval with addToolApprovalResponse.", askTool)
	}
	return nil, turn{}, invalid("The last message must be the user's or the assistant's with an answer, not %q.", last.Role)
}

// checkID checks a chat id against the one id rule of session ids.
func checkID(id string) error {
	if id == "" {
		return invalid("id (the chat id) is required.")
	}
	if err := contracts.CheckID("id", id); err != nil {
		return &contracts.Error{Code: contracts.CodeInvalidRequest, Message: err.Message, Issues: err.Issues}
	}
	return nil
}

// answer finds the answer in the last step of an assistant message: its last tool approval
// that was responded to, or its last kortyx_ask call with an output (a value) or an error
// (cancel).
func answer(m uiMessage) (turn, bool) {
	parts := m.Parts
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i].Type == "step-start" {
			parts = parts[i+1:]
			break
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		switch {
		case p.State == "approval-responded" && p.Approval != nil && p.Approval.Approved != nil:
			req, token, ok := parseQuestionID(p.Approval.ID)
			if !ok {
				continue
			}
			choice := "deny"
			if *p.Approval.Approved {
				choice = "approve"
			}
			return turn{Answer: &contracts.Response{Token: token, RequestID: req, Selected: []string{choice}},
				ToolCallID: p.ToolCallID, Approved: *p.Approval.Approved}, true
		case p.tool() == askTool && (p.State == "output-available" || p.State == "output-error"):
			req, token, ok := parseQuestionID(p.ToolCallID)
			if !ok {
				continue
			}
			res := &contracts.Response{Token: token, RequestID: req}
			if p.State == "output-error" {
				res.Cancel = true
				return turn{Answer: res, ToolCallID: p.ToolCallID, ErrorText: p.ErrorText}, true
			}
			res.Value = p.Output
			return turn{Answer: res}, true
		}
	}
	return turn{}, false
}
