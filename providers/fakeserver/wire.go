package fakeserver

import (
	"encoding/json"
	"strings"

	"github.com/kortyx-go/kortyx/providers"
)

// The OpenAI chat-completions wire format, as much of it as the server reads and writes. These
// types are the server's own (not a client library's) so that what a client sends is decoded
// verbatim: a tool's parameters schema stays the exact JSON the client sent.

type wireRequest struct {
	Model               string              `json:"model"`
	Messages            []wireMessage       `json:"messages"`
	Tools               []wireTool          `json:"tools"`
	Stream              bool                `json:"stream"`
	StreamOptions       *wireStreamOptions  `json:"stream_options"`
	Temperature         *float64            `json:"temperature"`
	MaxCompletionTokens int                 `json:"max_completion_tokens"`
	MaxTokens           int                 `json:"max_tokens"`
	Stop                json.RawMessage     `json:"stop"`
	ResponseFormat      *wireResponseFormat `json:"response_format"`
	ReasoningEffort     string              `json:"reasoning_effort"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wireToolCall struct {
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	PromptTokensDetails     *wirePromptDetails `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *wireOutputDetails `json:"completion_tokens_details,omitempty"`
}

type wirePromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type wireOutputDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// wireCompletion is a chat.completion (non-streamed) or chat.completion.chunk (streamed) body.
type wireCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint,omitempty"`
	Choices           []wireChoice `json:"choices"`
	Usage             *wireUsage   `json:"usage,omitempty"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	Message      *wireOutMsg `json:"message,omitempty"`
	Delta        *wireOutMsg `json:"delta,omitempty"`
	FinishReason *string     `json:"finish_reason"`
}

type wireOutMsg struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	Refusal   *string        `json:"refusal,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireError struct {
	Error wireErrorBody `json:"error"`
}

type wireErrorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// toRequest converts a decoded wire request into the providers.Request a Responder sees.
func (w *wireRequest) toRequest() providers.Request {
	req := providers.Request{Model: w.Model}
	names := map[string]string{} // tool call id → tool name, to name tool results
	for _, m := range w.Messages {
		msg := providers.Message{Role: m.Role, Content: contentText(m.Content), Name: m.Name}
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
			msg.ToolCalls = append(msg.ToolCalls, providers.ToolCall{
				ID: c.ID, Name: c.Function.Name, Arguments: argumentsJSON(c.Function.Arguments),
			})
		}
		if m.Role == providers.RoleTool {
			msg.ToolCallID = m.ToolCallID
			if msg.Name == "" {
				msg.Name = names[m.ToolCallID]
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, providers.ToolDefinition{
			Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters,
		})
	}
	req.Options.Temperature = w.Temperature
	req.Options.MaxOutputTokens = w.MaxCompletionTokens
	if req.Options.MaxOutputTokens == 0 {
		req.Options.MaxOutputTokens = w.MaxTokens
	}
	if len(w.Stop) > 0 {
		var one string
		if json.Unmarshal(w.Stop, &one) == nil {
			req.Options.StopSequences = []string{one}
		} else {
			_ = json.Unmarshal(w.Stop, &req.Options.StopSequences)
		}
	}
	if w.ReasoningEffort != "" {
		req.Options.Reasoning = &providers.ReasoningOptions{Effort: w.ReasoningEffort}
	}
	if rf := w.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_object":
			req.Options.ResponseFormat = &providers.ResponseFormat{Type: "json"}
		case "json_schema":
			f := &providers.ResponseFormat{Type: "json-schema"}
			if rf.JSONSchema != nil {
				f.Name, f.Schema = rf.JSONSchema.Name, rf.JSONSchema.Schema
			}
			req.Options.ResponseFormat = f
		case "text":
			req.Options.ResponseFormat = &providers.ResponseFormat{Type: "text"}
		}
	}
	return req
}

// contentText reads a message content: a string, null, or an array of parts whose text parts
// are joined.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

// argumentsJSON turns wire arguments (a string holding JSON) into a raw JSON value; text that
// is not JSON becomes a JSON string.
func argumentsJSON(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// wireFinish is the OpenAI word for a unified finish reason; other values are sent verbatim.
func wireFinish(unified string) string {
	switch unified {
	case providers.FinishToolCalls:
		return "tool_calls"
	case providers.FinishContentFilter:
		return "content_filter"
	}
	return unified
}

func toWireUsage(u providers.Usage) *wireUsage {
	w := &wireUsage{PromptTokens: u.Input, CompletionTokens: u.Output, TotalTokens: u.Total}
	if w.TotalTokens == 0 {
		w.TotalTokens = u.Input + u.Output
	}
	if u.CacheRead > 0 {
		w.PromptTokensDetails = &wirePromptDetails{CachedTokens: u.CacheRead}
	}
	if u.Reasoning > 0 {
		w.CompletionTokensDetails = &wireOutputDetails{ReasoningTokens: u.Reasoning}
	}
	return w
}
