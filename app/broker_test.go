package app_test

import (
	"context"
	"testing"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
)

// Without KORTYX_REDIS_URL the broker is a new in-memory one for the process.
func TestOpenBrokerInMemory(t *testing.T) {
	b, closeBroker, err := app.OpenBroker(context.Background(), app.Config{})
	require.NoError(t, err)
	require.IsType(t, &stream.Memory{}, b)
	require.NoError(t, closeBroker())
	_, isPinger := b.(app.Pinger)
	require.False(t, isPinger, "the in-memory broker has no store to check")
}
