package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// ProviderOptions are the Anthropic options of a pass, read from
// CallOptions.ProviderOptions["anthropic"] (under the provider's id): a ProviderOptions value,
// or a JSON object with these keys. An unknown key is an unsupported warning; a value of the
// wrong type is a PROVIDER_CONFIGURATION error.
type ProviderOptions struct {
	// Thinking is "adaptive" (the model decides how much to think), "enabled" (with
	// ThinkingBudget) or "disabled". Empty: enabled when ThinkingBudget or
	// Reasoning.MaxTokens is set, else the model's default.
	Thinking string `json:"thinking,omitempty"`
	// ThinkingBudget is the budget_tokens of enabled thinking (the API wants at least 1024 and
	// less than max_tokens). It takes precedence over Reasoning.MaxTokens.
	ThinkingBudget int `json:"thinkingBudget,omitempty"`
	// CacheControl sets the request's top-level cache_control, which marks the last cacheable
	// block for prompt caching: "ephemeral" (the API's default lifetime), "5m" or "1h".
	CacheControl string `json:"cacheControl,omitempty"`
	// CacheSystem marks the system prompt's last block with cache_control (lifetime as
	// CacheControl when that is "5m" or "1h").
	CacheSystem bool `json:"cacheSystem,omitempty"`
	// CacheTools marks the last tool definition with cache_control.
	CacheTools bool `json:"cacheTools,omitempty"`
	// UserID is sent as metadata.user_id.
	UserID string `json:"userId,omitempty"`
	// ServiceTier is "auto" or "standard_only".
	ServiceTier string `json:"serviceTier,omitempty"`
	// DisableParallelToolUse asks for at most one tool call per pass.
	DisableParallelToolUse bool `json:"disableParallelToolUse,omitempty"`
}

// continuationKind tags the continuation data of this provider: the thinking blocks of a
// response, to be sent back in the next request's assistant message.
const continuationKind = "anthropic"

type continuation struct {
	Provider string            `json:"provider"`
	Blocks   []json.RawMessage `json:"blocks"`
}

// wireBlock is a thinking or redacted_thinking block as the API sends and takes it.
type wireBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// wireFormat is output_config.format, sent with the schema's exact bytes.
type wireFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func configError(format string, args ...any) *contracts.Error {
	return contracts.Errorf(contracts.CodeProviderConfiguration, format, args...)
}

// buildParams maps a request onto the SDK's message parameters. Options it cannot send become
// warnings; a request that cannot be sent is a PROVIDER_CONFIGURATION error.
func buildParams(req providers.Request, defaultMaxTokens int, id string) (sdk.MessageNewParams, []providers.Warning, error) {
	var warnings []providers.Warning
	warn := func(typ, setting, format string, args ...any) {
		warnings = append(warnings, providers.Warning{Type: typ, Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	if req.Model == "" {
		return sdk.MessageNewParams{}, nil, configError("No model id: name the model, e.g. anthropic:claude-sonnet-4-5.")
	}
	po, more, err := providers.DecodeOptions[ProviderOptions](req.Options.ProviderOptions, id)
	if err != nil {
		return sdk.MessageNewParams{}, nil, err
	}
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: int64(defaultMaxTokens)}

	msgs, sys, foreign := messages(req.Messages)
	p.Messages, p.System = msgs, sys
	if foreign {
		warn(providers.WarningCompatibility, "messages.continuation",
			"An assistant message carries continuation data of another provider; it was not sent (thinking of another model cannot be continued).")
	}

	for _, t := range req.Tools {
		schema := bytes.TrimSpace(t.InputSchema)
		switch {
		case len(schema) == 0 || string(schema) == "null":
			schema = emptyObjectSchema
		case !json.Valid(schema) || schema[0] != '{':
			return p, nil, configError("The input schema of tool '%s' is not a JSON object.", t.Name)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema))}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}

	o := req.Options
	if o.Temperature != nil {
		warn(providers.WarningUnsupported, "temperature",
			"The Anthropic Messages API (version 2026-10-21, the SDK's) has no temperature; temperature %v was not sent.", *o.Temperature)
	}
	switch {
	case o.MaxOutputTokens > 0:
		p.MaxTokens = int64(o.MaxOutputTokens)
	case o.MaxOutputTokens < 0:
		warn(providers.WarningOther, "maxOutputTokens", "maxOutputTokens %d is negative; the default %d was sent.", o.MaxOutputTokens, defaultMaxTokens)
	}
	p.StopSequences = o.StopSequences

	// Thinking: the provider option, else Reasoning.MaxTokens as the budget.
	budget := po.ThinkingBudget
	if r := o.Reasoning; r != nil && budget == 0 && r.MaxTokens > 0 {
		budget = r.MaxTokens
	}
	mode := po.Thinking
	if mode == "" && budget > 0 {
		mode = "enabled"
	}
	summarized := o.Reasoning != nil && o.Reasoning.IncludeThoughts
	switch mode {
	case "":
		if summarized {
			warn(providers.WarningOther, "reasoning.includeThoughts",
				"reasoning.includeThoughts needs thinking: set reasoning.maxTokens or providerOptions.%s.thinking; it was ignored.", id)
		}
	case "enabled":
		if budget <= 0 {
			return p, nil, configError("providerOptions.%s.thinking 'enabled' needs a budget: set providerOptions.%s.thinkingBudget (at least 1024) or reasoning.maxTokens.", id, id)
		}
		e := &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}
		if summarized {
			e.Display = sdk.ThinkingConfigEnabledDisplaySummarized
		}
		p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: e}
	case "adaptive":
		a := &sdk.ThinkingConfigAdaptiveParam{}
		if summarized {
			a.Display = sdk.ThinkingConfigAdaptiveDisplaySummarized
		}
		p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: a}
	case "disabled":
		d := sdk.NewThinkingConfigDisabledParam()
		p.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &d}
	default:
		return p, nil, configError("providerOptions.%s.thinking must be adaptive, enabled or disabled (got %q).", id, mode)
	}
	if r := o.Reasoning; r != nil && r.Effort != "" {
		switch e := sdk.OutputConfigEffort(r.Effort); e {
		case sdk.OutputConfigEffortLow, sdk.OutputConfigEffortMedium, sdk.OutputConfigEffortHigh, sdk.OutputConfigEffortXhigh, sdk.OutputConfigEffortMax:
			p.OutputConfig.Effort = e
		default:
			warn(providers.WarningUnsupported, "reasoning.effort",
				"reasoning.effort %q is not one of Anthropic's (low, medium, high, xhigh, max); it was not sent.", r.Effort)
		}
	}

	if f := o.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
		case "json":
			p.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](wireFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)})
		case "json-schema":
			schema := bytes.TrimSpace(f.Schema)
			if len(schema) == 0 || !json.Valid(schema) || schema[0] != '{' {
				return p, nil, configError("Response format json-schema needs a schema that is a JSON object.")
			}
			p.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](wireFormat{Type: "json_schema", Schema: json.RawMessage(schema)})
		default:
			warn(providers.WarningUnsupported, "responseFormat.type",
				"Response format '%s' is not supported (supported: text, json, json-schema); the answer is free text.", f.Type)
		}
	}

	// Prompt caching.
	var ttl sdk.CacheControlEphemeralTTL
	switch po.CacheControl {
	case "":
	case "ephemeral":
		p.CacheControl = cacheControl("")
	case "5m", "1h":
		ttl = sdk.CacheControlEphemeralTTL(po.CacheControl)
		p.CacheControl = cacheControl(ttl)
	default:
		return p, nil, configError("providerOptions.%s.cacheControl must be ephemeral, 5m or 1h (got %q).", id, po.CacheControl)
	}
	if po.CacheSystem {
		if len(p.System) == 0 {
			warn(providers.WarningOther, "providerOptions."+id+".cacheSystem", "There is no system prompt to cache; cacheSystem was ignored.")
		} else {
			p.System[len(p.System)-1].CacheControl = cacheControl(ttl)
		}
	}
	if po.CacheTools {
		if len(p.Tools) == 0 {
			warn(providers.WarningOther, "providerOptions."+id+".cacheTools", "There are no tools to cache; cacheTools was ignored.")
		} else {
			p.Tools[len(p.Tools)-1].OfTool.CacheControl = cacheControl(ttl)
		}
	}
	if po.UserID != "" {
		p.Metadata.UserID = param.NewOpt(po.UserID)
	}
	switch po.ServiceTier {
	case "":
	case string(sdk.MessageNewParamsServiceTierAuto), string(sdk.MessageNewParamsServiceTierStandardOnly):
		p.ServiceTier = sdk.MessageNewParamsServiceTier(po.ServiceTier)
	default:
		return p, nil, configError("providerOptions.%s.serviceTier must be auto or standard_only (got %q).", id, po.ServiceTier)
	}
	if po.DisableParallelToolUse {
		if len(p.Tools) == 0 {
			warn(providers.WarningOther, "providerOptions."+id+".disableParallelToolUse", "There are no tools; disableParallelToolUse was ignored.")
		} else {
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: param.NewOpt(true)}}
		}
	}
	return p, append(more, warnings...), nil
}

// cacheControl is an ephemeral cache_control marker with ttl (empty: the API's default).
func cacheControl(ttl sdk.CacheControlEphemeralTTL) sdk.CacheControlEphemeralParam {
	c := sdk.NewCacheControlEphemeralParam()
	c.TTL = ttl
	return c
}

// messages maps the conversation: system messages become the top-level system prompt (in
// order), tool results user messages with tool_result blocks, and consecutive messages of the
// same wire role one message (the API wants all results of a pass in the next user message).
// foreign reports continuation data of another provider, which is not sent.
func messages(in []providers.Message) (out []sdk.MessageParam, system []sdk.TextBlockParam, foreign bool) {
	var role string
	var blocks []sdk.ContentBlockParamUnion
	flush := func() {
		if len(blocks) == 0 {
			return
		}
		if role == providers.RoleAssistant {
			out = append(out, sdk.NewAssistantMessage(blocks...))
		} else {
			out = append(out, sdk.NewUserMessage(blocks...))
		}
		blocks = nil
	}
	add := func(r string, bs ...sdk.ContentBlockParamUnion) {
		if len(bs) == 0 {
			return
		}
		if r != role {
			flush()
			role = r
		}
		blocks = append(blocks, bs...)
	}
	for _, m := range in {
		switch m.Role {
		case providers.RoleSystem:
			if m.Content != "" {
				system = append(system, sdk.TextBlockParam{Text: m.Content})
			}
		case providers.RoleAssistant:
			var bs []sdk.ContentBlockParamUnion
			thinking, ok := thinkingBlocks(m.Continuation)
			foreign = foreign || !ok
			bs = append(bs, thinking...)
			if m.Content != "" {
				bs = append(bs, sdk.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				bs = append(bs, sdk.NewToolUseBlock(c.ID, inputJSON(c.Arguments), c.Name))
			}
			add(providers.RoleAssistant, bs...)
		case providers.RoleTool:
			content := m.Content
			if content == "" && len(m.StructuredContent) > 0 {
				content = string(m.StructuredContent)
			}
			tr := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if content != "" {
				tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: content}}}
			}
			if m.IsError {
				tr.IsError = param.NewOpt(true)
			}
			add(providers.RoleUser, sdk.ContentBlockParamUnion{OfToolResult: tr})
		default: // user
			if m.Content != "" {
				add(providers.RoleUser, sdk.NewTextBlock(m.Content))
			}
		}
	}
	flush()
	return out, system, foreign
}

// thinkingBlocks reads this provider's continuation data (ok is false for data of another
// provider).
func thinkingBlocks(raw json.RawMessage) ([]sdk.ContentBlockParamUnion, bool) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, true
	}
	var c continuation
	if json.Unmarshal(raw, &c) != nil || c.Provider != continuationKind {
		return nil, false
	}
	var out []sdk.ContentBlockParamUnion
	for _, b := range c.Blocks {
		var wb wireBlock
		if json.Unmarshal(b, &wb) != nil {
			continue
		}
		switch wb.Type {
		case "thinking":
			out = append(out, sdk.NewThinkingBlock(wb.Signature, wb.Thinking))
		case "redacted_thinking":
			out = append(out, sdk.NewRedactedThinkingBlock(wb.Data))
		}
	}
	return out, true
}

// inputJSON is the input of a tool_use block: the arguments when they are a JSON object, else
// {} (the API takes only objects; arguments a model wrote that were not JSON are kept as a
// JSON string, see [Provider.Generate]).
func inputJSON(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(t)
}

func sortWarnings(ws []providers.Warning) {
	slices.SortFunc(ws, func(a, b providers.Warning) int { return strings.Compare(a.Setting, b.Setting) })
}
