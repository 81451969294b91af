// Package toolargs reads the arguments of a tool call as a model wrote them, the same way for
// every provider whose wire carries them as text (openai, anthropic).
package toolargs

import (
	"encoding/json"
	"strings"
)

// Parse turns the arguments a model wrote into JSON: valid JSON as is (without surrounding
// space), nothing as {}, and anything else (invalid JSON) as a JSON string holding the text
// unchanged, for the caller to report.
func Parse(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}
