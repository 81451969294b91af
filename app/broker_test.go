package app_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/redistest"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/redisstream"
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

// With KORTYX_REDIS_URL it is the Redis broker: two brokers opened from the same URL (two
// processes) read each other's chunks; a Redis nobody listens on fails the start with
// STREAM_UNAVAILABLE.
func TestOpenBrokerRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	cfg := app.Config{RedisURL: srv.URL(), StreamRetention: time.Hour}
	a, closeA, err := app.OpenBroker(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeA()) }()
	require.IsType(t, &redisstream.Broker{}, a)
	b, closeB, err := app.OpenBroker(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeB()) }()
	require.NoError(t, a.(app.Pinger).Ping(ctx))

	require.NoError(t, a.Publish(ctx, "run-open-broker", stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkDone}}))
	got, err := b.Read(ctx, "run-open-broker", 0, 0)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int64(1), got[0].Offset)
	require.Equal(t, contracts.ChunkDone, got[0].Chunk.Type)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, _, err = app.OpenBroker(ctx, app.Config{RedisURL: "redis://" + closed + "/0"})
	require.Equal(t, contracts.CodeStreamUnavailable, contracts.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "kortyx: the stream broker of KORTYX_REDIS_URL: ")
}
