// Package streamtest is the contract suite of [stream.Broker]: every broker of this module
// (stream.NewMemory, redisstream.New) runs it, and so can a broker of your own.
//
//	func TestMyBroker(t *testing.T) {
//		streamtest.Run(t, func(t *testing.T, maxEntriesPerRun int) stream.Broker {
//			return mybroker.New(mybroker.WithMaxEntriesPerRun(maxEntriesPerRun))
//		})
//	}
package streamtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
)

// maxEntriesPerRun is the per-run bound the factory given to [Run] must configure: the
// "PerStreamBound" and "FollowGone" subtests publish past it.
const maxEntriesPerRun = 64

// Run runs the contract suite as subtests of t, each on a broker from newBroker (called once
// per subtest with the bound it must give each run's stream, 64 entries). Run IDs are
// unique per subtest, so brokers may share a store.
func Run(t *testing.T, newBroker func(t *testing.T, maxEntriesPerRun int) stream.Broker) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b stream.Broker, run string)
	}{
		{"OrderedOffsets", orderedOffsets},
		{"EmptyPublish", emptyPublish},
		{"KeyedDedup", keyedDedup},
		{"ConcurrentDedup", concurrentDedup},
		{"AtomicBatches", atomicBatches},
		{"ReadLimitsAfter", readLimitsAfter},
		{"WaitWakesOnPublish", waitWakes},
		{"WaitCancel", waitCancel},
		{"Bounds", bounds},
		{"PerStreamBound", perStreamBound},
		{"FollowGone", followGone},
		{"FollowGoneWhileFollowing", followGoneWhileFollowing},
		{"FollowContinuesExactly", followContinues},
		{"Isolation", isolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newBroker(t, maxEntriesPerRun), fmt.Sprintf("run-%s-%d", tt.name, time.Now().UnixNano()))
		})
	}
}

// ctxT is a context bounded by a deadline, so that a broken broker fails the test instead of
// hanging it.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func delta(key, text string) stream.Keyed {
	return stream.Keyed{Key: key, Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: text}}
}

func done(key string) stream.Keyed {
	return stream.Keyed{Key: key, Chunk: contracts.Chunk{Type: contracts.ChunkDone}}
}

// row is an entry as compared by the suite.
type row struct {
	Offset int64
	Key    string
	Type   contracts.ChunkType
	Delta  string
}

func rows(es []stream.Entry) []row {
	out := make([]row, len(es))
	for i, e := range es {
		out[i] = row{e.Offset, e.Key, e.Chunk.Type, e.Chunk.Delta}
	}
	return out
}

func read(t *testing.T, b stream.Broker, run string, after int64, limit int) []row {
	t.Helper()
	es, err := b.Read(ctxT(t), run, after, limit)
	require.NoError(t, err)
	return rows(es)
}

func publish(t *testing.T, b stream.Broker, run string, chunks ...stream.Keyed) {
	t.Helper()
	require.NoError(t, b.Publish(ctxT(t), run, chunks...))
}

func requireBounds(t *testing.T, b stream.Broker, run string, first, last int64) {
	t.Helper()
	f, l, err := b.Bounds(ctxT(t), run)
	require.NoError(t, err)
	require.Equal(t, [2]int64{first, last}, [2]int64{f, l}, "bounds of %s", run)
	l2, err := b.Last(ctxT(t), run)
	require.NoError(t, err)
	require.Equal(t, last, l2, "Last of %s", run)
}

func td(off int64, key, text string) row {
	return row{off, key, contracts.ChunkTextDelta, text}
}

func orderedOffsets(t *testing.T, b stream.Broker, run string) {
	publish(t, b, run, delta("a", "1"), delta("b", "2"), delta("c", "3"))
	publish(t, b, run, delta("d", "4"), done("e"))
	require.Equal(t, []row{td(1, "a", "1"), td(2, "b", "2"), td(3, "c", "3"), td(4, "d", "4"),
		{5, "e", contracts.ChunkDone, ""}}, read(t, b, run, 0, 0))
}

func emptyPublish(t *testing.T, b stream.Broker, run string) {
	publish(t, b, run)
	requireBounds(t, b, run, 0, 0)
	err := b.Publish(ctxT(t), "", delta("a", "1"))
	require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err), "empty run ID: %v", err)
}

func keyedDedup(t *testing.T, b stream.Broker, run string) {
	publish(t, b, run, delta("w:1", "a"), delta("w:2", "b"))
	// A retried publish: w:2 is skipped even with another payload, empty keys never are.
	publish(t, b, run, delta("w:2", "B"), delta("w:3", "c"), delta("", "x"), delta("", "x"))
	publish(t, b, run, delta("w:1", "A"), delta("w:3", "C"))
	require.Equal(t, []row{td(1, "w:1", "a"), td(2, "w:2", "b"), td(3, "w:3", "c"), td(4, "", "x"),
		td(5, "", "x")}, read(t, b, run, 0, 0))
	// Duplicates within one publish are stored once too.
	publish(t, b, run, delta("w:4", "d"), delta("w:4", "D"))
	require.Equal(t, []row{td(6, "w:4", "d")}, read(t, b, run, 5, 0))
}

// concurrentDedup races publishers on the same keys (a replayed workflow task, a retried
// activity): each key is stored exactly once, offsets stay contiguous.
func concurrentDedup(t *testing.T, b stream.Broker, run string) {
	const publishers, keys = 8, 40 // 40 keys: within the bound
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Go(func() {
			for i := 0; i < keys; i += 4 {
				batch := make([]stream.Keyed, 0, 4)
				for j := i; j < i+4; j++ {
					k := j
					if p%2 == 1 {
						k = keys - 1 - j // half of them publish in the reverse order
					}
					batch = append(batch, delta(fmt.Sprintf("k:%d", k), fmt.Sprint(k)))
				}
				if err := b.Publish(ctxT(t), run, batch...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	es := read(t, b, run, 0, 0)
	require.Len(t, es, keys)
	seen := make(map[string]int)
	for i, e := range es {
		require.Equal(t, int64(i+1), e.Offset)
		require.Equal(t, "k:"+e.Delta, e.Key)
		seen[e.Key]++
	}
	require.Len(t, seen, keys)
	for k, n := range seen {
		require.Equal(t, 1, n, k)
	}
}

// atomicBatches publishes unkeyed batches concurrently: each batch's chunks are stored
// contiguously and in order.
func atomicBatches(t *testing.T, b stream.Broker, run string) {
	const publishers, batches, size = 4, 3, 5 // 60 entries: within the bound
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for n := range batches {
				batch := make([]stream.Keyed, size)
				for i := range batch {
					batch[i] = delta("", fmt.Sprintf("%d/%d/%d", p, n, i))
				}
				if err := b.Publish(ctxT(t), run, batch...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	es := read(t, b, run, 0, 0)
	require.Len(t, es, publishers*batches*size)
	for i := 0; i < len(es); i += size {
		var p, n, j int
		_, err := fmt.Sscanf(es[i].Delta, "%d/%d/%d", &p, &n, &j)
		require.NoError(t, err)
		for k := range size {
			require.Equal(t, td(int64(i+k+1), "", fmt.Sprintf("%d/%d/%d", p, n, k)), es[i+k])
		}
	}
}

func readLimitsAfter(t *testing.T, b stream.Broker, run string) {
	for i := 1; i <= 6; i++ {
		publish(t, b, run, delta(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	tests := []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 0, []int64{1, 2, 3, 4, 5, 6}},
		{0, 2, []int64{1, 2}},
		{2, 3, []int64{3, 4, 5}},
		{4, 0, []int64{5, 6}},
		{4, -1, []int64{5, 6}},
		{5, 10, []int64{6}},
		{6, 0, []int64{}},
		{100, 0, []int64{}},
	}
	for _, tt := range tests {
		got := []int64{}
		for _, r := range read(t, b, run, tt.after, tt.limit) {
			got = append(got, r.Offset)
		}
		require.Equal(t, tt.want, got, "Read(after=%d, limit=%d)", tt.after, tt.limit)
	}
	require.Empty(t, read(t, b, run+"-unknown", 0, 0))
}

func waitWakes(t *testing.T, b stream.Broker, run string) {
	ctx := ctxT(t)
	// Already there: returns at once.
	publish(t, b, run, delta("a", "1"), delta("b", "2"))
	require.NoError(t, b.Wait(ctx, run, 0))
	require.NoError(t, b.Wait(ctx, run, 1))

	// Woken by a publish, also before the run's first publish.
	for _, tc := range []struct {
		run   string
		after int64
	}{{run, 2}, {run + "-new", 0}} {
		got := make(chan error, 1)
		go func() { got <- b.Wait(ctx, tc.run, tc.after) }()
		select {
		case err := <-got:
			t.Fatalf("Wait(%s, %d) returned %v before any publish", tc.run, tc.after, err)
		default:
		}
		publish(t, b, tc.run, delta("c", "3"))
		require.NoError(t, <-got)
	}
}

func waitCancel(t *testing.T, b stream.Broker, run string) {
	ctx, cancel := context.WithCancel(ctxT(t))
	got := make(chan error, 1)
	go func() { got <- b.Wait(ctx, run, 0) }()
	cancel()
	require.Equal(t, context.Canceled, <-got)

	dctx, dcancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
	defer dcancel()
	publish(t, b, run, delta("a", "1"))
	require.Equal(t, context.DeadlineExceeded, b.Wait(dctx, run, 1))
}

func bounds(t *testing.T, b stream.Broker, run string) {
	requireBounds(t, b, run, 0, 0)
	publish(t, b, run, delta("a", "1"))
	requireBounds(t, b, run, 1, 1)
	publish(t, b, run, delta("b", "2"), delta("a", "again"), delta("c", "3"))
	requireBounds(t, b, run, 1, 3)
}

func perStreamBound(t *testing.T, b stream.Broker, run string) {
	const n = maxEntriesPerRun + 3
	for i := 1; i <= n; i++ {
		publish(t, b, run, delta(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	es := read(t, b, run, 0, 0)
	require.Len(t, es, maxEntriesPerRun)
	for i, e := range es {
		off := int64(n - maxEntriesPerRun + 1 + i)
		require.Equal(t, td(off, fmt.Sprintf("k%d", off), fmt.Sprint(off)), e)
	}
	requireBounds(t, b, run, n-maxEntriesPerRun+1, n)
	// Reading after a dropped offset starts at the oldest retained entry.
	require.Equal(t, int64(n-maxEntriesPerRun+1), read(t, b, run, 1, 1)[0].Offset)
	// The key of a dropped entry is dropped with it; a retained one is still deduplicated.
	publish(t, b, run, delta("k1", "again"), delta(fmt.Sprintf("k%d", n), "dup"))
	require.Equal(t, []row{td(n+1, "k1", "again")}, read(t, b, run, n, 0))
	requireBounds(t, b, run, n-maxEntriesPerRun+2, n+1)
	// One publish larger than the bound keeps its last entries.
	batch := make([]stream.Keyed, maxEntriesPerRun+2)
	for i := range batch {
		batch[i] = delta("", fmt.Sprint(i))
	}
	publish(t, b, run, batch...)
	requireBounds(t, b, run, n+1+3, n+1+maxEntriesPerRun+2)
}

// follow follows run from after with UntilRun and returns the offsets seen and the error.
func follow(t *testing.T, b stream.Broker, run string, after int64) ([]int64, error) {
	got := []int64{}
	err := stream.Follow(ctxT(t), b, run, after, stream.UntilRun, func(e stream.Entry) error {
		got = append(got, e.Offset)
		return nil
	})
	return got, err
}

func requireGone(t *testing.T, err error, first, last int64) {
	t.Helper()
	require.Equal(t, contracts.CodeStreamGone, contracts.CodeOf(err), "%v", err)
	var ce *contracts.Error
	require.True(t, errors.As(err, &ce))
	require.False(t, ce.Retryable)
	require.Equal(t, first, ce.Details["first"], "first")
	require.Equal(t, last, ce.Details["last"], "last")
}

func followGone(t *testing.T, b stream.Broker, run string) {
	// Nothing for the run (lost, expired or never there) and after > 0.
	got, err := follow(t, b, run, 3)
	require.Empty(t, got)
	requireGone(t, err, 0, 0)

	// The stream ends below after (e.g. a restarted in-memory broker got new entries).
	publish(t, b, run, delta("a", "1"), delta("b", "2"))
	got, err = follow(t, b, run, 5)
	require.Empty(t, got)
	requireGone(t, err, 1, 2)

	// Entries were trimmed past the reader: first retained > after+1.
	for i := 3; i <= maxEntriesPerRun+4; i++ {
		publish(t, b, run, delta(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	publish(t, b, run, done("end"))
	last := int64(maxEntriesPerRun + 5)
	first := last - maxEntriesPerRun + 1
	got, err = follow(t, b, run, first-2)
	require.Empty(t, got)
	requireGone(t, err, first, last)

	// Exactly at the oldest retained entry, or from 0: no gap.
	got, err = follow(t, b, run, first-1)
	require.NoError(t, err)
	require.Equal(t, offsetsFrom(first, last), got)
	got, err = follow(t, b, run, 0)
	require.NoError(t, err)
	require.Equal(t, offsetsFrom(first, last), got)
	// At the done that ended the run: nothing more, no error.
	got, err = follow(t, b, run, last)
	require.NoError(t, err)
	require.Empty(t, got)
}

func offsetsFrom(first, last int64) []int64 {
	out := []int64{}
	for o := first; o <= last; o++ {
		out = append(out, o)
	}
	return out
}

// followGoneWhileFollowing trims past a reader while it follows.
func followGoneWhileFollowing(t *testing.T, b stream.Broker, run string) {
	publish(t, b, run, delta("a", "1"))
	got := []int64{}
	err := stream.Follow(ctxT(t), b, run, 0, stream.UntilRun, func(e stream.Entry) error {
		got = append(got, e.Offset)
		if e.Offset == 1 {
			batch := make([]stream.Keyed, maxEntriesPerRun+5)
			for i := range batch {
				batch[i] = delta("", fmt.Sprint(i))
			}
			return b.Publish(ctxT(t), run, batch...) // offsets 2..maxEntriesPerRun+6; 2..6 dropped
		}
		return nil
	})
	require.Equal(t, []int64{1}, got)
	requireGone(t, err, 7, maxEntriesPerRun+6)
}

// followContinues: a reader at the last offset waits and continues exactly after it.
func followContinues(t *testing.T, b stream.Broker, run string) {
	publish(t, b, run, delta("a", "1"), delta("b", "2"))
	res := make(chan []int64, 1)
	errc := make(chan error, 1)
	go func() {
		got, err := follow(t, b, run, 2)
		res <- got
		errc <- err
	}()
	publish(t, b, run, delta("c", "3"), done("d"))
	require.NoError(t, <-errc)
	require.Equal(t, []int64{3, 4}, <-res)
}

func isolation(t *testing.T, b stream.Broker, run string) {
	other := run + "-other"
	publish(t, b, run, delta("k", "a1"), delta("j", "a2"))
	publish(t, b, other, delta("k", "b1"))
	require.Equal(t, []row{td(1, "k", "a1"), td(2, "j", "a2")}, read(t, b, run, 0, 0))
	require.Equal(t, []row{td(1, "k", "b1")}, read(t, b, other, 0, 0))
	requireBounds(t, b, run, 1, 2)
	requireBounds(t, b, other, 1, 1)
	// A waiter of other stays blocked through a publish to run and is woken by other's.
	got := make(chan error, 1)
	go func() { got <- b.Wait(ctxT(t), other, 1) }()
	publish(t, b, run, delta("", "a3"))
	select {
	case err := <-got:
		t.Fatalf("Wait(other, 1) returned %v after a publish to another run", err)
	default:
	}
	publish(t, b, other, delta("", "b2"))
	require.NoError(t, <-got)
	require.Equal(t, []row{td(2, "", "b2")}, read(t, b, other, 1, 0))
}
