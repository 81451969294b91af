package google

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// ProviderOptions are Gemini's own generation options, under the provider's id in
// [providers.CallOptions.ProviderOptions] ([ID], or [Options.ID] for a provider made with
// another id; the value is a ProviderOptions, a pointer to one, or the same fields as a JSON
// object), decoded by
// [providers.DecodeOptions]: a key it does not declare is an unsupported warning, a value of the
// wrong type a PROVIDER_CONFIGURATION error. Every field is optional; a field set here wins over
// the [providers.CallOptions] field of the same meaning.
type ProviderOptions struct {
	// ThinkingBudget is the thinking token budget (thinkingConfig.thinkingBudget): 0 turns
	// thinking off where the model allows it, -1 lets the model decide.
	ThinkingBudget *int `json:"thinkingBudget,omitempty"`
	// IncludeThoughts asks for thought summaries (kept in ProviderMetadata["thoughts"], never
	// in the text).
	IncludeThoughts *bool `json:"includeThoughts,omitempty"`
	// ThinkingLevel is "minimal", "low", "medium" or "high" (Gemini 3 models).
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	// SafetySettings set the block threshold per harm category.
	SafetySettings []SafetySetting `json:"safetySettings,omitempty"`
	TopK           *float64        `json:"topK,omitempty"`
	TopP           *float64        `json:"topP,omitempty"`
	Seed           *int            `json:"seed,omitempty"`
	// PresencePenalty and FrequencyPenalty penalize repeated tokens.
	PresencePenalty  *float64 `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequencyPenalty,omitempty"`
	// CachedContent names a context cache ("cachedContents/…") the request uses.
	CachedContent string `json:"cachedContent,omitempty"`
}

// SafetySetting is one safety threshold, in Gemini's words: Category "HARM_CATEGORY_HARASSMENT",
// "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_SEXUALLY_EXPLICIT",
// "HARM_CATEGORY_DANGEROUS_CONTENT" or "HARM_CATEGORY_CIVIC_INTEGRITY"; Threshold
// "BLOCK_LOW_AND_ABOVE", "BLOCK_MEDIUM_AND_ABOVE", "BLOCK_ONLY_HIGH", "BLOCK_NONE" or "OFF".
type SafetySetting struct {
	Category  string `json:"category"`
	Threshold string `json:"threshold"`
}

// continuation is what a response keeps in [providers.Response.Continuation] to be sent
// back with the assistant message: the model's parts as received (thought signatures
// included, function call ids absent where the model sent none).
type continuation struct {
	Google struct {
		Parts []*genai.Part `json:"parts"`
	} `json:"google"`
}

type built struct {
	contents []*genai.Content
	config   *genai.GenerateContentConfig
	warnings []providers.Warning
}

func configError(format string, args ...any) *contracts.Error {
	return contracts.Errorf(contracts.CodeProviderConfiguration, format, args...)
}

// buildRequest maps a request onto the SDK's contents and config; id is the provider's id (the
// key of its provider options). Options it cannot send
// become warnings; a request that cannot be sent at all is a PROVIDER_CONFIGURATION error.
func buildRequest(req providers.Request, id string) (*built, error) {
	b := &built{config: &genai.GenerateContentConfig{AutomaticContinuation: genai.Ptr(false)}}
	warn := func(typ, setting, format string, args ...any) {
		b.warnings = append(b.warnings, providers.Warning{Type: typ, Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	if req.Model == "" {
		return nil, configError("No model id: name the model, e.g. google:gemini-2.5-flash.")
	}
	if err := b.messages(req.Messages, warn); err != nil {
		return nil, err
	}
	if len(req.Tools) > 0 {
		tool := &genai.Tool{}
		for _, t := range req.Tools {
			fd := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			schema := bytes.TrimSpace(t.InputSchema)
			if len(schema) > 0 && string(schema) != "null" {
				var v any
				if err := json.Unmarshal(schema, &v); err != nil {
					return nil, configError("The input schema of tool '%s' is not valid JSON.", t.Name)
				}
				fd.ParametersJsonSchema = v
			}
			tool.FunctionDeclarations = append(tool.FunctionDeclarations, fd)
		}
		b.config.Tools = []*genai.Tool{tool}
	}

	o := req.Options
	cfg := b.config
	if t := o.Temperature; t != nil {
		cfg.Temperature = genai.Ptr(float32(*t))
	}
	switch {
	case o.MaxOutputTokens > 0:
		cfg.MaxOutputTokens = int32(min(o.MaxOutputTokens, 1<<31-1))
	case o.MaxOutputTokens < 0:
		warn(providers.WarningOther, "maxOutputTokens", "maxOutputTokens %d is negative; it was ignored.", o.MaxOutputTokens)
	}
	cfg.StopSequences = o.StopSequences
	var thinking genai.ThinkingConfig
	if r := o.Reasoning; r != nil {
		if r.MaxTokens > 0 {
			thinking.ThinkingBudget = genai.Ptr(int32(min(r.MaxTokens, 1<<31-1)))
		}
		thinking.IncludeThoughts = r.IncludeThoughts
		if r.Effort != "" {
			if lvl, ok := thinkingLevel(r.Effort); ok {
				thinking.ThinkingLevel = lvl
			} else {
				warn(providers.WarningUnsupported, "reasoning.effort",
					"reasoning.effort '%s' has no Gemini thinking level (known: minimal, low, medium, high); it was ignored.", r.Effort)
			}
		}
	}
	if f := o.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
		case "json":
			cfg.ResponseMIMEType = "application/json"
		case "json-schema":
			var v any
			if err := json.Unmarshal(bytes.TrimSpace(f.Schema), &v); err != nil || v == nil {
				return nil, configError("Response format json-schema needs a schema that is valid JSON.")
			}
			cfg.ResponseMIMEType = "application/json"
			cfg.ResponseJsonSchema = v
		default:
			warn(providers.WarningUnsupported, "responseFormat.type",
				"Response format '%s' is not supported (supported: text, json, json-schema); the answer is free text.", f.Type)
		}
	}
	po, optWarnings, err := readProviderOptions(o.ProviderOptions, id)
	if err != nil {
		return nil, err
	}
	b.warnings = append(b.warnings, optWarnings...)
	if po.ThinkingBudget != nil {
		thinking.ThinkingBudget = genai.Ptr(int32(*po.ThinkingBudget))
	}
	if po.IncludeThoughts != nil {
		thinking.IncludeThoughts = *po.IncludeThoughts
	}
	if po.ThinkingLevel != "" {
		if lvl, ok := thinkingLevel(po.ThinkingLevel); ok {
			thinking.ThinkingLevel = lvl
		} else {
			warn(providers.WarningOther, "providerOptions."+id+".thinkingLevel",
				"thinkingLevel '%s' is not one of minimal, low, medium, high; it was ignored.", po.ThinkingLevel)
		}
	}
	if thinking != (genai.ThinkingConfig{}) {
		cfg.ThinkingConfig = &thinking
	}
	for _, s := range po.SafetySettings {
		cfg.SafetySettings = append(cfg.SafetySettings, &genai.SafetySetting{
			Category: genai.HarmCategory(s.Category), Threshold: genai.HarmBlockThreshold(s.Threshold)})
	}
	f32 := func(p *float64) *float32 {
		if p == nil {
			return nil
		}
		return genai.Ptr(float32(*p))
	}
	cfg.TopK, cfg.TopP = f32(po.TopK), f32(po.TopP)
	cfg.PresencePenalty, cfg.FrequencyPenalty = f32(po.PresencePenalty), f32(po.FrequencyPenalty)
	if po.Seed != nil {
		cfg.Seed = genai.Ptr(int32(*po.Seed))
	}
	cfg.CachedContent = po.CachedContent
	return b, nil
}

func thinkingLevel(s string) (genai.ThinkingLevel, bool) {
	switch strings.ToLower(s) {
	case "minimal":
		return genai.ThinkingLevelMinimal, true
	case "low":
		return genai.ThinkingLevelLow, true
	case "medium":
		return genai.ThinkingLevelMedium, true
	case "high":
		return genai.ThinkingLevelHigh, true
	}
	return "", false
}

// readProviderOptions decodes the provider's options under its id with
// [providers.DecodeOptions]: an unknown key is an unsupported warning, a value of the wrong type
// a PROVIDER_CONFIGURATION error; keys under other ids are other providers' and are not read. A
// ProviderOptions value or a pointer to one is taken as it is (a nil pointer as none).
func readProviderOptions(opts map[string]any, id string) (ProviderOptions, []providers.Warning, error) {
	switch x := opts[id].(type) {
	case ProviderOptions:
		return x, nil, nil
	case *ProviderOptions:
		if x == nil {
			return ProviderOptions{}, nil, nil
		}
		return *x, nil, nil
	}
	return providers.DecodeOptions[ProviderOptions](opts, id)
}

// messages maps the conversation: system messages become the system instruction, assistant
// messages "model" contents (their continuation's parts when they carry one), tool results
// function responses (consecutive ones in one "user" content).
func (b *built) messages(msgs []providers.Message, warn func(typ, setting, format string, args ...any)) error {
	var system []*genai.Part
	// The calls the conversation requested, by id: their name, and whether the model sent the
	// id itself (a function response names the id only then).
	type callInfo struct {
		name      string
		modelSent bool
	}
	calls := map[string]callInfo{}
	lateSystem := false
	for i, m := range msgs {
		switch m.Role {
		case providers.RoleSystem:
			if len(b.contents) > 0 {
				lateSystem = true
			}
			system = append(system, &genai.Part{Text: m.Content})
		case providers.RoleUser:
			b.contents = append(b.contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: m.Content}}})
		case providers.RoleAssistant:
			parts := continuationParts(m)
			if parts == nil {
				if m.Content != "" {
					parts = append(parts, &genai.Part{Text: m.Content})
				}
				for _, c := range m.ToolCalls {
					parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: c.ID, Name: c.Name, Args: argsObject(c.Arguments)}})
				}
			}
			k := 0
			for _, p := range parts {
				if p.FunctionCall == nil {
					continue
				}
				if k < len(m.ToolCalls) {
					calls[m.ToolCalls[k].ID] = callInfo{name: p.FunctionCall.Name, modelSent: p.FunctionCall.ID != ""}
				}
				k++
			}
			if len(parts) == 0 {
				parts = []*genai.Part{{Text: ""}}
			}
			b.contents = append(b.contents, &genai.Content{Role: genai.RoleModel, Parts: parts})
		case providers.RoleTool:
			ci, known := calls[m.ToolCallID]
			name := m.Name
			if name == "" {
				name = ci.name
			}
			if name == "" {
				return configError("Tool result %d (call id '%s') names no tool and answers no call of the conversation: Gemini matches function responses by name.", i, m.ToolCallID)
			}
			fr := &genai.FunctionResponse{Name: name, Response: toolResponse(m)}
			if !known || ci.modelSent {
				fr.ID = m.ToolCallID
			}
			part := &genai.Part{FunctionResponse: fr}
			if n := len(b.contents); n > 0 && b.contents[n-1].Role == genai.RoleUser && isResponses(b.contents[n-1]) {
				b.contents[n-1].Parts = append(b.contents[n-1].Parts, part)
			} else {
				b.contents = append(b.contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{part}})
			}
		default:
			return configError("Message %d has role '%s'; Gemini takes system, user, assistant and tool messages.", i, m.Role)
		}
	}
	if lateSystem {
		warn(providers.WarningCompatibility, "messages",
			"Gemini has one system instruction: system messages after the start of the conversation were moved into it.")
	}
	if len(system) > 0 {
		b.config.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: system}
	}
	return nil
}

func isResponses(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p.FunctionResponse == nil {
			return false
		}
	}
	return len(c.Parts) > 0
}

// continuationParts returns the parts an assistant message's continuation kept, when it was
// made by this provider for the same tool calls; nil otherwise.
func continuationParts(m providers.Message) []*genai.Part {
	if len(m.Continuation) == 0 {
		return nil
	}
	var c continuation
	if json.Unmarshal(m.Continuation, &c) != nil || len(c.Google.Parts) == 0 {
		return nil
	}
	var names []string
	for _, p := range c.Google.Parts {
		if p == nil {
			return nil
		}
		if p.FunctionCall != nil {
			names = append(names, p.FunctionCall.Name)
		}
	}
	if len(names) != len(m.ToolCalls) {
		return nil
	}
	for i, c := range m.ToolCalls {
		if c.Name != names[i] {
			return nil
		}
	}
	return c.Google.Parts
}

// toolResponse is the response object of a tool result: {"error": content} for a failure,
// else {"output": the structured result, or the content}.
func toolResponse(m providers.Message) map[string]any {
	if m.IsError {
		return map[string]any{"error": m.Content}
	}
	if len(m.StructuredContent) > 0 {
		var v any
		if json.Unmarshal(m.StructuredContent, &v) == nil {
			return map[string]any{"output": v}
		}
	}
	return map[string]any{"output": m.Content}
}

// argsObject is the args object of a function call: Gemini takes an object, so arguments
// that are not one (invalid JSON a model wrote, kept as a string) go under "arguments".
func argsObject(raw json.RawMessage) map[string]any {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return map[string]any{}
	}
	var obj map[string]any
	if json.Unmarshal(t, &obj) == nil && obj != nil {
		return obj
	}
	var v any
	if json.Unmarshal(t, &v) != nil {
		v = string(t)
	}
	return map[string]any{"arguments": v}
}
