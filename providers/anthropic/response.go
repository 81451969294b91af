package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/internal/toolargs"
)

// complete runs a non-streamed pass.
func (p *Provider) complete(ctx context.Context, client *sdk.Client, params sdk.MessageNewParams, h *capture, baseURL string) (providers.Response, error) {
	// The SDK refuses a non-streamed pass whose max_tokens could take over 10 minutes; say so
	// with what to change.
	if _, err := sdk.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, nil); err != nil {
		return providers.Response{}, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: fmt.Sprintf("A non-streamed pass with max_tokens %d is refused by the Anthropic SDK (%v): stream the pass, or lower MaxOutputTokens.", params.MaxTokens, err)}
	}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		return providers.Response{}, classify(ctx, err, h, baseURL)
	}
	var a assembly
	a.id, a.model = msg.ID, string(msg.Model)
	for i, b := range msg.Content {
		pb := a.start(i, b.Type)
		pb.id, pb.name = b.ID, b.Name
		pb.text.WriteString(b.Text)
		pb.text.WriteString(b.Thinking)
		pb.signature, pb.data = b.Signature, b.Data
		pb.input.Write(b.Input)
	}
	a.stopReason, a.stopSequence = string(msg.StopReason), msg.StopSequence
	a.refusal = msg.StopDetails.Explanation
	a.category = string(msg.StopDetails.Category)
	if msg.JSON.Usage.Valid() && (msg.Usage.JSON.InputTokens.Valid() || msg.Usage.JSON.OutputTokens.Valid()) {
		a.usageSeen = true
		a.usage = usageOf(msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheCreationInputTokens,
			msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokensDetails.ThinkingTokens)
	}
	a.stopped = true
	return a.response(p.id, baseURL)
}

// stream runs a streamed pass, calling onDelta with each non-empty text delta in order.
func (p *Provider) stream(ctx context.Context, client *sdk.Client, params sdk.MessageNewParams,
	onDelta func(string) error, h *capture, baseURL string) (providers.Response, error) {
	s := client.Messages.NewStreaming(ctx, params)
	defer func() { _ = s.Close() }()
	var a assembly
	var in, out, cacheWrite, cacheRead, thinking int64
	for s.Next() {
		if err := ctx.Err(); err != nil {
			return providers.Response{}, err // cancelled while events were still buffered
		}
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			m := ev.Message
			a.id, a.model = m.ID, string(m.Model)
			if m.JSON.Usage.Valid() {
				u := m.Usage
				if u.JSON.InputTokens.Valid() || u.JSON.OutputTokens.Valid() {
					a.usageSeen = true
				}
				in, out, cacheWrite, cacheRead = u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens
				thinking = u.OutputTokensDetails.ThinkingTokens
			}
		case "content_block_start":
			cb := ev.ContentBlock
			pb := a.start(int(ev.Index), cb.Type)
			pb.id, pb.name = cb.ID, cb.Name
			pb.signature, pb.data = cb.Signature, cb.Data
			pb.text.WriteString(cb.Thinking)
			if cb.Text != "" {
				pb.text.WriteString(cb.Text)
				if err := onDelta(cb.Text); err != nil {
					return providers.Response{}, err
				}
			}
		case "content_block_delta":
			pb := a.block(int(ev.Index))
			if pb == nil {
				return providers.Response{}, server.InvalidResponse(baseURL, "a content_block_delta for a block that did not start", nil)
			}
			d := ev.Delta
			switch d.Type {
			case "text_delta":
				if d.Text != "" {
					pb.text.WriteString(d.Text)
					if err := onDelta(d.Text); err != nil {
						return providers.Response{}, err
					}
				}
			case "input_json_delta":
				pb.input.WriteString(d.PartialJSON)
			case "thinking_delta":
				pb.text.WriteString(d.Thinking)
			case "signature_delta":
				pb.signature += d.Signature
			}
		case "message_delta":
			a.stopReason, a.stopSequence = string(ev.Delta.StopReason), ev.Delta.StopSequence
			a.refusal, a.category = ev.Delta.StopDetails.Explanation, string(ev.Delta.StopDetails.Category)
			u := ev.Usage
			// Counts here are cumulative totals for the message; absent ones keep message_start's.
			if u.JSON.OutputTokens.Valid() {
				a.usageSeen = true
				out = u.OutputTokens
			}
			if u.JSON.InputTokens.Valid() {
				a.usageSeen = true
				in = u.InputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				cacheWrite = u.CacheCreationInputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				cacheRead = u.CacheReadInputTokens
			}
			if u.JSON.OutputTokensDetails.Valid() {
				thinking = u.OutputTokensDetails.ThinkingTokens
			}
		case "message_stop":
			a.stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return providers.Response{}, classify(ctx, err, h, baseURL)
	}
	if err := ctx.Err(); err != nil {
		return providers.Response{}, err
	}
	if !a.stopped {
		return providers.Response{}, server.Transport(baseURL, errStreamCut)
	}
	a.usage = usageOf(in, out, cacheWrite, cacheRead, thinking)
	return a.response(p.id, baseURL)
}

// assembly collects the content blocks of one answer by index.
type assembly struct {
	id, model                string
	blocks                   []*partialBlock
	stopReason, stopSequence string
	refusal, category        string
	usage                    providers.Usage
	usageSeen, stopped       bool
}

type partialBlock struct {
	index           int
	typ             string
	id, name        string
	text            strings.Builder // text, or the thinking of a thinking block
	input           strings.Builder // tool_use input JSON, from its fragments
	signature, data string
}

func (a *assembly) start(index int, typ string) *partialBlock {
	pb := &partialBlock{index: index, typ: typ}
	a.blocks = append(a.blocks, pb)
	return pb
}

func (a *assembly) block(index int) *partialBlock {
	for i := len(a.blocks) - 1; i >= 0; i-- {
		if a.blocks[i].index == index {
			return a.blocks[i]
		}
	}
	return nil
}

// response builds the model response; a refusal is a PROVIDER_REFUSAL error.
func (a *assembly) response(providerID, baseURL string) (providers.Response, error) {
	if a.stopReason == string(sdk.StopReasonRefusal) {
		return providers.Response{}, refusal(a.refusal, a.category)
	}
	if a.stopReason == "" {
		return providers.Response{}, server.InvalidResponse(baseURL, "the answer has no stop_reason", nil)
	}
	var text, thoughts strings.Builder
	var calls []providers.ToolCall
	var kept []json.RawMessage
	for _, b := range a.blocks {
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			calls = append(calls, providers.ToolCall{ID: b.id, Name: b.name, Arguments: toolargs.Parse(b.input.String())})
		case "thinking":
			thoughts.WriteString(b.text.String())
			raw, _ := json.Marshal(wireBlock{Type: "thinking", Thinking: b.text.String(), Signature: b.signature})
			kept = append(kept, raw)
		case "redacted_thinking":
			raw, _ := json.Marshal(wireBlock{Type: "redacted_thinking", Data: b.data})
			kept = append(kept, raw)
		}
	}
	resp := providers.Response{
		Text:         text.String(),
		ToolCalls:    calls,
		Usage:        a.usage,
		FinishReason: finishReason(a.stopReason),
	}
	md := map[string]any{}
	for k, v := range map[string]string{"id": a.id, "model": a.model, "stopSequence": a.stopSequence, "thinking": thoughts.String()} {
		if v != "" {
			md[k] = v
		}
	}
	if len(md) > 0 {
		resp.ProviderMetadata = md
	}
	if len(kept) > 0 {
		resp.Continuation, _ = json.Marshal(continuation{Provider: continuationKind, Blocks: kept})
	}
	if !a.usageSeen {
		resp.Usage = providers.Usage{}
		resp.Warnings = append(resp.Warnings, providers.NoUsageWarning(providerID))
	}
	return resp, nil
}

// usageOf normalizes Anthropic's counts: input_tokens excludes the cached prompt, so Input is
// input + cache writes + cache reads (the whole prompt), as the other providers count it.
func usageOf(in, out, cacheWrite, cacheRead, thinking int64) providers.Usage {
	u := providers.Usage{
		Input: int(in + cacheWrite + cacheRead), Output: int(out),
		Reasoning: int(thinking), CacheWrite: int(cacheWrite), CacheRead: int(cacheRead),
	}
	u.Total = u.Input + u.Output
	return u
}

// finishReason maps Anthropic's stop_reason onto the unified finish reasons.
func finishReason(raw string) providers.FinishReason {
	unified := providers.FinishOther
	switch sdk.StopReason(raw) {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		unified = providers.FinishStop
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		unified = providers.FinishLength
	case sdk.StopReasonToolUse:
		unified = providers.FinishToolCalls
	}
	return providers.FinishReason{Unified: unified, Raw: raw}
}
