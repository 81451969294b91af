package workflows

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func noopTestNode(workflow.Context, NodeInput) (NodeResult, error) { return NodeResult{}, nil }

// issueKey is an issue's path and code, what tests compare.
type issueKey struct {
	Path []any
	Code string
}

// issuesOf returns the paths and codes of an INVALID_DEFINITION error, in order.
func issuesOf(t *testing.T, err error) []issueKey {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	out := make([]issueKey, 0, len(ke.Issues))
	for _, is := range ke.Issues {
		require.NotEmpty(t, is.Message, "issue %v has no message", is.Path)
		out = append(out, issueKey{Path: is.Path, Code: is.Code})
	}
	return out
}

func ipath(path ...any) []any { return append([]any{}, path...) }

// testDef builds a definition whose nodes all run noopTestNode.
func testDef(nodes []string, edges ...Edge) *Definition {
	d := &Definition{ID: "wf", Version: "1", Nodes: map[string]Node{}, Edges: edges}
	for _, n := range nodes {
		d.Nodes[n] = Node{Run: noopTestNode}
	}
	return d
}

func plainEdge(from, to string) Edge      { return Edge{From: from, To: to} }
func whenEdge(from, to, when string) Edge { return Edge{From: from, To: to, When: when} }

const (
	startID = Start
	endID   = End
)

func TestDefinitionValidate(t *testing.T) {
	tests := []struct {
		name string
		def  func() *Definition
		want []issueKey // nil: valid
	}{
		{name: "minimal", def: func() *Definition { return testDef([]string{"a"}, plainEdge(startID, "a"), plainEdge("a", endID)) }},
		{name: "node without outgoing edges ends the run", def: func() *Definition { return testDef([]string{"a"}, plainEdge(startID, "a")) }},
		{name: "loops and self-loops with conditions", def: func() *Definition {
			return testDef([]string{"a", "b"}, plainEdge(startID, "a"), whenEdge("a", "a", "again"), whenEdge("a", "b", "next"), plainEdge("b", "a"))
		}},
		{name: "RunName without registry", def: func() *Definition {
			d := testDef(nil, plainEdge(startID, "a"))
			d.Nodes = map[string]Node{"a": {RunName: "later", Retry: &Retry{MaxAttempts: 1}}}
			return d
		}},
		{name: "empty id and version", def: func() *Definition {
			d := testDef([]string{"a"}, plainEdge(startID, "a"))
			d.ID, d.Version = "", " "
			return d
		}, want: []issueKey{{ipath("id"), issueRequired}, {ipath("version"), issueInvalidValue}}},
		{name: "no nodes no edges", def: func() *Definition { return testDef(nil) },
			want: []issueKey{{ipath("edges"), issueRequired}, {ipath("nodes"), issueRequired}}},
		{name: "run missing or doubled", def: func() *Definition {
			d := testDef([]string{"ok"}, plainEdge(startID, "ok"), plainEdge("ok", "none"), plainEdge("ok", "both"))
			d.Edges = []Edge{plainEdge(startID, "ok"), whenEdge("ok", "none", "x"), whenEdge("ok", "both", "y")}
			d.Nodes["none"] = Node{}
			d.Nodes["both"] = Node{Run: noopTestNode, RunName: "f"}
			return d
		}, want: []issueKey{{ipath("nodes", "both", "run"), issueInvalidValue}, {ipath("nodes", "none", "run"), issueRequired}}},
		{name: "bad retry", def: func() *Definition {
			d := testDef([]string{"x", "y"}, plainEdge(startID, "x"), plainEdge("x", "y"))
			d.Nodes["x"] = Node{Run: noopTestNode, Retry: &Retry{MaxAttempts: 0}}
			d.Nodes["y"] = Node{Run: noopTestNode, Retry: &Retry{MaxAttempts: 2, DelayMs: -1}}
			return d
		}, want: []issueKey{
			{ipath("nodes", "x", "behavior", "retry", "maxAttempts"), issueInvalidValue},
			{ipath("nodes", "y", "behavior", "retry", "delayMs"), issueInvalidValue},
		}},
		{name: "reserved and malformed node ids", def: func() *Definition {
			return testDef([]string{"a", endID, "b c"}, plainEdge(startID, "a"), plainEdge("a", "b c"), plainEdge("b c", endID))
		}, want: []issueKey{{ipath("nodes", "__end__"), issueInvalidValue}, {ipath("nodes", "b c"), issueInvalidValue}}},
		{name: "unknown nodes", def: func() *Definition {
			return testDef([]string{"a"}, plainEdge(startID, "a"), plainEdge("a", "nope"), plainEdge("ghost", "a"))
		}, want: []issueKey{{ipath("edges", 1, 1), issueUnknownNode}, {ipath("edges", 2, 0), issueUnknownNode}}},
		{name: "empty endpoints", def: func() *Definition {
			return testDef([]string{"a"}, plainEdge(startID, "a"), plainEdge("a", ""), plainEdge("", "a"))
		}, want: []issueKey{{ipath("edges", 1, 1), issueRequired}, {ipath("edges", 2, 0), issueRequired}}},
		{name: "edge out of end and into start", def: func() *Definition {
			return testDef([]string{"a"}, plainEdge(startID, "a"), plainEdge(endID, "a"), plainEdge("a", startID))
		}, want: []issueKey{{ipath("edges", 1, 0), issueInvalidValue}, {ipath("edges", 2, 1), issueInvalidValue}}},
		{name: "two start edges", def: func() *Definition {
			return testDef([]string{"a", "b"}, plainEdge(startID, "a"), plainEdge(startID, "b"))
		}, want: []issueKey{{ipath("edges", 1), issueParallelEdges}}},
		{name: "conditional start edge", def: func() *Definition {
			return testDef([]string{"a"}, whenEdge(startID, "a", "go"))
		}, want: []issueKey{{ipath("edges", 0, 2, "when"), issueInvalidValue}}},
		{name: "no start edge", def: func() *Definition {
			return testDef([]string{"a", "b"}, plainEdge("a", "b"))
		}, want: []issueKey{{ipath("edges"), issueRequired}, {ipath("nodes", "a"), issueUnreachableNode}, {ipath("nodes", "b"), issueUnreachableNode}}},
		{name: "unreachable node", def: func() *Definition {
			return testDef([]string{"a", "island", "b"}, plainEdge(startID, "a"), plainEdge("a", "b"), plainEdge("island", "b"))
		}, want: []issueKey{{ipath("nodes", "island"), issueUnreachableNode}}},
		{name: "two plain edges", def: func() *Definition {
			return testDef([]string{"a", "b", "c"}, plainEdge(startID, "a"), plainEdge("a", "b"), plainEdge("a", "c"))
		}, want: []issueKey{{ipath("edges", 2), issueParallelEdges}}},
		{name: "plain and conditional edges", def: func() *Definition {
			return testDef([]string{"a", "b", "c"}, plainEdge(startID, "a"), whenEdge("a", "b", "x"), plainEdge("a", "c"))
		}, want: []issueKey{{ipath("edges", 2), issueParallelEdges}}},
		{name: "same condition twice", def: func() *Definition {
			return testDef([]string{"a", "b", "c"}, plainEdge(startID, "a"), whenEdge("a", "b", "x"), whenEdge("a", "c", "x"))
		}, want: []issueKey{{ipath("edges", 2, 2, "when"), issueParallelEdges}}},
		{name: "duplicate edge", def: func() *Definition {
			return testDef([]string{"a", "b"}, plainEdge(startID, "a"), whenEdge("a", "b", "x"), whenEdge("a", "b", "x"))
		}, want: []issueKey{{ipath("edges", 2), issueDuplicateEdge}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.def().Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tt.want, issuesOf(t, err))
		})
	}
}

func TestDefinitionValidateError(t *testing.T) {
	d := testDef([]string{"a", "b"}, plainEdge(startID, "a"))
	err := d.Validate()
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, `workflow "wf" is invalid: 1 problem to fix`, ke.Message)
	require.Contains(t, err.Error(), `nodes.b: node "b" cannot be reached from __start__`)
	require.Equal(t, "configuration", contracts.CodeOf(err).Category())

	require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf((*Definition)(nil).Validate()))

	// Validate reports the same issues in the same order every time.
	d = testDef([]string{"z", "y", "x", "w"}, plainEdge("z", "y"), plainEdge("y", "nope"), plainEdge("x", "w"), plainEdge("x", "y"))
	first := issuesOf(t, d.Validate())
	for range 20 {
		require.Equal(t, first, issuesOf(t, d.Validate()))
	}
}

func TestDefinitionRouting(t *testing.T) {
	d := testDef([]string{"classify", "answer", "review"},
		plainEdge(startID, "classify"),
		whenEdge("classify", "answer", "question"),
		whenEdge("classify", "classify", "again"),
		whenEdge("classify", endID, "bye"),
		plainEdge("answer", "review"),
	)
	require.NoError(t, d.Validate())
	require.Equal(t, "classify", d.startNode())
	require.Equal(t, endID, (&Definition{}).startNode())

	tests := []struct {
		name, from, condition, want string
	}{
		{"conditional match", "classify", "question", "answer"},
		{"self loop", "classify", "again", "classify"},
		{"conditional to end", "classify", "bye", endID},
		{"unmatched condition ends", "classify", "other", endID},
		{"empty condition on conditional edges ends", "classify", "", endID},
		{"plain edge ignores condition", "answer", "whatever", "review"},
		{"plain edge", "answer", "", "review"},
		{"no outgoing edge ends", "review", "x", endID},
		{"unknown node ends", "nope", "", endID},
		{"start", startID, "", "classify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, d.next(tt.from, tt.condition))
		})
	}
}
