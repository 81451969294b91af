package hooks

import (
	"encoding/json"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"go.temporal.io/sdk/workflow"
)

// StructuredDataOptions describes one structured-data chunk (spec F3.3).
type StructuredDataOptions struct {
	// Kind is set, append, text-delta or final (default).
	Kind contracts.StructuredKind
	// StreamID groups the chunks of one structured value; default: a new id per call
	// ("<runId>:structured:<n>"). Partial kinds (set, append, text-delta) usually share one.
	StreamID string
	// DataType names the kind of value for the UI (default "generic").
	DataType      string
	SchemaID      string
	SchemaVersion string
	// ID is an optional hook id copied into the chunk.
	ID string
	// Path is the dot-separated target of set, append and text-delta ("a.b.0.c").
	Path string
	// Value is the value of a set.
	Value any
	// Items are the items of an append.
	Items []any
	// Delta is the text of a text-delta.
	Delta string
	// Data is the whole object of a final.
	Data any
	// Schema, when set, validates Value (set), each of Items (append) or Data (final) before
	// anything is published.
	Schema *contracts.Schema
	// Contract is the contract form (spec F3.3): DataType and SchemaID become the contract's
	// schema id, SchemaVersion its version, and a final's Data is validated by its schema.
	// Partial kinds with a contract need an explicit StreamID.
	Contract *contracts.OutputContract
}

// StructuredData publishes a structured-data chunk for the UI and returns its stream id. It
// validates the path and, when given, the schema first: on any failure nothing is published.
// A node retried after a failure does not publish the same chunk twice.
func StructuredData(ctx workflow.Context, opts StructuredDataOptions) (string, error) {
	s, err := execution.From(ctx, "StructuredData")
	if err != nil {
		return "", err
	}
	kind := opts.Kind
	if kind == "" {
		kind = contracts.StructuredFinal
	}
	if c := opts.Contract; c != nil {
		if kind != contracts.StructuredFinal && opts.StreamID == "" {
			return "", contracts.Errorf(contracts.CodeInvalidRequest, "hooks.StructuredData %s with a contract needs an explicit StreamID", kind)
		}
		opts.DataType, opts.SchemaID, opts.SchemaVersion = c.SchemaID, c.SchemaID, c.SchemaVersion
		if kind == contracts.StructuredFinal && opts.Schema == nil {
			opts.Schema = c.Schema
		}
	}
	c := contracts.Chunk{
		Type:          contracts.ChunkStructuredData,
		Kind:          kind,
		StreamID:      opts.StreamID,
		DataType:      opts.DataType,
		SchemaID:      opts.SchemaID,
		SchemaVersion: opts.SchemaVersion,
		ID:            opts.ID,
	}
	if c.DataType == "" {
		c.DataType = "generic"
	}
	fail := func(format string, args ...any) (string, error) {
		return "", contracts.Errorf(contracts.CodeInvalidRequest, "hooks.StructuredData "+format, args...)
	}
	encode := func(what string, v any) (json.RawMessage, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, contracts.Errorf(contracts.CodeInvalidRequest, "hooks.StructuredData %s cannot be encoded as JSON: %v", what, err)
		}
		return b, nil
	}
	validate := func(what string, doc json.RawMessage) error {
		if opts.Schema == nil {
			return nil
		}
		if issues := opts.Schema.ValidateJSON(doc); len(issues) > 0 {
			return &contracts.Error{Code: contracts.CodeSchemaValidation,
				Message: "hooks.StructuredData " + string(kind) + " validation failed: " + what + " does not match the schema",
				Issues:  issues}
		}
		return nil
	}
	switch kind {
	case contracts.StructuredSet, contracts.StructuredAppend, contracts.StructuredTextDelta:
		if err := checkPath(opts.Path); err != nil {
			return "", err
		}
		c.Path = opts.Path
	case contracts.StructuredFinal:
	default:
		return fail("kind %q is unknown: use set, append, text-delta or final", kind)
	}
	switch kind {
	case contracts.StructuredSet:
		b, err := encode("value", opts.Value)
		if err != nil {
			return "", err
		}
		if err := validate("value", b); err != nil {
			return "", err
		}
		c.Value = b
	case contracts.StructuredAppend:
		if len(opts.Items) == 0 {
			return fail("append needs at least one item")
		}
		for i, item := range opts.Items {
			b, err := encode("item", item)
			if err != nil {
				return "", err
			}
			if err := validate("item "+itoa(i), b); err != nil {
				return "", err
			}
		}
		b, err := encode("items", opts.Items)
		if err != nil {
			return "", err
		}
		c.Items = b
	case contracts.StructuredTextDelta:
		if opts.Delta == "" {
			return fail("text-delta needs a non-empty delta")
		}
		c.Delta = opts.Delta
	case contracts.StructuredFinal:
		b, err := encode("data", opts.Data)
		if err != nil {
			return "", err
		}
		if len(b) == 0 || b[0] != '{' {
			return fail("final data must be a JSON object, got %s", describe(opts.Data))
		}
		if err := validate("data", b); err != nil {
			return "", err
		}
		c.Data = b
	}
	return s.Structured(ctx, c)
}

// checkPath enforces the path rules of spec F3.3.
func checkPath(p string) error {
	if strings.TrimSpace(p) == "" {
		return contracts.Errorf(contracts.CodeInvalidRequest, "hooks.StructuredData path must be a non-empty dot-separated string")
	}
	for _, seg := range strings.Split(p, ".") {
		if strings.TrimSpace(seg) == "" {
			return contracts.Errorf(contracts.CodeInvalidRequest, "hooks.StructuredData path %q must not contain empty segments", p)
		}
	}
	return nil
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
