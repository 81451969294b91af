package examples_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

func ids(reg *workflows.Registry) []string {
	var out []string
	for _, d := range reg.Workflows() {
		out = append(out, d.ID)
	}
	return out
}

// KORTYX_EXAMPLES chooses the examples a worker registers; unset is all of them.
func TestParseChoosesExamples(t *testing.T) {
	for _, c := range []struct {
		list      string
		names     []string
		workflows []string
		tools     []string
		def       string
	}{
		{"", examples.Names, []string{"hello", "research", "research.topic", "support", "triage"}, []string{"lookup_order", "refund"}, "support"},
		{"all", examples.Names, []string{"hello", "research", "research.topic", "support", "triage"}, []string{"lookup_order", "refund"}, "support"},
		{"none", nil, nil, nil, ""},
		{"hello", []string{"hello"}, []string{"hello"}, nil, ""},
		{" research , support,research,", []string{"support", "research"}, []string{"research", "research.topic", "support"}, []string{"lookup_order", "refund"}, "support"},
	} {
		t.Run(c.list, func(t *testing.T) {
			s, err := examples.Parse(c.list)
			require.NoError(t, err)
			require.Equal(t, c.names, s.Names())
			reg := workflows.NewRegistry()
			require.NoError(t, s.Register(reg))
			require.Equal(t, c.workflows, ids(reg))
			opts := s.Options()
			var tools []string
			for _, tl := range opts.Tools {
				tools = append(tools, tl.Name)
			}
			require.Equal(t, c.tools, tools)
			require.Equal(t, c.tools != nil, opts.FakeModel != nil, "the support example brings its scripted model")
			require.Equal(t, c.tools != nil, s.Store != nil)
			require.Equal(t, c.def, s.DefaultWorkflow())
			require.Equal(t, c.def, opts.DefaultWorkflow)
			reg = workflows.NewRegistry()
			require.NoError(t, opts.Register(reg))
			require.Equal(t, c.workflows, ids(reg), "Options registers the chosen examples")
		})
	}
	_, err := examples.Parse("hello,shop")
	require.EqualError(t, err, `unknown example "shop" (the examples are support, triage, hello, research; or "all", or "none")`)
	t.Setenv("KORTYX_EXAMPLES", "shop")
	_, err = examples.FromEnv()
	require.EqualError(t, err, `kortyx: KORTYX_EXAMPLES: unknown example "shop" (the examples are support, triage, hello, research; or "all", or "none")`)
}
