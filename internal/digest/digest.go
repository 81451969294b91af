// Package digest identifies the content of a turn's request (a prompt's input, an answer), so
// that a clientTurnId repeated with other content is told apart from a retry, and an answer
// delivered twice by update runs once.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
)

// Prompt identifies a prompt turn by its input (canonical JSON: key order and spacing do not
// count). The workflow, context and prior messages do not count: a retry may name the workflow
// the first attempt defaulted to.
func Prompt(req sessionapi.TurnRequest) string {
	var input any
	if len(req.Input) > 0 && json.Unmarshal(req.Input, &input) != nil {
		input = string(req.Input)
	}
	return sum([]any{"prompt", input})
}

// Answer identifies an answer by its content: token, request id, selection, text, value
// (canonical JSON: key order and spacing do not count) and cancel.
func Answer(resp contracts.Response) string {
	var value any
	if len(resp.Value) > 0 && json.Unmarshal(resp.Value, &value) != nil {
		value = string(resp.Value) // not JSON: the run refuses it, but by its own id
	}
	return sum([]any{resp.Token, resp.RequestID, resp.Selected, resp.Text, value, resp.Cancel})
}

func sum(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}
