package hooks

import (
	"encoding/json"
	"strings"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"go.temporal.io/sdk/workflow"
)

// InterruptOptions is a question for a human (spec F3.4).
type InterruptOptions struct {
	// ID is a stable id for this question within its node (recommended); without it the
	// question is identified by its position among the node's interrupts that have no ID.
	ID string
	// Kind is text, choice, multi-choice or custom. Default: choice when Options are given
	// (multi-choice with Multiple), else text.
	Kind contracts.InterruptKind
	// Question is shown to the human. A choice without one asks "Please choose an option.".
	Question string
	// Options are the choices of a choice or multi-choice question (ids unique, non-empty).
	Options []contracts.Option
	// Multiple turns a choice question into multi-choice.
	Multiple bool
	// Request is the structured request of a custom question, shown to the client as is.
	Request any
	// Contract names the interrupt contract of a custom question.
	Contract string
	// RequestSchema validates Request before anything is published.
	RequestSchema *contracts.Schema
	// ResponseSchema validates the answer (its JSON form: a string, a list of ids, or the
	// custom value) before the run continues.
	ResponseSchema *contracts.Schema
	SchemaID       string
	SchemaVersion  string
	// Meta is copied to the client; keys starting with "__kortyx" are internal and removed.
	Meta map[string]any
}

// Interrupt asks a human and waits, durably, for the answer: the run publishes an interrupt
// chunk with a resume token, ends the current response with done, and sleeps (for days if need
// be, without holding a worker) until a valid answer arrives by signal or update. The node then
// continues from this call: code before it does not run again.
//
// An invalid question fails with INVALID_INTERRUPT before anything is published. A human who
// cancels ends the run: Interrupt returns an EXECUTION_CANCELLED error, which the node should
// return.
func Interrupt(ctx workflow.Context, opts InterruptOptions) (contracts.Answer, error) {
	s, err := execution.From(ctx, "Interrupt")
	if err != nil {
		return contracts.Answer{}, err
	}
	in, err := buildInput(opts)
	if err != nil {
		return contracts.Answer{}, err
	}
	return s.Interrupt(ctx, opts.ID, in, opts.ResponseSchema)
}

// AskText asks a text question and returns the answer.
func AskText(ctx workflow.Context, id, question string) (string, error) {
	a, err := Interrupt(ctx, InterruptOptions{ID: id, Kind: contracts.InterruptText, Question: question})
	return a.Text, err
}

// Choose asks a choice question and returns the selected option id.
func Choose(ctx workflow.Context, id, question string, options ...contracts.Option) (string, error) {
	a, err := Interrupt(ctx, InterruptOptions{ID: id, Kind: contracts.InterruptChoice, Question: question, Options: options})
	if err != nil {
		return "", err
	}
	return a.Selected[0], nil
}

func buildInput(opts InterruptOptions) (contracts.InterruptInput, error) {
	bad := func(format string, args ...any) (contracts.InterruptInput, error) {
		return contracts.InterruptInput{}, contracts.Errorf(contracts.CodeInvalidInterrupt, "hooks.Interrupt: "+format, args...)
	}
	kind := opts.Kind
	if kind == "" {
		switch {
		case len(opts.Options) > 0 && opts.Multiple:
			kind = contracts.InterruptMultiChoice
		case len(opts.Options) > 0:
			kind = contracts.InterruptChoice
		case opts.Request != nil:
			kind = contracts.InterruptCustom
		default:
			kind = contracts.InterruptText
		}
	}
	if kind == contracts.InterruptChoice && opts.Multiple {
		kind = contracts.InterruptMultiChoice
	}
	in := contracts.InterruptInput{
		Kind:          kind,
		Multiple:      kind == contracts.InterruptMultiChoice,
		Question:      opts.Question,
		ID:            opts.ID,
		SchemaID:      opts.SchemaID,
		SchemaVersion: opts.SchemaVersion,
		Options:       []contracts.Option{},
		Contract:      opts.Contract,
	}
	switch kind {
	case contracts.InterruptText:
		if len(opts.Options) > 0 {
			return bad("a text question takes no options; use Kind choice")
		}
	case contracts.InterruptChoice, contracts.InterruptMultiChoice:
		if len(opts.Options) == 0 {
			return bad("a %s question needs at least one option", kind)
		}
		seen := map[string]bool{}
		for i, o := range opts.Options {
			if strings.TrimSpace(o.ID) == "" {
				return bad("option %d has an empty id", i)
			}
			if seen[o.ID] {
				return bad("option id %q is used twice", o.ID)
			}
			seen[o.ID] = true
			if o.Label == "" {
				o.Label = o.ID
			}
			o.Value = nil // values stay server-side
			in.Options = append(in.Options, o)
		}
		if in.Question == "" {
			in.Question = protocol.DefaultChoiceQuestion
		}
	case contracts.InterruptCustom:
		if opts.Request == nil {
			return bad("a custom question needs a Request")
		}
		b, err := json.Marshal(opts.Request)
		if err != nil {
			return bad("request cannot be encoded as JSON: %v", err)
		}
		if opts.RequestSchema != nil {
			if issues := opts.RequestSchema.ValidateJSON(b); len(issues) > 0 {
				return contracts.InterruptInput{}, &contracts.Error{Code: contracts.CodeInvalidInterrupt,
					Message: "hooks.Interrupt: request does not match the request schema", Issues: issues}
			}
		}
		in.Request = b
		if in.Question == "" {
			var q struct {
				Question string `json:"question"`
			}
			if json.Unmarshal(b, &q) == nil {
				in.Question = q.Question
			}
		}
	default:
		return bad("kind %q is unknown: use text, choice, multi-choice or custom", kind)
	}
	if meta := publicMeta(opts.Meta); meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return bad("meta cannot be encoded as JSON: %v", err)
		}
		in.Meta = b
	}
	return in, nil
}

// publicMeta drops internal "__kortyx" keys; nil when nothing is left.
func publicMeta(meta map[string]any) map[string]any {
	if len(meta) == 0 {
		return nil
	}
	out := map[string]any{}
	for _, k := range workflow.DeterministicKeys(meta) {
		if !strings.HasPrefix(k, "__kortyx") {
			out[k] = meta[k]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
