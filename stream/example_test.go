package stream_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/stream/sse"
	"github.com/kortyx-go/kortyx/stream/sseclient"
)

func Example() {
	ctx := context.Background()
	broker := stream.NewMemory(stream.MemoryOptions{MaxRuns: 100})

	mux := http.NewServeMux()
	mux.Handle("/", sse.Handler(broker)) // GET /v1/runs/{runID}/stream
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// Publishers: a retried publish of the same keys is a no-op.
	go func() {
		_ = broker.Publish(ctx, "run-1",
			stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "Hello"}},
			stream.Keyed{Key: "w:2", Chunk: contracts.Chunk{Type: contracts.ChunkDone}},
		)
	}()

	c := &sseclient.Client{BaseURL: srv.URL}
	err := c.Follow(ctx, "run-1", 0, stream.UntilRun, func(id int64, ch contracts.Chunk) error {
		fmt.Println(id, ch.Type)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 text-delta
	// 2 done
}

func ExampleFollow() {
	ctx := context.Background()
	b := stream.NewMemory(stream.MemoryOptions{})
	_ = b.Publish(ctx, "run-1",
		stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkInterrupt, RequestID: "r1"}},
		stream.Keyed{Key: "w:2", Chunk: contracts.Chunk{Type: contracts.ChunkDone}},
		stream.Keyed{Key: "w:3", Chunk: contracts.Chunk{Type: contracts.ChunkMessage, Content: "thanks"}},
		stream.Keyed{Key: "w:4", Chunk: contracts.Chunk{Type: contracts.ChunkDone}},
	)
	// The first response waits for a human; the run ends with the second one.
	_ = stream.Follow(ctx, b, "run-1", 0, stream.UntilRun, func(e stream.Entry) error {
		fmt.Println(e.Offset, e.Key, e.Chunk.Type)
		return nil
	})
	// Output:
	// 1 w:1 interrupt
	// 2 w:2 done
	// 3 w:3 message
	// 4 w:4 done
}
