package contracts

import (
	"encoding/json"
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
