package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Schema is a compiled JSON Schema (draft 2020-12 unless the document says otherwise). Compile
// it once with [CompileSchema], outside workflow code, and share it: validation is pure and safe
// in workflow code. A Schema serializes as its source document.
type Schema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
}

// CompileSchema compiles a JSON Schema document. References to other documents are not loaded
// (no file or network access); keep schemas self-contained with "$defs".
func CompileSchema(doc []byte) (*Schema, error) {
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, &Error{Code: CodeSchemaValidation, Message: "schema is not valid JSON: " + err.Error(), Err: err}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "mem:///schema.json"
	if err := c.AddResource(url, parsed); err != nil {
		return nil, &Error{Code: CodeSchemaValidation, Message: "schema cannot be used: " + err.Error(), Err: err}
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, &Error{Code: CodeSchemaValidation, Message: "schema does not compile: " + err.Error(), Err: err}
	}
	raw := make(json.RawMessage, len(doc))
	copy(raw, doc)
	return &Schema{raw: bytes.TrimSpace(raw), compiled: sch}, nil
}

// MustCompileSchema is [CompileSchema] for schemas written in the program's source: it panics
// on an invalid document. Use it only for package-level literals.
func MustCompileSchema(doc string) *Schema {
	s, err := CompileSchema([]byte(doc))
	if err != nil {
		panic(err)
	}
	return s
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %q is not loaded: keep schemas self-contained", url)
}

// Raw returns the schema document.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// MarshalJSON returns the schema document.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return s.raw, nil
}

// ValidateJSON validates a JSON document and returns one [Issue] per failing leaf rule, or nil.
// A document that is not JSON yields one issue with code "json".
func (s *Schema) ValidateJSON(doc []byte) []Issue {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []Issue{{Path: []any{}, Code: "json", Message: "value is not valid JSON: " + err.Error()}}
	}
	return s.validate(v)
}

// Validate validates a Go value by its JSON encoding (see [Schema.ValidateJSON]).
func (s *Schema) Validate(v any) []Issue {
	b, err := json.Marshal(v)
	if err != nil {
		return []Issue{{Path: []any{}, Code: "json", Message: "value cannot be encoded as JSON: " + err.Error()}}
	}
	return s.ValidateJSON(b)
}

func (s *Schema) validate(v any) []Issue {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Issue{{Path: []any{}, Code: "schema", Message: err.Error()}}
	}
	var issues []Issue
	collectIssues(ve.DetailedOutput(), &issues)
	if len(issues) == 0 {
		issues = append(issues, Issue{Path: []any{}, Code: "schema", Message: "the value does not match the schema"})
	}
	// The validator walks the value's maps, so the order it reports issues in varies: sort them,
	// so that the same value always yields the same issues (workflow code depends on it).
	sort.SliceStable(issues, func(i, j int) bool {
		a, b := issues[i], issues[j]
		if pa, pb := pathString(a.Path), pathString(b.Path); pa != pb {
			return pa < pb
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
	return issues
}

func collectIssues(u *jsonschema.OutputUnit, out *[]Issue) {
	if u == nil {
		return
	}
	if u.Error != nil {
		// The validator lists additional properties in map order: sort them, so that the
		// message of the same value is always the same text.
		if k, ok := u.Error.Kind.(*kind.AdditionalProperties); ok {
			sort.Strings(k.Properties)
		}
		msg := u.Error.String()
		// The detailed output sets Error only on leaves; summary units ("validation failed")
		// only group their children.
		if len(u.Errors) == 0 {
			kw := u.KeywordLocation
			if i := strings.LastIndexByte(kw, '/'); i >= 0 {
				kw = kw[i+1:]
			}
			*out = append(*out, Issue{Path: pointerPath(u.InstanceLocation), Code: kw, Message: msg})
		}
	}
	for i := range u.Errors {
		collectIssues(&u.Errors[i], out)
	}
}

// pointerPath turns a JSON pointer into path segments; numeric segments become ints.
func pointerPath(ptr string) []any {
	path := []any{}
	if ptr == "" || ptr == "/" {
		return path
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if n, err := strconv.Atoi(seg); err == nil && n >= 0 {
			path = append(path, n)
			continue
		}
		path = append(path, seg)
	}
	return path
}
