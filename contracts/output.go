package contracts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Control tool name prefixes (spec F3.7, F3.8): tools with these prefixes are Kortyx's, never
// a worker tool's.
const (
	PrefixEmit         = "kortyx_emit__"
	PrefixReturn       = "kortyx_return__"
	PrefixStreamEmit   = "kortyx_stream_emit__"
	PrefixStreamReturn = "kortyx_stream_return__"
	PrefixRequestInput = "kortyx_request_input__"
)

// ReservedToolPrefixes returns the control tool prefixes, the one list of them: a tool name that
// starts with one is Kortyx's, never a worker tool's.
func ReservedToolPrefixes() []string {
	return []string{PrefixRequestInput, PrefixEmit, PrefixReturn, PrefixStreamEmit, PrefixStreamReturn}
}

// ReservedToolPrefix returns the control tool prefix that name starts with, or "" if none.
func ReservedToolPrefix(name string) string {
	for _, p := range ReservedToolPrefixes() {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}

// MaxToolNameLength bounds tool names, control tools included.
const MaxToolNameLength = 64

var contractName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// CheckContractName checks a contract name and the length of the control tool it becomes.
func CheckContractName(name, prefix string) error {
	if !contractName.MatchString(name) {
		return Errorf(CodeInvalidDefinition, "contract name %q must match %s", name, contractName)
	}
	if n := len(prefix) + len(name); n > MaxToolNameLength {
		return Errorf(CodeInvalidDefinition, "contract name %q is too long: its tool %s%s has %d characters, at most %d are allowed",
			name, prefix, name, n, MaxToolNameLength)
	}
	return nil
}

// StreamMode says how a streamed output field is published while the model writes it.
type StreamMode string

// Stream modes (spec F3.7).
const (
	StreamSet       StreamMode = "set"        // the field's value once it is complete
	StreamAppend    StreamMode = "append"     // each completed item of an array
	StreamTextDelta StreamMode = "text-delta" // the growing text of a string
)

// OutputContract is a typed value the model can publish while it works (emit) or finish with
// (return) (spec F3.7). Build it with [NewOutputContract]; it is read-only and safe to share.
type OutputContract struct {
	Description   string `json:"description"`
	SchemaID      string `json:"schemaId"`
	SchemaVersion string `json:"schemaVersion"`
	// Schema validates the value; its root is an object.
	Schema *Schema `json:"schema"`
	// StreamFields, when not empty, makes the contract streamed: the value is generated in a
	// separate streamed pass and these fields (dotted paths, numeric indexes, "*" wildcards) are
	// published as they arrive, then the validated whole.
	StreamFields map[string]StreamMode `json:"streamFields,omitempty"`
}

// NewOutputContract checks an output contract: non-empty description, schema id and version,
// an object-root schema, and valid stream fields.
func NewOutputContract(description, schemaID, schemaVersion string, schema *Schema, streamFields map[string]StreamMode) (*OutputContract, error) {
	c := &OutputContract{Description: description, SchemaID: schemaID, SchemaVersion: schemaVersion, Schema: schema, StreamFields: streamFields}
	return c, c.check()
}

func (c *OutputContract) check() error {
	switch {
	case strings.TrimSpace(c.Description) == "":
		return Errorf(CodeInvalidDefinition, "output contract: description is required")
	case strings.TrimSpace(c.SchemaID) == "" || strings.TrimSpace(c.SchemaVersion) == "":
		return Errorf(CodeInvalidDefinition, "output contract %q: schemaId and schemaVersion are required", c.Description)
	case c.Schema == nil:
		return Errorf(CodeInvalidDefinition, "output contract %q: schema is required", c.SchemaID)
	case !objectRoot(c.Schema):
		return Errorf(CodeInvalidDefinition, "output contract %q: the schema's root must be an object (\"type\": \"object\")", c.SchemaID)
	}
	if c.StreamFields != nil && len(c.StreamFields) == 0 {
		return Errorf(CodeInvalidDefinition, "output contract %q: stream fields, when given, must name at least one field", c.SchemaID)
	}
	paths := make([]string, 0, len(c.StreamFields))
	for path := range c.StreamFields {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		mode := c.StreamFields[path]
		if err := checkStreamPath(path); err != nil {
			return Errorf(CodeInvalidDefinition, "output contract %q: stream field %q: %v", c.SchemaID, path, err)
		}
		switch mode {
		case StreamSet, StreamAppend, StreamTextDelta:
		default:
			return Errorf(CodeInvalidDefinition, "output contract %q: stream field %q: mode %q is unknown (use set, append or text-delta)", c.SchemaID, path, mode)
		}
	}
	return nil
}

// Streamed reports whether the contract streams its fields.
func (c *OutputContract) Streamed() bool { return len(c.StreamFields) > 0 }

func checkStreamPath(p string) error {
	if strings.TrimSpace(p) == "" {
		return fmt.Errorf("path is empty")
	}
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return fmt.Errorf("path has an empty segment")
		}
	}
	return nil
}

func objectRoot(s *Schema) bool {
	var root struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(s.Raw(), &root) != nil {
		return false
	}
	var t string
	if json.Unmarshal(root.Type, &t) == nil {
		return t == "object"
	}
	var ts []string
	return json.Unmarshal(root.Type, &ts) == nil && len(ts) == 1 && ts[0] == "object"
}

// InterruptContract is a typed question the model can ask a human (spec F3.8). Build it with
// [NewInterruptContract].
type InterruptContract struct {
	Description    string  `json:"description"`
	SchemaID       string  `json:"schemaId"`
	SchemaVersion  string  `json:"schemaVersion"`
	RequestSchema  *Schema `json:"requestSchema"`
	ResponseSchema *Schema `json:"responseSchema"`
}

// NewInterruptContract checks an interrupt contract: non-empty description, schema id and
// version, and both schemas.
func NewInterruptContract(description, schemaID, schemaVersion string, request, response *Schema) (*InterruptContract, error) {
	c := &InterruptContract{Description: description, SchemaID: schemaID, SchemaVersion: schemaVersion, RequestSchema: request, ResponseSchema: response}
	switch {
	case strings.TrimSpace(description) == "":
		return nil, Errorf(CodeInvalidDefinition, "interrupt contract: description is required")
	case strings.TrimSpace(schemaID) == "" || strings.TrimSpace(schemaVersion) == "":
		return nil, Errorf(CodeInvalidDefinition, "interrupt contract %q: schemaId and schemaVersion are required", description)
	case request == nil || response == nil:
		return nil, Errorf(CodeInvalidDefinition, "interrupt contract %q: requestSchema and responseSchema are required", schemaID)
	}
	return c, nil
}

// Emission is a value published through an output contract.
type Emission struct {
	Contract string          `json:"contract"`
	Data     json.RawMessage `json:"data"`
	StreamID string          `json:"streamId"`
	Index    int             `json:"index"`
}

// InterruptRecord is one question asked through an interrupt contract and its answer.
type InterruptRecord struct {
	Contract string          `json:"contract"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}
