package contracts

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
	StreamFields map[string]StructuredKind `json:"streamFields,omitempty"`
}

// NewOutputContract checks an output contract: non-empty description, schema id and version,
// an object-root schema, and valid stream fields.
func NewOutputContract(description, schemaID, schemaVersion string, schema *Schema, streamFields map[string]StructuredKind) (*OutputContract, error) {
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
		case StructuredSet, StructuredAppend, StructuredTextDelta:
		default:
			return Errorf(CodeInvalidDefinition, "output contract %q: stream field %q: mode %q is unknown (use set, append or text-delta)", c.SchemaID, path, mode)
		}
	}
	return nil
}

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
