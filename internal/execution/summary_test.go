package execution

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// The summaries of model passes name the worker's defaults as such.
func TestModelSummary(t *testing.T) {
	for _, c := range []struct {
		ref  contracts.ModelRef
		want string
	}{
		{contracts.ModelRef{Provider: "openai", Model: "gpt-4.1-mini"}, "model openai:gpt-4.1-mini"},
		{contracts.ModelRef{Provider: "openai"}, "model openai"},
		{contracts.ModelRef{Model: "gpt-4.1-mini"}, "model gpt-4.1-mini (default provider)"},
		{contracts.ModelRef{}, "model (the worker's default)"},
	} {
		require.Equal(t, c.want, modelSummary(c.ref))
	}
	require.Equal(t, "tool lookup_order", toolSummary("lookup_order"))
}
