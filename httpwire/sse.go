package httpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// ResumableHeader is the request header ("X-Kortyx-Resumable: 1") with which a client asks the
// chat route for resumable framing: an "id: <offset>" line before each event's data, to send
// back as Last-Event-ID when it reconnects. Without it (and without Last-Event-ID) the chat
// route writes Kortyx's framing, events without ids. The reconnecting client (package
// stream/sseclient) always sends it; the run stream route (/v1/runs/{id}/stream) writes ids
// whether or not it is sent.
const ResumableHeader = "X-Kortyx-Resumable"

// DefaultKeepAlive is the interval of the keep-alive comments sent on an idle stream.
const DefaultKeepAlive = 15 * time.Second

// defaultWriteTimeout is the write deadline an [SSEWriter] gives each of its writes.
const defaultWriteTimeout = time.Minute

// SSEOptions configure an [SSEWriter]. The zero value works.
type SSEOptions struct {
	// KeepAlive is the interval of the ": keep-alive" comments the caller sends while no chunk
	// arrives ([SSEWriter.KeepAliveInterval]); 0 means [DefaultKeepAlive], a negative value
	// disables them.
	KeepAlive time.Duration
	// WriteTimeout is the write deadline set before each write (so that an http.Server
	// WriteTimeout, which counts from the request, does not cut a long stream, while a client
	// that stops reading still fails the write); 0 means [defaultWriteTimeout], a negative
	// value clears the deadline instead.
	WriteTimeout time.Duration
	// OmitIDs writes every event without its "id:" line (the framing Kortyx's own stream
	// reader accepts: it drops an event whose text does not start with "data: ").
	OmitIDs bool
	// Transform, when set, replaces each chunk written by [SSEWriter.Event] with the values it
	// returns, each written (as JSON) as one event with the chunk's id; none drops the chunk.
	Transform func(contracts.Chunk) []any
}

// SSEWriter writes server-sent events in the Kortyx wire format to one response: chunks as
// JSON data lines with an optional id line, keep-alive comments and the final "data: [DONE]".
// Every write resets the connection's write deadline and is flushed at once. The first write
// that fails makes every later one fail with the same error (see [SSEWriter.Err]). An
// SSEWriter is not safe for concurrent use. The run stream route (package stream/sse) and every
// wire write through it.
type SSEWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	keepAlive time.Duration
	timeout   time.Duration
	omitIDs   bool
	transform func(contracts.Chunk) []any
	buf       bytes.Buffer
	enc       *json.Encoder
	err       error
}

// NewSSEWriter sends the headers of an event stream (content-type: text/event-stream,
// cache-control: no-cache, connection: keep-alive, x-accel-buffering: no) with status 200,
// flushes them and returns the writer. Its error is that of the flush.
func NewSSEWriter(w http.ResponseWriter, o SSEOptions) (*SSEWriter, error) {
	s := &SSEWriter{w: w, rc: http.NewResponseController(w), keepAlive: o.KeepAlive, timeout: o.WriteTimeout,
		omitIDs: o.OmitIDs, transform: o.Transform}
	if s.keepAlive == 0 {
		s.keepAlive = DefaultKeepAlive
	}
	if s.timeout == 0 {
		s.timeout = defaultWriteTimeout
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

// Event writes c as one event, with the line "id: <id>" first when id > 0 (and
// SSEOptions.OmitIDs is not set); with SSEOptions.Transform, the values it returns instead.
func (s *SSEWriter) Event(id int64, c contracts.Chunk) error {
	if s.transform == nil {
		return s.data(id, c)
	}
	for _, v := range s.transform(c) {
		if err := s.data(id, v); err != nil {
			return err
		}
	}
	return s.err
}

// data writes v, encoded as JSON, as one event "data: <json>" followed by a blank line (LF
// endings), with the line "id: <id>" first when id > 0 and SSEOptions.OmitIDs is not set.
func (s *SSEWriter) data(id int64, v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	if id > 0 && !s.omitIDs {
		s.buf.WriteString("id: ")
		s.buf.WriteString(strconv.FormatInt(id, 10))
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(v); err != nil { // appends '\n'
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

// KeepAliveInterval is the interval of the keep-alive comments (SSEOptions.KeepAlive with its
// default; 0: none).
func (s *SSEWriter) KeepAliveInterval() time.Duration { return max(s.keepAlive, 0) }

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
