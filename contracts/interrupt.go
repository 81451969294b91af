package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// InterruptKind is the kind of question an interrupt asks (spec F3.4).
type InterruptKind string

// Interrupt kinds.
const (
	InterruptText        InterruptKind = "text"         // answer: a non-empty string
	InterruptChoice      InterruptKind = "choice"       // answer: exactly one option id
	InterruptMultiChoice InterruptKind = "multi-choice" // answer: one or more distinct option ids
	InterruptCustom      InterruptKind = "custom"       // answer: a JSON value valid against the response schema
)

// DefaultChoiceQuestion is shown for a choice interrupt asked without a question.
const DefaultChoiceQuestion = "Please choose an option."

// Option is one choice of a choice or multi-choice interrupt.
type Option struct {
	ID          string          `json:"id"`
	Label       string          `json:"label"`
	Description string          `json:"description,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
}

// Response is an answer to a pending interrupt, as sent by signal or update (and in chat
// requests as metadata.resume). Token and RequestID identify the request; exactly one of
// Selected, Text or Value carries the answer, or Cancel ends the run.
type Response struct {
	Token     string          `json:"token"`
	RequestID string          `json:"requestId"`
	Selected  []string        `json:"selected,omitempty"`
	Text      string          `json:"text,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Cancel    bool            `json:"cancel,omitempty"`
}

// RespondResult is what a validated answer sent by update returns.
type RespondResult struct {
	RequestID string `json:"requestId"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// PendingRequest is a question a run is waiting on. It holds the resume token: expose it only
// to callers allowed to answer (it is never put in search attributes).
type PendingRequest struct {
	RequestID string         `json:"requestId"`
	Token     string         `json:"token"`
	Workflow  string         `json:"workflow"`
	Node      string         `json:"node"`
	HookID    string         `json:"hookId,omitempty"`
	Input     InterruptInput `json:"input"`
	CreatedAt time.Time      `json:"createdAt"`
}

// Chunk is the interrupt chunk that asks req: the one the run publishes, and the one a reader
// rebuilds for a question whose stream is gone.
func (req PendingRequest) Chunk() Chunk {
	return Chunk{
		Type:          ChunkInterrupt,
		RequestID:     req.RequestID,
		ResumeToken:   req.Token,
		Workflow:      req.Workflow,
		Node:          req.Node,
		ID:            req.HookID,
		SchemaID:      req.Input.SchemaID,
		SchemaVersion: req.Input.SchemaVersion,
		Meta:          req.Input.Meta,
		Input:         RawJSON(req.Input),
	}
}

// Rejection records an answer that was refused (by signal, where there is no caller to tell).
type Rejection struct {
	RequestID string    `json:"requestId"`
	Failure   Failure   `json:"failure"`
	At        time.Time `json:"at"`
}

// Answer is a validated, normalized answer (spec F3.4): Text for text interrupts, Selected for
// choice (one id) and multi-choice, and Value always: the JSON form of the answer.
type Answer struct {
	RequestID string          `json:"requestId"`
	Kind      InterruptKind   `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Selected  []string        `json:"selected,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
}

// Decode unmarshals the answer's JSON value into v.
func (a Answer) Decode(v any) error {
	if len(a.Value) == 0 {
		return Errorf(CodeInvalidResponse, "answer to %s has no value", a.RequestID)
	}
	return json.Unmarshal(a.Value, v)
}

// CheckResponse matches an answer against a pending request: token first, then request id.
// It does not look at the answer itself; see [NormalizeAnswer].
func CheckResponse(p *PendingRequest, r Response) error {
	if p == nil {
		return Errorf(CodeInvalidResume, "No waiting request in this run: the run is not waiting for an answer.")
	}
	if strings.TrimSpace(r.Token) == "" || r.Token != p.Token {
		return Errorf(CodeInvalidResume, "Resume token does not match the waiting request; it is expired, already consumed, or wrong.")
	}
	if r.RequestID != p.RequestID {
		return &Error{Code: CodeResumeMismatch,
			Message: fmt.Sprintf("Answer names request %q but the run is waiting for %q.", r.RequestID, p.RequestID),
			Details: map[string]any{"requestId": p.RequestID}}
	}
	return nil
}

// NormalizeAnswer validates an answer's content for the request and normalizes it (spec F3.4):
// text takes Text, else the first of Selected, else a JSON string Value; choice takes exactly one
// known option id; multi-choice one or more distinct known ids; custom takes Value. The
// normalized value is then validated against responseSchema when one is given.
func NormalizeAnswer(in InterruptInput, r Response, responseSchema *Schema) (Answer, error) {
	a := Answer{Kind: in.Kind}
	invalid := func(code, format string, args ...any) (Answer, error) {
		return Answer{}, &Error{Code: CodeInvalidResponse, Message: fmt.Sprintf(format, args...),
			Issues: []Issue{{Path: []any{}, Code: code, Message: fmt.Sprintf(format, args...)}}}
	}
	var valueStr string
	if len(r.Value) > 0 {
		_ = json.Unmarshal(r.Value, &valueStr)
	}
	switch in.Kind {
	case InterruptText:
		text := r.Text
		if text == "" && len(r.Selected) > 0 {
			text = r.Selected[0]
		}
		if text == "" {
			text = valueStr
		}
		if strings.TrimSpace(text) == "" {
			return invalid("required", "A text answer is required: send a non-empty text.")
		}
		a.Text = text
		a.Value = RawJSON(text)
	case InterruptChoice, InterruptMultiChoice:
		sel := r.Selected
		if len(sel) == 0 && r.Text != "" {
			sel = []string{r.Text}
		}
		if len(sel) == 0 && len(r.Value) > 0 {
			sel = selectedFromValue(r.Value)
		}
		if len(sel) == 0 {
			return invalid("required", "Select an option: send selected with one of %s.", optionIDs(in.Options))
		}
		if in.Kind == InterruptChoice && len(sel) != 1 {
			return invalid("maxItems", "Select exactly one option, not %d.", len(sel))
		}
		seen := map[string]bool{}
		for _, id := range sel {
			if seen[id] {
				return invalid("uniqueItems", "Option %q is selected twice.", id)
			}
			seen[id] = true
			if len(in.Options) > 0 && !hasOption(in.Options, id) {
				return invalid("enum", "Unknown option %q: choose one of %s.", id, optionIDs(in.Options))
			}
		}
		a.Selected = append([]string(nil), sel...)
		if in.Kind == InterruptChoice {
			a.Value = RawJSON(sel[0])
		} else {
			a.Value = RawJSON(a.Selected)
		}
	case InterruptCustom:
		switch {
		case len(bytes.TrimSpace(r.Value)) > 0:
			a.Value = append(json.RawMessage(nil), bytes.TrimSpace(r.Value)...)
		case r.Text != "":
			a.Value = RawJSON(r.Text)
		default:
			return invalid("required", "This question needs a structured answer: send value.")
		}
	default:
		return invalid("kind", "Unknown interrupt kind %q.", in.Kind)
	}
	if responseSchema != nil {
		if issues := responseSchema.ValidateJSON(a.Value); len(issues) > 0 {
			return Answer{}, &Error{Code: CodeInvalidResponse, Message: "Answer does not match the response schema.", Issues: issues}
		}
	}
	return a, nil
}

func selectedFromValue(v json.RawMessage) []string {
	var s string
	if json.Unmarshal(v, &s) == nil && s != "" {
		return []string{s}
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		out := make([]string, 0, len(list))
		for _, item := range list {
			if id := idOf(item); id != "" {
				out = append(out, id)
			}
		}
		return out
	}
	if id := idOf(v); id != "" {
		return []string{id}
	}
	return nil
}

// idOf returns a string, or the "id" of an object.
func idOf(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v, &obj) == nil {
		return obj.ID
	}
	return ""
}

func hasOption(opts []Option, id string) bool {
	for _, o := range opts {
		if o.ID == id {
			return true
		}
	}
	return false
}

func optionIDs(opts []Option) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = fmt.Sprintf("%q", o.ID)
	}
	return strings.Join(ids, ", ")
}
