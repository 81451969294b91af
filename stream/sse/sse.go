package sse

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
)

// pattern is the [http.ServeMux] pattern of a run's stream, served by [Handler]. The runID
// wildcard is one path segment (the workflow ID, path-escaped by clients).
const pattern = "GET /v1/runs/{runID}/stream"

// Server serves a run's stream as server-sent events in the Kortyx wire format (see
// [Server.WriteSSE]). As an [http.Handler] it expects to be mounted on a pattern with a
// {runID} wildcard, such as "GET /v1/runs/{runID}/stream"; [Handler] does that for you.
//
// Query parameters: after=<offset> (default 0: from the start), overridden by the Last-Event-ID
// header when present (so EventSource reconnections resume after the last event received), and
// until=response|run|none (default run; see [stream.Until]). Invalid parameters get a 400 response
// with the JSON body {"error": message, "failure": contracts.Failure} and code INVALID_REQUEST.
type Server struct {
	// Broker holds the streams. Required.
	Broker stream.Broker
	// KeepAlive is the interval of the ": keep-alive" comments sent while no chunk arrives;
	// 0 means every 15 s, a negative value disables them.
	KeepAlive time.Duration
	// Run, when set, tells a reader that finds nothing to read whether the run can still
	// publish (see [stream.Reader]): with it, a stream that is gone ends with a STREAM_GONE error
	// chunk instead of waiting forever. Without it only an offset past the stream's end is
	// detected.
	Run func(ctx context.Context, runID string) (stream.RunState, error)
	// Logger logs the errors that end a stream (nil: slog.Default()); the client's error chunk
	// carries only their safe message and code.
	Logger *slog.Logger
}

// Handler returns an [http.Handler] serving GET /v1/runs/{runID}/stream from b (see
// [Server] for the parameters and [Server.WriteSSE] for the format). The path is absolute:
// mount the handler at "/" of a mux (mux.Handle("/", sse.Handler(b))) or behind
// [http.StripPrefix]. Other paths get 404 NOT_FOUND and other methods 405 INVALID_REQUEST, as
// JSON errors like the others; the run ID must follow the id rule of [contracts.CheckID] (400
// INVALID_REQUEST otherwise).
func Handler(b stream.Broker) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(pattern, &Server{Broker: b})
	return httpwire.JSONErrors(mux, nil)
}

// ServeHTTP implements [http.Handler]. The request's context bounds the stream: a client that
// disconnects ends it promptly.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("runID")
	if err := contracts.CheckID("runId", runID); err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	var after int64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := parseOffset(v)
		if err != nil {
			writeError(w, r, contracts.Errorf(contracts.CodeInvalidRequest,
				"invalid Last-Event-ID header %q: want a non-negative integer offset", v))
			return
		}
		after = n
	} else if v := q.Get("after"); v != "" {
		n, err := parseOffset(v)
		if err != nil {
			writeError(w, r, contracts.Errorf(contracts.CodeInvalidRequest,
				"invalid after %q: want a non-negative integer offset", v))
			return
		}
		after = n
	}
	until, err := parseUntil(q.Get("until"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	_ = s.WriteSSE(r.Context(), w, runID, after, until)
}

func parseOffset(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && n < 0 {
		err = errors.New("negative offset")
	}
	return n, err
}

// writeError writes a JSON error response for err (a *contracts.Error, else an internal error).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpwire.WriteError(w, r, nil, 0, err)
}

// WriteSSE writes the stream of runID from offset after to w as server-sent events until the
// until condition holds (see [stream.Follow]) or ctx ends, then returns.
//
// It sends the headers of an event stream (content-type: text/event-stream, cache-control:
// no-cache, connection: keep-alive, x-accel-buffering: no) with status 200, a ": keep-alive"
// comment every KeepAlive while no chunk arrives, and one event per entry, each write with a
// write deadline of a minute (so that an http.Server WriteTimeout, which counts from the
// request, does not cut a long stream):
//
//	id: <offset>
//	data: <the chunk as JSON>
//
// followed, once until holds, by "data: [DONE]". If reading the broker fails, it logs the
// error and writes an error chunk without id, data: {"type":"error","message":...,"failure":{...}}
// with a safe message and code only (no cause, no store address: STREAM_UNAVAILABLE says "The
// stream store (Redis) did not answer; try again shortly."), then data: [DONE], and returns the
// broker's error. If ctx ends or writing fails, it stops without [DONE] and returns that error.
func (s *Server) WriteSSE(ctx context.Context, w http.ResponseWriter, runID string, after int64, until stream.Until) error {
	sw, err := httpwire.NewSSEWriter(w, httpwire.SSEOptions{KeepAlive: s.KeepAlive})
	if err != nil {
		return err
	}
	err = follow(ctx, sw, s.Broker, runID, after, until, s.Run)
	switch {
	case err == nil:
		return sw.Done()
	case sw.Err() != nil:
		return sw.Err()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if werr := sw.Event(0, httpwire.ErrorChunk(s.Logger, runID, err)); werr != nil {
		return werr
	}
	if werr := sw.Done(); werr != nil {
		return werr
	}
	return err
}

// follow writes the stream of runID after offset after to s as events with their offsets as
// ids, and a keep-alive comment every keep-alive interval while it waits (the rules of
// [stream.Reader], with run). It returns nil when until holds (it does not write [DONE]),
// else the first error of a write (also s.Err()), of the broker, a STREAM_GONE error when the
// stream is gone, or ctx.Err().
func follow(ctx context.Context, s *httpwire.SSEWriter, b stream.Broker, runID string, after int64, until stream.Until, run func(context.Context, string) (stream.RunState, error)) error {
	if err := s.Err(); err != nil {
		return err
	}
	rd := stream.NewReader(b, runID, after, stream.ReaderOptions{Until: until, Run: run, Idle: s.KeepAliveInterval()})
	for {
		e, err := rd.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, stream.ErrIdle):
			err = s.KeepAlive()
		case err == nil:
			err = s.Event(e.Offset, e.Chunk)
		}
		if err != nil {
			return err
		}
	}
}

// parseUntil parses a query value: "response", "run" or "none"; the empty string is [stream.UntilRun].
// Anything else is a *contracts.Error with code INVALID_REQUEST.
func parseUntil(s string) (stream.Until, error) {
	switch s {
	case "", "run":
		return stream.UntilRun, nil
	case "response":
		return stream.UntilResponse, nil
	case "none":
		return stream.UntilCancel, nil
	}
	return 0, contracts.Errorf(contracts.CodeInvalidRequest,
		"invalid until %q: want \"response\", \"run\" or \"none\"", s)
}
