package redisstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/redisstream"
	"github.com/kortyx-go/kortyx/stream/streamtest"
	"github.com/kortyx-go/kortyx/test/redistest"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newBroker(t testing.TB, o redisstream.Options) redisstream.Broker {
	t.Helper()
	b, err := redisstream.New(testCtx(t), o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func delta(key, text string) stream.Keyed {
	return stream.Keyed{Key: key, Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: text}}
}

func chunk(key string, typ contracts.ChunkType) stream.Keyed {
	return stream.Keyed{Key: key, Chunk: contracts.Chunk{Type: typ}}
}

func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	streamtest.Run(t, func(t *testing.T, maxEntries int) stream.Broker {
		n++
		return newBroker(t, redisstream.Options{URL: srv.URL(), Prefix: fmt.Sprintf("contract%d:", n),
			MaxEntriesPerRun: maxEntries})
	})
}

// Two brokers (two processes) racing on the same keys store each key once.
func TestTwoBrokersRaceOnKeys(t *testing.T) {
	srv := redistest.Start(t)
	brokers := []redisstream.Broker{newBroker(t, redisstream.Options{URL: srv.URL()}), newBroker(t, redisstream.Options{URL: srv.URL()})}
	ctx := testCtx(t)
	const keys = 200
	var wg sync.WaitGroup
	for i := range 6 {
		b := brokers[i%2]
		wg.Go(func() {
			for k := 0; k < keys; k += 2 {
				if err := b.Publish(ctx, "race", delta(fmt.Sprintf("w:%d", k), "x"), delta(fmt.Sprintf("w:%d", k+1), "y")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	es, err := brokers[1].Read(ctx, "race", 0, 0)
	require.NoError(t, err)
	require.Len(t, es, keys)
	for i, e := range es {
		require.Equal(t, int64(i+1), e.Offset)
		require.Equal(t, fmt.Sprintf("w:%d", i), e.Key)
	}
}

// 50 waiters on a client with a pool of 3 connections: the waits share one connection, so
// publishers (and reads) still get theirs, and every waiter is woken.
func TestManyWaitersShareOneConnection(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 3, PoolTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = client.Close() })
	b := newBroker(t, redisstream.Options{Client: client})
	ctx := testCtx(t)

	const waiters = 60
	errs := make(chan error, waiters)
	for i := range waiters {
		go func() { errs <- b.Wait(ctx, fmt.Sprintf("run-%d", i), 0) }()
	}
	for redisstream.Waiters(b) < waiters {
		select {
		case err := <-errs:
			t.Fatalf("a Wait returned %v before any publish", err)
		case <-ctx.Done():
			t.Fatal("the waiters did not register")
		case <-time.After(5 * time.Millisecond):
		}
	}
	for i := range waiters {
		require.NoError(t, b.Publish(ctx, fmt.Sprintf("run-%d", i), delta("k", "v")))
		_, err := b.Read(ctx, fmt.Sprintf("run-%d", i), 0, 0)
		require.NoError(t, err)
	}
	for range waiters {
		require.NoError(t, <-errs)
	}
	require.LessOrEqual(t, client.PoolStats().TotalConns, uint32(3))
}

func pttl(t *testing.T, c *redis.Client, key string) time.Duration {
	d, err := c.PTTL(testCtx(t), key).Result()
	require.NoError(t, err)
	return d
}

// The run's keys expire only after the run's final done: not after an interrupt + done.
func TestRetentionAfterFinalDone(t *testing.T) {
	srv := redistest.Start(t)
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = raw.Close() })
	b := newBroker(t, redisstream.Options{URL: srv.URL(), Retention: time.Hour})
	ctx := testCtx(t)
	keys := redisstream.Keys(b, "run")

	require.NoError(t, b.Publish(ctx, "run", delta("w:1", "a"), chunk("w:2", contracts.ChunkInterrupt), chunk("w:3", contracts.ChunkDone)))
	for _, k := range keys {
		require.Equal(t, time.Duration(-1), pttl(t, raw, k), "%s after interrupt + done", k) // -1: no expiry
	}
	// The interrupt and the done in separate publishes: still a pause.
	require.NoError(t, b.Publish(ctx, "run", chunk("w:4", contracts.ChunkInterrupt)))
	require.NoError(t, b.Publish(ctx, "run", chunk("w:5", contracts.ChunkDone)))
	require.Equal(t, time.Duration(-1), pttl(t, raw, keys[0]))
	// The final done.
	require.NoError(t, b.Publish(ctx, "run", delta("w:6", "b"), chunk("w:7", contracts.ChunkDone)))
	for _, k := range keys {
		d := pttl(t, raw, k)
		require.True(t, d > 59*time.Minute && d <= time.Hour, "%s expires in %s", k, d)
	}

	// A short retention: the run is gone after it, and following it after an offset says so.
	short := newBroker(t, redisstream.Options{URL: srv.URL(), Prefix: "short:", Retention: 50 * time.Millisecond})
	require.NoError(t, short.Publish(ctx, "run", delta("w:1", "a"), chunk("w:2", contracts.ChunkDone)))
	for {
		n, err := raw.Exists(ctx, redisstream.Keys(short, "run")...).Result()
		require.NoError(t, err)
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the run's keys did not expire")
		case <-time.After(10 * time.Millisecond):
		}
	}
	first, last, err := short.Bounds(ctx, "run")
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, [2]int64{first, last})
	err = stream.Follow(ctx, short, "run", 2, stream.UntilRun, func(stream.Entry) error { return nil })
	require.Equal(t, contracts.CodeStreamGone, contracts.CodeOf(err), "%v", err)
}

func requireUnavailable(t *testing.T, err error, what string) {
	t.Helper()
	require.Equal(t, contracts.CodeStreamUnavailable, contracts.CodeOf(err), "%s: %v", what, err)
	var ce *contracts.Error
	require.True(t, errors.As(err, &ce), what)
	require.True(t, ce.Retryable, what)
}

// Redis down: every call is STREAM_UNAVAILABLE (retryable), a blocked Wait too; once it is
// back, the same broker works again.
func TestRedisUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	b := newBroker(t, redisstream.Options{URL: srv.URL()})
	ctx := testCtx(t)
	require.NoError(t, b.Publish(ctx, "run", delta("w:1", "a")))

	waiting := make(chan error, 1)
	go func() { waiting <- b.Wait(ctx, "run", 1) }()
	for redisstream.Waiters(b) < 1 {
		time.Sleep(5 * time.Millisecond) // until the waiter is registered
	}
	srv.Kill()
	requireUnavailable(t, <-waiting, "blocked Wait")
	requireUnavailable(t, b.Publish(ctx, "run", delta("w:2", "b")), "Publish")
	_, err := b.Read(ctx, "run", 0, 0)
	requireUnavailable(t, err, "Read")
	requireUnavailable(t, b.Wait(ctx, "run", 1), "Wait")
	_, _, err = b.Bounds(ctx, "run")
	requireUnavailable(t, err, "Bounds")
	requireUnavailable(t, b.Ping(ctx), "Ping")
	require.Contains(t, b.Ping(ctx).Error(), srv.Addr())

	srv.Restart()            // without persistence: the stream is gone
	for b.Ping(ctx) != nil { // the client's pool redials in the background after dial errors
		select {
		case <-ctx.Done():
			t.Fatal("the broker did not reconnect")
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.NoError(t, b.Publish(ctx, "run", delta("w:2", "b")))
	es, err := b.Read(ctx, "run", 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, int64(1), es[0].Offset)
}

// With the append-only file, a killed and restarted Redis keeps streams, keys and offsets.
func TestRestartWithAppendOnlyKeepsStreams(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnly())
	b := newBroker(t, redisstream.Options{URL: srv.URL()})
	ctx := testCtx(t)
	require.NoError(t, b.Publish(ctx, "run", delta("w:1", "a"), delta("w:2", "b")))
	srv.Kill()
	srv.Restart()
	require.NoError(t, b.Publish(ctx, "run", delta("w:2", "again"), delta("w:3", "c")))
	es, err := b.Read(ctx, "run", 0, 0)
	require.NoError(t, err)
	got := []string{}
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d %s %s", e.Offset, e.Key, e.Chunk.Delta))
	}
	require.Equal(t, []string{"1 w:1 a", "2 w:2 b", "3 w:3 c"}, got)
}

// A Redis process killed with SIGKILL right after it acknowledged writes loses none of them on
// the append-only file's default appendfsync everysec: Redis writes the file before it answers,
// and a killed process leaves what it wrote in the page cache (only an OS crash or power loss
// can lose the last second). Each Publish is acknowledged before the next one starts.
func TestKilledRedisKeepsAcknowledgedWrites(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnly())
	ctx := testCtx(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	cfg, err := rc.ConfigGet(ctx, "appendfsync").Result()
	require.NoError(t, err)
	require.Equal(t, "everysec", cfg["appendfsync"], "the default fsync policy")
	require.NoError(t, rc.Close())

	b := newBroker(t, redisstream.Options{URL: srv.URL()})
	const runs, perRun = 20, 100
	for i := range perRun {
		for r := range runs {
			require.NoError(t, b.Publish(ctx, fmt.Sprintf("run-%d", r), delta(fmt.Sprintf("w:%d", i+1), fmt.Sprint(i))))
		}
	}
	srv.Kill() // at once after the last acknowledged write
	srv.Restart()
	for r := range runs {
		es, err := b.Read(ctx, fmt.Sprintf("run-%d", r), 0, 0)
		require.NoError(t, err)
		require.Len(t, es, perRun, "run-%d", r)
		for i, e := range es {
			require.Equal(t, int64(i+1), e.Offset)
			require.Equal(t, fmt.Sprintf("w:%d", i+1), e.Key)
			require.Equal(t, fmt.Sprint(i), e.Chunk.Delta)
		}
	}
}

func TestNewErrors(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop() // a port where nothing answers

	_, err := redisstream.New(ctx, redisstream.Options{URL: "redis://user:s3cret@" + addr + "/0"})
	requireUnavailable(t, err, "New")
	require.Contains(t, err.Error(), addr)
	require.NotContains(t, fmt.Sprintf("%v %+v", err, contracts.FailureOf(err)), "s3cret")

	for _, u := range []string{"", "http://user:s3cret@host:1", "redis://user:s3cret@host:notaport"} {
		_, err = redisstream.New(ctx, redisstream.Options{URL: u})
		require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err), "%q: %v", u, err)
		require.NotContains(t, err.Error(), "s3cret")
	}

	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { _ = cluster.Close() })
	_, err = redisstream.New(ctx, redisstream.Options{Client: cluster})
	require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err), "%v", err)
	require.True(t, strings.Contains(err.Error(), "Cluster"), err.Error())
}
