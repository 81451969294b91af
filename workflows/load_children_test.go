package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A node of a file declares the workflows it starts as child workflows ("children", as
// Node.Children in Go): loaded, validated as workflow ids, and not part of the fingerprint.
func TestLoadChildren(t *testing.T) {
	without, err := Load([]byte("id: x\nversion: \"1\"\nnodes: {fan: {run: f}}\nedges: [[__start__, fan]]\n"))
	require.NoError(t, err)
	for _, src := range []string{
		"id: x\nversion: \"1\"\nnodes:\n  fan:\n    run: f\n    children: [research.topic, other]\nedges: [[__start__, fan]]\n",
		`{"id":"x","version":"1","nodes":{"fan":{"run":"f","children":["research.topic","other"]}},"edges":[["__start__","fan"]]}`,
	} {
		d, err := Load([]byte(src))
		require.NoError(t, err)
		require.Equal(t, []string{"research.topic", "other"}, d.Nodes["fan"].Children)
		require.Equal(t, pinOf(without).Hash, pinOf(d).Hash, "children describe: a run in flight replays whatever they say")
	}
	d, err := Load([]byte("id: x\nversion: \"1\"\nnodes: {fan: {run: f, children: []}}\nedges: [[__start__, fan]]\n"))
	require.NoError(t, err)
	require.Empty(t, d.Nodes["fan"].Children)

	for _, tt := range []struct {
		name, children string
		want           []issueKey
	}{
		{"not a list", `"research.topic"`, []issueKey{{ipath("nodes", "fan", "children"), issueInvalidType}}},
		{"not a string", `[research.topic, 3]`, []issueKey{{ipath("nodes", "fan", "children", 1), issueInvalidType}}},
		{"blank", `[" ", research.topic, ""]`, []issueKey{{ipath("nodes", "fan", "children", 0), issueInvalidValue}, {ipath("nodes", "fan", "children", 2), issueInvalidValue}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Load([]byte("id: x\nversion: \"1\"\nnodes: {fan: {run: f, children: " + tt.children + "}}\nedges: [[__start__, fan]]\n"))
			require.Nil(t, d)
			require.Equal(t, tt.want, issuesOf(t, err))
		})
	}

	// The same check for a definition written in Go.
	g := testDef([]string{"fan"}, Edge{From: Start, To: "fan"})
	g.Nodes["fan"] = Node{Run: noopTestNode, Children: []string{""}}
	require.Equal(t, []issueKey{{ipath("nodes", "fan", "children", 0), issueInvalidValue}}, issuesOf(t, g.Validate()))
}
