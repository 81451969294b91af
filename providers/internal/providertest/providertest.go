// Package providertest holds the test helpers the provider packages' tests share.
package providertest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// Generate runs one pass, streamed or not, and returns the deltas passed to onDelta.
func Generate(p providers.Provider, req providers.Request, stream bool) (providers.Response, []string, error) {
	var deltas []string
	var onDelta func(string) error
	if stream {
		onDelta = func(d string) error { deltas = append(deltas, d); return nil }
	}
	resp, err := p.Generate(context.Background(), req, onDelta)
	return resp, deltas, err
}

// AsError requires err to be (or wrap) a *contracts.Error and returns it.
func AsError(t *testing.T, err error) *contracts.Error {
	t.Helper()
	var ke *contracts.Error
	require.ErrorAs(t, err, &ke)
	return ke
}
