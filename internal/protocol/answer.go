package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// NormalizeAnswer validates an answer's content for the request and normalizes it (spec F3.4):
// text takes Text, else the first of Selected, else a JSON string Value; choice takes exactly one
// known option id; multi-choice one or more distinct known ids; custom takes Value. The
// normalized value is then validated against responseSchema when one is given.
func NormalizeAnswer(in contracts.InterruptInput, r contracts.Response, responseSchema *contracts.Schema) (contracts.Answer, error) {
	a := contracts.Answer{Kind: in.Kind}
	invalid := func(code, format string, args ...any) (contracts.Answer, error) {
		return contracts.Answer{}, &contracts.Error{Code: contracts.CodeInvalidResponse, Message: fmt.Sprintf(format, args...),
			Issues: []contracts.Issue{{Path: []any{}, Code: code, Message: fmt.Sprintf(format, args...)}}}
	}
	var valueStr string
	if len(r.Value) > 0 {
		_ = json.Unmarshal(r.Value, &valueStr)
	}
	switch in.Kind {
	case contracts.InterruptText:
		text := r.Text
		if text == "" && len(r.Selected) > 0 {
			text = r.Selected[0]
		}
		if text == "" {
			text = valueStr
		}
		if strings.TrimSpace(text) == "" {
			return invalid("required", "A text answer is required: send a non-empty text.")
		}
		a.Text = text
		a.Value = RawJSON(text)
	case contracts.InterruptChoice, contracts.InterruptMultiChoice:
		sel := r.Selected
		if len(sel) == 0 && r.Text != "" {
			sel = []string{r.Text}
		}
		if len(sel) == 0 && len(r.Value) > 0 {
			sel = selectedFromValue(r.Value)
		}
		if len(sel) == 0 {
			return invalid("required", "Select an option: send selected with one of %s.", optionIDs(in.Options))
		}
		if in.Kind == contracts.InterruptChoice && len(sel) != 1 {
			return invalid("maxItems", "Select exactly one option, not %d.", len(sel))
		}
		seen := map[string]bool{}
		for _, id := range sel {
			if seen[id] {
				return invalid("uniqueItems", "Option %q is selected twice.", id)
			}
			seen[id] = true
			if len(in.Options) > 0 && !hasOption(in.Options, id) {
				return invalid("enum", "Unknown option %q: choose one of %s.", id, optionIDs(in.Options))
			}
		}
		a.Selected = append([]string(nil), sel...)
		if in.Kind == contracts.InterruptChoice {
			a.Value = RawJSON(sel[0])
		} else {
			a.Value = RawJSON(a.Selected)
		}
	case contracts.InterruptCustom:
		switch {
		case len(bytes.TrimSpace(r.Value)) > 0:
			a.Value = append(json.RawMessage(nil), bytes.TrimSpace(r.Value)...)
		case r.Text != "":
			a.Value = RawJSON(r.Text)
		default:
			return invalid("required", "This question needs a structured answer: send value.")
		}
	default:
		return invalid("kind", "Unknown interrupt kind %q.", in.Kind)
	}
	if responseSchema != nil {
		if issues := responseSchema.ValidateJSON(a.Value); len(issues) > 0 {
			return contracts.Answer{}, &contracts.Error{Code: contracts.CodeInvalidResponse, Message: "Answer does not match the response schema.", Issues: issues}
		}
	}
	return a, nil
}

func selectedFromValue(v json.RawMessage) []string {
	var s string
	if json.Unmarshal(v, &s) == nil && s != "" {
		return []string{s}
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		out := make([]string, 0, len(list))
		for _, item := range list {
			if id := idOf(item); id != "" {
				out = append(out, id)
			}
		}
		return out
	}
	if id := idOf(v); id != "" {
		return []string{id}
	}
	return nil
}

// idOf returns a string, or the "id" of an object.
func idOf(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v, &obj) == nil {
		return obj.ID
	}
	return ""
}

func hasOption(opts []contracts.Option, id string) bool {
	for _, o := range opts {
		if o.ID == id {
			return true
		}
	}
	return false
}

func optionIDs(opts []contracts.Option) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = fmt.Sprintf("%q", o.ID)
	}
	return strings.Join(ids, ", ")
}
