package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/conformance"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/internal/fakewire"
)

// Model is the model id the server answers with when a request names none.
const Model = "fake-claude"

// Thinking is a thinking block the server puts before every answer ([Server].Thinking): a
// thinking block with Text and Signature, or, with Redacted set, a redacted_thinking block
// whose data is Redacted.
type Thinking struct {
	Text, Signature string
	Redacted        string
}

// Captured is one request the server received.
type Captured struct {
	conformance.Request
	// Header holds the request headers (Authorization, anthropic-version, …).
	Header http.Header
}

// Field returns a top-level field of the raw request body (e.g. "system", "output_config"),
// or nil when the body has no such field.
func (c Captured) Field(name string) json.RawMessage {
	return fakewire.Field(c.Raw, name)
}

// Server is a fake Anthropic Messages API. It is safe for concurrent use and implements
// [conformance.Server].
type Server struct {
	// Thinking, when set (before the first request), makes every answer start with these
	// thinking blocks (streamed as thinking_delta pieces and one signature_delta each).
	Thinking []Thinking

	player *fakewire.Player

	mu   sync.Mutex // pairs a request's place in reqs with its response number
	reqs fakewire.Log[Captured]

	srv *httptest.Server
}

var _ conformance.Server = (*Server)(nil)

// New starts a server that answers every request with the turn respond(req) returns; a nil
// respond is fakeserver.Canned (the echo of the last user message). Close it when done.
func New(respond fake.Responder) *Server {
	if respond == nil {
		respond = fakeserver.Canned()
	}
	return start(&Server{player: fakewire.Responder("fakeanthropic", respond)})
}

// NewScript starts a server that answers requests with the turns in order; a request after the
// last turn gets a 500 api_error "script exhausted". Close it when done.
func NewScript(turns ...fake.Turn) *Server {
	return start(&Server{player: fakewire.Script("fakeanthropic", turns)})
}

func start(s *Server) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.serveMessages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("fakeanthropic serves POST /v1/messages, not %s %s", r.Method, r.URL.Path))
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// URL returns the API root (without /v1), for anthropic.Options.BaseURL.
func (s *Server) URL() string { return s.srv.URL }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order of arrival, in Kortyx's terms.
func (s *Server) Requests() []conformance.Request {
	reqs := s.reqs.All()
	out := make([]conformance.Request, len(reqs))
	for i, c := range reqs {
		out[i] = c.Request
	}
	return out
}

// Captured returns the requests received so far with their headers.
func (s *Server) Captured() []Captured {
	return s.reqs.All()
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "request body is not valid JSON: "+err.Error())
		return
	}
	req := wr.toRequest()
	s.mu.Lock()
	s.reqs.Add(Captured{Request: conformance.Request{Request: req, Stream: wr.Stream, Raw: body}, Header: r.Header.Clone()})
	p := &play{w: w, r: r, id: fmt.Sprintf("msg_fake_%d", s.player.NextResponse()), model: wr.Model, thinking: s.Thinking}
	s.mu.Unlock()
	p.sse = fakewire.SSE{W: w, Header: http.Header{}}
	p.sse.Header.Set("request-id", "req_"+p.id)
	if p.model == "" {
		p.model = Model
	}

	turn, err := s.player.Turn(req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	if !fakewire.Delay(r, turn.Delay) {
		return
	}
	if wr.Stream {
		p.stream(turn)
	} else {
		p.complete(turn)
	}
}

// play writes one response.
type play struct {
	w         http.ResponseWriter
	r         *http.Request
	id, model string
	thinking  []Thinking
	sse       fakewire.SSE
}

// parts are what a turn answers: its deltas, text, usage (nil: none reported) and stop reason.
func parts(t fake.Turn) (deltas []string, text string, usage *wireUsage, stop string) {
	deltas, text = fakewire.Text(t)
	if u := fakewire.Usage(t, len(deltas)); u != nil {
		usage = toWireUsage(*u) // Anthropic reports no total
	}
	return deltas, text, usage, wireStop(fakewire.Finish(t))
}

// complete writes a non-streamed message.
func (p *play) complete(t fake.Turn) {
	if t.Hang != nil { // nothing to send before the whole message: hold until the client goes away
		t.Hang.Wait(p.r.Context().Done())
		return
	}
	_, text, usage, stop := parts(t)
	var details *wireStopDetails
	if ce := fakewire.TurnError(t); ce != nil {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			stop, details = "refusal", refusalDetails(ce)
		case contracts.CodeProviderInvalidResponse:
			fakewire.WriteInvalidJSON(p.w)
			return
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
			return
		default:
			writeHTTPError(p.w, ce)
			return
		}
	}
	var content []map[string]any
	for _, th := range p.thinking {
		content = append(content, thinkingBlock(th, true))
	}
	if text != "" && details == nil {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	if details == nil {
		for _, c := range t.ToolCalls {
			var input any = c.Arguments
			if !json.Valid(c.Arguments) {
				input = string(c.Arguments) // scripted arguments that are not JSON, as a JSON string
			}
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		}
	}
	if content == nil {
		content = []map[string]any{}
	}
	fakewire.WriteJSON(p.w, http.StatusOK, wireMessageOut{ID: p.id, Type: "message", Role: "assistant", Model: p.model,
		Content: content, StopReason: &stop, StopDetails: details, Usage: usage})
}

func thinkingBlock(th Thinking, full bool) map[string]any {
	if th.Redacted != "" {
		return map[string]any{"type": "redacted_thinking", "data": th.Redacted}
	}
	if full {
		return map[string]any{"type": "thinking", "thinking": th.Text, "signature": th.Signature}
	}
	return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
}

func refusalDetails(ce *contracts.Error) *wireStopDetails {
	d := &wireStopDetails{Type: "refusal", Explanation: ce.Message}
	if c, ok := ce.Details["category"].(string); ok {
		d.Category = &c
	}
	return d
}

// stream writes a streamed answer: message_start, the thinking blocks, a text block with one
// text_delta per delta, one tool_use block per call with its input in input_json_delta
// fragments, message_delta (stop reason, usage) and message_stop.
func (p *play) stream(t fake.Turn) {
	deltas, _, usage, stop := parts(t)
	ce := fakewire.TurnError(t)
	if ce != nil && t.FailAfter == 0 {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			// a refusal before any text
		case contracts.CodeProviderInvalidResponse:
			p.invalidEvent()
			return
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
			return
		default:
			writeHTTPError(p.w, ce)
			return
		}
	}
	start := wireMessageOut{ID: p.id, Type: "message", Role: "assistant", Model: p.model, Content: []map[string]any{}}
	if usage != nil {
		start.Usage = &wireUsage{InputTokens: usage.InputTokens, OutputTokens: 1,
			CacheCreationInputTokens: usage.CacheCreationInputTokens, CacheReadInputTokens: usage.CacheReadInputTokens}
	}
	if !p.event("message_start", map[string]any{"type": "message_start", "message": start}) {
		return
	}
	index := 0
	for _, th := range p.thinking {
		if !p.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": thinkingBlock(th, false)}) {
			return
		}
		if th.Redacted == "" {
			for _, piece := range strings.SplitAfter(th.Text, " ") {
				if !p.blockDelta(index, map[string]any{"type": "thinking_delta", "thinking": piece}) {
					return
				}
			}
			if !p.blockDelta(index, map[string]any{"type": "signature_delta", "signature": th.Signature}) {
				return
			}
		}
		if !p.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	if ce != nil {
		deltas = deltas[:min(t.FailAfter, len(deltas))]
	}
	// A hanging turn (fake.Turn.Hang) stops after Hang.After deltas and holds the stream open
	// until the client goes away.
	hang := func(sent int) bool {
		if t.Hang == nil || ce != nil || sent < t.Hang.After && sent < len(deltas) {
			return false
		}
		t.Hang.Wait(p.r.Context().Done())
		return true
	}
	if len(deltas) == 0 && hang(0) {
		return
	}
	if len(deltas) > 0 {
		if !p.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		for i, d := range deltas {
			if hang(i) {
				return
			}
			if !p.blockDelta(index, map[string]any{"type": "text_delta", "text": d}) {
				return
			}
		}
		if hang(len(deltas)) {
			return
		}
		if !p.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	var details *wireStopDetails
	if ce != nil {
		if ce.Code != contracts.CodeProviderRefusal {
			p.failMidStream(ce)
			return
		}
		stop, details = "refusal", refusalDetails(ce)
	} else {
		for _, c := range t.ToolCalls {
			if !p.toolUse(index, c) {
				return
			}
			index++
		}
	}
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil, "stop_details": details}}
	if usage != nil {
		delta["usage"] = usage
	}
	if p.event("message_delta", delta) {
		p.event("message_stop", map[string]any{"type": "message_stop"})
	}
}

// toolUse streams one tool_use block: its start (id, name, empty input) and its input JSON in
// three input_json_delta fragments.
func (p *play) toolUse(index int, c providers.ToolCall) bool {
	if !p.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
		"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}) {
		return false
	}
	for _, piece := range fakewire.SplitRunes(string(c.Arguments), 3) {
		if !p.blockDelta(index, map[string]any{"type": "input_json_delta", "partial_json": piece}) {
			return false
		}
	}
	return p.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
}

// failMidStream ends a stream that has started with the error's kind of failure.
func (p *play) failMidStream(ce *contracts.Error) {
	switch ce.Code {
	case contracts.CodeProviderInvalidResponse:
		p.invalidEvent()
	case contracts.CodeProviderTransportError:
		fakewire.Cut(p.w)
	default:
		_, body := errorBody(ce)
		p.event("error", body)
	}
}

func (p *play) invalidEvent() {
	p.raw("content_block_delta", `{"type": this is not JSON`)
}

func (p *play) blockDelta(index int, delta map[string]any) bool {
	return p.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": delta})
}

func (p *play) event(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return p.raw(name, string(b))
}

// raw writes one SSE event and flushes it; false when the client went away.
func (p *play) raw(name, data string) bool {
	if p.r.Context().Err() != nil {
		return false
	}
	return p.sse.Write("event: " + name + "\ndata: " + data + "\n\n")
}

// errorBody is the status and Anthropic error body of an error: Status (default 500, or 400 for
// a non-retryable error of another code than PROVIDER_HTTP_ERROR); Details["type"] overrides
// the error type that the status implies.
func errorBody(ce *contracts.Error) (int, wireError) {
	status := fakewire.ErrorStatus(ce)
	typ := errorType(status)
	if v, ok := ce.Details["type"].(string); ok {
		typ = v
	}
	msg := ce.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	return status, wireError{Type: "error", Error: wireErrorBody{Type: typ, Message: msg}}
}

// errorType is Anthropic's error type for a status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// writeHTTPError answers with the error's status and body, and a Retry-After header (whole
// seconds, rounded up) for Details["retryAfterMs"].
func writeHTTPError(w http.ResponseWriter, ce *contracts.Error) {
	status, body := errorBody(ce)
	fakewire.SetRetryAfter(w.Header(), ce.Details)
	fakewire.WriteJSON(w, status, body)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	fakewire.WriteJSON(w, status, wireError{Type: "error", Error: wireErrorBody{Type: typ, Message: msg}})
}
