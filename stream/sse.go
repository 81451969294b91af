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

// Pattern is the [http.ServeMux] pattern of a run's stream, served by [Handler]. The runID
// wildcard is one path segment (the workflow ID, path-escaped by clients).
const Pattern = "GET /v1/runs/{runID}/stream"

// DefaultKeepAlive is the interval of the keep-alive comments sent on an idle stream.
const DefaultKeepAlive = 15 * time.Second

// Server serves a run's stream as server-sent events in the Kortyx wire format (see
// [Server.WriteSSE]). As an [http.Handler] it expects to be mounted on a pattern with a
// {runID} wildcard, such as [Pattern]; [Handler] does that for you.
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
	mux.Handle(Pattern, &Server{Broker: b})
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
// It writes through an [SSEWriter] (see [NewSSEWriter] for the headers, the keep-alive
// comments sent every KeepAlive while no chunk arrives, and the write deadlines), one event per
// entry:
//
//	id: <offset>
//	data: <the chunk as JSON>
//
// followed, once until holds, by "data: [DONE]". If reading the broker fails, it writes an
// error chunk without id, data: {"type":"error","message":...,"failure":{...}} (the message is
// that of [contracts.FailureOf], which hides the details of errors that are not
// *contracts.Error), then data: [DONE], and returns the broker's error. If ctx ends or writing
// fails, it stops without [DONE] and returns that error.
func (s *Server) WriteSSE(ctx context.Context, w http.ResponseWriter, runID string, after int64, until Until) error {
	sw, err := NewSSEWriter(w, SSEOptions{KeepAlive: s.KeepAlive})
	if err != nil {
		return err
	}
	err = sw.Follow(ctx, s.Broker, runID, after, until, nil)
	switch {
	case err == nil:
		return sw.Done()
	case sw.Err() != nil:
		return sw.Err()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	f := contracts.FailureOf(err)
	if werr := sw.Event(0, contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}); werr != nil {
		return werr
	}
	if werr := sw.Done(); werr != nil {
		return werr
	}
	return err
}

// DefaultWriteTimeout is the write deadline an [SSEWriter] gives each of its writes.
const DefaultWriteTimeout = time.Minute

// SSEOptions configure an [SSEWriter]. The zero value works.
type SSEOptions struct {
	// KeepAlive is the interval of the ": keep-alive" comments sent by [SSEWriter.Follow]
	// while no chunk arrives; 0 means [DefaultKeepAlive], a negative value disables them.
	KeepAlive time.Duration
	// WriteTimeout is the write deadline set before each write (so that an http.Server
	// WriteTimeout, which counts from the request, does not cut a long stream, while a client
	// that stops reading still fails the write); 0 means [DefaultWriteTimeout], a negative
	// value clears the deadline instead.
	WriteTimeout time.Duration
}

// SSEWriter writes server-sent events in the Kortyx wire format to one response: chunks as
// JSON data lines with an optional id line, keep-alive comments and the final "data: [DONE]".
// Every write resets the connection's write deadline and is flushed at once. The first write
// that fails makes every later one fail with the same error (see [SSEWriter.Err]). An
// SSEWriter is not safe for concurrent use.
type SSEWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	keepAlive time.Duration
	timeout   time.Duration
	buf       bytes.Buffer
	enc       *json.Encoder
	err       error
}

// NewSSEWriter sends the headers of an event stream (content-type: text/event-stream,
// cache-control: no-cache, connection: keep-alive, x-accel-buffering: no) with status 200,
// flushes them and returns the writer. Its error is that of the flush.
func NewSSEWriter(w http.ResponseWriter, o SSEOptions) (*SSEWriter, error) {
	s := &SSEWriter{w: w, rc: http.NewResponseController(w), keepAlive: o.KeepAlive, timeout: o.WriteTimeout}
	if s.keepAlive == 0 {
		s.keepAlive = DefaultKeepAlive
	}
	if s.timeout == 0 {
		s.timeout = DefaultWriteTimeout
	}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.deadline()
	w.WriteHeader(http.StatusOK)
	s.err = s.flush()
	return s, s.err
}

// Event writes c as one event, with the line "id: <id>" first when id > 0.
func (s *SSEWriter) Event(id int64, c contracts.Chunk) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	if id > 0 {
		s.buf.WriteString("id: ")
		s.buf.WriteString(strconv.FormatInt(id, 10))
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(c); err != nil { // appends '\n'
		return err // not a write failure: the stream is still usable
	}
	s.buf.WriteByte('\n')
	return s.write(s.buf.Bytes())
}

// KeepAlive writes the comment ": keep-alive", which readers ignore and which keeps proxies
// from closing an idle connection.
func (s *SSEWriter) KeepAlive() error { return s.write([]byte(": keep-alive\n\n")) }

// Done writes the final event, "data: [DONE]", then clears the write deadline: the handler may
// still wait (for a finalization) before the server ends the response.
func (s *SSEWriter) Done() error {
	if err := s.write([]byte("data: [DONE]\n\n")); err != nil {
		return err
	}
	_ = s.rc.SetWriteDeadline(time.Time{})
	return nil
}

// Err returns the error of the write that failed, if one did.
func (s *SSEWriter) Err() error { return s.err }

// Follow is [Follow] writing each entry as an event with its offset as id (after calling fn
// with it, when fn is not nil), and a keep-alive comment every KeepAlive while it waits for
// entries. It returns nil when until holds (it does not write [DONE]), else the first error
// of a write (also [SSEWriter.Err]), of fn, of the broker, or ctx.Err().
func (s *SSEWriter) Follow(ctx context.Context, b Broker, runID string, after int64, until Until, fn func(Entry) error) error {
	if s.err != nil {
		return s.err
	}
	var onIdle func() error
	if s.keepAlive > 0 {
		onIdle = s.KeepAlive
	}
	return follow(ctx, b, runID, after, until, func(e Entry) error {
		if fn != nil {
			if err := fn(e); err != nil {
				return err
			}
		}
		return s.Event(e.Offset, e.Chunk)
	}, s.keepAlive, onIdle)
}

func (s *SSEWriter) write(p []byte) error {
	if s.err != nil {
		return s.err
	}
	s.deadline()
	if _, err := s.w.Write(p); err != nil {
		s.err = err
		return err
	}
	if err := s.flush(); err != nil {
		s.err = err
		return err
	}
	return nil
}

// deadline resets the connection's write deadline (unsupported by the writer: nothing to do).
func (s *SSEWriter) deadline() {
	var d time.Time
	if s.timeout > 0 {
		d = time.Now().Add(s.timeout)
	}
	_ = s.rc.SetWriteDeadline(d)
}

func (s *SSEWriter) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
