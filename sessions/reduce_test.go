package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
)

const sdStream = "run-1:structured:1"

func sdSet(path, value string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: sdStream, DataType: "plan",
		Kind: contracts.StructuredSet, Path: path, Value: json.RawMessage(value)}
}

func sdAppend(path, items string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: sdStream, DataType: "plan",
		Kind: contracts.StructuredAppend, Path: path, Items: json.RawMessage(items)}
}

func sdText(path, d string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: sdStream, DataType: "plan",
		Kind: contracts.StructuredTextDelta, Path: path, Delta: d}
}

func sdFinal(data string) contracts.Chunk {
	return contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: sdStream, DataType: "plan",
		Kind: contracts.StructuredFinal, Data: json.RawMessage(data)}
}

// sdReduce applies chunks in order from a new stream, failing the test on any error.
func sdReduce(t *testing.T, chunks ...contracts.Chunk) *StructuredState {
	t.Helper()
	var s *StructuredState
	for i, c := range chunks {
		next, err := applyStructured(s, c)
		require.NoError(t, err, "chunk %d", i)
		s = next
	}
	return s
}

// jsonObject decodes a JSON object the way the reducer does.
func jsonObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

func TestApplyStructuredSpecSequence(t *testing.T) {
	var s *StructuredState
	steps := []struct {
		chunk  contracts.Chunk
		data   string
		status string
	}{
		{sdSet("title", `"Trip"`), `{"title":"Trip"}`, structuredStreaming},
		{sdText("summary", "Two "), `{"title":"Trip","summary":"Two "}`, structuredStreaming},
		{sdText("summary", "days"), `{"title":"Trip","summary":"Two days"}`, structuredStreaming},
		{sdAppend("days", `[{"n":1}]`), `{"title":"Trip","summary":"Two days","days":[{"n":1}]}`, structuredStreaming},
		{sdAppend("days", `[{"n":2}]`), `{"title":"Trip","summary":"Two days","days":[{"n":1},{"n":2}]}`, structuredStreaming},
		{sdSet("days.1.city", `"Rome"`), `{"title":"Trip","summary":"Two days","days":[{"n":1},{"n":2,"city":"Rome"}]}`, structuredStreaming},
		{sdFinal(`{"title":"Trip","days":[1,2]}`), `{"title":"Trip","days":[1,2]}`, structuredDone},
	}
	for i, step := range steps {
		next, err := applyStructured(s, step.chunk)
		require.NoError(t, err, "step %d", i)
		require.Equal(t, jsonObject(t, step.data), next.Data, "step %d", i)
		require.Equal(t, step.status, next.Status, "step %d", i)
		s = next
	}
	require.Equal(t, &StructuredState{StreamID: sdStream, DataType: "plan", Status: structuredDone,
		Data: map[string]any{"title": "Trip", "days": []any{1.0, 2.0}}}, s)
}

func TestApplyStructured(t *testing.T) {
	tests := []struct {
		name   string
		chunks []contracts.Chunk
		want   string // the data, as JSON
	}{
		{"set creates nested objects", []contracts.Chunk{sdSet("a.b.c", `1`)}, `{"a":{"b":{"c":1}}}`},
		{"set replaces a value of another type", []contracts.Chunk{sdSet("a", `"x"`), sdSet("a", `{"b":[true]}`)}, `{"a":{"b":[true]}}`},
		{"set without value writes null", []contracts.Chunk{sdSet("a", ``)}, `{"a":null}`},
		{"set null", []contracts.Chunk{sdSet("a", `null`)}, `{"a":null}`},
		{"index on a missing container creates an array padded with nulls", []contracts.Chunk{sdSet("list.2", `"x"`)}, `{"list":[null,null,"x"]}`},
		{"index then key creates an object in the array", []contracts.Chunk{sdSet("list.0.name", `"n"`)}, `{"list":[{"name":"n"}]}`},
		{"nested indexes create nested arrays", []contracts.Chunk{sdSet("m.1.0", `7`)}, `{"m":[null,[7]]}`},
		{"set replaces an array item", []contracts.Chunk{sdAppend("l", `[1,2,3]`), sdSet("l.1", `"two"`)}, `{"l":[1,"two",3]}`},
		{"set past the end grows the array", []contracts.Chunk{sdAppend("l", `[1]`), sdSet("l.3", `4`)}, `{"l":[1,null,null,4]}`},
		{"a null item is filled like a missing one", []contracts.Chunk{sdSet("l.1", `1`), sdSet("l.0.k", `"v"`)}, `{"l":[{"k":"v"},1]}`},
		{"digit segments with leading zeros are indexes", []contracts.Chunk{sdSet("l.01", `1`)}, `{"l":[null,1]}`},
		{"append creates an array", []contracts.Chunk{sdAppend("a.items", `[1,"two"]`)}, `{"a":{"items":[1,"two"]}}`},
		{"append extends an array", []contracts.Chunk{sdAppend("items", `[1]`), sdAppend("items", `[2,3]`)}, `{"items":[1,2,3]}`},
		{"append of no items creates an empty array", []contracts.Chunk{sdAppend("items", `[]`)}, `{"items":[]}`},
		{"append onto null", []contracts.Chunk{sdSet("items", `null`), sdAppend("items", `[1]`)}, `{"items":[1]}`},
		{"append into an array item", []contracts.Chunk{sdAppend("rows", `[{"cells":[]}]`), sdAppend("rows.0.cells", `["a"]`)}, `{"rows":[{"cells":["a"]}]}`},
		{"text-delta creates a string", []contracts.Chunk{sdText("a.text", "Hel")}, `{"a":{"text":"Hel"}}`},
		{"text-delta extends a string", []contracts.Chunk{sdText("text", "Hel"), sdText("text", "lo")}, `{"text":"Hello"}`},
		{"text-delta extends a set string", []contracts.Chunk{sdSet("l.0", `"a"`), sdText("l.0", "b")}, `{"l":["ab"]}`},
		{"final replaces everything", []contracts.Chunk{sdSet("a", `1`), sdFinal(`{"b":2}`)}, `{"b":2}`},
		{"final first", []contracts.Chunk{sdFinal(`{}`)}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sdReduce(t, tt.chunks...)
			require.Equal(t, jsonObject(t, tt.want), s.Data)
			require.Equal(t, sdStream, s.StreamID)
		})
	}
}

func TestApplyStructuredMetadata(t *testing.T) {
	first := sdSet("a", `1`)
	first.Node, first.ID, first.SchemaID, first.SchemaVersion = "planner", "hook-1", "plan", "1"
	s := sdReduce(t, first)
	require.Equal(t, &StructuredState{StreamID: sdStream, DataType: "plan", Status: structuredStreaming,
		Data: map[string]any{"a": 1.0}, Node: "planner", ID: "hook-1", SchemaID: "plan", SchemaVersion: "1"}, s)

	// Later chunks keep the metadata they do not carry and replace what they carry.
	later := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: sdStream, Kind: contracts.StructuredSet,
		Path: "b", Value: json.RawMessage(`2`), SchemaVersion: "2", DataType: "plan-v2"}
	s, err := applyStructured(s, later)
	require.NoError(t, err)
	require.Equal(t, &StructuredState{StreamID: sdStream, DataType: "plan-v2", Status: structuredStreaming,
		Data: map[string]any{"a": 1.0, "b": 2.0}, Node: "planner", ID: "hook-1", SchemaID: "plan", SchemaVersion: "2"}, s)
}

func TestApplyStructuredDoesNotModifyInput(t *testing.T) {
	s := sdReduce(t, sdSet("a.b", `1`), sdAppend("l", `[1,2]`), sdText("t", "x"), sdSet("o.p.q", `true`))
	before, err := json.Marshal(s)
	require.NoError(t, err)
	copyOf := *s

	for _, c := range []contracts.Chunk{sdSet("a.c", `2`), sdAppend("l", `[3]`), sdSet("l.0", `9`), sdText("t", "y"),
		sdSet("o.p.q", `false`), sdSet("o.p.r.s", `1`), sdFinal(`{"z":1}`), sdSet("a.b.c", `1`) /* error */} {
		_, _ = applyStructured(s, c)
	}
	after, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, string(before), string(after))
	require.Equal(t, copyOf, *s)
}

func TestApplyStructuredErrors(t *testing.T) {
	other := sdSet("a", `1`)
	other.StreamID = "run-1:structured:2"
	noStream := sdSet("a", `1`)
	noStream.StreamID = ""
	unknown := sdSet("a", `1`)
	unknown.Kind = "merge"
	text := contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "hi"}
	invalidated := contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: sdStream}

	tests := []struct {
		name   string
		before []contracts.Chunk
		chunk  contracts.Chunk
		msg    string
	}{
		{"not structured data", nil, text, `cannot apply a "text-delta" chunk to a structured-data stream`},
		{"invalidation is not structured data", nil, invalidated, `cannot apply a "structured-data-invalidated" chunk`},
		{"no stream id", nil, noStream, `structured-data set chunk has no streamId`},
		{"stream id mismatch", []contracts.Chunk{sdSet("a", `1`)}, other,
			`structured-data chunk of stream "run-1:structured:2" cannot be applied to stream "run-1:structured:1"`},
		{"set after final", []contracts.Chunk{sdFinal(`{}`)}, sdSet("a", `1`), `structured stream "run-1:structured:1" is final: set chunk after final`},
		{"final after final", []contracts.Chunk{sdFinal(`{}`)}, sdFinal(`{}`), `is final: final chunk after final`},
		{"unknown kind", nil, unknown, `unknown kind "merge": expected set, append, text-delta or final`},
		{"empty path", nil, sdSet("", `1`), `path must be a non-empty dot-separated string`},
		{"blank path", nil, sdSet("  ", `1`), `path must be a non-empty dot-separated string`},
		{"empty segment", nil, sdSet("a..b", `1`), `path "a..b" has an empty segment`},
		{"trailing dot", nil, sdText("a.", "x"), `path "a." has an empty segment`},
		{"leading dot", nil, sdAppend(".a", `[1]`), `path ".a" has an empty segment`},
		{"blank segment", nil, sdSet("a. .b", `1`), `path "a. .b" has an empty segment`},
		{"index out of range", nil, sdSet("l.65536", `1`), `path "l.65536": index 65536 is out of range (at most 65535)`},
		{"huge index", nil, sdSet("l.99999999999999999999999", `1`), `is out of range`},
		{"key under a string", []contracts.Chunk{sdSet("a", `"x"`)}, sdSet("a.b", `1`), `path "a.b": "a" is a string, not an object`},
		{"key under a number", []contracts.Chunk{sdSet("a", `1`)}, sdSet("a.b.c", `1`), `path "a.b.c": "a" is a number, not an object`},
		{"index under a boolean", []contracts.Chunk{sdSet("a.b", `true`)}, sdSet("a.b.0", `1`), `path "a.b.0": "a.b" is a boolean, not an array`},
		{"index into the root object", nil, sdSet("0", `1`), `path "0": the data is an object, so segment "0" cannot index it`},
		{"index into an object", []contracts.Chunk{sdSet("a.b", `1`)}, sdSet("a.0", `1`), `path "a.0": "a" is an object, so segment "0" cannot index it`},
		{"key into an array", []contracts.Chunk{sdAppend("l", `[1]`)}, sdSet("l.x", `1`), `path "l.x": "l" is an array, so segment "x" must be an index`},
		{"append to a string", []contracts.Chunk{sdSet("a", `"x"`)}, sdAppend("a", `[1]`), `cannot append at "a": the value there is a string, not an array`},
		{"append to an object", []contracts.Chunk{sdSet("a.b", `1`)}, sdAppend("a", `[1]`), `cannot append at "a": the value there is an object, not an array`},
		{"append without items", nil, sdAppend("a", ``), `append at "a" has no items`},
		{"append items not an array", nil, sdAppend("a", `{"x":1}`), `append items at "a" must be a JSON array, not an object`},
		{"append items null", nil, sdAppend("a", `null`), `append items at "a" must be a JSON array, not null`},
		{"text-delta to a number", []contracts.Chunk{sdSet("a", `1`)}, sdText("a", "x"), `cannot apply a text-delta at "a": the value there is a number, not a string`},
		{"text-delta to an array", []contracts.Chunk{sdAppend("a", `[]`)}, sdText("a", "x"), `the value there is an array, not a string`},
		{"final data not an object", nil, sdFinal(`[1]`), `final data must be a JSON object, not an array`},
		{"final without data", nil, sdFinal(``), `final data must be a JSON object, not null`},
		{"invalid final data", nil, sdFinal(`{`), `final data is not valid JSON`},
		{"invalid set value", nil, sdSet("a", `{x}`), `set value at "a" is not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s *StructuredState
			if len(tt.before) > 0 {
				s = sdReduce(t, tt.before...)
			}
			got, err := applyStructured(s, tt.chunk)
			require.Error(t, err)
			require.Nil(t, got)
			var ke *contracts.Error
			require.True(t, errors.As(err, &ke))
			require.Equal(t, contracts.CodeMalformedStream, ke.Code)
			require.Contains(t, ke.Message, tt.msg)
		})
	}
}

func TestStructuredStateJSON(t *testing.T) {
	s := sdReduce(t, sdSet("a", `1`))
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"streamId":"run-1:structured:1","dataType":"plan","status":"streaming","data":{"a":1}}`, string(b))
}

func Example_structuredData() {
	chunk := func(kind contracts.StructuredKind, path, value, items, delta string) contracts.Chunk {
		c := contracts.Chunk{Type: contracts.ChunkStructuredData, StreamID: "s1", DataType: "recipe",
			Kind: kind, Path: path, Delta: delta}
		if value != "" {
			c.Value = json.RawMessage(value)
		}
		if items != "" {
			c.Items = json.RawMessage(items)
		}
		return c
	}
	var s *StructuredState
	for _, c := range []contracts.Chunk{
		chunk(contracts.StructuredSet, "title", `"Pancakes"`, "", ""),
		chunk(contracts.StructuredAppend, "steps", "", `["Mix"]`, ""),
		chunk(contracts.StructuredAppend, "steps", "", `["Fry"]`, ""),
		chunk(contracts.StructuredTextDelta, "note", "", "", "Serve "),
		chunk(contracts.StructuredTextDelta, "note", "", "", "warm."),
	} {
		next, err := applyStructured(s, c)
		if err != nil {
			fmt.Println(err)
			return
		}
		s = next
	}
	b, _ := json.Marshal(s)
	fmt.Println(string(b))

	_, err := applyStructured(s, chunk(contracts.StructuredTextDelta, "steps", "", "", "!"))
	fmt.Println(err)
	// Output:
	// {"streamId":"s1","dataType":"recipe","status":"streaming","data":{"note":"Serve warm.","steps":["Mix","Fry"],"title":"Pancakes"}}
	// structured stream "s1": cannot apply a text-delta at "steps": the value there is an array, not a string
}
