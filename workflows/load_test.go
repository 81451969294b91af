package workflows

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// stripForCompare returns a copy of d without what cannot be compared: Run funcs are dropped and
// schemas are replaced by their documents.
func stripForCompare(d *Definition) (*Definition, []string) {
	c := *d
	c.Nodes = map[string]Node{}
	for id, n := range d.Nodes {
		n.Run = nil
		c.Nodes[id] = n
	}
	var schemas []string
	for _, s := range []*contracts.Schema{d.InputSchema, d.OutputSchema} {
		if s == nil {
			schemas = append(schemas, "")
			continue
		}
		schemas = append(schemas, string(s.Raw()))
	}
	c.InputSchema, c.OutputSchema = nil, nil
	c.pin = nil // what runs record (pin_test.go)
	return &c, schemas
}

const fullYAML = `
id: support
version: "2.1"
description: Answers questions.
inputSchema:
  type: object
  properties:
    question: {type: string, minLength: 1}
  required: [question]
outputSchema: {type: object}
metadata:
  owner: team-a
  tags: [support, chat]
nodes:
  classify:
    run: classify
    params:
      model: small
      temperature: 0.2
      n: 3
      nested: {list: [1, "a", true, null]}
    metadata: {note: first}
    behavior:
      retry: {maxAttempts: 3, delayMs: 500}
      onError: {mode: emit-and-stop}
  answer:
    run: answer
    behavior:
      retry: {delayMs: 10}
edges:
  - [__start__, classify]
  - [classify, answer, {when: question}]
  - [classify, __end__, {when: done}]
  - [answer, classify]
`

const fullJSON = `{
  "id": "support",
  "version": "2.1",
  "description": "Answers questions.",
  "inputSchema": {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 1}},
    "required": ["question"]
  },
  "outputSchema": {"type": "object"},
  "metadata": {"owner": "team-a", "tags": ["support", "chat"]},
  "nodes": {
    "classify": {
      "run": "classify",
      "params": {"model": "small", "temperature": 0.2, "n": 3, "nested": {"list": [1, "a", true, null]}},
      "metadata": {"note": "first"},
      "behavior": {"retry": {"maxAttempts": 3, "delayMs": 500}, "onError": {"mode": "emit-and-stop"}}
    },
    "answer": {"run": "answer", "behavior": {"retry": {"delayMs": 10}}}
  },
  "edges": [
    ["__start__", "classify"],
    ["classify", "answer", {"when": "question"}],
    ["classify", "__end__", {"when": "done"}],
    ["answer", "classify"]
  ]
}`

func TestLoadFull(t *testing.T) {
	fromYAML, err := Load([]byte(fullYAML))
	require.NoError(t, err)
	fromJSON, err := Load([]byte(fullJSON))
	require.NoError(t, err)

	y, ySchemas := stripForCompare(fromYAML)
	j, jSchemas := stripForCompare(fromJSON)
	require.Equal(t, j, y)
	require.Equal(t, jSchemas, ySchemas)

	// The same definition written in Go (numbers in params are float64, as with encoding/json).
	want := &Definition{
		ID: "support", Version: "2.1", Description: "Answers questions.",
		Metadata: map[string]any{"owner": "team-a", "tags": []any{"support", "chat"}},
		Nodes: map[string]Node{
			"classify": {
				RunName: "classify",
				Params: map[string]any{"model": "small", "temperature": 0.2, "n": float64(3),
					"nested": map[string]any{"list": []any{float64(1), "a", true, nil}}},
				Metadata: map[string]any{"note": "first"},
				Retry:    &Retry{MaxAttempts: 3, DelayMs: 500},
			},
			"answer": {RunName: "answer", Retry: &Retry{MaxAttempts: 1, DelayMs: 10}},
		},
		Edges: []Edge{
			plainEdge(startID, "classify"), whenEdge("classify", "answer", "question"), whenEdge("classify", endID, "done"), plainEdge("answer", "classify"),
		},
	}
	require.Equal(t, want, y)
	require.NoError(t, want.Validate())
	require.Equal(t, "answer", fromYAML.next("classify", "question"))
	require.Equal(t, endID, fromYAML.next("classify", "done"))

	// The input schema compiled and works.
	require.Empty(t, fromYAML.InputSchema.Validate(map[string]any{"question": "why?"}))
	issues := fromYAML.InputSchema.Validate(map[string]any{"question": ""})
	require.Len(t, issues, 1)
	require.Equal(t, []any{"question"}, issues[0].Path)
	require.NotNil(t, fromYAML.OutputSchema)
}

func TestLoadRoundTrip(t *testing.T) {
	src := `
id: rt
version: "1"
nodes:
  a:
    run: fa
    params: {greeting: hello, count: 2, flags: {loud: true}}
  b: {run: fb}
edges:
  - [__start__, a]
  - [a, b, {when: done}]
`
	d, err := Load([]byte(src))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"greeting": "hello", "count": float64(2), "flags": map[string]any{"loud": true}},
		d.Nodes["a"].Params)
	require.Nil(t, d.Nodes["b"].Params)
	require.Equal(t, []Edge{plainEdge(startID, "a"), whenEdge("a", "b", "done")}, d.Edges)
	require.Equal(t, "b", d.next("a", "done"))
	require.Equal(t, endID, d.next("a", "nope"))
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []issueKey
	}{
		{name: "blank", src: "   ", want: []issueKey{
			{ipath("edges"), issueRequired}, {ipath("id"), issueRequired}, {ipath("nodes"), issueRequired}, {ipath("version"), issueRequired},
		}},
		{name: "comment only", src: "# nothing\n", want: []issueKey{
			{ipath("edges"), issueRequired}, {ipath("id"), issueRequired}, {ipath("nodes"), issueRequired}, {ipath("version"), issueRequired},
		}},
		{name: "edge with one element", src: `{"id":"x","version":"1","nodes":{"a":{"run":"f"}},"edges":[["__start__"]]}`,
			want: []issueKey{{ipath("edges", 0), issueInvalidValue}}},
		{name: "unknown node key", src: `
id: x
version: "1"
nodes:
  start: {run: f, foo: 1}
edges: [[__start__, start]]
`, want: []issueKey{{ipath("nodes", "start", "foo"), issueUnrecognizedKeys}}},
		{name: "unknown top-level key", src: `{"id":"x","version":"1","foo":true,"nodes":{"a":{"run":"f"}},"edges":[["__start__","a"]]}`,
			want: []issueKey{{ipath("foo"), issueUnrecognizedKeys}}},
		{name: "fastPath not a boolean", src: `{"id":"x","version":"1","fastPath":"yes","nodes":{"a":{"run":"f"}},"edges":[["__start__","a"]]}`,
			want: []issueKey{{ipath("fastPath"), issueInvalidType}}},
		{name: "root not an object", src: `[1, 2]`, want: []issueKey{{ipath(), issueInvalidType}}},
		{name: "scalar root", src: `hello`, want: []issueKey{{ipath(), issueInvalidType}}},
		{name: "maxAttempts 0", src: `
id: x
version: "1"
nodes:
  x: {run: f, behavior: {retry: {maxAttempts: 0}}}
edges: [[__start__, x]]
`, want: []issueKey{{ipath("nodes", "x", "behavior", "retry", "maxAttempts"), issueInvalidValue}}},
		{name: "unreachable node", src: `
id: x
version: "1"
nodes: {a: {run: f}, b: {run: f}}
edges: [[__start__, a]]
`, want: []issueKey{{ipath("nodes", "b"), issueUnreachableNode}}},
		{name: "two plain edges", src: `
id: x
version: "1"
nodes: {a: {run: f}, b: {run: f}, c: {run: f}}
edges: [[__start__, a], [a, b], [a, c]]
`, want: []issueKey{{ipath("edges", 2), issueParallelEdges}}},
		{name: "plain and conditional edges", src: `
id: x
version: "1"
nodes: {a: {run: f}, b: {run: f}, c: {run: f}}
edges: [[__start__, a], [a, b], [a, c, {when: other}]]
`, want: []issueKey{{ipath("edges", 1), issueParallelEdges}}},
		{name: "wrong types", src: `
id: 7
version: 1
description: [a]
metadata: nope
nodes:
  a:
    run: 3
    params: [1]
    behavior:
      retry: {maxAttempts: 1.5, delayMs: "10", extra: 1}
      onError: {mode: explode}
  b: just-a-string
edges: [[__start__, a], [a, b, {when: 3}], [a, 5], "x", [a, b, {when: ""}], [a, b, {}], [a, b, {when: y, also: z}], [a, b, c, d]]
`, want: []issueKey{
			{ipath("description"), issueInvalidType},
			{ipath("edges", 1, 2, "when"), issueInvalidType},
			{ipath("edges", 2, 1), issueInvalidType},
			{ipath("edges", 3), issueInvalidType},
			{ipath("edges", 4, 2, "when"), issueInvalidValue},
			{ipath("edges", 5, 2, "when"), issueRequired},
			{ipath("edges", 6, 2, "also"), issueUnrecognizedKeys},
			{ipath("edges", 7), issueInvalidValue},
			{ipath("id"), issueInvalidType},
			{ipath("metadata"), issueInvalidType},
			{ipath("nodes", "a", "behavior", "onError", "mode"), issueInvalidValue},
			{ipath("nodes", "a", "behavior", "retry", "delayMs"), issueInvalidType},
			{ipath("nodes", "a", "behavior", "retry", "extra"), issueUnrecognizedKeys},
			{ipath("nodes", "a", "behavior", "retry", "maxAttempts"), issueInvalidType},
			{ipath("nodes", "a", "params"), issueInvalidType},
			{ipath("nodes", "a", "run"), issueInvalidType},
			{ipath("nodes", "b"), issueInvalidType},
			{ipath("version"), issueInvalidType},
		}},
		{name: "many problems in one file", src: `
id: multi
version: ""
extra: 1
nodes:
  start: {run: f, foo: bar}
  lonely: {run: f}
  twice: {run: f}
  norun: {}
  __end__: {run: f}
edges:
  - [__start__, start]
  - [start, twice]
  - [start, norun]
  - [twice, ghost]
  - [twice, __start__, {when: back}]
  - [twice, norun, {when: back}]
  - [norun, norun, {when: again}]
  - [norun, norun, {when: again}]
  - [__end__, start]
`, want: []issueKey{
			{ipath("edges", 2), issueParallelEdges},
			{ipath("edges", 3), issueParallelEdges},
			{ipath("edges", 3, 1), issueUnknownNode},
			{ipath("edges", 4, 1), issueInvalidValue},
			{ipath("edges", 5, 2, "when"), issueParallelEdges},
			{ipath("edges", 7), issueDuplicateEdge},
			{ipath("edges", 8, 0), issueInvalidValue},
			{ipath("extra"), issueUnrecognizedKeys},
			{ipath("nodes", "__end__"), issueInvalidValue},
			{ipath("nodes", "__end__"), issueUnreachableNode},
			{ipath("nodes", "lonely"), issueUnreachableNode},
			{ipath("nodes", "norun", "run"), issueRequired},
			{ipath("nodes", "start", "foo"), issueUnrecognizedKeys},
			{ipath("version"), issueRequired},
		}},
		{name: "bad edges skip graph-wide checks", src: `
id: x
version: "1"
nodes: {a: {run: f}, b: {run: f}}
edges: [[__start__, 1], [a, b]]
`, want: []issueKey{{ipath("edges", 0, 1), issueInvalidType}}},
		{name: "unreadable nodes skip endpoint checks", src: `
id: x
version: "1"
nodes: [a]
edges: [[__start__, a], [a, b]]
`, want: []issueKey{{ipath("nodes"), issueInvalidType}}},
		{name: "edges not a list", src: `
id: x
version: "1"
nodes: {a: {run: f}}
edges: {a: b}
`, want: []issueKey{{ipath("edges"), issueInvalidType}}},
		{name: "invalid input schema", src: `
id: x
version: "1"
inputSchema: {type: strnig}
outputSchema: true
nodes: {a: {run: f}}
edges: [[__start__, a]]
`, want: []issueKey{{ipath("inputSchema"), issueInvalidSchema}, {ipath("outputSchema"), issueInvalidType}}},
		{name: "non-finite number", src: `
id: x
version: "1"
nodes: {a: {run: f, params: {x: .inf}}}
edges: [[__start__, a]]
`, want: []issueKey{{ipath("nodes", "a", "params", "x"), issueInvalidValue}}},
		{name: "huge JSON number", src: `{"id":"x","version":"1","nodes":{"a":{"run":"f","params":{"x":1e400}}},"edges":[["__start__","a"]]}`,
			want: []issueKey{{ipath("nodes", "a", "params", "x"), issueInvalidValue}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Load([]byte(tt.src))
			require.Nil(t, d)
			require.Equal(t, tt.want, issuesOf(t, err))
		})
	}
}

func TestLoadErrorMessages(t *testing.T) {
	_, err := Load([]byte("id: x\nversion: \"1\"\nnodes: {x: {run: f, behavior: {retry: {maxAttempts: 0}}}}\nedges: [[__start__, x]]\n"))
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, `workflow "x" is invalid: 1 problem to fix`, ke.Message)
	require.Contains(t, ke.Issues[0].Message, "at least 1")

	_, err = Load([]byte(`{"id":"x","version":"1","nodes":{"start":{"run":"f","foo":1}},"edges":[["__start__","start"]]}`))
	require.ErrorAs(t, err, &ke)
	require.Equal(t, `unknown key "foo" in node "start": allowed keys are run, params, metadata, children, behavior`, ke.Issues[0].Message)
	require.Contains(t, err.Error(), `nodes.start.foo: unknown key "foo"`)

	_, err = Load([]byte("id: x\nversion: \"1\"\nnodes: {a: {run: f}, b: {run: f}, c: {run: f}}\nedges: [[__start__, a], [a, b], [a, c, {when: y}]]\n"))
	require.ErrorAs(t, err, &ke)
	require.Contains(t, ke.Issues[0].Message, "put when on every edge, or use a single plain edge")
}

func TestLoadSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, src string
		contains  []string
	}{
		{name: "YAML duplicate key", src: "id: a\nid: b\n", contains: []string{"invalid YAML", "line 2, column 1", `"id" already defined`}},
		{name: "YAML bad indentation", src: "id: a\nnodes:\n  a: 1\n b: 2\n", contains: []string{"invalid YAML", "line 4"}},
		{name: "JSON unterminated", src: "{\n  \"id\": \"a\",\n", contains: []string{"invalid JSON", "line 3", "unexpected end of input"}},
		{name: "JSON bad token", src: "{\n  \"id\": nope\n}", contains: []string{"invalid JSON", "line 2"}},
		{name: "JSON duplicate key", src: "{\"id\": \"a\",\n \"id\": \"b\"}", contains: []string{"invalid JSON", "line 2", `duplicate key "id"`}},
		{name: "JSON trailing content", src: `{"id": "a"} {}`, contains: []string{"invalid JSON", "after the JSON value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.src))
			require.Equal(t, []issueKey{{ipath(), issueInvalidValue}}, issuesOf(t, err))
			var ke *contracts.Error
			require.ErrorAs(t, err, &ke)
			for _, s := range tt.contains {
				require.Contains(t, ke.Issues[0].Message, s)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	d, err := loadFile(filepath.Join("testdata", "defs", "a-support.workflow.yaml"))
	require.NoError(t, err)
	require.Equal(t, "support", d.ID)
	require.Equal(t, &Retry{MaxAttempts: 3, DelayMs: 250}, d.Nodes["answer"].Retry)

	bad := filepath.Join("testdata", "defs", "c-broken.workflow.yml")
	_, err = loadFile(bad)
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.True(t, strings.HasPrefix(ke.Message, bad+`: workflow "broken" is invalid`), ke.Message)
	require.Equal(t, bad, ke.Details["file"])

	_, err = loadFile(filepath.Join(t.TempDir(), "missing.workflow.yaml"))
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadDir(t *testing.T) {
	defs, err := loadDir(filepath.Join("testdata", "defs"))
	require.Len(t, defs, 2)
	require.Equal(t, "support", defs[0].ID) // a-support.workflow.yaml
	require.Equal(t, "echo", defs[1].ID)    // b-echo.workflow.json
	require.Equal(t, map[string]any{"prefix": "you said: "}, defs[1].Nodes["echo"].Params)

	// Only the broken file failed; ignored.yaml was not read.
	require.Equal(t, []issueKey{
		{ipath("edges", 1, 1), issueUnknownNode},
		{ipath("nodes", "start", "foo"), issueUnrecognizedKeys},
	}, issuesOf(t, err))
	require.Contains(t, err.Error(), "c-broken.workflow.yml")
	require.NotContains(t, err.Error(), "ignored.yaml")
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	require.Len(t, joined.Unwrap(), 1)

	defs, err = loadDir(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, defs)

	_, err = loadDir(filepath.Join(t.TempDir(), "nope"))
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
}

// loadFile reads and loads (as Registry.AddFile does, without the registry) one workflow file (see [Load]); the error message starts with the
// file's path, which is also in the error's Details under "file".
func loadFile(path string) (*Definition, error) {
	data, err := readWorkflowFile(path)
	if err != nil {
		return nil, err
	}
	d, err := Load(data)
	if err != nil {
		return nil, inFile(path, err)
	}
	return d, nil
}

// loadDir loads the files of dir (not its subdirectories) whose names end in ".workflow.json",
// ".workflow.yaml" or ".workflow.yml", in name order. It returns the definitions that loaded and
// the errors of the others joined with errors.Join (nil if all loaded). Duplicate ids are not
// checked here: [Registry.Add] rejects them.
func loadDir(dir string) ([]*Definition, error) {
	paths, err := workflowFiles(dir)
	if err != nil {
		return nil, err
	}
	var defs []*Definition
	var errs []error
	for _, path := range paths {
		d, err := loadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		defs = append(defs, d)
	}
	return defs, errors.Join(errs...)
}

// TestLoadFastPath: fastPath: true turns the agent's fast path on, and is what its runs record.
func TestLoadFastPath(t *testing.T) {
	for _, src := range []string{"id: x\nversion: \"1\"\nfastPath: true\nnodes: {a: {run: f}}\nedges: [[__start__, a]]\n",
		`{"id":"x","version":"1","fastPath":true,"nodes":{"a":{"run":"f"}},"edges":[["__start__","a"]]}`} {
		d, err := Load([]byte(src))
		require.NoError(t, err)
		require.True(t, d.FastPath)
		require.True(t, pinOf(d).FastPath, "runs record it")
	}
	d, err := Load([]byte(`{"id":"x","version":"1","nodes":{"a":{"run":"f"}},"edges":[["__start__","a"]]}`))
	require.NoError(t, err)
	require.False(t, d.FastPath)
	require.False(t, pinOf(d).FastPath)
}
