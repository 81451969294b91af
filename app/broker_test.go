package app

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/redisstream"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
)

// Without KORTYX_REDIS_URL the broker is a new in-memory one for the process.
func TestOpenBrokerInMemory(t *testing.T) {
	b, closeBroker, err := openBroker(context.Background(), Config{})
	require.NoError(t, err)
	require.IsType(t, stream.NewMemory(stream.MemoryOptions{}), b)
	require.NoError(t, closeBroker())
	_, isPinger := b.(pinger)
	require.False(t, isPinger, "the in-memory broker has no store to check")
}

// The in-memory broker drops a finished run's stream once Config.StreamRetention has passed
// after its final done (polled with a deadline).
func TestOpenBrokerInMemoryRetention(t *testing.T) {
	ctx := context.Background()
	b, closeBroker, err := openBroker(ctx, Config{StreamRetention: 20 * time.Millisecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, closeBroker()) }()
	require.NoError(t, b.Publish(ctx, "run", stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkDone}}))
	require.Eventually(t, func() bool { last, err := b.Last(ctx, "run"); return err == nil && last == 0 }, 10*time.Second, 5*time.Millisecond)
}

// Config.StreamMaxRuns bounds the runs the in-memory broker keeps.
func TestOpenBrokerInMemoryMaxRuns(t *testing.T) {
	ctx := context.Background()
	b, closeBroker, err := openBroker(ctx, Config{StreamMaxRuns: 2})
	require.NoError(t, err)
	defer func() { require.NoError(t, closeBroker()) }()
	for _, run := range []string{"a", "b", "c"} {
		require.NoError(t, b.Publish(ctx, run, stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkStatus}}))
	}
	for run, want := range map[string]int64{"a": 0, "b": 1, "c": 1} {
		last, err := b.Last(ctx, run)
		require.NoError(t, err)
		require.Equal(t, want, last, run)
	}
}

// With KORTYX_REDIS_URL it is the Redis broker: two brokers opened from the same URL (two
// processes) read each other's chunks; a Redis nobody listens on fails the start with
// STREAM_UNAVAILABLE.
func TestOpenBrokerRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	cfg := Config{RedisURL: srv.URL(), StreamRetention: time.Hour}
	a, closeA, err := openBroker(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeA()) }()
	require.Implements(t, (*redisstream.Broker)(nil), a)
	b, closeB, err := openBroker(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeB()) }()
	require.NoError(t, a.(pinger).Ping(ctx))

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
	_, _, err = openBroker(ctx, Config{RedisURL: "redis://" + closed + "/0"})
	require.Equal(t, contracts.CodeStreamUnavailable, contracts.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "kortyx: the stream broker of KORTYX_REDIS_URL: ")
}
