package sse

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

func TestParseUntil(t *testing.T) {
	tests := []struct {
		in   string
		want stream.Until
		ok   bool
	}{
		{"", stream.UntilRun, true},
		{"run", stream.UntilRun, true},
		{"response", stream.UntilResponse, true},
		{"none", stream.UntilCancel, true},
		{"RUN", 0, false},
		{"forever", 0, false},
	}
	for _, tt := range tests {
		got, err := parseUntil(tt.in)
		if !tt.ok {
			require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err), tt.in)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
		if tt.in != "" {
			require.Equal(t, tt.in, got.String())
		}
	}
}
