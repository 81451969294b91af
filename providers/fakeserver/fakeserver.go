package fakeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
)

// Model is the model id the server lists at GET /v1/models and answers with when a request
// names none.
const Model = "fake-model"

// Captured is one request the server received.
type Captured struct {
	// Model, Messages, Tools and Options are the request decoded as the [fake.Responder] saw it.
	Model    string
	Messages []contracts.ModelMessage
	Tools    []contracts.ToolDefinition
	Options  contracts.CallOptions
	// Stream is the request's "stream" flag; IncludeUsage its stream_options.include_usage.
	Stream       bool
	IncludeUsage bool
	// Header holds the request headers (Authorization, OpenAI-Organization, …).
	Header http.Header
	// Raw is the request body exactly as received.
	Raw json.RawMessage
}

// Request returns the request as the [fake.Responder] saw it.
func (c Captured) Request() providers.Request {
	return providers.Request{Model: c.Model, Messages: c.Messages, Tools: c.Tools, Options: c.Options}
}

// Field returns a top-level field of the raw request body (e.g. "response_format",
// "temperature"), or nil when the body has no such field.
func (c Captured) Field(name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(c.Raw, &m) != nil {
		return nil
	}
	return m[name]
}

// Server is a fake OpenAI-compatible HTTP server. It is safe for concurrent use.
type Server struct {
	respond  fake.Responder
	script   []fake.Turn
	scripted bool

	mu    sync.Mutex
	next  int // next script turn
	toolN int // tool call ids handed out
	respN int // responses handed out
	reqs  []Captured

	handler http.Handler
	srv     *httptest.Server
}

// New starts a server that answers every request with the turn respond(req) returns; a nil
// respond is [Canned]. Close it when done.
func New(respond fake.Responder) *Server {
	if respond == nil {
		respond = Canned()
	}
	return start(&Server{respond: respond})
}

// NewScript starts a server that answers requests with the turns in order; a request after the
// last turn gets a 500 error "script exhausted". Close it when done.
func NewScript(turns ...fake.Turn) *Server {
	return start(&Server{script: append([]fake.Turn(nil), turns...), scripted: true})
}

func start(s *Server) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveChat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": Model, "object": "model", "owned_by": "kortyx"},
		}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, wireError{Error: wireErrorBody{
			Message: fmt.Sprintf("fakeserver serves POST /v1/chat/completions, not %s %s", r.Method, r.URL.Path),
			Type:    "invalid_request_error",
		}})
	})
	s.handler = mux
	s.srv = httptest.NewServer(mux)
	return s
}

// URL returns the base URL of the API, ending in "/v1" (for openai.Options.BaseURL).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Handler returns the server's handler (it serves /v1/...), to mount it on another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order of arrival.
func (s *Server) Requests() []Captured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Captured(nil), s.reqs...)
}

// Canned returns a responder for demos without a key: it echoes the last message when that
// message is the user's ("(fake model) You said: …"), and answers "(fake model) OK." otherwise.
func Canned() fake.Responder {
	return func(req providers.Request) fake.Turn {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == contracts.RoleUser {
			return fake.Text("(fake model) You said: " + req.Messages[n-1].Content)
		}
		return fake.Text("(fake model) OK.")
	}
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "request body is not valid JSON: "+err.Error())
		return
	}
	req := wr.toRequest()
	s.mu.Lock()
	s.reqs = append(s.reqs, Captured{
		Model: req.Model, Messages: req.Messages, Tools: req.Tools, Options: req.Options,
		Stream: wr.Stream, IncludeUsage: wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage,
		Header: r.Header.Clone(), Raw: body,
	})
	s.mu.Unlock()

	turn, err := s.turnFor(req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", nil, err.Error())
		return
	}
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	model := wr.Model
	if model == "" {
		model = Model
	}
	s.mu.Lock()
	s.respN++
	p := &play{w: w, gone: r.Context().Done(), model: model, id: fmt.Sprintf("chatcmpl-fake-%d", s.respN), created: time.Now().Unix(),
		includeUsage: wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage}
	s.mu.Unlock()
	if wr.Stream {
		p.stream(turn)
	} else {
		p.complete(turn)
	}
}

// turnFor picks the turn for a request and gives its tool calls ids and arguments.
func (s *Server) turnFor(req providers.Request) (fake.Turn, error) {
	var t fake.Turn
	if s.scripted {
		s.mu.Lock()
		n := s.next
		s.next++
		s.mu.Unlock()
		if n >= len(s.script) {
			return t, fmt.Errorf("fakeserver: script exhausted: request %d received, %d turns scripted", n+1, len(s.script))
		}
		t = s.script[n]
	} else {
		t = s.respond(req)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.Normalize(&s.toolN), nil
}

// play writes one response.
type play struct {
	w            http.ResponseWriter
	gone         <-chan struct{} // closed when the request's context ends
	model, id    string
	created      int64
	includeUsage bool
	started      bool // SSE headers written
}

func (p *play) parts(t fake.Turn) (deltas []string, text string, usage *contracts.Usage, finish string) {
	deltas = t.Deltas
	if deltas == nil && t.Text != "" {
		deltas = strings.SplitAfter(t.Text, " ")
	}
	text = t.Text
	if text == "" {
		text = strings.Join(deltas, "")
	}
	if !t.NoUsage {
		u := t.Usage
		if u.IsZero() {
			u = contracts.Usage{Input: 10, Output: len(deltas)}
			u.Total = u.Input + u.Output
		}
		usage = &u
	}
	finish = t.FinishReason
	if finish == "" {
		finish = contracts.FinishStop
		if len(t.ToolCalls) > 0 {
			finish = contracts.FinishToolCalls
		}
	}
	return deltas, text, usage, wireFinish(finish)
}

// turnError returns the turn's error as a *contracts.Error (a plain error is a 500).
func turnError(t fake.Turn) *contracts.Error {
	if t.Err == nil {
		return nil
	}
	var ce *contracts.Error
	if errors.As(t.Err, &ce) {
		return ce
	}
	return &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: http.StatusInternalServerError, Message: t.Err.Error()}
}

// complete writes a non-streamed chat.completion.
func (p *play) complete(t fake.Turn) {
	if t.Hang != nil {
		t.Hang.Wait(p.gone)
		return
	}
	_, text, usage, finish := p.parts(t)
	if ce := turnError(t); ce != nil {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			refusal := ce.Message
			p.writeCompletion(&wireOutMsg{Role: "assistant", Refusal: &refusal}, "stop", usage)
		case contracts.CodeProviderInvalidResponse:
			p.w.Header().Set("Content-Type", "application/json")
			p.w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(p.w, "this is not JSON {")
		case contracts.CodeProviderTransportError:
			p.cut()
		default:
			writeHTTPError(p.w, ce)
		}
		return
	}
	msg := &wireOutMsg{Role: "assistant"}
	if text != "" || len(t.ToolCalls) == 0 {
		msg.Content = &text
	}
	for _, c := range t.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: c.ID, Type: "function",
			Function: wireFunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
	}
	p.writeCompletion(msg, finish, usage)
}

func (p *play) writeCompletion(msg *wireOutMsg, finish string, usage *contracts.Usage) {
	writeJSON(p.w, http.StatusOK, wireCompletion{
		ID: p.id, Object: "chat.completion", Created: p.created, Model: p.model, SystemFingerprint: "fp_fakeserver",
		Choices: []wireChoice{{Message: msg, FinishReason: &finish}},
		Usage:   wireUsageOf(usage),
	})
}

func wireUsageOf(u *contracts.Usage) *wireUsage {
	if u == nil {
		return nil
	}
	return toWireUsage(*u)
}

// stream writes a streamed answer: a role chunk, the text deltas, the tool calls as interleaved
// fragments, a finish chunk, a usage chunk when asked for, and [DONE].
func (p *play) stream(t fake.Turn) {
	deltas, _, usage, finish := p.parts(t)
	ce := turnError(t)
	if ce != nil && t.FailAfter == 0 {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			p.refuse(ce.Message)
		case contracts.CodeProviderInvalidResponse:
			p.invalidChunk()
		case contracts.CodeProviderTransportError:
			p.cut()
		default:
			writeHTTPError(p.w, ce)
		}
		return
	}
	empty := ""
	if !p.delta(&wireOutMsg{Role: "assistant", Content: &empty}) {
		return
	}
	for i, d := range deltas {
		if ce != nil && i == t.FailAfter {
			break
		}
		if t.Hang != nil && i == t.Hang.After {
			t.Hang.Wait(p.gone)
			return
		}
		if !p.delta(&wireOutMsg{Content: &d}) {
			return
		}
	}
	if t.Hang != nil && ce == nil {
		t.Hang.Wait(p.gone)
		return
	}
	if ce != nil {
		p.failMidStream(ce)
		return
	}
	if !p.toolFragments(t.ToolCalls) {
		return
	}
	if !p.chunk([]wireChoice{{Delta: &wireOutMsg{}, FinishReason: &finish}}, nil) {
		return
	}
	if p.includeUsage && usage != nil && !p.chunk([]wireChoice{}, toWireUsage(*usage)) {
		return
	}
	p.done()
}

// toolFragments streams the tool calls round by round: the first fragment of each call carries
// its id, type, name and the start of its arguments; later rounds carry argument pieces. The
// calls' fragments interleave, so a client must accumulate them by index.
func (p *play) toolFragments(calls []contracts.ToolCall) bool {
	pieces := make([][]string, len(calls))
	for i, c := range calls {
		pieces[i] = splitRunes(string(c.Arguments), 3)
	}
	for round := 0; ; round++ {
		sent := false
		for i, c := range calls {
			if round >= len(pieces[i]) {
				continue
			}
			sent = true
			index := i
			frag := wireToolCall{Index: &index, Function: wireFunctionCall{Arguments: pieces[i][round]}}
			if round == 0 {
				frag.ID, frag.Type, frag.Function.Name = c.ID, "function", c.Name
			}
			if !p.delta(&wireOutMsg{ToolCalls: []wireToolCall{frag}}) {
				return false
			}
		}
		if !sent {
			return true
		}
	}
}

func (p *play) refuse(text string) {
	empty := ""
	if !p.delta(&wireOutMsg{Role: "assistant", Content: &empty}) {
		return
	}
	for _, piece := range strings.SplitAfter(text, " ") {
		if !p.delta(&wireOutMsg{Refusal: &piece}) {
			return
		}
	}
	stop := "stop"
	if p.chunk([]wireChoice{{Delta: &wireOutMsg{}, FinishReason: &stop}}, nil) {
		p.done()
	}
}

// failMidStream ends a stream that has started with the error's kind of failure.
func (p *play) failMidStream(ce *contracts.Error) {
	switch ce.Code {
	case contracts.CodeProviderRefusal:
		for _, piece := range strings.SplitAfter(ce.Message, " ") {
			if !p.delta(&wireOutMsg{Refusal: &piece}) {
				return
			}
		}
		stop := "stop"
		if p.chunk([]wireChoice{{Delta: &wireOutMsg{}, FinishReason: &stop}}, nil) {
			p.done()
		}
	case contracts.CodeProviderInvalidResponse:
		p.invalidChunk()
	case contracts.CodeProviderTransportError:
		p.cut()
	default:
		_, body := errorBody(ce)
		b, _ := json.Marshal(body)
		p.event(string(b))
	}
}

func (p *play) invalidChunk() { p.event(`{"id": this is not JSON`) }

func (p *play) delta(d *wireOutMsg) bool {
	return p.chunk([]wireChoice{{Delta: d}}, nil)
}

func (p *play) chunk(choices []wireChoice, usage *wireUsage) bool {
	b, err := json.Marshal(wireCompletion{ID: p.id, Object: "chat.completion.chunk", Created: p.created,
		Model: p.model, SystemFingerprint: "fp_fakeserver", Choices: choices, Usage: usage})
	if err != nil {
		return false
	}
	return p.event(string(b))
}

func (p *play) done() { p.event("[DONE]") }

// event writes one SSE event and flushes it.
func (p *play) event(data string) bool {
	if !p.started {
		p.started = true
		h := p.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		p.w.WriteHeader(http.StatusOK)
	}
	if _, err := io.WriteString(p.w, "data: "+data+"\n\n"); err != nil {
		return false
	}
	return http.NewResponseController(p.w).Flush() == nil
}

// cut closes the connection without finishing the response (after what was already sent).
func (p *play) cut() {
	conn, _, err := http.NewResponseController(p.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// errorBody is the status and OpenAI-style error body of an error: Status (default 500, or 400
// for a non-retryable error without one); Details["type"] and Details["code"] override the
// error's type and code.
func errorBody(ce *contracts.Error) (int, wireError) {
	status := ce.Status
	if status == 0 {
		status = http.StatusInternalServerError
		if !ce.Retryable && ce.Code != contracts.CodeProviderHTTPError {
			status = http.StatusBadRequest
		}
	}
	typ, code := defaultTypeCode(status)
	if v, ok := ce.Details["type"].(string); ok {
		typ = v
	}
	if v, ok := ce.Details["code"]; ok {
		code = v
	}
	msg := ce.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	return status, wireError{Error: wireErrorBody{Message: msg, Type: typ, Code: code}}
}

func defaultTypeCode(status int) (string, any) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", nil
	}
	return "invalid_request_error", nil
}

// writeHTTPError answers with the error's status and body, and a Retry-After header (whole
// seconds, rounded up) for Details["retryAfterMs"].
func writeHTTPError(w http.ResponseWriter, ce *contracts.Error) {
	status, body := errorBody(ce)
	if ms, ok := number(ce.Details["retryAfterMs"]); ok && ms >= 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ms/1000))))
	}
	writeJSON(w, status, body)
}

func writeError(w http.ResponseWriter, status int, typ string, code any, msg string) {
	writeJSON(w, status, wireError{Error: wireErrorBody{Message: msg, Type: typ, Code: code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func number(v any) (float64, bool) {
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

// splitRunes splits s into at most n pieces of about equal length, on rune boundaries; the
// empty string is one empty piece.
func splitRunes(s string, n int) []string {
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
