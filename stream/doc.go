// Package stream carries the chunk stream of each run (identified by its Temporal workflow ID)
// from its publishers to its readers.
//
// Workflow code publishes its chunks through a local activity with deterministic keys such as
// "w:17" (the 17th chunk of the run's workflow code); the model activity publishes text chunks
// with keys "m:<opId>:<segment>:<n>" and structured-data chunks with keys
// "s:<streamId>:<attempt>:<n>". A [Broker] appends them to the run's log, assigns offsets
// 1, 2, 3, … and ignores a key it already stored for the run, so a retried publish does not
// duplicate anything. Readers follow a run from an offset and can come back with the last
// offset they saw to get the rest without duplicates.
//
// A chat response is a slice of the stream ending with a done chunk. A response containing an
// interrupt chunk (a human input request, or a limit-reached pause) leaves the run waiting; a
// done ending a response without interrupt ends the run. [Follow] stops according to an
// [Until]: after one response, after the run, or never.
//
// [NewMemory] is the in-process broker (bounded: see [MemoryOptions]);
// package stream/redisstream is a broker on Redis Streams shared by processes, and package
// stream/streamtest is the contract suite both pass. [Follow] fails with code STREAM_GONE (see
// [Reader]) when a broker can no longer continue a stream exactly after the offset asked.
// [Reader] reads a stream entry by entry ([Follow] is a loop over it). Package
// stream/sse serves GET /v1/runs/{runID}/stream as server-sent events in the Kortyx wire format
// (the chat route uses the same SSE writer); package stream/sseclient follows that route over HTTP,
// reconnecting with Last-Event-ID when the connection drops.
//
// A complete example, serving a run's stream and following it over HTTP:
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//		"log"
//		"net/http"
//		"net/http/httptest"
//
//		"github.com/kortyx-go/kortyx/contracts"
//		"github.com/kortyx-go/kortyx/stream"
//		"github.com/kortyx-go/kortyx/stream/sse"
//		"github.com/kortyx-go/kortyx/stream/sseclient"
//	)
//
//	func main() {
//		ctx := context.Background()
//		broker := stream.NewMemory(stream.MemoryOptions{MaxRuns: 100})
//
//		mux := http.NewServeMux()
//		mux.Handle("/", sse.Handler(broker)) // GET /v1/runs/{runID}/stream
//		srv := httptest.NewServer(mux)
//		defer srv.Close()
//
//		// Publishers: a retried publish of the same keys is a no-op.
//		go func() {
//			_ = broker.Publish(ctx, "run-1",
//				stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: "Hello"}},
//				stream.Keyed{Key: "w:2", Chunk: contracts.Chunk{Type: contracts.ChunkDone}},
//			)
//		}()
//
//		c := &sseclient.Client{BaseURL: srv.URL}
//		err := c.Follow(ctx, "run-1", 0, stream.UntilRun, func(id int64, ch contracts.Chunk) error {
//			fmt.Println(id, ch.Type)
//			return nil
//		})
//		if err != nil {
//			log.Fatal(err)
//		}
//		// Output:
//		// 1 text-delta
//		// 2 done
//	}
package stream
