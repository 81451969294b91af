package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/httpapi"
)

// StreamPattern is the [http.ServeMux] pattern served by [Handler]. The runID wildcard is one
// path segment (the workflow ID, path-escaped by clients).
const StreamPattern = "GET /v1/runs/{runID}/stream"

// DefaultKeepAlive is the interval of the keep-alive comments sent on an idle stream.
const DefaultKeepAlive = 15 * time.Second

// Server serves a run's stream as server-sent events in the Kortyx wire format (see
// [Server.WriteSSE]). As an [http.Handler] it expects to be mounted on a pattern with a
// {runID} wildcard, such as [StreamPattern]; [Handler] does that for you.
//
// Query parameters: after=<offset> (default 0: from the start), overridden by the Last-Event-ID
// header when present (so EventSource reconnections resume after the last event received), and
// until=response|run|none (default run; see [ParseUntil]). Invalid parameters get a 400 response
// with the JSON body {"error": message, "failure": contracts.Failure} and code INVALID_REQUEST.
type Server struct {
	// Broker holds the streams. Required.
	Broker Broker
	// KeepAlive is the interval of the ": keep-alive" comments sent while no chunk arrives;
	// 0 means [DefaultKeepAlive], a negative value disables them.
	KeepAlive time.Duration
}

// Handler returns an [http.Handler] serving GET /v1/runs/{runID}/stream from b (see
// [Server] for the parameters and [Server.WriteSSE] for the format). The path is absolute:
// mount the handler at "/" of a mux (mux.Handle("/", stream.Handler(b))) or behind
// [http.StripPrefix]. Other paths get 404 NOT_FOUND and other methods 405 INVALID_REQUEST, as
// JSON errors like the others; the run ID must follow the id rule of [contracts.CheckID] (400
// INVALID_REQUEST otherwise).
func Handler(b Broker) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(StreamPattern, &Server{Broker: b})
	return httpapi.JSONErrors(mux, nil)
}

// WriteSSE writes the stream of runID from offset after to w until the until condition holds
// (see [Follow]), with the default keep-alive interval. See [Server.WriteSSE].
func WriteSSE(ctx context.Context, w http.ResponseWriter, b Broker, runID string, after int64, until Until) error {
	return (&Server{Broker: b}).WriteSSE(ctx, w, runID, after, until)
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
	until, err := ParseUntil(q.Get("until"))
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
	httpapi.WriteError(w, r, nil, 0, err)
}

// WriteSSE writes the stream of runID from offset after to w as server-sent events until the
// until condition holds (see [Follow]) or ctx ends, then returns.
//
// It sends the headers content-type: text/event-stream, cache-control: no-cache,
// connection: keep-alive and x-accel-buffering: no with status 200, then one event per entry,
// flushed immediately:
//
//	id: <offset>
//	data: <the chunk as JSON>
//
// followed, once until holds, by "data: [DONE]". While no chunk arrives, a ": keep-alive"
// comment is sent every KeepAlive. If reading the broker fails, it writes an error chunk
// without id, data: {"type":"error","message":...,"failure":{...}} (the message is that of
// [contracts.FailureOf], which hides the details of errors that are not *contracts.Error),
// then data: [DONE], and returns the broker's error. If ctx ends or writing fails, it stops
// without [DONE] and returns that error. The connection's write deadline is cleared, so that
// an http.Server WriteTimeout does not cut long streams.
func (s *Server) WriteSSE(ctx context.Context, w http.ResponseWriter, runID string, after int64, until Until) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	flush := func() error {
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	}
	if err := flush(); err != nil {
		return err
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	event := func(id int64, c contracts.Chunk) error {
		buf.Reset()
		if id > 0 {
			buf.WriteString("id: ")
			buf.WriteString(strconv.FormatInt(id, 10))
			buf.WriteByte('\n')
		}
		buf.WriteString("data: ")
		if err := enc.Encode(c); err != nil { // appends '\n'
			return err
		}
		buf.WriteByte('\n')
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		return flush()
	}
	raw := func(s string) error {
		if _, err := w.Write([]byte(s)); err != nil {
			return err
		}
		return flush()
	}

	var writeErr error
	keepAlive := s.KeepAlive
	if keepAlive == 0 {
		keepAlive = DefaultKeepAlive
	}
	var onIdle func() error
	if keepAlive > 0 {
		onIdle = func() error {
			writeErr = raw(": keep-alive\n\n")
			return writeErr
		}
	}
	err := follow(ctx, s.Broker, runID, after, until, func(e Entry) error {
		writeErr = event(e.Offset, e.Chunk)
		return writeErr
	}, keepAlive, onIdle)
	switch {
	case err == nil:
		return raw("data: [DONE]\n\n")
	case writeErr != nil:
		return writeErr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	f := contracts.FailureOf(err)
	if werr := event(0, contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}); werr != nil {
		return werr
	}
	if werr := raw("data: [DONE]\n\n"); werr != nil {
		return werr
	}
	return err
}
