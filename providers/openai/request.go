package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// Provider options ([contracts.CallOptions.ProviderOptions]) this provider maps; any other key
// is reported as an unsupported warning.
const (
	OptionTopP              = "topP"              // number
	OptionSeed              = "seed"              // integer
	OptionUser              = "user"              // string
	OptionPresencePenalty   = "presencePenalty"   // number
	OptionFrequencyPenalty  = "frequencyPenalty"  // number
	OptionParallelToolCalls = "parallelToolCalls" // bool
	OptionServiceTier       = "serviceTier"       // string
	OptionStore             = "store"             // bool
	OptionMetadata          = "metadata"          // map of strings
)

// defaultSchemaName names a json-schema response format that has no name.
const defaultSchemaName = "response"

// emptyObjectSchema is the parameters schema of a tool that declares none.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func configError(format string, args ...any) *contracts.Error {
	return contracts.Errorf(contracts.CodeProviderConfiguration, format, args...)
}

// buildRequest maps a request onto go-openai's chat-completion request. Options it cannot send
// become warnings; a request that cannot be sent at all is a PROVIDER_CONFIGURATION error.
func buildRequest(req providers.Request) (goopenai.ChatCompletionRequest, []contracts.Warning, error) {
	var warnings []contracts.Warning
	warn := func(typ, setting, format string, args ...any) {
		warnings = append(warnings, contracts.Warning{Type: typ, Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	if req.Model == "" {
		return goopenai.ChatCompletionRequest{}, nil, configError("No model id: name the model, e.g. openai:gpt-4.1-mini.")
	}
	cr := goopenai.ChatCompletionRequest{Model: req.Model}

	for _, m := range req.Messages {
		om := goopenai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
		switch m.Role {
		case contracts.RoleAssistant:
			for _, c := range m.ToolCalls {
				om.ToolCalls = append(om.ToolCalls, goopenai.ToolCall{
					ID: c.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: c.Name, Arguments: argumentsText(c.Arguments)},
				})
			}
		case contracts.RoleTool:
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
			warn(contracts.WarningCompatibility, "temperature",
				"temperature %v cannot be sent by the go-openai client (it omits a zero temperature), so the server's default applies; use a small positive value such as 0.01 for near-deterministic output.", *t)
		} else {
			cr.Temperature = float32(*t)
		}
	}
	switch {
	case o.MaxOutputTokens > 0:
		cr.MaxCompletionTokens = o.MaxOutputTokens
	case o.MaxOutputTokens < 0:
		warn(contracts.WarningOther, "maxOutputTokens", "maxOutputTokens %d is negative; it was ignored.", o.MaxOutputTokens)
	}
	cr.Stop = o.StopSequences
	if r := o.Reasoning; r != nil {
		cr.ReasoningEffort = r.Effort
		if r.MaxTokens > 0 {
			warn(contracts.WarningUnsupported, "reasoning.maxTokens",
				"OpenAI-compatible chat completions have no reasoning token budget; use reasoning.effort (reasoning.maxTokens %d was ignored).", r.MaxTokens)
		}
		if r.IncludeThoughts {
			warn(contracts.WarningUnsupported, "reasoning.includeThoughts",
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
			warn(contracts.WarningUnsupported, "responseFormat.type",
				"Response format '%s' is not supported (supported: text, json, json-schema); the answer is free text.", f.Type)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.ProviderOptions)) {
		v := o.ProviderOptions[k]
		if v == nil {
			continue
		}
		setting := "providerOptions." + k
		bad := func(want string) {
			warn(contracts.WarningOther, setting, "%s must be %s (got %T); it was ignored.", setting, want, v)
		}
		switch k {
		case OptionTopP:
			f, ok := number(v)
			switch {
			case !ok:
				bad("a number")
			case float32(f) == 0:
				warn(contracts.WarningCompatibility, setting,
					"topP 0 cannot be sent by the go-openai client (it omits a zero top_p), so the server's default applies.")
			default:
				cr.TopP = float32(f)
			}
		case OptionPresencePenalty, OptionFrequencyPenalty:
			f, ok := number(v)
			if !ok {
				bad("a number")
				continue
			}
			// Zero is the API's default, so omitting it changes nothing.
			if k == OptionPresencePenalty {
				cr.PresencePenalty = float32(f)
			} else {
				cr.FrequencyPenalty = float32(f)
			}
		case OptionSeed:
			f, ok := number(v)
			if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				bad("an integer")
				continue
			}
			seed := int(f)
			cr.Seed = &seed
		case OptionUser, OptionServiceTier:
			s, ok := v.(string)
			if !ok {
				bad("a string")
				continue
			}
			if k == OptionUser {
				cr.User = s
			} else {
				cr.ServiceTier = goopenai.ServiceTier(s)
			}
		case OptionParallelToolCalls, OptionStore:
			b, ok := v.(bool)
			if !ok {
				bad("a boolean")
				continue
			}
			if k == OptionStore {
				cr.Store = b // false is the API's default
			} else {
				cr.ParallelToolCalls = b
			}
		case OptionMetadata:
			md, ok := stringMap(v)
			if !ok {
				bad("an object of strings")
				continue
			}
			cr.Metadata = md
		default:
			warn(contracts.WarningUnsupported, setting,
				"The openai provider does not know provider option '%s'; it was ignored.", k)
		}
	}
	return cr, warnings, nil
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

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func stringMap(v any) (map[string]string, bool) {
	switch m := v.(type) {
	case map[string]string:
		return m, true
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, x := range m {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out[k] = s
		}
		return out, true
	}
	return nil, false
}
