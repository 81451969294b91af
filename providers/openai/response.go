package openai

import (
	"context"
	"io"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
	"github.com/kortyx-go/kortyx/providers/internal/toolargs"
)

// complete runs a non-streamed pass.
func complete(ctx context.Context, id string, client *goopenai.Client, creq goopenai.ChatCompletionRequest, h *httperr.Capture, baseURL string) (providers.Response, error) {
	resp, err := client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return providers.Response{}, classify(ctx, err, h, baseURL)
	}
	if len(resp.Choices) == 0 {
		return providers.Response{}, server.InvalidResponse(baseURL, "the response has no choices", nil)
	}
	ch := resp.Choices[0]
	if ch.Message.Refusal != "" {
		return providers.Response{}, refusal(ch.Message.Refusal)
	}
	var calls []providers.ToolCall
	for _, c := range ch.Message.ToolCalls {
		calls = append(calls, providers.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: toolargs.Parse(c.Function.Arguments)})
	}
	out := providers.Response{
		Text:             ch.Message.Content,
		ToolCalls:        calls,
		Usage:            usage(&resp.Usage),
		FinishReason:     finishReason(string(ch.FinishReason)),
		ProviderMetadata: metadata(resp.ID, resp.Model, resp.SystemFingerprint),
	}
	if out.Usage == (providers.Usage{}) { // go-openai decodes a missing usage as zeros
		out.Warnings = []providers.Warning{providers.NoUsageWarning(id)}
	}
	return out, nil
}

// streamCompletion runs a streamed pass, calling onDelta with each non-empty text delta.
func streamCompletion(ctx context.Context, providerID string, client *goopenai.Client, creq goopenai.ChatCompletionRequest,
	onDelta func(string) error, h *httperr.Capture, baseURL string) (providers.Response, error) {
	creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	stream, err := client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return providers.Response{}, classify(ctx, err, h, baseURL)
	}
	defer func() { _ = stream.Close() }()

	var (
		text, refused     strings.Builder
		tools             toolAccumulator
		finish            string
		u                 *goopenai.Usage
		id, model, fprint string
	)
	for {
		chunk, err := stream.Recv()
		if err == io.EOF { //nolint:errorlint // go-openai returns io.EOF itself at the end of a stream
			break // [DONE], or the server ended the body cleanly
		}
		if err != nil {
			return providers.Response{}, classify(ctx, err, h, baseURL)
		}
		if err := ctx.Err(); err != nil {
			return providers.Response{}, err // cancelled while chunks were still buffered
		}
		id, model, fprint = first(id, chunk.ID), first(model, chunk.Model), first(fprint, chunk.SystemFingerprint)
		if chunk.Usage != nil {
			u = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if d := c.Delta.Content; d != "" {
				text.WriteString(d)
				if err := onDelta(d); err != nil {
					return providers.Response{}, err
				}
			}
			refused.WriteString(c.Delta.Refusal)
			for _, tc := range c.Delta.ToolCalls {
				tools.add(tc)
			}
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
		}
	}
	if refused.Len() > 0 {
		return providers.Response{}, refusal(refused.String())
	}
	if finish == "" {
		return providers.Response{}, server.InvalidResponse(baseURL, "the stream ended without a finish reason", nil)
	}
	out := providers.Response{
		Text:             text.String(),
		ToolCalls:        tools.calls(),
		Usage:            usage(u),
		FinishReason:     finishReason(finish),
		ProviderMetadata: metadata(id, model, fprint),
	}
	if u == nil { // the server ignored stream_options.include_usage
		out.Warnings = []providers.Warning{providers.NoUsageWarning(providerID)}
	}
	return out, nil
}

// toolAccumulator assembles streamed tool calls from their fragments, by index: the first
// fragment of an index carries the id and name, the arguments come in pieces. Fragments without
// an index (some compatible servers) start a new call when they carry a new id and continue the
// last call otherwise.
type toolAccumulator struct {
	list    []*partialCall
	byIndex map[int]*partialCall
}

type partialCall struct {
	index    int
	id, name string
	args     strings.Builder
}

func (a *toolAccumulator) add(tc goopenai.ToolCall) {
	var pc *partialCall
	switch {
	case tc.Index != nil:
		pc = a.byIndex[*tc.Index]
		if pc == nil {
			pc = a.start(*tc.Index)
		}
	case tc.ID != "":
		for _, c := range a.list {
			if c.id == tc.ID {
				pc = c
			}
		}
	case len(a.list) > 0:
		pc = a.list[len(a.list)-1]
	}
	if pc == nil {
		next := 0
		for _, c := range a.list {
			next = max(next, c.index+1)
		}
		pc = a.start(next)
	}
	if pc.id == "" {
		pc.id = tc.ID
	}
	if pc.name == "" {
		pc.name = tc.Function.Name
	}
	pc.args.WriteString(tc.Function.Arguments)
}

func (a *toolAccumulator) start(index int) *partialCall {
	if a.byIndex == nil {
		a.byIndex = map[int]*partialCall{}
	}
	pc := &partialCall{index: index}
	a.byIndex[index] = pc
	a.list = append(a.list, pc)
	return pc
}

func (a *toolAccumulator) calls() []providers.ToolCall {
	list := slices.Clone(a.list)
	slices.SortStableFunc(list, func(x, y *partialCall) int { return x.index - y.index })
	var out []providers.ToolCall
	for _, pc := range list {
		out = append(out, providers.ToolCall{ID: pc.id, Name: pc.name, Arguments: toolargs.Parse(pc.args.String())})
	}
	return out
}

func usage(u *goopenai.Usage) providers.Usage {
	if u == nil {
		return providers.Usage{}
	}
	out := providers.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, Total: u.TotalTokens}
	if out.Total == 0 {
		out.Total = out.Input + out.Output
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.Reasoning = d.ReasoningTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheRead = d.CachedTokens
	}
	return out
}

// finishReason maps the provider's finish reason onto the unified ones.
func finishReason(raw string) providers.FinishReason {
	unified := providers.FinishOther
	switch raw {
	case "stop":
		unified = providers.FinishStop
	case "length":
		unified = providers.FinishLength
	case "content_filter":
		unified = providers.FinishContentFilter
	case "tool_calls", "function_call":
		unified = providers.FinishToolCalls
	}
	return providers.FinishReason{Unified: unified, Raw: raw}
}

func metadata(id, model, fingerprint string) map[string]any {
	md := map[string]any{}
	for k, v := range map[string]string{"id": id, "model": model, "systemFingerprint": fingerprint} {
		if v != "" {
			md[k] = v
		}
	}
	if len(md) == 0 {
		return nil
	}
	return md
}

func first(have, next string) string {
	if have != "" {
		return have
	}
	return next
}
