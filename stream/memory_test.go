package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/streamtest"
)

// testCtx returns a context bounded by a deadline, so that a broken test fails instead of
// hanging.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func kc(key string, typ contracts.ChunkType) stream.Keyed {
	return stream.Keyed{Key: key, Chunk: contracts.Chunk{Type: typ}}
}

func delta(key, text string) stream.Keyed {
	return stream.Keyed{Key: key, Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: text}}
}

func offsets(es []stream.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Offset
	}
	return out
}

func keys(es []stream.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

func readAll(t testing.TB, b stream.Broker, runID string) []stream.Entry {
	t.Helper()
	es, err := b.Read(testCtx(t), runID, 0, 0)
	require.NoError(t, err)
	return es
}

func TestMemoryPublishAndDedupe(t *testing.T) {
	tests := []struct {
		name     string
		batches  [][]stream.Keyed
		wantKeys []string
	}{
		{
			name:     "offsets from 1 in order",
			batches:  [][]stream.Keyed{{delta("a", "1"), delta("b", "2")}, {delta("c", "3")}},
			wantKeys: []string{"a", "b", "c"},
		},
		{
			name:     "republishing a batch is a no-op",
			batches:  [][]stream.Keyed{{delta("a", "1"), delta("b", "2")}, {delta("a", "1"), delta("b", "2")}},
			wantKeys: []string{"a", "b"},
		},
		{
			name:     "overlapping batch appends only new keys",
			batches:  [][]stream.Keyed{{delta("a", "1"), delta("b", "2")}, {delta("b", "2"), delta("c", "3"), delta("a", "1"), delta("d", "4")}},
			wantKeys: []string{"a", "b", "c", "d"},
		},
		{
			name:     "duplicate within a batch",
			batches:  [][]stream.Keyed{{delta("a", "1"), delta("a", "1"), delta("b", "2")}},
			wantKeys: []string{"a", "b"},
		},
		{
			name:     "empty keys are never deduplicated",
			batches:  [][]stream.Keyed{{delta("", "1"), delta("", "1")}, {delta("", "1"), delta("x", "2")}},
			wantKeys: []string{"", "", "", "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			m := stream.NewMemory(stream.MemoryOptions{})
			for _, b := range tt.batches {
				require.NoError(t, m.Publish(ctx, "run", b...))
			}
			es := readAll(t, m, "run")
			require.Equal(t, tt.wantKeys, keys(es))
			for i, e := range es {
				require.Equal(t, int64(i+1), e.Offset)
			}
			last, err := m.Last(ctx, "run")
			require.NoError(t, err)
			require.Equal(t, int64(len(tt.wantKeys)), last)
		})
	}
}

func TestMemoryPublishKeepsChunk(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run", delta("a", "hello")))
	require.Equal(t, []stream.Entry{{Offset: 1, Key: "a",
		Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "hello"}}}, readAll(t, m, "run"))

	// Runs are independent: same keys, own offsets.
	require.NoError(t, m.Publish(ctx, "other", delta("a", "x")))
	require.Equal(t, []int64{1}, offsets(readAll(t, m, "other")))
}

func TestMemoryPublishErrors(t *testing.T) {
	m := stream.NewMemory(stream.MemoryOptions{})
	err := m.Publish(testCtx(t), "", delta("a", "x"))
	require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, m.Publish(ctx, "run", delta("a", "x")), context.Canceled)
	require.Empty(t, readAll(t, m, "run"))
}

func TestMemoryRead(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	for i := 1; i <= 5; i++ {
		require.NoError(t, m.Publish(ctx, "run", delta(fmt.Sprint("k", i), "x")))
	}
	tests := []struct {
		name  string
		run   string
		after int64
		limit int
		want  []int64
	}{
		{"all", "run", 0, 0, []int64{1, 2, 3, 4, 5}},
		{"negative limit is all", "run", 0, -1, []int64{1, 2, 3, 4, 5}},
		{"after", "run", 2, 0, []int64{3, 4, 5}},
		{"limit", "run", 0, 2, []int64{1, 2}},
		{"after and limit", "run", 1, 3, []int64{2, 3, 4}},
		{"limit beyond end", "run", 3, 10, []int64{4, 5}},
		{"at end", "run", 5, 0, []int64{}},
		{"beyond end", "run", 9, 0, []int64{}},
		{"negative after", "run", -3, 0, []int64{1, 2, 3, 4, 5}},
		{"unknown run", "nope", 0, 0, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := m.Read(ctx, tt.run, tt.after, tt.limit)
			require.NoError(t, err)
			require.Equal(t, tt.want, offsets(es))
		})
	}

	// The result is a copy: changing it does not change the log.
	es, err := m.Read(ctx, "run", 0, 1)
	require.NoError(t, err)
	es[0].Key = "changed"
	require.Equal(t, "k1", readAll(t, m, "run")[0].Key)
}

func TestMemoryWait(t *testing.T) {
	t.Run("returns at once when entries exist", func(t *testing.T) {
		ctx := testCtx(t)
		m := stream.NewMemory(stream.MemoryOptions{})
		require.NoError(t, m.Publish(ctx, "run", delta("a", "x")))
		require.NoError(t, m.Wait(ctx, "run", 0))
	})

	t.Run("wakes on publish", func(t *testing.T) {
		for _, run := range []string{"existing", "new"} {
			t.Run(run, func(t *testing.T) {
				ctx := testCtx(t)
				m := stream.NewMemory(stream.MemoryOptions{})
				after := int64(0)
				if run == "existing" {
					require.NoError(t, m.Publish(ctx, run, delta("a", "x")))
					after = 1
				}
				done := make(chan error, 1)
				go func() { done <- m.Wait(ctx, run, after) }()
				// Publishing a duplicate does not wake with success: Wait re-checks the offset.
				require.NoError(t, m.Publish(ctx, run, delta("a", "x")))
				if run == "existing" {
					select {
					case err := <-done:
						t.Fatalf("Wait returned %v before a new entry", err)
					default:
					}
				}
				require.NoError(t, m.Publish(ctx, run, delta("b", "y")))
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-ctx.Done():
					t.Fatal("Wait did not wake up")
				}
			})
		}
	})

	t.Run("returns the context error", func(t *testing.T) {
		m := stream.NewMemory(stream.MemoryOptions{})
		ctx, cancel := context.WithCancel(testCtx(t))
		done := make(chan error, 1)
		go func() { done <- m.Wait(ctx, "run", 0) }()
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)

		dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer dcancel()
		require.ErrorIs(t, m.Wait(dctx, "run", 0), context.DeadlineExceeded)

		// A run that was only waited on leaves nothing behind.
		last, err := m.Last(testCtx(t), "run")
		require.NoError(t, err)
		require.Zero(t, last)
	})

	t.Run("many waiters", func(t *testing.T) {
		ctx := testCtx(t)
		m := stream.NewMemory(stream.MemoryOptions{})
		const n = 20
		errs := make(chan error, n)
		for range n {
			go func() { errs <- m.Wait(ctx, "run", 0) }()
		}
		require.NoError(t, m.Publish(ctx, "run", delta("a", "x")))
		for range n {
			require.NoError(t, <-errs)
		}
	})
}

func TestMemoryConcurrentPublishers(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	const publishers, perPublisher = 8, 200

	// A follower reads concurrently and must see the offsets 1, 2, 3, … with no gap.
	total := publishers*perPublisher + perPublisher // own keys + shared keys
	followed := make(chan []int64, 1)
	go func() {
		var got []int64
		err := stream.Follow(ctx, m, "run", 0, stream.UntilCancel, func(e stream.Entry) error {
			got = append(got, e.Offset)
			if len(got) == total {
				return errStop
			}
			return nil
		})
		if err != errStop {
			t.Errorf("Follow: %v", err)
		}
		followed <- got
	}()

	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range perPublisher {
				// Every publisher also publishes the same shared keys: each is stored once.
				err := m.Publish(ctx, "run", delta(fmt.Sprintf("p%d:%d", p, i), "x"), delta(fmt.Sprintf("shared:%d", i), "y"))
				if err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	es := readAll(t, m, "run")
	require.Len(t, es, total)
	seen := make(map[string]bool, total)
	for i, e := range es {
		require.Equal(t, int64(i+1), e.Offset)
		require.False(t, seen[e.Key], "key %s stored twice", e.Key)
		seen[e.Key] = true
	}
	got := <-followed
	require.Len(t, got, total)
	for i, off := range got {
		require.Equal(t, int64(i+1), off)
	}
}

func TestMemoryMaxRuns(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{MaxRuns: 2})
	require.NoError(t, m.Publish(ctx, "a", delta("1", "x")))
	require.NoError(t, m.Publish(ctx, "b", delta("1", "x")))
	require.NoError(t, m.Publish(ctx, "a", delta("2", "x"))) // a is now the most recent
	require.NoError(t, m.Publish(ctx, "c", delta("1", "x"))) // evicts b

	for run, want := range map[string]int64{"a": 2, "b": 0, "c": 1} {
		last, err := m.Last(ctx, run)
		require.NoError(t, err)
		require.Equal(t, want, last, run)
	}
	require.Empty(t, readAll(t, m, "b"))

	// An evicted run starts over, keys included.
	require.NoError(t, m.Publish(ctx, "b", delta("1", "x"))) // evicts a
	require.Equal(t, []int64{1}, offsets(readAll(t, m, "b")))
	require.Empty(t, readAll(t, m, "a"))
	require.Len(t, readAll(t, m, "c"), 1)
}

func TestMemoryMaxRunsIgnoresWaiters(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{MaxRuns: 1})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Wait(wctx, "waiting", 0) }()
	require.NoError(t, m.Publish(ctx, "a", delta("1", "x")))
	require.Len(t, readAll(t, m, "a"), 1)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestMemoryEvictionWakesWaiters(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run", delta("1", "x"), delta("2", "x")))
	done := make(chan error, 1)
	go func() { done <- m.Wait(ctx, "run", 2) }()
	stream.Forget(m, "run")
	require.Empty(t, readAll(t, m, "run"))
	// The waiter keeps waiting for an offset > 2 of the new log.
	require.NoError(t, m.Publish(ctx, "run", delta("1", "x"), delta("2", "x")))
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before offset 3", err)
	default:
	}
	require.NoError(t, m.Publish(ctx, "run", delta("3", "x")))
	require.NoError(t, <-done)
}

func TestMemoryMaxEntriesPerRun(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{MaxEntriesPerRun: 3})
	for i := 1; i <= 5; i++ {
		require.NoError(t, m.Publish(ctx, "run", delta(fmt.Sprint("k", i), "x")))
	}
	last, err := m.Last(ctx, "run")
	require.NoError(t, err)
	require.Equal(t, int64(5), last)

	tests := []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 0, []int64{3, 4, 5}}, // offsets 1 and 2 were dropped
		{1, 0, []int64{3, 4, 5}},
		{2, 0, []int64{3, 4, 5}},
		{3, 0, []int64{4, 5}},
		{0, 2, []int64{3, 4}},
		{5, 0, []int64{}},
	}
	for _, tt := range tests {
		es, err := m.Read(ctx, "run", tt.after, tt.limit)
		require.NoError(t, err)
		require.Equal(t, tt.want, offsets(es), "after %d limit %d", tt.after, tt.limit)
	}

	// Retained keys are still deduplicated; dropped keys are forgotten with their entries.
	require.NoError(t, m.Publish(ctx, "run", delta("k4", "x"), delta("k1", "x")))
	es := readAll(t, m, "run")
	require.Equal(t, []int64{4, 5, 6}, offsets(es))
	require.Equal(t, []string{"k4", "k5", "k1"}, keys(es))

	// A batch larger than the bound keeps its tail.
	require.NoError(t, m.Publish(ctx, "big", delta("a", ""), delta("b", ""), delta("c", ""), delta("d", ""), delta("e", "")))
	require.Equal(t, []int64{3, 4, 5}, offsets(readAll(t, m, "big")))
}

func TestMemoryForget(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run", delta("a", "x")))
	stream.Forget(m, "run")
	stream.Forget(m, "never-published")
	last, err := m.Last(ctx, "run")
	require.NoError(t, err)
	require.Zero(t, last)
	require.NoError(t, m.Publish(ctx, "run", delta("a", "x")))
	require.Equal(t, []int64{1}, offsets(readAll(t, m, "run")))
}

func TestMemoryContract(t *testing.T) {
	streamtest.Run(t, func(t *testing.T, maxEntries int) stream.Broker {
		return stream.NewMemory(stream.MemoryOptions{MaxEntriesPerRun: maxEntries})
	})
}
