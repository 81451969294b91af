package fakegemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/providers"
)

// The Gemini API's JSON (v1beta), as far as the server reads and writes it.

type wireRequest struct {
	Contents          []wireContent    `json:"contents"`
	SystemInstruction *wireContent     `json:"systemInstruction,omitempty"`
	Tools             []wireTool       `json:"tools,omitempty"`
	GenerationConfig  *wireGenConfig   `json:"generationConfig,omitempty"`
	SafetySettings    []map[string]any `json:"safetySettings,omitempty"`
	CachedContent     string           `json:"cachedContent,omitempty"`
}

type wireContent struct {
	Role  string     `json:"role,omitempty"`
	Parts []wirePart `json:"parts"`
}

type wirePart struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	FunctionCall     *wireFunctionCall `json:"functionCall,omitempty"`
	FunctionResponse *wireFunctionResp `json:"functionResponse,omitempty"`
}

type wireFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type wireFunctionResp struct {
	ID       string                     `json:"id,omitempty"`
	Name     string                     `json:"name"`
	Response map[string]json.RawMessage `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []wireFunctionDecl `json:"functionDeclarations,omitempty"`
}

type wireFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
}

type wireGenConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	Seed               *int            `json:"seed,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ResponseMIMEType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ThinkingConfig     *wireThinking   `json:"thinkingConfig,omitempty"`
}

type wireThinking struct {
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// toRequest decodes a request into Kortyx's terms: the system instruction becomes one system
// message per part, "model" contents assistant messages (a function call without an id is
// "call-<name>-<n>", n counting the conversation's calls, as the google provider names them),
// function responses tool messages (a response without an id answers the earliest unanswered
// call of that name), and the
// generation config [providers.CallOptions]; the Gemini-only fields go to
// ProviderOptions["google"] under the names of google.ProviderOptions.
func (wr wireRequest) toRequest(model string) providers.Request {
	req := providers.Request{Model: model}
	if si := wr.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			req.Messages = append(req.Messages, providers.Message{Role: providers.RoleSystem, Content: p.Text})
		}
	}
	type pending struct{ id, name string }
	var open []pending // calls not answered yet
	calls := 0         // function calls so far
	for _, c := range wr.Contents {
		switch c.Role {
		case "model":
			m := providers.Message{Role: providers.RoleAssistant}
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					calls++
					id := p.FunctionCall.ID
					if id == "" {
						id = fmt.Sprintf("call-%s-%d", p.FunctionCall.Name, calls)
					}
					args := p.FunctionCall.Args
					if len(args) == 0 {
						args = json.RawMessage(`{}`)
					}
					m.ToolCalls = append(m.ToolCalls, providers.ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: args})
					open = append(open, pending{id, p.FunctionCall.Name})
				case !p.Thought:
					m.Content += p.Text
				}
			}
			req.Messages = append(req.Messages, m)
		default:
			var text []string
			for _, p := range c.Parts {
				if fr := p.FunctionResponse; fr != nil {
					id := fr.ID
					for i, o := range open {
						if (id != "" && o.id == id) || (id == "" && o.name == fr.Name) {
							id = o.id
							open = append(open[:i], open[i+1:]...)
							break
						}
					}
					req.Messages = append(req.Messages, toolMessage(id, fr))
					continue
				}
				text = append(text, p.Text)
			}
			if len(text) > 0 {
				req.Messages = append(req.Messages, providers.Message{Role: providers.RoleUser, Content: strings.Join(text, "")})
			}
		}
	}
	for _, t := range wr.Tools {
		for _, d := range t.FunctionDeclarations {
			schema := d.ParametersJSONSchema
			if len(schema) == 0 {
				schema = d.Parameters
			}
			req.Tools = append(req.Tools, providers.ToolDefinition{Name: d.Name, Description: d.Description, InputSchema: schema})
		}
	}
	po := map[string]any{}
	if g := wr.GenerationConfig; g != nil {
		o := &req.Options
		o.Temperature = g.Temperature
		o.MaxOutputTokens = g.MaxOutputTokens
		o.StopSequences = g.StopSequences
		switch {
		case len(g.ResponseJSONSchema) > 0:
			o.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Schema: g.ResponseJSONSchema}
		case len(g.ResponseSchema) > 0:
			o.ResponseFormat = &providers.ResponseFormat{Type: "json-schema", Schema: g.ResponseSchema}
		case g.ResponseMIMEType == "application/json":
			o.ResponseFormat = &providers.ResponseFormat{Type: "json"}
		}
		if th := g.ThinkingConfig; th != nil {
			r := &providers.ReasoningOptions{IncludeThoughts: th.IncludeThoughts, Effort: strings.ToLower(th.ThinkingLevel)}
			if th.ThinkingBudget != nil {
				po["thinkingBudget"] = *th.ThinkingBudget
				r.MaxTokens = max(*th.ThinkingBudget, 0)
			}
			if th.IncludeThoughts {
				po["includeThoughts"] = true
			}
			if th.ThinkingLevel != "" {
				po["thinkingLevel"] = strings.ToLower(th.ThinkingLevel)
			}
			if *r != (providers.ReasoningOptions{}) {
				o.Reasoning = r
			}
		}
		for k, v := range map[string]*float64{"topK": g.TopK, "topP": g.TopP, "presencePenalty": g.PresencePenalty, "frequencyPenalty": g.FrequencyPenalty} {
			if v != nil {
				po[k] = *v
			}
		}
		if g.Seed != nil {
			po["seed"] = *g.Seed
		}
	}
	if len(wr.SafetySettings) > 0 {
		var list []any
		for _, s := range wr.SafetySettings {
			list = append(list, map[string]any{"category": s["category"], "threshold": s["threshold"]})
		}
		po["safetySettings"] = list
	}
	if wr.CachedContent != "" {
		po["cachedContent"] = wr.CachedContent
	}
	if len(po) > 0 {
		req.Options.ProviderOptions = map[string]any{"google": po}
	}
	return req
}

// toolMessage is a function response as a tool message: {"error": …} is a failed tool
// (IsError, the error as Content); {"output": …} is its result (a string as Content, anything
// else as StructuredContent with its JSON text as Content); any other object is the result.
func toolMessage(id string, fr *wireFunctionResp) providers.Message {
	m := providers.Message{Role: providers.RoleTool, ToolCallID: id, Name: fr.Name}
	text := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	if e, ok := fr.Response["error"]; ok {
		m.IsError = true
		m.Content = text(e)
		return m
	}
	out, ok := fr.Response["output"]
	if !ok {
		out, _ = json.Marshal(fr.Response)
	}
	var s string
	if json.Unmarshal(out, &s) == nil {
		m.Content = s
		return m
	}
	m.Content = string(out)
	m.StructuredContent = out
	return m
}

// Response shapes.

type wireResponse struct {
	Candidates     []wireCandidate     `json:"candidates,omitempty"`
	PromptFeedback *wirePromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *wireUsage          `json:"usageMetadata,omitempty"`
	ModelVersion   string              `json:"modelVersion,omitempty"`
	ResponseID     string              `json:"responseId,omitempty"`
}

type wireCandidate struct {
	Content       *wireContent       `json:"content,omitempty"`
	FinishReason  string             `json:"finishReason,omitempty"`
	FinishMessage string             `json:"finishMessage,omitempty"`
	SafetyRatings []wireSafetyRating `json:"safetyRatings,omitempty"`
	Index         int                `json:"index"`
}

type wireSafetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked,omitempty"`
}

type wirePromptFeedback struct {
	BlockReason   string             `json:"blockReason"`
	SafetyRatings []wireSafetyRating `json:"safetyRatings,omitempty"`
}

type wireUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
}

type wireError struct {
	Error wireErrorBody `json:"error"`
}

type wireErrorBody struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details,omitempty"`
}
