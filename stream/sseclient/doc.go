// Package sseclient reads Kortyx's server-sent events from Go: [Client] follows a run's stream
// over HTTP (GET /v1/runs/{runID}/stream), reconnecting with Last-Event-ID when the connection
// drops, and [ReadSSE] parses such a stream from any reader.
//
//	c := &sseclient.Client{BaseURL: "http://127.0.0.1:8080"}
//	err := c.Follow(ctx, runID, 0, stream.UntilRun, func(id int64, ch contracts.Chunk) error {
//		fmt.Println(id, ch.Type)
//		return nil
//	})
package sseclient
