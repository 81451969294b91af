package fakeserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/internal/fakewire"
)

// Model is the model id the server lists at GET /v1/models and answers with when a request
// names none.
const Model = "fake-model"

// Captured is one request the server received.
type Captured struct {
	// Request is the request decoded as the [fake.Responder] saw it (Model, Messages, Tools,
	// Options).
	providers.Request
	// Stream is the request's "stream" flag; IncludeUsage its stream_options.include_usage.
	Stream       bool
	IncludeUsage bool
	// Header holds the request headers (Authorization, OpenAI-Organization, …).
	Header http.Header
	// Raw is the request body exactly as received.
	Raw json.RawMessage
}

// Field returns a top-level field of the raw request body (e.g. "response_format",
// "temperature"), or nil when the body has no such field.
func (c Captured) Field(name string) json.RawMessage {
	return fakewire.Field(c.Raw, name)
}

// Server is a fake OpenAI-compatible HTTP server. It is safe for concurrent use.
type Server struct {
	player *fakewire.Player
	reqs   fakewire.Log[Captured]

	srv *httptest.Server
}

// New starts a server that answers every request with the turn respond(req) returns; a nil
// respond is [Canned]. Close it when done.
func New(respond fake.Responder) *Server {
	if respond == nil {
		respond = Canned()
	}
	return start(&Server{player: fakewire.Responder("fakeserver", respond)})
}

// NewScript starts a server that answers requests with the turns in order; a request after the
// last turn gets a 500 error "script exhausted". Close it when done.
func NewScript(turns ...fake.Turn) *Server {
	return start(&Server{player: fakewire.Script("fakeserver", turns)})
}

func start(s *Server) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveChat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fakewire.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": Model, "object": "model", "owned_by": "kortyx"},
		}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fakewire.WriteJSON(w, http.StatusNotFound, wireError{Error: wireErrorBody{
			Message: fmt.Sprintf("fakeserver serves POST /v1/chat/completions, not %s %s", r.Method, r.URL.Path),
			Type:    "invalid_request_error",
		}})
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// URL returns the base URL of the API, ending in "/v1" (for openai.Options.BaseURL).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order of arrival.
func (s *Server) Requests() []Captured {
	return s.reqs.All()
}

// Canned returns a responder for demos without a key: it echoes the last message when that
// message is the user's ("(fake model) You said: …"), and answers "(fake model) OK." otherwise.
func Canned() fake.Responder {
	return func(req providers.Request) fake.Turn {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == providers.RoleUser {
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
	s.reqs.Add(Captured{
		Request: req, Stream: wr.Stream, IncludeUsage: wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage,
		Header: r.Header.Clone(), Raw: body,
	})

	turn, err := s.player.Turn(req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", nil, err.Error())
		return
	}
	if !fakewire.Delay(r, turn.Delay) {
		return
	}
	model := wr.Model
	if model == "" {
		model = Model
	}
	p := &play{w: w, sse: fakewire.SSE{W: w}, gone: r.Context().Done(), model: model,
		id: fmt.Sprintf("chatcmpl-fake-%d", s.player.NextResponse()), created: time.Now().Unix(),
		includeUsage: wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage}
	if wr.Stream {
		p.stream(turn)
	} else {
		p.complete(turn)
	}
}

// play writes one response.
type play struct {
	w            http.ResponseWriter
	gone         <-chan struct{} // closed when the request's context ends
	model, id    string
	created      int64
	includeUsage bool
	sse          fakewire.SSE
}

func (p *play) parts(t fake.Turn) (deltas []string, text string, usage *providers.Usage, finish string) {
	deltas, text = fakewire.Text(t)
	return deltas, text, fakewire.Usage(t, len(deltas)), wireFinish(fakewire.Finish(t))
}

// complete writes a non-streamed chat.completion.
func (p *play) complete(t fake.Turn) {
	if t.Hang != nil {
		t.Hang.Wait(p.gone)
		return
	}
	_, text, usage, finish := p.parts(t)
	if ce := fakewire.TurnError(t); ce != nil {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			refusal := ce.Message
			p.writeCompletion(&wireOutMsg{Role: "assistant", Refusal: &refusal}, "stop", usage)
		case contracts.CodeProviderInvalidResponse:
			fakewire.WriteInvalidJSON(p.w)
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
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

func (p *play) writeCompletion(msg *wireOutMsg, finish string, usage *providers.Usage) {
	fakewire.WriteJSON(p.w, http.StatusOK, wireCompletion{
		ID: p.id, Object: "chat.completion", Created: p.created, Model: p.model, SystemFingerprint: "fp_fakeserver",
		Choices: []wireChoice{{Message: msg, FinishReason: &finish}},
		Usage:   wireUsageOf(usage),
	})
}

func wireUsageOf(u *providers.Usage) *wireUsage {
	if u == nil {
		return nil
	}
	return toWireUsage(*u)
}

// stream writes a streamed answer: a role chunk, the text deltas, the tool calls as interleaved
// fragments, a finish chunk, a usage chunk when asked for, and [DONE].
func (p *play) stream(t fake.Turn) {
	deltas, _, usage, finish := p.parts(t)
	ce := fakewire.TurnError(t)
	if ce != nil && t.FailAfter == 0 {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			p.refuse(ce.Message)
		case contracts.CodeProviderInvalidResponse:
			p.invalidChunk()
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
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
func (p *play) toolFragments(calls []providers.ToolCall) bool {
	pieces := make([][]string, len(calls))
	for i, c := range calls {
		pieces[i] = fakewire.SplitRunes(string(c.Arguments), 3)
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
		fakewire.Cut(p.w)
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
func (p *play) event(data string) bool { return p.sse.Write("data: " + data + "\n\n") }

// errorBody is the status and OpenAI-style error body of an error: Status (default 500, or 400
// for a non-retryable error without one); Details["type"] and Details["code"] override the
// error's type and code.
func errorBody(ce *contracts.Error) (int, wireError) {
	status := fakewire.ErrorStatus(ce)
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
	fakewire.SetRetryAfter(w.Header(), ce.Details)
	fakewire.WriteJSON(w, status, body)
}

func writeError(w http.ResponseWriter, status int, typ string, code any, msg string) {
	fakewire.WriteJSON(w, status, wireError{Error: wireErrorBody{Message: msg, Type: typ, Code: code}})
}
