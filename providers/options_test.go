package providers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

type testOptions struct {
	TopK     *int              `json:"topK,omitempty"`
	Mode     string            `json:"mode,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Internal string            `json:"-"`
	Plain    bool
}

func TestDecodeOptions(t *testing.T) {
	seven := 7
	t.Run("own namespace only", func(t *testing.T) {
		got, warnings, err := providers.DecodeOptions[testOptions](map[string]any{
			"mine":  map[string]any{"topK": 7, "mode": "fast", "labels": map[string]any{"a": "b"}, "Plain": true},
			"other": map[string]any{"whatever": 1},
			"topK":  3, // a key that names no provider's namespace of this one: not read
		}, "mine")
		require.NoError(t, err)
		require.Empty(t, warnings)
		require.Equal(t, testOptions{TopK: &seven, Mode: "fast", Labels: map[string]string{"a": "b"}, Plain: true}, got)
	})
	t.Run("absent or null", func(t *testing.T) {
		for _, opts := range []map[string]any{nil, {"other": map[string]any{}}, {"mine": nil}} {
			got, warnings, err := providers.DecodeOptions[testOptions](opts, "mine")
			require.NoError(t, err)
			require.Nil(t, warnings)
			require.Equal(t, testOptions{}, got)
		}
	})
	t.Run("unknown keys are warnings, sorted", func(t *testing.T) {
		got, warnings, err := providers.DecodeOptions[testOptions](map[string]any{
			"mine": map[string]any{"zeta": 1, "mode": "slow", "TopK": 2, "Internal": "x", "alpha": true},
		}, "mine")
		require.NoError(t, err)
		require.Equal(t, testOptions{Mode: "slow"}, got, "keys match exactly: TopK is not topK")
		var settings []string
		for _, w := range warnings {
			require.Equal(t, providers.WarningUnsupported, w.Type)
			settings = append(settings, w.Setting)
		}
		require.Equal(t, []string{"providerOptions.mine.Internal", "providerOptions.mine.TopK", "providerOptions.mine.alpha", "providerOptions.mine.zeta"}, settings)
		require.Equal(t, "The mine provider has no option 'zeta' (known: Plain, labels, mode, topK); it was ignored.", warnings[3].Message)
	})
	t.Run("wrong types are configuration errors", func(t *testing.T) {
		for _, tc := range []struct {
			opts map[string]any
			msg  string
		}{
			{map[string]any{"mine": map[string]any{"topK": "seven"}}, "providerOptions.mine.topK must be an integer (got string)."},
			{map[string]any{"mine": map[string]any{"topK": 1.5}}, "providerOptions.mine.topK must be an integer (got number 1.5)."},
			{map[string]any{"mine": map[string]any{"labels": map[string]any{"a": 1}}}, "the values of providerOptions.mine.labels must be a string (got number)."},
			{map[string]any{"mine": "fast"}, "providerOptions.mine must be an object of the mine provider's options (got a string)."},
			{map[string]any{"mine": []any{1}}, "providerOptions.mine must be an object of the mine provider's options (got an array)."},
		} {
			_, _, err := providers.DecodeOptions[testOptions](tc.opts, "mine")
			require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err))
			var ce *contracts.Error
			require.ErrorAs(t, err, &ce)
			require.False(t, ce.Retryable)
			require.Equal(t, tc.msg, ce.Message)
		}
	})
}

func TestNoUsageWarning(t *testing.T) {
	require.Equal(t, providers.Warning{Type: "other", Setting: "usage",
		Message: "The openai provider's server reported no token usage for this pass; its usage is counted as 0."},
		providers.NoUsageWarning("openai"))
}
