package google

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// refusalReasons are the finish reasons of an answer Gemini stopped for its content.
var refusalReasons = map[genai.FinishReason]bool{
	genai.FinishReasonSafety: true, genai.FinishReasonRecitation: true, genai.FinishReasonProhibitedContent: true,
	genai.FinishReasonBlocklist: true, genai.FinishReasonSPII: true, genai.FinishReasonImageSafety: true,
	genai.FinishReasonImageProhibitedContent: true, genai.FinishReasonImageRecitation: true,
}

// accumulator assembles the chunks of one pass (one chunk when not streamed).
type accumulator struct {
	providerID string
	onDelta    func(string) error
	text       strings.Builder
	thoughts   strings.Builder
	parts      []*genai.Part // the model's parts, merged text runs, for the continuation
	calls      []providers.ToolCall
	prior      int             // tool calls of the conversation before this answer
	taken      map[string]bool // their ids
	reason     genai.FinishReason
	message    string // finishMessage
	ratings    []*genai.SafetyRating
	usage      *genai.GenerateContentResponseUsageMetadata
	id         string
	model      string
	signed     bool // a part carries a thought signature, or a call has no id of the model's
}

func newAccumulator(providerID string, onDelta func(string) error, conversation []providers.Message) *accumulator {
	a := &accumulator{providerID: providerID, onDelta: onDelta, taken: map[string]bool{}}
	for _, m := range conversation {
		for _, c := range m.ToolCalls {
			a.prior++
			a.taken[c.ID] = true
		}
	}
	return a
}

// add takes one chunk: text goes to onDelta in order, function calls are kept whole (Gemini
// sends each call's arguments in one part), a blocked prompt is a refusal at once.
func (a *accumulator) add(r *genai.GenerateContentResponse) error {
	if r == nil {
		return nil
	}
	if r.UsageMetadata != nil {
		a.usage = r.UsageMetadata
	}
	a.id, a.model = first(a.id, r.ResponseID), first(a.model, r.ModelVersion)
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return promptBlocked(pf, a.usageValue())
	}
	if len(r.Candidates) == 0 {
		return nil
	}
	c := r.Candidates[0]
	if c == nil {
		return nil
	}
	if c.FinishReason != "" {
		a.reason = c.FinishReason
	}
	if c.FinishMessage != "" {
		a.message = c.FinishMessage
	}
	if len(c.SafetyRatings) > 0 {
		a.ratings = c.SafetyRatings
	}
	if c.Content == nil {
		return nil
	}
	for _, p := range c.Content.Parts {
		if p == nil {
			continue
		}
		if len(p.ThoughtSignature) > 0 {
			a.signed = true
		}
		switch {
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			id := fc.ID
			if id == "" {
				// Unique across the conversation (the tool loop requires it) and the same on a
				// retried pass: n counts the conversation's calls, this one included.
				for n := a.prior + len(a.calls) + 1; id == "" || a.taken[id]; n++ {
					id = fmt.Sprintf("call-%s-%d", fc.Name, n)
				}
				a.taken[id] = true
				a.signed = true
			}
			args, _ := json.Marshal(fc.Args)
			if fc.Args == nil {
				args = []byte(`{}`)
			}
			a.calls = append(a.calls, providers.ToolCall{ID: id, Name: fc.Name, Arguments: args})
			a.parts = append(a.parts, p)
		case p.Thought:
			a.thoughts.WriteString(p.Text)
			a.keepText(p)
		case p.Text != "":
			a.text.WriteString(p.Text)
			a.keepText(p)
			if a.onDelta != nil {
				if err := a.onDelta(p.Text); err != nil {
					return err
				}
			}
		default:
			if len(p.ThoughtSignature) > 0 {
				a.parts = append(a.parts, p)
			}
		}
	}
	return nil
}

// keepText appends a text part to the continuation parts, merged into the previous one when
// both are text of the same kind and the new piece has no signature of its own.
func (a *accumulator) keepText(p *genai.Part) {
	if n := len(a.parts); n > 0 {
		last := a.parts[n-1]
		if last.FunctionCall == nil && last.Text != "" && last.Thought == p.Thought && len(p.ThoughtSignature) == 0 {
			merged := *last
			merged.Text += p.Text
			a.parts[n-1] = &merged
			return
		}
	}
	cp := *p
	a.parts = append(a.parts, &cp)
}

func (a *accumulator) usageValue() providers.Usage {
	u := a.usage
	if u == nil {
		return providers.Usage{}
	}
	out := providers.Usage{
		Input:     int(u.PromptTokenCount) + int(u.ToolUsePromptTokenCount),
		Output:    int(u.CandidatesTokenCount),
		Reasoning: int(u.ThoughtsTokenCount),
		CacheRead: int(u.CachedContentTokenCount),
		Total:     int(u.TotalTokenCount),
	}
	if out.Total == 0 {
		out.Total = out.Input + out.Output + out.Reasoning
	}
	return out
}

// finish returns the response of a pass whose chunks all arrived.
func (a *accumulator) result(baseURL string) (providers.Response, error) {
	usage := a.usageValue()
	if refusalReasons[a.reason] {
		return providers.Response{}, a.refusal(usage)
	}
	if a.reason == "" {
		return providers.Response{}, server.InvalidResponse(baseURL, "the answer ended without a finish reason", nil)
	}
	resp := providers.Response{
		Text:         a.text.String(),
		ToolCalls:    a.calls,
		Usage:        usage,
		FinishReason: finishReason(a.reason, len(a.calls) > 0),
	}
	md := map[string]any{}
	if a.id != "" {
		md["id"] = a.id
	}
	if a.model != "" {
		md["model"] = a.model
	}
	if a.thoughts.Len() > 0 {
		md["thoughts"] = a.thoughts.String()
	}
	if len(md) > 0 {
		resp.ProviderMetadata = md
	}
	if a.signed {
		var c continuation
		c.Google.Parts = a.parts
		if b, err := json.Marshal(c); err == nil {
			resp.Continuation = b
		}
	}
	if a.usage == nil {
		resp.Warnings = append(resp.Warnings, providers.NoUsageWarning(a.providerID))
	}
	return resp, nil
}

// refusal is the PROVIDER_REFUSAL of an answer stopped for its content; Details name the
// finish reason and the harm categories Gemini blocked.
func (a *accumulator) refusal(usage providers.Usage) *contracts.Error {
	cats := blockedCategories(a.ratings)
	msg := fmt.Sprintf("Gemini stopped the answer (%s)", a.reason)
	if len(cats) > 0 {
		msg += " for " + strings.Join(cats, ", ")
	}
	if a.message != "" {
		msg += ": " + a.message
	}
	details := map[string]any{"finishReason": string(a.reason)}
	if a.message != "" {
		details["finishMessage"] = a.message
	}
	if len(cats) > 0 {
		details["category"] = cats[0]
		details["categories"] = cats
	}
	e := &contracts.Error{Code: contracts.CodeProviderRefusal, Message: sentence(msg), Details: details,
		FinishReason: &providers.FinishReason{Unified: providers.FinishContentFilter, Raw: string(a.reason)}}
	if usage != (providers.Usage{}) {
		e.Usage = &usage
	}
	return e
}

func promptBlocked(pf *genai.GenerateContentResponsePromptFeedback, usage providers.Usage) *contracts.Error {
	cats := blockedCategories(pf.SafetyRatings)
	msg := fmt.Sprintf("Gemini blocked the prompt (%s)", pf.BlockReason)
	if len(cats) > 0 {
		msg += " for " + strings.Join(cats, ", ")
	}
	if pf.BlockReasonMessage != "" {
		msg += ": " + pf.BlockReasonMessage
	}
	details := map[string]any{"blockReason": string(pf.BlockReason)}
	if len(cats) > 0 {
		details["category"] = cats[0]
		details["categories"] = cats
	}
	e := &contracts.Error{Code: contracts.CodeProviderRefusal, Message: sentence(msg), Details: details,
		FinishReason: &providers.FinishReason{Unified: providers.FinishContentFilter, Raw: string(pf.BlockReason)}}
	if usage != (providers.Usage{}) {
		e.Usage = &usage
	}
	return e
}

// blockedCategories are the categories of the ratings marked blocked, or of all ratings with
// a probability of MEDIUM or HIGH when none is marked.
func blockedCategories(ratings []*genai.SafetyRating) []string {
	var blocked, likely []string
	for _, r := range ratings {
		if r == nil || r.Category == "" {
			continue
		}
		if r.Blocked {
			blocked = append(blocked, string(r.Category))
		}
		if r.Probability == genai.HarmProbabilityMedium || r.Probability == genai.HarmProbabilityHigh {
			likely = append(likely, string(r.Category))
		}
	}
	if len(blocked) > 0 {
		return blocked
	}
	return likely
}

// finishReason maps Gemini's finish reason onto the unified ones; STOP with function calls is
// tool-calls (Gemini has no finish reason of its own for them).
func finishReason(raw genai.FinishReason, calls bool) providers.FinishReason {
	unified := providers.FinishOther
	switch raw {
	case genai.FinishReasonStop:
		unified = providers.FinishStop
		if calls {
			unified = providers.FinishToolCalls
		}
	case genai.FinishReasonMaxTokens:
		unified = providers.FinishLength
	}
	return providers.FinishReason{Unified: unified, Raw: string(raw)}
}

// sentence ends msg with a full stop unless it already ends with a sentence's punctuation (a
// finish message usually does).
func sentence(msg string) string {
	if strings.HasSuffix(msg, ".") || strings.HasSuffix(msg, "!") || strings.HasSuffix(msg, "?") {
		return msg
	}
	return msg + "."
}

func first(have, next string) string {
	if have != "" {
		return have
	}
	return next
}
