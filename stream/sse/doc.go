// Package sse serves the run stream route, GET /v1/runs/{runID}/stream ([Server], [Handler]):
// a run's chunks as server-sent events in the Kortyx wire format (JSON data lines with an id
// line, keep-alive comments, the final "data: [DONE]", a write deadline per write).
//
//	mux := http.NewServeMux()
//	mux.Handle("GET /v1/runs/{runID}/stream", &sse.Server{Broker: broker})
//
// [Server.WriteSSE] writes the same stream into a handler of your own; the chat route writes
// through the same SSE writer. The reconnecting client of the run stream route is package
// sseclient.
package sse
