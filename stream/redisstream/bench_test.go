package redisstream_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/redisstream"
	"github.com/kortyx-go/kortyx/test/redistest"
)

// brokers are the brokers compared side by side: the in-process one and Redis (a local
// redis-server started for the benchmark).
func brokers(b *testing.B) []struct {
	name string
	b    stream.Broker
} {
	srv := redistest.Start(b)
	rb, err := redisstream.New(context.Background(), redisstream.Options{URL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rb.Close() })
	return []struct {
		name string
		b    stream.Broker
	}{{"memory", stream.NewMemory(stream.MemoryOptions{})}, {"redis", rb}}
}

// BenchmarkDelivery measures the latency of one chunk from Publish to a reader following the
// run with stream.Follow (waiting in Wait when it is caught up): ns/op, p50-ns and p99-ns.
func BenchmarkDelivery(b *testing.B) {
	for _, br := range brokers(b) {
		b.Run(br.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			run := fmt.Sprintf("delivery-%d", time.Now().UnixNano())
			got := make(chan struct{})
			followed := make(chan error, 1)
			go func() {
				followed <- stream.Follow(ctx, br.b, run, 0, stream.UntilCancel, func(stream.Entry) error {
					got <- struct{}{}
					return nil
				})
			}()
			lat := make([]time.Duration, 0, 1024)
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := br.b.Publish(ctx, run, stream.Keyed{Key: "m:" + strconv.Itoa(i),
					Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "token"}}); err != nil {
					b.Fatal(err)
				}
				<-got
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			cancel()
			<-followed
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkPublish measures publish throughput in batches of 1 and 16 keyed chunks (one
// Publish call per op): chunks/s.
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	for _, br := range brokers(b) {
		for _, size := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/batch=%d", br.name, size), func(b *testing.B) {
				run := fmt.Sprintf("publish-%d", time.Now().UnixNano())
				batch := make([]stream.Keyed, size)
				n := 0
				start := time.Now()
				for b.Loop() {
					for j := range batch {
						n++
						batch[j] = stream.Keyed{Key: "m:" + strconv.Itoa(n),
							Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "token"}}
					}
					if err := br.b.Publish(ctx, run, batch...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "chunks/s")
			})
		}
	}
}
