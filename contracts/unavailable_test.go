package contracts_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

func TestTemporalUnavailableIs503(t *testing.T) {
	c := contracts.CodeTemporalUnavailable
	require.Equal(t, contracts.Code("TEMPORAL_UNAVAILABLE"), c)
	require.Equal(t, "persistence", c.Category())
	f := (&contracts.Error{Code: c, Message: "Temporal is unavailable.", Retryable: true}).Failure()
	require.True(t, f.Retryable)
}
