package workflows

import (
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func funcPtrOf(fn NodeFunc) uintptr { return reflect.ValueOf(fn).Pointer() }

func echoTestNode(_ workflow.Context, in NodeInput) (NodeResult, error) {
	return NodeResult{Data: map[string]any{"echo": in.Text()}}, nil
}

func newTestRegistry(t *testing.T, names ...string) *Registry {
	t.Helper()
	r := NewRegistry()
	for _, n := range names {
		require.NoError(t, r.RegisterNode(n, noopTestNode))
	}
	return r
}

func TestRegistryRegisterNode(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.RegisterNode("b", noopTestNode))
	require.NoError(t, r.RegisterNode("a", echoTestNode))
	tests := []struct {
		name string
		node string
		fn   NodeFunc
	}{
		{"empty name", "", noopTestNode},
		{"blank name", "  ", noopTestNode},
		{"nil func", "c", nil},
		{"duplicate", "a", noopTestNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.RegisterNode(tt.node, tt.fn)
			require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
		})
	}
	require.Equal(t, []string{"a", "b", ReasonNode}, r.nodeNames(), "plus the built-in node kinds")
}

func TestRegistryAdd(t *testing.T) {
	t.Run("function-valued Run survives Validate and Add unchanged", func(t *testing.T) {
		d := testDef([]string{"a"}, plainEdge(startID, "a"))
		d.Nodes["a"] = Node{Run: echoTestNode, Params: map[string]any{"k": "v"}, Retry: &Retry{MaxAttempts: 2}}
		before, _ := stripForCompare(d)
		require.NoError(t, d.Validate())
		r := NewRegistry() // no node functions needed
		require.NoError(t, r.Add(d))

		after, _ := stripForCompare(d)
		require.Equal(t, before, after)
		require.Equal(t, funcPtrOf(echoTestNode), funcPtrOf(d.Nodes["a"].Run))

		got, err := r.Workflow("wf")
		require.NoError(t, err)
		require.Equal(t, funcPtrOf(echoTestNode), funcPtrOf(got.Nodes["a"].Run))
		stored, _ := stripForCompare(got)
		require.Equal(t, before, stored)
		res, err := got.Nodes["a"].Run(nil, NodeInput{Input: "hi"})
		require.NoError(t, err)
		require.Equal(t, "hi", res.Data["echo"])
	})

	t.Run("RunName is resolved in a copy", func(t *testing.T) {
		r := NewRegistry()
		require.NoError(t, r.RegisterNode("echo", echoTestNode))
		d, err := Load([]byte("id: x\nversion: '1'\nnodes: {a: {run: echo}}\nedges: [[__start__, a]]\n"))
		require.NoError(t, err)
		require.NoError(t, r.Add(d))
		require.Equal(t, "echo", d.Nodes["a"].RunName)
		require.Nil(t, d.Nodes["a"].Run)

		got, err := r.Workflow("x")
		require.NoError(t, err)
		require.NotSame(t, d, got)
		require.Equal(t, funcPtrOf(echoTestNode), funcPtrOf(got.Nodes["a"].Run))
		require.Empty(t, got.Nodes["a"].RunName)
		require.NoError(t, got.Validate(), "stored definitions stay valid")
		require.NoError(t, NewRegistry().Add(got), "stored definitions can be added elsewhere")
	})

	t.Run("unknown RunName", func(t *testing.T) {
		r := newTestRegistry(t, "classify", "answer")
		d := testDef([]string{"a", "b"}, plainEdge(startID, "a"), plainEdge("a", "b"))
		d.Nodes["a"] = Node{RunName: "clasify"}
		d.Nodes["b"] = Node{RunName: "answer"}
		err := r.Add(d)
		require.Equal(t, []issueKey{{ipath("nodes", "a", "run"), issueUnknownNodeFunction}}, issuesOf(t, err))
		var ke *contracts.Error
		require.ErrorAs(t, err, &ke)
		require.Contains(t, ke.Issues[0].Message, `"clasify" is not registered (registered: answer, classify, kortyx.reason)`)
		require.Empty(t, r.Workflows())
	})

	t.Run("validation and resolution issues together", func(t *testing.T) {
		r := NewRegistry()
		d := testDef([]string{"a", "b"}, plainEdge(startID, "a"))
		d.Nodes["a"] = Node{RunName: "missing"}
		err := r.Add(d)
		require.Equal(t, []issueKey{
			{ipath("nodes", "a", "run"), issueUnknownNodeFunction},
			{ipath("nodes", "b"), issueUnreachableNode},
		}, issuesOf(t, err))
		require.Contains(t, err.Error(), "(registered: kortyx.reason)")
	})

	t.Run("duplicate ids", func(t *testing.T) {
		r := NewRegistry()
		one := testDef([]string{"a"}, plainEdge(startID, "a"))
		require.NoError(t, r.Add(one))
		err := r.Add(testDef([]string{"b"}, plainEdge(startID, "b")))
		require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
		require.Contains(t, err.Error(), `workflow "wf" is already registered`)

		other := testDef([]string{"a"}, plainEdge(startID, "a"))
		other.ID = "other"
		err = r.Add(other, other)
		require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
		require.Len(t, r.Workflows(), 1, "Add is all-or-nothing")
	})

	t.Run("all or nothing", func(t *testing.T) {
		r := NewRegistry()
		good := testDef([]string{"a"}, plainEdge(startID, "a"))
		bad := testDef([]string{"a"})
		bad.ID = "bad"
		err := r.Add(good, bad, nil)
		require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
		require.Contains(t, err.Error(), `workflow "bad" is invalid`)
		require.Contains(t, err.Error(), "workflow definition is nil")
		require.Empty(t, r.Workflows())
	})
}

func TestRegistryWorkflow(t *testing.T) {
	r := NewRegistry()
	mk := func(id string) *Definition {
		d := testDef([]string{"a"}, plainEdge(startID, "a"))
		d.ID = id
		return d
	}
	require.NoError(t, r.Add(mk("support"), mk("billing")))

	tests := []struct {
		name     string
		setup    func()
		id       string
		want     string // workflow id returned; "" means an error
		wantCode contracts.Code
		wantMsg  string
	}{
		{name: "registered", id: "support", want: "support"},
		{name: "unknown without fallback registered", id: "nope", wantCode: contracts.CodeUnknownWorkflow,
			wantMsg: `Workflow "nope" not found; the workflows registered on this worker are: billing, support.`},
		{name: "blank id", id: " ", wantCode: contracts.CodeUnknownWorkflow,
			wantMsg: "No workflow was selected: pass the id of a registered workflow."},
		{name: "default fallback", setup: func() { require.NoError(t, r.Add(mk(DefaultFallback))) },
			id: "nope", want: DefaultFallback},
		{name: "custom fallback", setup: func() { r.SetFallback("billing") }, id: "nope", want: "billing"},
		{name: "registered wins over fallback", id: "support", want: "support"},
		{name: "missing custom fallback", setup: func() { r.SetFallback("gone") }, id: "nope",
			wantCode: contracts.CodeUnknownWorkflow, wantMsg: `Workflow "nope" not found; the workflows registered on this worker are: billing, general-chat, support.`},
		{name: "fallback disabled", setup: func() { r.SetFallback("") }, id: "nope",
			wantCode: contracts.CodeUnknownWorkflow, wantMsg: `Workflow "nope" not found; the workflows registered on this worker are: billing, general-chat, support.`},
		{name: "blank id ignores fallback", setup: func() { r.SetFallback("billing") }, id: "",
			wantCode: contracts.CodeUnknownWorkflow, wantMsg: "No workflow was selected: pass the id of a registered workflow."},
	}
	for _, tt := range tests { // in order: setups accumulate
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			d, err := r.Workflow(tt.id)
			if tt.want != "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, d.ID)
				return
			}
			require.Nil(t, d)
			require.Equal(t, tt.wantCode, contracts.CodeOf(err))
			require.EqualError(t, err, tt.wantMsg)
		})
	}

	ids := []string{}
	for _, d := range r.Workflows() {
		ids = append(ids, d.ID)
	}
	require.Equal(t, []string{"billing", DefaultFallback, "support"}, ids)

	// The ids are in the error's details too; an empty registry says it has none.
	r.SetFallback("")
	_, err := r.Workflow("nope")
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, map[string]any{"workflow": "nope", "fallback": "", "known": []string{"billing", DefaultFallback, "support"}}, ke.Details)
	_, err = NewRegistry().Workflow("nope")
	require.EqualError(t, err, `Workflow "nope" not found: no workflow is registered on this worker.`)
}

func TestRegistryConcurrentReads(t *testing.T) {
	r := newTestRegistry(t, "f")
	require.NoError(t, r.Add(testDef([]string{"a"}, plainEdge(startID, "a"))))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				d, err := r.Workflow("wf")
				if err != nil || d.startNode() != "a" || len(r.nodeNames()) != 2 || len(r.Workflows()) != 1 {
					t.Error("unexpected registry state")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestRegistryAddFiles(t *testing.T) {
	dir := filepath.Join("testdata", "defs")

	t.Run("AddFile", func(t *testing.T) {
		r := newTestRegistry(t, "echo")
		require.NoError(t, r.AddFile(filepath.Join(dir, "b-echo.workflow.json")))
		d, err := r.Workflow("echo")
		require.NoError(t, err)
		require.NotNil(t, d.Nodes["echo"].Run)

		err = r.AddFile(filepath.Join(dir, "a-support.workflow.yaml"))
		require.Equal(t, []issueKey{
			{ipath("nodes", "answer", "run"), issueUnknownNodeFunction},
			{ipath("nodes", "classify", "run"), issueUnknownNodeFunction},
		}, issuesOf(t, err))
	})

	t.Run("AddDir with a bad file adds nothing", func(t *testing.T) {
		r := newTestRegistry(t, "classify", "answer", "echo")
		err := r.AddDir(dir)
		require.Equal(t, contracts.CodeInvalidDefinition, contracts.CodeOf(err))
		require.Contains(t, err.Error(), "c-broken.workflow.yml")
		require.Empty(t, r.Workflows())
	})

	t.Run("AddDir", func(t *testing.T) {
		good := t.TempDir()
		for _, name := range []string{"a-support.workflow.yaml", "b-echo.workflow.json"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(good, name), data, 0o600))
		}
		r := newTestRegistry(t, "classify", "answer", "echo")
		require.NoError(t, r.AddDir(good))
		ids := []string{}
		for _, d := range r.Workflows() {
			ids = append(ids, d.ID)
		}
		require.Equal(t, []string{"echo", "support"}, ids)

		err := r.AddDir(good)
		require.Contains(t, err.Error(), `workflow "echo" is already registered`)
		require.Contains(t, err.Error(), `workflow "support" is already registered`)
	})

	t.Run("AddDir reports unknown node functions too", func(t *testing.T) {
		r := newTestRegistry(t, "echo")
		err := r.AddDir(dir)
		require.Contains(t, err.Error(), "c-broken.workflow.yml")
		require.Contains(t, err.Error(), `"classify" is not registered`)
		require.Empty(t, r.Workflows())
	})
}
