package fakeanthropic

import (
	"encoding/json"
	"strings"

	"github.com/kortyx-go/kortyx/providers"
)

// The Anthropic Messages wire format, as much of it as the server reads and writes. These types
// are the server's own (not the SDK's) so that what a client sends is decoded verbatim: a tool's
// input schema and the output schema stay the exact JSON the client sent.

type wireRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	Messages      []wireMessage   `json:"messages"`
	System        json.RawMessage `json:"system"`
	Tools         []wireTool      `json:"tools"`
	Stream        bool            `json:"stream"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	Thinking      *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
		Display      string `json:"display"`
	} `json:"thinking"`
	OutputConfig *struct {
		Effort string `json:"effort"`
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or content blocks
}

type wireInBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // of a tool_result: a string or text blocks
	IsError   bool            `json:"is_error"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireUsage struct {
	InputTokens              int                `json:"input_tokens"`
	OutputTokens             int                `json:"output_tokens"`
	CacheCreationInputTokens int                `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                `json:"cache_read_input_tokens"`
	OutputTokensDetails      *wireOutputDetails `json:"output_tokens_details,omitempty"`
}

type wireOutputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

type wireStopDetails struct {
	Type        string  `json:"type"`
	Category    *string `json:"category"`
	Explanation string  `json:"explanation"`
}

// wireMessageOut is a message (non-streamed answer, or the message of message_start).
type wireMessageOut struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	StopDetails  *wireStopDetails `json:"stop_details"`
	Usage        *wireUsage       `json:"usage,omitempty"`
}

type wireError struct {
	Type      string        `json:"type"`
	Error     wireErrorBody `json:"error"`
	RequestID string        `json:"request_id,omitempty"`
}

type wireErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// toRequest converts a decoded wire request into the providers.Request a Responder sees:
// system blocks become system messages, tool_result blocks tool messages (named after their
// tool_use), and an assistant message's thinking blocks its Continuation (a JSON array of them).
func (w *wireRequest) toRequest() providers.Request {
	req := providers.Request{Model: w.Model}
	for _, s := range textBlocks(w.System) {
		req.Messages = append(req.Messages, providers.Message{Role: providers.RoleSystem, Content: s})
	}
	names := map[string]string{} // tool_use id → tool name, to name tool results
	for _, m := range w.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			req.Messages = append(req.Messages, providers.Message{Role: m.Role, Content: s})
			continue
		}
		var blocks []json.RawMessage
		_ = json.Unmarshal(m.Content, &blocks)
		if m.Role == providers.RoleAssistant {
			msg := providers.Message{Role: providers.RoleAssistant}
			var thinking []json.RawMessage
			for _, raw := range blocks {
				var b wireInBlock
				_ = json.Unmarshal(raw, &b)
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					names[b.ID] = b.Name
					args := b.Input
					if len(args) == 0 {
						args = json.RawMessage(`{}`)
					}
					msg.ToolCalls = append(msg.ToolCalls, providers.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
				case "thinking", "redacted_thinking":
					thinking = append(thinking, raw)
				}
			}
			if len(thinking) > 0 {
				msg.Continuation, _ = json.Marshal(thinking)
			}
			req.Messages = append(req.Messages, msg)
			continue
		}
		text := -1 // index of the user message collecting text blocks
		for _, raw := range blocks {
			var b wireInBlock
			_ = json.Unmarshal(raw, &b)
			switch b.Type {
			case "text":
				if text < 0 {
					req.Messages = append(req.Messages, providers.Message{Role: m.Role})
					text = len(req.Messages) - 1
				}
				req.Messages[text].Content += b.Text
			case "tool_result":
				req.Messages = append(req.Messages, providers.Message{Role: providers.RoleTool, ToolCallID: b.ToolUseID,
					Name: names[b.ToolUseID], Content: strings.Join(textBlocks(b.Content), ""), IsError: b.IsError})
				text = -1
			}
		}
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, providers.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	o := &req.Options
	o.Temperature = w.Temperature
	o.MaxOutputTokens = w.MaxTokens
	o.StopSequences = w.StopSequences
	if th := w.Thinking; th != nil && th.Type == "enabled" {
		o.Reasoning = &providers.ReasoningOptions{MaxTokens: th.BudgetTokens, IncludeThoughts: th.Display == "summarized"}
	}
	if oc := w.OutputConfig; oc != nil {
		if oc.Effort != "" {
			if o.Reasoning == nil {
				o.Reasoning = &providers.ReasoningOptions{}
			}
			o.Reasoning.Effort = oc.Effort
		}
		if f := oc.Format; f != nil && f.Type == "json_schema" {
			o.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Schema: f.Schema}
		}
	}
	return req
}

// textBlocks reads content that is a string or a list of blocks, returning the texts.
func textBlocks(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []wireInBlock
	_ = json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// wireStop is Anthropic's stop_reason for a unified finish reason; other values are sent
// verbatim.
func wireStop(unified string) string {
	switch unified {
	case providers.FinishStop:
		return "end_turn"
	case providers.FinishLength:
		return "max_tokens"
	case providers.FinishToolCalls:
		return "tool_use"
	}
	return unified
}

// toWireUsage splits a turn's usage the way Anthropic reports it: input_tokens is the prompt
// without its cached parts (cache writes and reads are counted apart).
func toWireUsage(u providers.Usage) *wireUsage {
	w := &wireUsage{InputTokens: max(u.Input-u.CacheRead-u.CacheWrite, 0), OutputTokens: u.Output,
		CacheCreationInputTokens: u.CacheWrite, CacheReadInputTokens: u.CacheRead}
	if u.Reasoning > 0 {
		w.OutputTokensDetails = &wireOutputDetails{ThinkingTokens: u.Reasoning}
	}
	return w
}
