package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
)

var errStop = errors.New("stop")

// conversation is a run of three responses: the first asks a human, the second hits a limit
// (limit-reached comes with an interrupt), the third ends the run.
func conversation() []stream.Keyed {
	return []stream.Keyed{
		kc("w:1", contracts.ChunkSession),         // 1
		delta("w:2", "Which one?"),                // 2
		kc("w:3", contracts.ChunkInterrupt),       // 3
		kc("w:4", contracts.ChunkDone),            // 4
		delta("w:5", "OK"),                        // 5
		kc("w:6", contracts.ChunkLimitReached),    // 6
		kc("w:7", contracts.ChunkInterrupt),       // 7
		kc("w:8", contracts.ChunkDone),            // 8
		kc("w:9", contracts.ChunkToolCallStart),   // 9
		kc("w:10", contracts.ChunkToolCallResult), // 10
		delta("w:11", "Done."),                    // 11
		kc("w:12", contracts.ChunkDone),           // 12
		delta("w:13", "next run"),                 // 13
		kc("w:14", contracts.ChunkDone),           // 14
	}
}

func followOffsets(t *testing.T, b stream.Broker, after int64, until stream.Until) []int64 {
	t.Helper()
	got := []int64{}
	err := stream.Follow(testCtx(t), b, "run", after, until, func(e stream.Entry) error {
		got = append(got, e.Offset)
		return nil
	})
	require.NoError(t, err)
	return got
}

func TestFollowUntil(t *testing.T) {
	ctx := testCtx(t)
	m := stream.NewMemory(stream.MemoryOptions{})
	require.NoError(t, m.Publish(ctx, "run", conversation()...))

	tests := []struct {
		name  string
		after int64
		until stream.Until
		want  []int64
	}{
		{"response stops at first done", 0, stream.UntilResponse, []int64{1, 2, 3, 4}},
		{"response from a done is the next response", 4, stream.UntilResponse, []int64{5, 6, 7, 8}},
		{"response from mid-response", 9, stream.UntilResponse, []int64{10, 11, 12}},
		{"run skips interrupted responses", 0, stream.UntilRun, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"run from a done", 4, stream.UntilRun, []int64{5, 6, 7, 8, 9, 10, 11, 12}},
		{"run resumed after an interrupt remembers it", 3, stream.UntilRun, []int64{4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"run resumed after a limit interrupt", 7, stream.UntilRun, []int64{8, 9, 10, 11, 12}},
		{"run resumed mid final response", 10, stream.UntilRun, []int64{11, 12}},
		{"run already over", 12, stream.UntilRun, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, followOffsets(t, m, tt.after, tt.until))
		})
	}
}

func TestFollowWaitsForLaterEntries(t *testing.T) {
	for _, until := range []stream.Until{stream.UntilResponse, stream.UntilRun} {
		t.Run(until.String(), func(t *testing.T) {
			ctx := testCtx(t)
			m := stream.NewMemory(stream.MemoryOptions{})
			all := conversation()[:12]
			require.NoError(t, m.Publish(ctx, "run", all[:2]...))

			// Each time the follower has read everything published, the next chunk is published.
			caughtUp := make(chan int64)
			published := make(chan error, 1)
			go func() {
				for i := 2; i < len(all); i++ {
					select {
					case off := <-caughtUp:
						if off != int64(i) {
							published <- errors.New("follower out of step")
							return
						}
					case <-ctx.Done():
						published <- ctx.Err()
						return
					}
					if err := m.Publish(ctx, "run", all[i]); err != nil {
						published <- err
						return
					}
				}
				published <- nil
			}()

			var got []stream.Entry
			err := stream.Follow(ctx, m, "run", 0, until, func(e stream.Entry) error {
				got = append(got, e)
				last, err := m.Last(ctx, "run")
				if err != nil {
					return err
				}
				if e.Offset == last && e.Offset < int64(len(all)) {
					select {
					case caughtUp <- e.Offset:
					case <-ctx.Done():
					}
				}
				return nil
			})
			require.NoError(t, err)
			want := 4
			if until == stream.UntilRun {
				want = 12
				require.NoError(t, <-published)
			}
			require.Len(t, got, want)
			for i, e := range got {
				require.Equal(t, int64(i+1), e.Offset)
				require.Equal(t, all[i].Key, e.Key)
			}
		})
	}
}

func TestFollowUntilCancel(t *testing.T) {
	m := stream.NewMemory(stream.MemoryOptions{})
	ctx, cancel := context.WithCancel(testCtx(t))
	require.NoError(t, m.Publish(ctx, "run", conversation()...))
	var got []int64
	err := stream.Follow(ctx, m, "run", 0, stream.UntilCancel, func(e stream.Entry) error {
		got = append(got, e.Offset)
		if e.Offset == 14 {
			cancel() // no more entries will come: following would wait forever
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, got, 14)
}

func TestFollowErrors(t *testing.T) {
	t.Run("fn error", func(t *testing.T) {
		ctx := testCtx(t)
		m := stream.NewMemory(stream.MemoryOptions{})
		require.NoError(t, m.Publish(ctx, "run", conversation()...))
		n := 0
		err := stream.Follow(ctx, m, "run", 0, stream.UntilRun, func(e stream.Entry) error {
			n++
			if e.Offset == 2 {
				return errStop
			}
			return nil
		})
		require.ErrorIs(t, err, errStop)
		require.Equal(t, 2, n)
	})

	t.Run("context ends while waiting", func(t *testing.T) {
		m := stream.NewMemory(stream.MemoryOptions{})
		ctx, cancel := context.WithCancel(testCtx(t))
		require.NoError(t, m.Publish(ctx, "run", delta("a", "x")))
		err := stream.Follow(ctx, m, "run", 0, stream.UntilRun, func(e stream.Entry) error {
			cancel()
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("broker error", func(t *testing.T) {
		b := &failingBroker{Broker: stream.NewMemory(stream.MemoryOptions{}), failAfter: 0}
		err := stream.Follow(testCtx(t), b, "run", 0, stream.UntilRun, func(stream.Entry) error { return nil })
		require.ErrorIs(t, err, errBroker)
	})
}

var errBroker = errors.New("broker unavailable")

// failingBroker serves the entries up to offset failAfter and fails any Read after it.
type failingBroker struct {
	stream.Broker
	failAfter int64
	err       error // default errBroker
}

func (b *failingBroker) Read(ctx context.Context, runID string, after int64, limit int) ([]stream.Entry, error) {
	if after >= b.failAfter {
		if b.err != nil {
			return nil, b.err
		}
		return nil, errBroker
	}
	es, err := b.Broker.Read(ctx, runID, after, limit)
	if int64(len(es)) > b.failAfter-after {
		es = es[:b.failAfter-after]
	}
	return es, err
}
