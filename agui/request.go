package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/sessions"
)

// runInput is AG-UI's RunAgentInput: what this wire reads of it. tools and context are not
// read (docs/agui.md says why); of forwardedProps only busy (busy).
type runInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	State          json.RawMessage `json:"state"`
	Messages       []message       `json:"messages"`
	Resume         []resumeEntry   `json:"resume"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	// busy is forwardedProps.busy: what to do when the thread's run is still running
	// (docs/steering.md); "" takes Options.Busy.
	busy string
}

// message is one message of the input: its role and content (a string, or a list of parts of
// which the text parts are read).
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// resumeEntry answers one interrupt of the previous run.
type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// turn is what a request asks: a prompt (text) or an answer.
type turn struct {
	text   string
	answer *contracts.Response
}

// maxRunID is the longest runId that can name a turn.
const maxRunID = 128

func invalid(format string, args ...any) error {
	return contracts.Errorf(contracts.CodeInvalidRequest, format, args...)
}

// parseInput reads a RunAgentInput of at most limit bytes and what it asks.
func parseInput(r *http.Request, limit int64) (*runInput, turn, error) {
	body, err := httpwire.ReadBody(nil, r, limit)
	if err != nil {
		return nil, turn{}, err
	}
	in := &runInput{}
	if err := json.Unmarshal(body, in); err != nil {
		return nil, turn{}, decodeError(err)
	}
	switch {
	case strings.TrimSpace(in.ThreadID) == "":
		return nil, turn{}, invalid("threadId is required: it names the Kortyx session.")
	case in.Messages == nil:
		return nil, turn{}, invalid("messages is required (a list, empty when the run only resumes).")
	}
	if err := checkRunID(in.RunID); err != nil {
		return nil, turn{}, err
	}
	var props struct {
		Busy string `json:"busy"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(in.ForwardedProps), []byte("{")) && json.Unmarshal(in.ForwardedProps, &props) == nil {
		if err := sessions.CheckBusy(props.Busy); err != nil {
			return nil, turn{}, invalid("forwardedProps.busy must be reject, enqueue, interrupt or steer.")
		}
		in.busy = props.Busy
	}
	if len(in.Resume) > 0 {
		a, err := answer(in.Resume)
		return in, turn{answer: a}, err
	}
	text, err := prompt(in.Messages)
	return in, turn{text: text}, err
}

// decodeError is the error of a body that does not decode into a RunAgentInput: the field of
// the wrong type, never the decoder's text (which names Go types).
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid: " + te.Field + " has the wrong type.",
			Issues: []contracts.Issue{{Path: []any{te.Field}, Code: "invalid_type", Message: te.Field + " must not be a JSON " + te.Value}}}
	}
	return invalid("Request body must be a RunAgentInput JSON object {threadId, runId, messages, ...}.")
}

// checkRunID checks that runId can name a turn: visible ASCII, at most maxRunID characters.
func checkRunID(id string) error {
	if id == "" {
		return invalid("runId is required: it names the turn (the same runId reattaches to it).")
	}
	if len(id) > maxRunID {
		return invalid("runId must have at most %d characters.", maxRunID)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return invalid("runId must use only visible ASCII characters (no spaces).")
		}
	}
	return nil
}

// prompt is the text of the last user message: its content, or its text parts joined by
// newlines.
func prompt(msgs []message) (string, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(msgs[i].Content, &s) != nil {
			var parts []struct{ Type, Text string }
			_ = json.Unmarshal(msgs[i].Content, &parts)
			var text []string
			for _, p := range parts {
				if p.Type == "text" && strings.TrimSpace(p.Text) != "" {
					text = append(text, p.Text)
				}
			}
			s = strings.Join(text, "\n")
		}
		if strings.TrimSpace(s) == "" {
			return "", invalid("The last user message has no text to send.")
		}
		return s, nil
	}
	return "", invalid("No user message to run: send a user message, or resume the interrupt the last run finished with.")
}

// answer is the answer of a run's resume: one entry, answering an interrupt of this wire.
func answer(entries []resumeEntry) (*contracts.Response, error) {
	if len(entries) != 1 {
		return nil, invalid("resume must answer one interrupt: a Kortyx run finishes with one question at a time, not %d.", len(entries))
	}
	e := entries[0]
	requestID, token, ok := parseInterruptID(e.InterruptID)
	if !ok {
		return nil, contracts.Errorf(contracts.CodeInvalidResume, "resume[0].interruptId is not an interrupt of this agent: send the id of the interrupt the last run finished with.")
	}
	res := &contracts.Response{Token: token, RequestID: requestID}
	switch e.Status {
	case "cancelled":
		res.Cancel = true
	case "resolved":
		res.Value = payload(e.Payload)
	default:
		return nil, invalid(`resume[0].status must be "resolved" or "cancelled".`)
	}
	return res, nil
}

// payload is the answer value of a resolved entry: {"approved": bool}, the payload of a tool
// approval, becomes the option it picks ("approve" or "deny"); anything else is the value.
func payload(p json.RawMessage) json.RawMessage {
	var a struct {
		Approved *bool `json:"approved"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(p), []byte("{")) && json.Unmarshal(p, &a) == nil && a.Approved != nil {
		if *a.Approved {
			return json.RawMessage(`"approve"`)
		}
		return json.RawMessage(`"deny"`)
	}
	return p
}

// interruptID is the id under which a question reaches the client: its request id and resume
// token, both of which the session checks. A request id ("human-<uuid>") and a token
// (base64url) have no ".".
func interruptID(requestID, token string) string { return requestID + "." + token }

// parseInterruptID splits an interrupt id into its request id and token.
func parseInterruptID(id string) (requestID, token string, ok bool) {
	requestID, token, ok = strings.Cut(id, ".")
	return requestID, token, ok && requestID != "" && token != ""
}
