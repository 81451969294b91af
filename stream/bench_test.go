package stream_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
)

func BenchmarkMemoryPublish(b *testing.B) {
	ctx := context.Background()
	b.Run("one run", func(b *testing.B) {
		m := stream.NewMemory(stream.MemoryOptions{})
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := m.Publish(ctx, "run", delta("a:x:1:"+strconv.Itoa(i), "token")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		m := stream.NewMemory(stream.MemoryOptions{})
		k := delta("w:1", "token")
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Publish(ctx, "run", k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel runs", func(b *testing.B) {
		m := stream.NewMemory(stream.MemoryOptions{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			run := "run-" + strconv.FormatInt(runCounter.Add(1), 10) // one run per goroutine
			for i := 0; pb.Next(); i++ {
				if err := m.Publish(ctx, run, delta("a:x:1:"+strconv.Itoa(i), "token")); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

var runCounter atomic.Int64

func BenchmarkFollow(b *testing.B) {
	ctx := context.Background()
	b.Run("stored", func(b *testing.B) {
		m := stream.NewMemory(stream.MemoryOptions{MaxEntriesPerRun: b.N + 1})
		ks := make([]stream.Keyed, 0, b.N+1)
		for i := range b.N {
			ks = append(ks, delta("a:x:1:"+strconv.Itoa(i), "token"))
		}
		ks = append(ks, kc("w:done", contracts.ChunkDone))
		if err := m.Publish(ctx, "run", ks...); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		n := 0
		err := stream.Follow(ctx, m, "run", 0, stream.UntilRun, func(stream.Entry) error { n++; return nil })
		if err != nil || n != b.N+1 {
			b.Fatal(err, n)
		}
	})
	b.Run("live", func(b *testing.B) {
		m := stream.NewMemory(stream.MemoryOptions{MaxEntriesPerRun: b.N + 1})
		b.ReportAllocs()
		b.ResetTimer()
		errc := make(chan error, 1)
		go func() {
			for i := range b.N {
				if err := m.Publish(ctx, "run", delta("a:x:1:"+strconv.Itoa(i), "token")); err != nil {
					errc <- err
					return
				}
			}
			errc <- m.Publish(ctx, "run", kc("w:done", contracts.ChunkDone))
		}()
		n := 0
		err := stream.Follow(ctx, m, "run", 0, stream.UntilRun, func(stream.Entry) error { n++; return nil })
		if err != nil || n != b.N+1 {
			b.Fatal(err, n)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	})
}
