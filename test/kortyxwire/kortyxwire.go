// Package kortyxwire is a test client that reads the chat route the way Kortyx's own
// TypeScript client (v0.14) does, so that tests prove a Kortyx app works against this port
// unchanged. It is written from the rules of Kortyx's client source, not from its code. Where
// Kortyx's newer reader (the one that raises typed MALFORMED_STREAM and TRUNCATED_STREAM
// failures) is stricter than v0.14, it applies the newer reader's checks too, so that what it
// accepts both readers accept:
//
//   - stream reader (readStream): the body is decoded as UTF-8 into a buffer that is split on
//     blank lines ("\n\n"), the last piece kept for the next read. CRLF is not turned into LF
//     (v0.14 does not; the newer reader does): an event ended by "\r\n\r\n" is not split from
//     what follows. A piece that does not start with "data: " is dropped whole (so an event
//     with an "id:" line before its data is lost). The rest after "data: " is the payload:
//     "[DONE]" (trimmed) ends the stream; otherwise it must parse as JSON into an object with a
//     string "type", else the stream fails MALFORMED_STREAM. An "error" chunk must have a string
//     message and, if it has a failure, a valid failure descriptor (version 1, string code, a
//     known category, string message, retryable true, false or null), which is then sanitized
//     (serializeFailure: unknown keys dropped). A failure whose code is EXECUTION_CANCELLED or
//     EXECUTION_LIMIT_REACHED makes the stream fail MALFORMED_STREAM: the newer reader's
//     serializeFailure throws for these control-flow codes (v0.14 hands such a chunk on). A
//     "done" chunk ends the stream after it is handed on. A body that ends before that fails
//     TRUNCATED_STREAM when it had data or leftover text.
//   - route call (streamFromRoute): POST with content-type application/json; a response that is
//     not 2xx becomes the chunks error (message: the body's "error" string, else
//     "Request failed (<status>)") and done.
//   - chat transport and useChat: the body is {sessionId, workflowId, messages, context}; an
//     answer to a question is a user message whose content is the label (the text, else the
//     selected ids joined with ", ") and whose metadata is {resume: {token, requestId, selected}}.
//   - checkpoint calls: {action: "list", sessionId}, {action: "get", checkpointId},
//     {action: "rollback", checkpointId}, {action: "fork", checkpointId, newSessionId?};
//     rollback's result has head as the checkpoint id string.
//
// [Check] tests a chunk against Kortyx's chunk schema for the types the schema describes.
package kortyxwire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Chunk is one chunk as a Kortyx client holds it: the parsed JSON object.
type Chunk map[string]any

// Type is the chunk's type.
func (c Chunk) Type() string { s, _ := c["type"].(string); return s }

// String returns the string field key ("" when absent or not a string).
func (c Chunk) String(key string) string { s, _ := c[key].(string); return s }

// Error is a stream failure as Kortyx's reader raises it.
type Error struct {
	Code  string // MALFORMED_STREAM or TRUNCATED_STREAM
	Cause string
}

func (e *Error) Error() string { return "kortyxwire: " + e.Code + ": " + e.Cause }

var categories = map[string]bool{"configuration": true, "provider": true, "validation": true, "domain": true,
	"workflow": true, "persistence": true, "request": true, "transport": true, "internal": true}

// IsFailureDescriptor is Kortyx's isFailureDescriptor.
func IsFailureDescriptor(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if n, ok := m["version"].(float64); !ok || n != 1 {
		return false
	}
	if _, ok := m["code"].(string); !ok {
		return false
	}
	if c, ok := m["category"].(string); !ok || !categories[c] {
		return false
	}
	if _, ok := m["message"].(string); !ok {
		return false
	}
	r, present := m["retryable"]
	if !present {
		return false
	}
	switch r.(type) {
	case bool, nil:
		return true
	}
	return false
}

// failureKeys are the keys serializeFailure keeps.
var failureKeys = map[string]bool{"version": true, "code": true, "category": true, "message": true, "retryable": true,
	"source": true, "operation": true, "domainCode": true, "status": true, "retryAfterMs": true, "details": true,
	"context": true, "usage": true, "finishReason": true, "issues": true, "cause": true, "results": true, "truncated": true}

// sanitize is the newer reader's serializeFailure for a descriptor: ok is false for a
// control-flow code.
func sanitize(f map[string]any) (map[string]any, bool) {
	switch f["code"] {
	case "EXECUTION_CANCELLED", "EXECUTION_LIMIT_REACHED":
		return nil, false
	}
	return copyFailure(f), true
}

func copyFailure(f map[string]any) map[string]any {
	if !IsFailureDescriptor(f) {
		return map[string]any{"version": float64(1), "code": "EXECUTION_FAILED", "category": "internal",
			"message": "An unexpected error occurred.", "retryable": nil}
	}
	out := map[string]any{}
	for k, v := range f {
		if !failureKeys[k] {
			continue
		}
		switch k {
		case "cause":
			if m, ok := v.(map[string]any); ok {
				v = copyFailure(m)
			}
		case "issues":
			if list, ok := v.([]any); ok {
				issues := make([]any, 0, len(list))
				for _, it := range list {
					m, _ := it.(map[string]any)
					code, _ := m["code"].(string)
					if code == "" {
						code = "invalid_value"
					}
					path, _ := m["path"].([]any)
					if path == nil {
						path = []any{}
					}
					issues = append(issues, map[string]any{"code": code, "path": path})
				}
				v = issues
			}
		}
		out[k] = v
	}
	return out
}

// Read reads an SSE body with Kortyx's rule and returns the chunks it hands on. It reads the
// body in pieces of at most readSize bytes (0: 4096), which shows that events split across
// reads are joined as Kortyx joins them.
func Read(body io.Reader, readSize int) ([]Chunk, error) {
	if readSize <= 0 {
		readSize = 4096
	}
	var out []Chunk
	var buffer string
	var pending []byte // bytes of an incomplete UTF-8 sequence (TextDecoder's stream mode)
	sawData := false
	p := make([]byte, readSize)
	for {
		n, err := body.Read(p)
		if n > 0 {
			b := append(pending, p[:n]...)
			cut := len(b)
			if st := lastStart(b); !utf8.FullRune(b[st:]) {
				cut = st
			}
			pending = append([]byte(nil), b[cut:]...)
			buffer += string(b[:cut]) // CRLF stays: v0.14 splits on "\n\n" only
			parts := strings.Split(buffer, "\n\n")
			buffer = parts[len(parts)-1]
			for _, part := range parts[:len(parts)-1] {
				if !strings.HasPrefix(part, "data: ") {
					continue
				}
				sawData = true
				payload := part[len("data: "):]
				if strings.TrimSpace(payload) == "[DONE]" {
					return out, nil
				}
				c, perr := parse(payload)
				if perr != nil {
					return out, &Error{Code: "MALFORMED_STREAM", Cause: perr.Error()}
				}
				out = append(out, c)
				if c.Type() == "done" {
					return out, nil
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, &Error{Code: "TRUNCATED_STREAM", Cause: err.Error()}
		}
	}
	if strings.TrimSpace(buffer) != "" || sawData {
		return out, &Error{Code: "TRUNCATED_STREAM", Cause: "Stream ended with an incomplete event."}
	}
	return out, nil
}

// lastStart is the index of the first byte of the last UTF-8 sequence of b.
func lastStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	return i
}

func parse(payload string) (Chunk, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(payload))
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("text after the JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid event")
	}
	if _, ok := m["type"].(string); !ok {
		return nil, fmt.Errorf("invalid event")
	}
	if m["type"] == "error" {
		if _, ok := m["message"].(string); !ok {
			return nil, fmt.Errorf("invalid failure event")
		}
		if f, present := m["failure"]; present {
			if !IsFailureDescriptor(f) {
				return nil, fmt.Errorf("invalid failure event")
			}
			clean, ok := sanitize(f.(map[string]any))
			if !ok {
				return nil, fmt.Errorf("control-flow failure %v", f.(map[string]any)["code"])
			}
			m["failure"] = clean
		}
	}
	return Chunk(m), nil
}

// Client calls a chat route and a checkpoint route as Kortyx's client does.
type Client struct {
	HTTP        *http.Client // nil: http.DefaultClient
	ChatURL     string
	Checkpoints string // the checkpoint route's URL
	Headers     map[string]string
	ReadSize    int
}

// Message is an outgoing chat message of Kortyx's transport.
type Message struct {
	Role     string         `json:"role"`
	Content  string         `json:"content"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Send posts a chat request {sessionId, workflowId, messages, context} and reads the answer.
func (c *Client) Send(ctx context.Context, sessionID, workflowID string, messages []Message) ([]Chunk, error) {
	body := map[string]any{"sessionId": sessionID, "workflowId": workflowID, "messages": messages, "context": map[string]any{}}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ChatURL, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("content-type", "application/json")
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return []Chunk{{"type": "error", "message": err.Error()}, {"type": "done"}}, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("Request failed (%d)", resp.StatusCode)
		var payload map[string]any
		if json.NewDecoder(resp.Body).Decode(&payload) == nil {
			if s, ok := payload["error"].(string); ok {
				msg = s
			}
		}
		return []Chunk{{"type": "error", "message": msg}, {"type": "done"}}, nil
	}
	return Read(resp.Body, c.ReadSize)
}

// Answer is the user message useChat's respondToHumanInput sends for an interrupt chunk: text
// (when not empty) is the label and the one selected value; otherwise the selected ids.
func Answer(interrupt Chunk, selected []string, text string) Message {
	if text != "" && len(selected) == 0 {
		selected = []string{text}
	}
	label := text
	if label == "" {
		switch len(selected) {
		case 0:
			label = "(selection)"
		default:
			label = strings.Join(selected, ", ")
		}
	}
	if selected == nil {
		selected = []string{}
	}
	return Message{Role: "user", Content: label, Metadata: map[string]any{"resume": map[string]any{
		"token": interrupt.String("resumeToken"), "requestId": interrupt.String("requestId"), "selected": selected}}}
}

// Checkpoint posts a checkpoint request and decodes the JSON answer; status is the HTTP status.
func (c *Client) Checkpoint(ctx context.Context, body map[string]any) (status int, out any, err error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Checkpoints, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("content-type", "application/json")
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("kortyxwire: checkpoint answer is not JSON: %s", raw)
	}
	return resp.StatusCode, out, nil
}

// Rollback is Kortyx's rollbackTo: {action: "rollback", checkpointId}; it returns the result
// object and its head, which Kortyx reads as the checkpoint id string.
func (c *Client) Rollback(ctx context.Context, checkpointID string) (map[string]any, string, error) {
	status, out, err := c.Checkpoint(ctx, map[string]any{"action": "rollback", "checkpointId": checkpointID})
	if err != nil {
		return nil, "", err
	}
	m, _ := out.(map[string]any)
	if status != http.StatusOK {
		return m, "", fmt.Errorf("kortyxwire: rollback answered %d: %v", status, out)
	}
	head, ok := m["head"].(string)
	if !ok {
		return m, "", fmt.Errorf("kortyxwire: rollback head is not a string: %v", m["head"])
	}
	return m, head, nil
}

// Fork is Kortyx's fork: {action: "fork", checkpointId}; it returns the result object.
func (c *Client) Fork(ctx context.Context, checkpointID string) (map[string]any, error) {
	status, out, err := c.Checkpoint(ctx, map[string]any{"action": "fork", "checkpointId": checkpointID})
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	if status != http.StatusOK {
		return m, fmt.Errorf("kortyxwire: fork answered %d: %v", status, out)
	}
	return m, nil
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}
