package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// ProviderOptions are the OpenAI options of a call: [providers.CallOptions.ProviderOptions]
// under the provider's id (default "openai"), decoded by [providers.DecodeOptions]:
//
//	ProviderOptions: map[string]any{"openai": map[string]any{"seed": 7, "serviceTier": "flex"}}
//
// Any other key under the id is reported as an unsupported warning; a value of the wrong type is
// a PROVIDER_CONFIGURATION error. Each field maps to the chat-completions field of the same
// meaning.
type ProviderOptions struct {
	TopP              *float64          `json:"topP,omitempty"`              // top_p
	Seed              *int64            `json:"seed,omitempty"`              // seed
	User              string            `json:"user,omitempty"`              // user
	PresencePenalty   *float64          `json:"presencePenalty,omitempty"`   // presence_penalty
	FrequencyPenalty  *float64          `json:"frequencyPenalty,omitempty"`  // frequency_penalty
	ParallelToolCalls *bool             `json:"parallelToolCalls,omitempty"` // parallel_tool_calls
	ServiceTier       string            `json:"serviceTier,omitempty"`       // service_tier
	Store             *bool             `json:"store,omitempty"`             // store
	Metadata          map[string]string `json:"metadata,omitempty"`          // metadata
}

// The keys of [ProviderOptions].
const (
	optionTopP              = "topP"
	optionSeed              = "seed"
	optionUser              = "user"
	optionPresencePenalty   = "presencePenalty"
	optionFrequencyPenalty  = "frequencyPenalty"
	optionParallelToolCalls = "parallelToolCalls"
	optionServiceTier       = "serviceTier"
	optionStore             = "store"
	optionMetadata          = "metadata"
)

// legacyOptions are the keys of [ProviderOptions] that earlier versions read at the top level of
// ProviderOptions; they still apply there, with a deprecation warning.
var legacyOptions = []string{optionFrequencyPenalty, optionMetadata, optionParallelToolCalls, optionPresencePenalty,
	optionSeed, optionServiceTier, optionStore, optionTopP, optionUser}

// defaultSchemaName names a json-schema response format that has no name.
const defaultSchemaName = "response"

// emptyObjectSchema is the parameters schema of a tool that declares none.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func configError(format string, args ...any) *contracts.Error {
	return contracts.Errorf(contracts.CodeProviderConfiguration, format, args...)
}

// buildRequest maps a request onto go-openai's chat-completion request. Options it cannot send
// become warnings; a request that cannot be sent at all is a PROVIDER_CONFIGURATION error.
func buildRequest(id string, req providers.Request) (goopenai.ChatCompletionRequest, []providers.Warning, error) {
	var warnings []providers.Warning
	warn := func(typ, setting, format string, args ...any) {
		warnings = append(warnings, providers.Warning{Type: typ, Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	if req.Model == "" {
		return goopenai.ChatCompletionRequest{}, nil, configError("No model id: name the model, e.g. openai:gpt-4.1-mini.")
	}
	cr := goopenai.ChatCompletionRequest{Model: req.Model}

	for _, m := range req.Messages {
		om := goopenai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
		switch m.Role {
		case providers.RoleAssistant:
			for _, c := range m.ToolCalls {
				om.ToolCalls = append(om.ToolCalls, goopenai.ToolCall{
					ID: c.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: c.Name, Arguments: argumentsText(c.Arguments)},
				})
			}
		case providers.RoleTool:
			// A failed tool (IsError) reports its failure in Content, sent as is.
			om.ToolCallID = m.ToolCallID
			if om.Content == "" && len(m.StructuredContent) > 0 {
				om.Content = string(m.StructuredContent)
			}
		}
		cr.Messages = append(cr.Messages, om)
	}

	for _, t := range req.Tools {
		schema := bytes.TrimSpace(t.InputSchema)
		switch {
		case len(schema) == 0 || string(schema) == "null":
			schema = emptyObjectSchema
		case !json.Valid(schema):
			return cr, nil, configError("The input schema of tool '%s' is not valid JSON.", t.Name)
		}
		cr.Tools = append(cr.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: json.RawMessage(schema),
		}})
	}

	o := req.Options
	if t := o.Temperature; t != nil {
		if float32(*t) == 0 {
			warn(providers.WarningCompatibility, "temperature",
				"temperature %v cannot be sent by the go-openai client (it omits a zero temperature), so the server's default applies; use a small positive value such as 0.01 for near-deterministic output.", *t)
		} else {
			cr.Temperature = float32(*t)
		}
	}
	switch {
	case o.MaxOutputTokens > 0:
		cr.MaxCompletionTokens = o.MaxOutputTokens
	case o.MaxOutputTokens < 0:
		warn(providers.WarningOther, "maxOutputTokens", "maxOutputTokens %d is negative; it was ignored.", o.MaxOutputTokens)
	}
	cr.Stop = o.StopSequences
	if r := o.Reasoning; r != nil {
		cr.ReasoningEffort = r.Effort
		if r.MaxTokens > 0 {
			warn(providers.WarningUnsupported, "reasoning.maxTokens",
				"OpenAI-compatible chat completions have no reasoning token budget; use reasoning.effort (reasoning.maxTokens %d was ignored).", r.MaxTokens)
		}
		if r.IncludeThoughts {
			warn(providers.WarningUnsupported, "reasoning.includeThoughts",
				"OpenAI-compatible chat completions do not return the model's thoughts; reasoning.includeThoughts was ignored.")
		}
	}
	if f := o.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
			if f.Type == "text" {
				cr.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeText}
			}
		case "json":
			cr.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
		case "json-schema":
			schema := bytes.TrimSpace(f.Schema)
			if len(schema) == 0 || !json.Valid(schema) {
				return cr, nil, configError("Response format json-schema needs a schema that is valid JSON.")
			}
			name := f.Name
			if name == "" {
				name = defaultSchemaName
			}
			cr.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
				Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
					Name: name, Schema: json.RawMessage(schema), Strict: true,
				},
			}
		default:
			warn(providers.WarningUnsupported, "responseFormat.type",
				"Response format '%s' is not supported (supported: text, json, json-schema); the answer is free text.", f.Type)
		}
	}
	po, more, err := providerOptions(o.ProviderOptions, id)
	if err != nil {
		return cr, nil, err
	}
	warnings = append(warnings, more...)
	if po.TopP != nil {
		if float32(*po.TopP) == 0 {
			warn(providers.WarningCompatibility, "providerOptions."+id+".topP",
				"topP 0 cannot be sent by the go-openai client (it omits a zero top_p), so the server's default applies.")
		} else {
			cr.TopP = float32(*po.TopP)
		}
	}
	// Zero penalties and store false are the API's defaults, so omitting them changes nothing.
	if po.PresencePenalty != nil {
		cr.PresencePenalty = float32(*po.PresencePenalty)
	}
	if po.FrequencyPenalty != nil {
		cr.FrequencyPenalty = float32(*po.FrequencyPenalty)
	}
	if po.Seed != nil {
		seed := int(*po.Seed)
		cr.Seed = &seed
	}
	cr.User = po.User
	cr.ServiceTier = goopenai.ServiceTier(po.ServiceTier)
	if po.Store != nil {
		cr.Store = *po.Store
	}
	if po.ParallelToolCalls != nil {
		cr.ParallelToolCalls = *po.ParallelToolCalls
	}
	cr.Metadata = po.Metadata
	return cr, warnings, nil
}

// providerOptions decodes the provider's options: the object under its id, plus the keys of
// [ProviderOptions] found at the top level (deprecated; the object's own keys win).
func providerOptions(opts map[string]any, id string) (ProviderOptions, []providers.Warning, error) {
	var warnings []providers.Warning
	var legacy map[string]any
	for _, k := range legacyOptions {
		v, ok := opts[k]
		if !ok || k == id {
			continue
		}
		if legacy == nil {
			legacy = map[string]any{}
		}
		legacy[k] = v
		warnings = append(warnings, providers.Warning{Type: providers.WarningDeprecated, Setting: "providerOptions." + k,
			Message: fmt.Sprintf("providerOptions.%s is read for compatibility: move it under providerOptions.%s.%s (provider options are keyed by provider id).", k, id, k)})
	}
	if legacy != nil {
		own := map[string]any{}
		b, err := json.Marshal(opts[id])
		if err == nil && json.Unmarshal(b, &own) == nil { // else DecodeOptions reports the value
			maps.Copy(legacy, own)
			opts = map[string]any{id: legacy}
		}
	}
	po, more, err := providers.DecodeOptions[ProviderOptions](opts, id)
	if err != nil {
		return po, nil, err
	}
	return po, append(warnings, more...), nil
}

// argumentsText is the wire form of tool call arguments: the JSON text, or the text itself when
// the arguments are a JSON string (how invalid arguments from a model are kept, see
// [Provider.Generate]), so a conversation is sent back as the model wrote it.
func argumentsText(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "{}"
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}
