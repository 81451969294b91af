// Package fakewire holds what the fake provider servers (fakeserver, fakeanthropic, fakegemini)
// share: picking the turn for a request (a script in order or a responder, normalized with tool
// call ids counted per server, "script exhausted" after the last scripted turn), the request
// log, a turn's delay, its error and text pieces, the status of an error turn, the Retry-After
// header of Details["retryAfterMs"], JSON answers, SSE writing and cutting a connection. What a
// wire says (its bodies, events and error shapes) stays in each server.
package fakewire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Player picks the turns a server answers with. It is safe for concurrent use.
type Player struct {
	name     string // the server's package name, for the exhaustion error
	respond  fake.Responder
	script   []fake.Turn
	scripted bool

	mu    sync.Mutex
	next  int // next script turn
	toolN int // tool call ids handed out
	respN int // responses handed out
}

// Responder returns a player that answers every request with respond(req).
func Responder(name string, respond fake.Responder) *Player {
	return &Player{name: name, respond: respond}
}

// Script returns a player that answers requests with the turns in order (it keeps a copy).
func Script(name string, turns []fake.Turn) *Player {
	return &Player{name: name, script: append([]fake.Turn(nil), turns...), scripted: true}
}

// Turn picks the turn for a request and gives its tool calls ids and arguments
// ([fake.Turn.Normalize]). After the last scripted turn it fails with
// "<name>: script exhausted: request N received, M turns scripted".
func (p *Player) Turn(req providers.Request) (fake.Turn, error) {
	var t fake.Turn
	if p.scripted {
		p.mu.Lock()
		n := p.next
		p.next++
		p.mu.Unlock()
		if n >= len(p.script) {
			return t, fmt.Errorf("%s: script exhausted: request %d received, %d turns scripted", p.name, n+1, len(p.script))
		}
		t = p.script[n]
	} else {
		t = p.respond(req)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return t.Normalize(&p.toolN), nil
}

// NextResponse counts one more response and returns its number, from 1.
func (p *Player) NextResponse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.respN++
	return p.respN
}

// Log is the requests a server received, in order of arrival. It is safe for concurrent use.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends one request.
func (l *Log[T]) Add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

// All returns a copy of the requests so far.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}

// Delay waits a turn's delay; false when the request's context ended first.
func Delay(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// TurnError returns the turn's error as a *contracts.Error (a plain error is a 500).
func TurnError(t fake.Turn) *contracts.Error {
	if t.Err == nil {
		return nil
	}
	var ce *contracts.Error
	if errors.As(t.Err, &ce) {
		return ce
	}
	return &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: http.StatusInternalServerError, Message: t.Err.Error()}
}

// Text returns a turn's deltas (its Text split after spaces when it has none) and its whole
// text (the deltas joined when it has none).
func Text(t fake.Turn) (deltas []string, text string) {
	deltas = t.Deltas
	if deltas == nil && t.Text != "" {
		deltas = strings.SplitAfter(t.Text, " ")
	}
	text = t.Text
	if text == "" {
		text = strings.Join(deltas, "")
	}
	return deltas, text
}

// Usage is the usage a turn reports: nil with NoUsage, its Usage when set, else 10 input
// tokens and one output token per delta (Total their sum).
func Usage(t fake.Turn, deltas int) *providers.Usage {
	if t.NoUsage {
		return nil
	}
	u := t.Usage
	if u == (providers.Usage{}) {
		u = providers.Usage{Input: 10, Output: deltas}
		u.Total = u.Input + u.Output
	}
	return &u
}

// Finish is a turn's unified finish reason: its own, else tool_calls when it calls tools, else
// stop.
func Finish(t fake.Turn) string {
	if t.FinishReason != "" {
		return t.FinishReason
	}
	if len(t.ToolCalls) > 0 {
		return providers.FinishToolCalls
	}
	return providers.FinishStop
}

// ErrorStatus is the HTTP status of an error turn: its Status, else 500, or 400 for a
// non-retryable error of another code than PROVIDER_HTTP_ERROR.
func ErrorStatus(ce *contracts.Error) int {
	if ce.Status != 0 {
		return ce.Status
	}
	if !ce.Retryable && ce.Code != contracts.CodeProviderHTTPError {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// SetRetryAfter sets the Retry-After header (whole seconds, rounded up) for
// details["retryAfterMs"], when that is a number >= 0.
func SetRetryAfter(h http.Header, details map[string]any) {
	if ms, ok := Number(details["retryAfterMs"]); ok && ms >= 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(ms/1000))))
	}
}

// WriteJSON answers with status and v as JSON (a 500 when v cannot be encoded).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// WriteInvalidJSON answers 200 with a JSON content type and a body that is not JSON.
func WriteInvalidJSON(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "this is not JSON {")
}

// Number reads an int, int64, float64 or json.Number.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// SplitRunes splits s into at most n pieces of about equal length, on rune boundaries; the
// empty string is one empty piece.
func SplitRunes(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return []string{""}
	}
	size := (len(r) + n - 1) / n
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// SSE writes a server-sent event stream. The first write sends the status 200 and the headers
// (text/event-stream, no-cache, and Header's).
type SSE struct {
	W http.ResponseWriter
	// Header, when set, is added to the stream's headers.
	Header  http.Header
	started bool
}

// Started reports whether the stream's headers were sent.
func (s *SSE) Started() bool { return s.started }

// Write writes raw event text and flushes it; false when the client went away.
func (s *SSE) Write(text string) bool {
	if !s.started {
		s.started = true
		h := s.W.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		for k, v := range s.Header {
			h[k] = v
		}
		s.W.WriteHeader(http.StatusOK)
	}
	if _, err := io.WriteString(s.W, text); err != nil {
		return false
	}
	return http.NewResponseController(s.W).Flush() == nil
}

// Cut closes the connection without finishing the response (after what was already sent).
func Cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// Field returns a top-level field of a raw JSON object body, or nil when the body is no object
// or has no such field.
func Field(raw json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m[name]
}
