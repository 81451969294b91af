// Package redisstream is a [stream.Broker] on Redis Streams: the chunk streams of runs shared
// by every worker and HTTP process that uses the same Redis, so that a reader can follow a run
// published by another process and a restarted process keeps the streams.
//
// Each run has three keys under the prefix (default "kortyx:"), with the run ID as hash tag:
// its stream (entry ID "<offset>-0" per chunk), the hash of the keys it stored (key → offset)
// and a meta hash. Publish runs one Lua script that skips stored keys, appends the rest with
// the next offsets, trims the stream to MaxEntriesPerRun (with the keys of the dropped entries)
// and, once the run's final done is stored, sets the run's keys to expire after Retention.
// Waits share one blocking XREAD per [Broker] (see [Broker]). When Redis does not answer,
// every call fails with a *contracts.Error of code STREAM_UNAVAILABLE (retryable).
//
//	b, err := redisstream.New(ctx, redisstream.Options{URL: "redis://localhost:6379/0"})
//	if err != nil {
//		return err // STREAM_UNAVAILABLE: Redis at localhost:6379 did not answer …
//	}
//	defer b.Close()
//	err = b.Publish(ctx, "run-1", stream.Keyed{Key: "w:1", Chunk: contracts.Chunk{Type: contracts.ChunkDone}})
//
// See docs/streaming.md for the contract both brokers keep (package streamtest checks it).
package redisstream
