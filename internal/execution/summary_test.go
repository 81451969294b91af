package execution

import (
	"testing"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/stretchr/testify/require"
)

// The summaries of model passes name the worker's defaults as such.
func TestModelSummary(t *testing.T) {
	for _, c := range []struct {
		ref  providers.ModelRef
		want string
	}{
		{providers.ModelRef{Provider: "openai", Model: "gpt-4.1-mini"}, "model openai:gpt-4.1-mini"},
		{providers.ModelRef{Provider: "openai"}, "model openai"},
		{providers.ModelRef{Model: "gpt-4.1-mini"}, "model gpt-4.1-mini (default provider)"},
		{providers.ModelRef{}, "model (the worker's default)"},
	} {
		require.Equal(t, c.want, modelSummary(c.ref))
	}
	require.Equal(t, "tool lookup_order", toolSummary("lookup_order"))
}
