package workflows

import (
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func pinTestRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	require.NoError(t, r.RegisterNode("echo", echoTestNode))
	return r
}

func TestPinHashIsTheGraphs(t *testing.T) {
	a, err := Load([]byte("id: p\nversion: '1'\nnodes: {a: {run: echo, params: {x: 1, y: [1, 2]}}, b: {run: echo}}\nedges: [[__start__, a], [a, b]]\n"))
	require.NoError(t, err)
	same, err := Load([]byte(`{"version": "1", "id": "p", "edges": [["__start__", "a"], ["a", "b"]], "nodes": {"b": {"run": "echo"}, "a": {"params": {"y": [1, 2], "x": 1}, "run": "echo"}}}`))
	require.NoError(t, err)
	other, err := Load([]byte("id: p\nversion: '1'\nnodes: {a: {run: echo, params: {x: 2, y: [1, 2]}}, b: {run: echo}}\nedges: [[__start__, a], [a, b]]\n"))
	require.NoError(t, err)
	pa, ps, po := pinOf(a), pinOf(same), pinOf(other)
	require.Len(t, pa.Hash, 64)
	require.Equal(t, pa.Hash, ps.Hash, "key order and format do not matter")
	require.NotEqual(t, pa.Hash, po.Hash)
	require.NotEqual(t, pa.Nodes["a"].Hash, po.Nodes["a"].Hash)
	require.Equal(t, pa.Nodes["b"].Hash, po.Nodes["b"].Hash)
	require.False(t, pa.Digest)
	require.Equal(t, map[string]any{"x": float64(1), "y": []any{float64(1), float64(2)}}, pa.Nodes["a"].Params)

	r := pinTestRegistry(t)
	require.NoError(t, r.Add(a))
	require.Equal(t, pa.Hash, r.Fingerprint("p"))
	require.Equal(t, "", r.Fingerprint("nope"))
}

func TestPinOfAHugeDefinitionKeepsOnlyHashes(t *testing.T) {
	d := &Definition{ID: "big", Version: "1", Nodes: map[string]Node{"a": {RunName: "echo", Params: map[string]any{"text": strings.Repeat("x", pinLimit)}}},
		Edges: []Edge{{From: Start, To: "a"}}}
	p := pinOf(d)
	require.True(t, p.Digest)
	require.Nil(t, p.Nodes["a"].Params)
	require.Len(t, p.Nodes["a"].Hash, 64)

	// A run that recorded it runs it as long as the worker's definition has its hash; a
	// changed one cannot be rebound and is reported, naming the node.
	r := pinTestRegistry(t)
	require.NoError(t, r.Add(d))
	cur, _ := r.Lookup("big")
	got, err := r.pinned(cur, p)
	require.NoError(t, err)
	require.Same(t, cur, got)
	changed := *p
	changed.Hash = "0000"
	changed.Nodes = map[string]protocol.PinnedNode{"a": {Run: "echo", Hash: "1111"}}
	_, err = r.pinned(cur, &changed)
	requireCode(t, err, contracts.CodeInvalidDefinition)
	require.Contains(t, err.Error(), `workflow "big" changed since this run started (node "a"; recorded definition 0000…): it was recorded as hashes only (its JSON is over 262144 bytes)`)
}

func requireCode(t *testing.T, err error, code contracts.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, contracts.CodeOf(err), err.Error())
}

func TestPinnedRebindsTheRecordedDefinition(t *testing.T) {
	v1, err := Load([]byte("id: p\nversion: '1'\nnodes: {a: {run: echo, params: {label: one}}}\nedges: [[__start__, a]]\n"))
	require.NoError(t, err)
	v2, err := Load([]byte("id: p\nversion: '2'\nnodes: {first: {run: echo}, a: {run: echo, params: {label: two}}}\nedges: [[__start__, first], [first, a]]\n"))
	require.NoError(t, err)
	old := pinTestRegistry(t)
	require.NoError(t, old.Add(v1))
	rec := mustLookup(t, old, "p").pin

	r := pinTestRegistry(t)
	require.NoError(t, r.Add(v2))
	cur := mustLookup(t, r, "p")
	got, err := r.pinned(cur, rec)
	require.NoError(t, err)
	require.Equal(t, "1", got.Version)
	require.Equal(t, "a", got.startNode(), "the recorded graph: no node in front")
	require.Equal(t, map[string]any{"label": "one"}, got.Nodes["a"].Params)
	require.NotNil(t, got.Nodes["a"].Run)
	require.Same(t, rec, got.pin)
	again, err := r.pinned(cur, rec)
	require.NoError(t, err)
	require.Same(t, got, again, "rebound once per hash")

	// A worker without the node function the record names reports it, naming the node.
	bare := NewRegistry()
	_, err = bare.pinned(nil, rec)
	requireCode(t, err, contracts.CodeInvalidDefinition)
	require.Contains(t, err.Error(), `workflow "p" changed since this run started (the workflow is no longer registered on this worker;`)
	require.Contains(t, err.Error(), `node function "echo" is not registered`)
}

func TestPinnedGoDefinitionCannotBeRebound(t *testing.T) {
	mk := func(version string) *Definition {
		return &Definition{ID: "g", Version: "1", Nodes: map[string]Node{
			"a": {Run: func(workflow.Context, NodeInput) (NodeResult, error) { return NodeResult{}, nil }, Version: version}},
			Edges: []Edge{{From: Start, To: "a"}}}
	}
	old := NewRegistry()
	require.NoError(t, old.Add(mk("")))
	rec := mustLookup(t, old, "g").pin
	require.True(t, rec.Nodes["a"].Code)

	same := NewRegistry()
	require.NoError(t, same.Add(mk("")))
	got, err := same.pinned(mustLookup(t, same, "g"), rec)
	require.NoError(t, err)
	require.Same(t, mustLookup(t, same, "g"), got, "same graph: the worker's definition")

	bumped := NewRegistry()
	require.NoError(t, bumped.Add(mk("2")))
	_, err = bumped.pinned(mustLookup(t, bumped, "g"), rec)
	requireCode(t, err, contracts.CodeInvalidDefinition)
	require.Contains(t, err.Error(), `[kortyx] nondeterministic change: workflow "g" changed since this run started (node "a"; recorded definition `)
	require.Contains(t, err.Error(), `its nodes "a" are Go functions set in a definition built in Go`)
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, []string{"a"}, ke.Details["nodes"])
}

func mustLookup(t *testing.T, r *Registry, id string) *Definition {
	t.Helper()
	d, ok := r.Lookup(id)
	require.True(t, ok)
	return d
}

func TestPinnedNeedsTheRecordedTools(t *testing.T) {
	d, err := Load([]byte("id: t\nversion: '1'\nnodes: {a: {run: kortyx.reason, params: {tools: [lookup]}}}\nedges: [[__start__, a]]\n"))
	require.NoError(t, err)
	old := NewRegistry()
	old.SetToolNames("lookup")
	require.NoError(t, old.Add(d))
	rec := mustLookup(t, old, "t").pin

	r := NewRegistry()
	r.SetToolNames("search")
	_, err = r.pinned(nil, rec)
	requireCode(t, err, contracts.CodeInvalidDefinition)
	require.Contains(t, err.Error(), `this worker cannot run the recorded definition: `)
	require.Contains(t, err.Error(), `"lookup"`)
}
