package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// Status values of a [StructuredState].
const (
	// structuredStreaming: partial chunks (set, append, text-delta) may still arrive.
	structuredStreaming = "streaming"
	// structuredDone: a final chunk replaced the data; the stream accepts nothing more.
	structuredDone = "done"
)

// maxStructuredIndex is the largest array index a structured-data path may use. Setting an
// index beyond the end of an array grows it with nulls; this bounds that growth.
const maxStructuredIndex = 1<<16 - 1

// StructuredState is the reduced value of one structured-data stream (spec F6.3).
type StructuredState struct {
	StreamID      string         `json:"streamId"`
	DataType      string         `json:"dataType"`
	Status        string         `json:"status"` // structuredStreaming until a final, then structuredDone
	Data          map[string]any `json:"data"`
	Node          string         `json:"node,omitempty"`
	ID            string         `json:"id,omitempty"`
	SchemaID      string         `json:"schemaId,omitempty"`
	SchemaVersion string         `json:"schemaVersion,omitempty"`
}

// applyStructured applies one structured-data chunk to the state of its stream (nil for a
// new stream, whose data starts as an empty object) and returns the new state.
//
// Paths are dot-separated ("items.0.title"): a segment of ASCII digits indexes an array (at
// most [maxStructuredIndex]), any other segment names an object key; the data itself is an
// object, so the first segment is a key. Missing containers on the way (absent or null
// values) are created: an object for a key segment, an array for an index segment; an index
// past the end of an array grows it with nulls.
//
//   - set writes Value at Path (an absent Value writes null);
//   - append creates an array at Path, or extends the one there, with Items (a JSON array);
//   - text-delta creates a string at Path, or extends the one there, with Delta;
//   - final replaces the whole data with Data (a JSON object) and sets the status to
//     [structuredDone].
//
// JSON values are decoded as by [json.Unmarshal] into an any (numbers are float64).
// DataType, Node, ID, SchemaID and SchemaVersion come from the first chunk and are replaced
// by later chunks that carry them.
//
// It fails with a [contracts.CodeMalformedStream] error, and returns no state, on a chunk
// that is not structured-data or has no streamId, a streamId other than the state's, any
// chunk after a final, an unknown kind, a malformed path (empty, or with an empty or blank
// segment), a container-shape conflict (a key into an array or a non-container, an index
// into an object or a non-container), an append to a non-array, a text-delta to a
// non-string, and invalid JSON (Items not an array, Data not an object).
//
// The input state is never modified. The new state shares the values the chunk did not
// touch with the input one (only the containers on the chunk's path are copied), so treat
// the Data of states as read-only.
func applyStructured(s *StructuredState, c contracts.Chunk) (*StructuredState, error) {
	if c.Type != contracts.ChunkStructuredData {
		return nil, malformed("cannot apply a %q chunk to a structured-data stream", c.Type)
	}
	if c.StreamID == "" {
		return nil, malformed("structured-data %s chunk has no streamId", c.Kind)
	}
	var next StructuredState
	if s == nil {
		next = StructuredState{StreamID: c.StreamID}
	} else {
		if s.StreamID != c.StreamID {
			return nil, malformed("structured-data chunk of stream %q cannot be applied to stream %q", c.StreamID, s.StreamID)
		}
		if s.Status == structuredDone {
			return nil, malformed("structured stream %q is final: %s chunk after final", c.StreamID, c.Kind)
		}
		next = *s
	}
	next.Status = structuredStreaming
	if next.Data == nil {
		next.Data = map[string]any{}
	}
	setIf := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setIf(&next.DataType, c.DataType)
	setIf(&next.Node, c.Node)
	setIf(&next.ID, c.ID)
	setIf(&next.SchemaID, c.SchemaID)
	setIf(&next.SchemaVersion, c.SchemaVersion)

	fail := func(format string, args ...any) (*StructuredState, error) {
		return nil, malformed("structured stream %q: %s", c.StreamID, fmt.Sprintf(format, args...))
	}
	var op func(cur any) (any, error)
	switch c.Kind {
	case contracts.StructuredFinal:
		v, err := decodeJSON(c.Data)
		if err != nil {
			return fail("final data is not valid JSON: %v", err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return fail("final data must be a JSON object, not %s", describeValue(v))
		}
		next.Data, next.Status = obj, structuredDone
		return &next, nil
	case contracts.StructuredSet:
		v, err := decodeJSON(c.Value)
		if err != nil {
			return fail("set value at %q is not valid JSON: %v", c.Path, err)
		}
		op = func(any) (any, error) { return v, nil }
	case contracts.StructuredAppend:
		if len(bytes.TrimSpace(c.Items)) == 0 {
			return fail("append at %q has no items", c.Path)
		}
		v, err := decodeJSON(c.Items)
		if err != nil {
			return fail("append items at %q are not valid JSON: %v", c.Path, err)
		}
		items, ok := v.([]any)
		if !ok {
			return fail("append items at %q must be a JSON array, not %s", c.Path, describeValue(v))
		}
		op = func(cur any) (any, error) {
			switch t := cur.(type) {
			case nil:
				return append(make([]any, 0, len(items)), items...), nil
			case []any:
				return append(slices.Clip(t), items...), nil
			}
			return nil, fmt.Errorf("cannot append at %q: the value there is %s, not an array", c.Path, describeValue(cur))
		}
	case contracts.StructuredTextDelta:
		op = func(cur any) (any, error) {
			switch t := cur.(type) {
			case nil:
				return c.Delta, nil
			case string:
				return t + c.Delta, nil
			}
			return nil, fmt.Errorf("cannot apply a text-delta at %q: the value there is %s, not a string", c.Path, describeValue(cur))
		}
	default:
		return fail("unknown kind %q: expected set, append, text-delta or final", c.Kind)
	}
	segs, err := parsePath(c.Path)
	if err != nil {
		return fail("%v", err)
	}
	v, err := updateAt(next.Data, segs, 0, c.Path, op)
	if err != nil {
		return fail("%v", err)
	}
	next.Data = v.(map[string]any)
	return &next, nil
}

func malformed(format string, args ...any) error {
	return contracts.Errorf(contracts.CodeMalformedStream, format, args...)
}

// pathSeg is one segment of a structured-data path.
type pathSeg struct {
	raw   string
	index int // when isIndex
	isIdx bool
}

// parsePath splits a dot-separated path into segments.
func parsePath(p string) ([]pathSeg, error) {
	if strings.TrimSpace(p) == "" {
		return nil, fmt.Errorf("path must be a non-empty dot-separated string")
	}
	parts := strings.Split(p, ".")
	segs := make([]pathSeg, len(parts))
	for i, part := range parts {
		if strings.TrimSpace(part) == "" {
			return nil, fmt.Errorf("path %q has an empty segment", p)
		}
		seg := pathSeg{raw: part}
		if isDigits(part) {
			n, err := strconv.Atoi(part)
			if err != nil || n > maxStructuredIndex {
				return nil, fmt.Errorf("path %q: index %s is out of range (at most %d)", p, part, maxStructuredIndex)
			}
			seg.index, seg.isIdx = n, true
		}
		segs[i] = seg
	}
	return segs, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// updateAt returns a copy of cur (the value at segs[:depth]) in which the value at segs has
// been replaced by op of it. Only the containers on the path are copied; cur is not modified.
func updateAt(cur any, segs []pathSeg, depth int, path string, op func(any) (any, error)) (any, error) {
	if depth == len(segs) {
		return op(cur)
	}
	seg := segs[depth]
	where := "the data"
	if depth > 0 {
		where = strconv.Quote(joinSegs(segs[:depth]))
	}
	if seg.isIdx {
		var arr []any
		switch t := cur.(type) {
		case nil:
		case []any:
			arr = t
		case map[string]any:
			return nil, fmt.Errorf("path %q: %s is an object, so segment %q cannot index it", path, where, seg.raw)
		default:
			return nil, fmt.Errorf("path %q: %s is %s, not an array", path, where, describeValue(cur))
		}
		var child any
		if seg.index < len(arr) {
			child = arr[seg.index]
		}
		v, err := updateAt(child, segs, depth+1, path, op)
		if err != nil {
			return nil, err
		}
		out := make([]any, max(len(arr), seg.index+1))
		copy(out, arr)
		out[seg.index] = v
		return out, nil
	}
	var obj map[string]any
	switch t := cur.(type) {
	case nil:
	case map[string]any:
		obj = t
	case []any:
		return nil, fmt.Errorf("path %q: %s is an array, so segment %q must be an index", path, where, seg.raw)
	default:
		return nil, fmt.Errorf("path %q: %s is %s, not an object", path, where, describeValue(cur))
	}
	v, err := updateAt(obj[seg.raw], segs, depth+1, path, op)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(obj)
	if out == nil {
		out = map[string]any{}
	}
	out[seg.raw] = v
	return out, nil
}

func joinSegs(segs []pathSeg) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.raw
	}
	return strings.Join(parts, ".")
}

// decodeJSON decodes a raw JSON value; an absent one is null.
func decodeJSON(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// describeValue names the JSON type of a decoded value, for error messages.
func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}
