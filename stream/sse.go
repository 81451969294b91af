package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	// Run, when set, tells a reader that finds nothing to read whether the run can still
	// publish (see [FollowRun]): with it, a stream that is gone ends with a STREAM_GONE error
	// chunk instead of waiting forever. Without it only an offset past the stream's end is
	// detected.
	Run RunFunc
	// Logger logs the errors that end a stream (nil: slog.Default()); the client's error chunk
	// carries only their safe message and code.
	Logger *slog.Logger
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
// followed, once until holds, by "data: [DONE]". If reading the broker fails, it logs the
// error and writes an error chunk without id, data: {"type":"error","message":...,"failure":{...}}
// with a safe message and code only (no cause, no store address: STREAM_UNAVAILABLE says "The
// stream store (Redis) did not answer; try again shortly."), then data: [DONE], and returns the
// broker's error. If ctx ends or writing fails, it stops without [DONE] and returns that error.
func (s *Server) WriteSSE(ctx context.Context, w http.ResponseWriter, runID string, after int64, until Until) error {
	sw, err := NewSSEWriter(w, SSEOptions{KeepAlive: s.KeepAlive, Run: s.Run})
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
	if werr := sw.Event(0, httpapi.ErrorChunk(s.Logger, runID, err)); werr != nil {
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
	// Run is passed to [FollowRun] by [SSEWriter.Follow] (nil: only an offset past the end of
	// the stream is detected as gone).
	Run RunFunc
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
// SSEWriter is not safe for concurrent use.
type SSEWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	keepAlive time.Duration
	timeout   time.Duration
	run       RunFunc
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
	s := &SSEWriter{w: w, rc: http.NewResponseController(w), keepAlive: o.KeepAlive, timeout: o.WriteTimeout, run: o.Run,
		omitIDs: o.OmitIDs, transform: o.Transform}
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

// Event writes c as one event, with the line "id: <id>" first when id > 0 (and
// SSEOptions.OmitIDs is not set); with SSEOptions.Transform, the values it returns instead.
func (s *SSEWriter) Event(id int64, c contracts.Chunk) error {
	if s.transform == nil {
		return s.Data(id, c)
	}
	for _, v := range s.transform(c) {
		if err := s.Data(id, v); err != nil {
			return err
		}
	}
	return s.err
}

// Data writes v, encoded as JSON, as one event "data: <json>" followed by a blank line (LF
// endings), with the line "id: <id>" first when id > 0 and SSEOptions.OmitIDs is not set.
func (s *SSEWriter) Data(id int64, v any) error {
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

// Follow is [FollowRun] (with SSEOptions.Run) writing each entry as an event with its offset
// as id (after calling fn with it, when fn is not nil), and a keep-alive comment every
// KeepAlive while it waits for entries. It returns nil when until holds (it does not write
// [DONE]), else the first error of a write (also [SSEWriter.Err]), of fn, of the broker, a
// STREAM_GONE error when the stream is gone, or ctx.Err().
func (s *SSEWriter) Follow(ctx context.Context, b Broker, runID string, after int64, until Until, fn func(Entry) error) error {
	if s.err != nil {
		return s.err
	}
	var onIdle func() error
	if s.keepAlive > 0 {
		onIdle = s.KeepAlive
	}
	return followRun(ctx, b, runID, after, until, s.run, func(e Entry) error {
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

// RunPhase is what a reader needs to know about a run whose stream has nothing to read.
type RunPhase int

const (
	// RunRunning: the run executes and may still publish.
	RunRunning RunPhase = iota
	// RunWaiting: the run waits for an answer to a question; the response that asked it was
	// already published.
	RunWaiting
	// RunClosed: the run has ended (completed, failed, cancelled, terminated, timed out); it
	// publishes nothing more.
	RunClosed
	// RunMissing: there is no such run.
	RunMissing
)

// RunState is the state of a run as [RunFunc] reports it.
type RunState struct {
	Phase RunPhase
	// Reason, for a closed run, replaces the reason given in the STREAM_GONE error (for
	// callers that know more, such as a session that moved on to another turn).
	Reason string
}

// RunFunc reports the state of a run (for Temporal: chat.RunState). An error means "cannot
// tell now": the reader keeps waiting and asks again.
type RunFunc func(ctx context.Context, runID string) (RunState, error)

// GoneInterval is how often a reader that has nothing to read checks again whether the stream
// is gone (see [FollowRun]).
const GoneInterval = 2 * time.Second

// GoneHint is the end of the message of the STREAM_GONE errors of the in-memory case.
const GoneHint = "the run's chunks are no longer kept (the in-memory broker was restarted or evicted the run, or the run published them in another process's memory); with several processes, or to survive restarts, set KORTYX_REDIS_URL"

// GoneError returns the STREAM_GONE error of runID with the reason given.
func GoneError(runID, reason string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeStreamGone, Message: "The stream of run " + strconv.Quote(runID) + " is gone: " + reason + ".",
		Details: map[string]any{"runId": runID}}
}

// FollowRun is [Follow] that never waits for a stream that is gone. Before waiting it checks
// the broker, and every [GoneInterval] while nothing arrives the broker and the run; it returns
// a STREAM_GONE *contracts.Error when:
//
//   - after is past the last offset the broker has for the run (the broker lost the chunks
//     after, or never had them);
//   - the broker reports (Bounds) that the chunks right after after were trimmed;
//   - the broker has nothing for the run and run (when not nil) says the run is closed, or
//     waiting for an answer on two checks in a row (its response was published but is not
//     here);
//   - the reader has read everything, run says the run is closed, and until is not
//     [UntilCancel] (nothing will follow).
//
// and a NOT_FOUND *contracts.Error when the broker has nothing and run reports no such run. A
// running run is waited for. Errors from run mean "cannot tell": it is asked again later.
func FollowRun(ctx context.Context, b Broker, runID string, after int64, until Until, run RunFunc, fn func(Entry) error) error {
	return followRun(ctx, b, runID, after, until, run, fn, 0, nil)
}

// goneCheck decides whether the stream after offset after can still come.
type goneCheck struct {
	b       Broker
	runID   string
	after   int64
	until   Until
	run     RunFunc
	waiting int // consecutive checks that found the run waiting and nothing in the broker
}

// check checks the broker, and asks the run when askRun is set and nothing is there to read.
func (g *goneCheck) check(ctx context.Context, askRun bool) error {
	first, last, err := g.b.Bounds(ctx, g.runID)
	if err != nil {
		return nil // the broker's own errors surface from reading it
	}
	switch {
	case last > g.after && first > g.after+1:
		return GoneError(g.runID, fmt.Sprintf("the chunks after offset %d are no longer kept (the oldest kept is %d)", g.after, first))
	case last > g.after:
		g.waiting = 0
		return nil
	case last < g.after:
		if last == 0 {
			return GoneError(g.runID, fmt.Sprintf("offset %d is past the end of the stream, which is empty: %s", g.after, GoneHint))
		}
		return GoneError(g.runID, fmt.Sprintf("offset %d is past the end of the stream (offset %d): %s", g.after, last, GoneHint))
	}
	if !askRun || g.run == nil || (last > 0 && g.until == UntilCancel) {
		return nil
	}
	st, err := g.run(ctx, g.runID)
	if err != nil {
		return nil
	}
	// The run may have published (and ended) while it was asked: what it published counts.
	if _, again, err := g.b.Bounds(ctx, g.runID); err != nil || again != last {
		return nil
	}
	switch st.Phase {
	case RunMissing:
		if last == 0 {
			return &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("There is no run %q.", g.runID),
				Details: map[string]any{"runId": g.runID}}
		}
	case RunClosed:
		if st.Reason != "" {
			return GoneError(g.runID, st.Reason)
		}
		if last == 0 {
			return GoneError(g.runID, "the run has ended and "+GoneHint)
		}
		return GoneError(g.runID, fmt.Sprintf("the run has ended: nothing follows offset %d", g.after))
	case RunWaiting:
		if last == 0 {
			if g.waiting++; g.waiting >= 2 {
				return GoneError(g.runID, "the run waits for an answer and "+GoneHint)
			}
		}
	default:
		g.waiting = 0
	}
	return nil
}

// followRun is [FollowRun] with keep-alives: onKeepAlive (when not nil) every keepAlive while
// nothing arrives.
func followRun(ctx context.Context, b Broker, runID string, after int64, until Until, run RunFunc,
	fn func(Entry) error, keepAlive time.Duration, onKeepAlive func() error) error {
	g := &goneCheck{b: b, runID: runID, after: after, until: until, run: run}
	// At once only the broker: a reader that resumes past the end fails now, while a run
	// just started is not asked about before it had GoneInterval to publish.
	if err := g.check(ctx, false); err != nil {
		return err
	}
	tick := GoneInterval
	if onKeepAlive != nil && keepAlive > 0 && keepAlive < tick {
		tick = keepAlive
	}
	lastAlive, lastCheck := time.Now(), time.Now()
	onIdle := func() error {
		now := time.Now()
		if onKeepAlive != nil && keepAlive > 0 && now.Sub(lastAlive) >= keepAlive-tick/10 {
			lastAlive = now
			if err := onKeepAlive(); err != nil {
				return err
			}
		}
		if now.Sub(lastCheck) >= GoneInterval-tick/10 {
			lastCheck = now
			return g.check(ctx, true)
		}
		return nil
	}
	return follow(ctx, b, runID, after, until, func(e Entry) error {
		if err := fn(e); err != nil {
			return err
		}
		g.after = e.Offset
		lastCheck = time.Now()
		return nil
	}, tick, onIdle)
}
