package workflows_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

// A node result that cannot be stored as JSON fails the run with a typed error (it used to be
// cloned as is, or dropped from the chunks as if it were not there).
func TestNodeDataThatCannotBeEncodedFailsTyped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   workflows.NodeResult
		field string
	}{
		{"data", workflows.NodeResult{Data: map[string]any{"ch": make(chan int)}}, "data"},
		{"structured", workflows.NodeResult{UI: &workflows.UI{Structured: map[string]any{"f": func() {}}}}, "ui.structured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, def("w", map[string]workflows.NodeFunc{"a": returns(tc.res)}, "__start__>a"))
			h.run("w", "x")
			_, err := h.result()
			require.Error(t, err)
			require.Equal(t, contracts.CodeInvalidOutput, contracts.CodeOf(err))
			f := contracts.FailureOf(err)
			require.Equal(t, map[string]any{"node": "a", "field": tc.field}, f.Details)
			require.Equal(t, []string{"error", "done"}, h.types())
		})
	}
}
