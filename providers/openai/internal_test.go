package openai

import (
	"encoding/json"
	"testing"

	"github.com/kortyx-go/kortyx/providers"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/providers/internal/toolargs"
)

func TestToolAccumulator(t *testing.T) {
	idx := func(i int) *int { return &i }
	frag := func(index *int, id, name, args string) goopenai.ToolCall {
		return goopenai.ToolCall{Index: index, ID: id, Function: goopenai.FunctionCall{Name: name, Arguments: args}}
	}
	for _, tc := range []struct {
		name  string
		frags []goopenai.ToolCall
		want  []providers.ToolCall
	}{
		{"interleaved by index", []goopenai.ToolCall{
			frag(idx(1), "b", "second", `{"y"`),
			frag(idx(0), "a", "first", `{"x":`),
			frag(idx(1), "", "", `:2}`),
			frag(idx(0), "", "", `1}`),
		}, []providers.ToolCall{
			{ID: "a", Name: "first", Arguments: json.RawMessage(`{"x":1}`)},
			{ID: "b", Name: "second", Arguments: json.RawMessage(`{"y":2}`)},
		}},
		{"name repeated in every fragment", []goopenai.ToolCall{
			frag(idx(0), "a", "f", `{"x"`), frag(idx(0), "", "f", `:1}`),
		}, []providers.ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}},
		{"no index: new id starts a call, no id continues", []goopenai.ToolCall{
			frag(nil, "a", "f", `{"x"`), frag(nil, "", "", `:1}`), frag(nil, "b", "g", `{}`),
		}, []providers.ToolCall{
			{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)},
			{ID: "b", Name: "g", Arguments: json.RawMessage(`{}`)},
		}},
		{"no arguments", []goopenai.ToolCall{frag(idx(0), "a", "f", "")},
			[]providers.ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}}},
		{"invalid arguments kept as a string", []goopenai.ToolCall{frag(idx(0), "a", "f", `{"x":`)},
			[]providers.ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`"{\"x\":"`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a toolAccumulator
			for _, f := range tc.frags {
				a.add(f)
			}
			require.Equal(t, tc.want, a.calls())
		})
	}
}

func TestArgumentsRoundTrip(t *testing.T) {
	for _, text := range []string{`{"a":1}`, `{"a":`, `not json`, ``} {
		back := argumentsText(toolargs.Parse(text))
		if text == "" {
			require.Equal(t, "{}", back)
			continue
		}
		require.Equal(t, text, back)
	}
}

func TestFinishReasonMapping(t *testing.T) {
	for raw, unified := range map[string]string{
		"stop": "stop", "length": "length", "content_filter": "content-filter", "tool_calls": "tool-calls",
		"function_call": "tool-calls", "": "other", "end_turn": "other",
	} {
		require.Equal(t, providers.FinishReason{Unified: unified, Raw: raw}, finishReason(raw), raw)
	}
}
