package fakegemini

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/conformance"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/fakeserver"
	"github.com/kortyx-go/kortyx/providers/internal/fakewire"
)

// Model is the model version the server reports when a request's path names none.
const Model = "fake-gemini"

// defaultCategory is the harm category of a refusal whose error names none in
// Details["category"].
const defaultCategory = "HARM_CATEGORY_DANGEROUS_CONTENT"

// Server is a fake Gemini API server. It is safe for concurrent use.
type Server struct {
	player *fakewire.Player
	reqs   fakewire.Log[captured]

	srv *httptest.Server
}

var _ conformance.Server = (*Server)(nil)

// captured is one request the server received, with its headers.
type captured struct {
	req    conformance.Request
	header http.Header
}

// New starts a server that answers every request with the turn respond(req) returns; a nil
// respond is fakeserver.Canned ("(fake model) You said: …"). Close it when done.
func New(respond fake.Responder) *Server {
	if respond == nil {
		respond = fakeserver.Canned()
	}
	return start(&Server{player: fakewire.Responder("fakegemini", respond)})
}

// NewScript starts a server that answers requests with the turns in order; a request after the
// last turn gets a 500 INTERNAL error "script exhausted". Close it when done.
func NewScript(turns ...fake.Turn) *Server {
	return start(&Server{player: fakewire.Script("fakegemini", turns)})
}

func start(s *Server) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1beta/models/{call}", s.serve)
	// Vertex AI's paths: express mode (an API key) and a project's location.
	mux.HandleFunc("POST /v1beta1/publishers/google/models/{call}", s.serve)
	mux.HandleFunc("POST /v1beta1/projects/{project}/locations/{location}/publishers/google/models/{call}", s.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fakewire.WriteJSON(w, http.StatusNotFound, errorBody(http.StatusNotFound, "",
			fmt.Sprintf("fakegemini serves POST /v1beta/models/{model}:generateContent and :streamGenerateContent, not %s %s", r.Method, r.URL.Path), -1))
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// URL returns the API root without the version, ending in "/" (for google.Options.BaseURL).
func (s *Server) URL() string { return s.srv.URL + "/" }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order of arrival, decoded into Kortyx's
// terms (see the package doc), with the raw body.
func (s *Server) Requests() []conformance.Request {
	reqs := s.reqs.All()
	out := make([]conformance.Request, len(reqs))
	for i, c := range reqs {
		out[i] = c.req
	}
	return out
}

// Headers returns the headers of the requests received so far (x-goog-api-key, …), in the
// order of [Server.Requests].
func (s *Server) Headers() []http.Header {
	reqs := s.reqs.All()
	out := make([]http.Header, len(reqs))
	for i, c := range reqs {
		out[i] = c.header
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	if !ok || (method != "generateContent" && method != "streamGenerateContent") {
		fakewire.WriteJSON(w, http.StatusNotFound, errorBody(http.StatusNotFound, "",
			"fakegemini serves the methods generateContent and streamGenerateContent, not '"+method+"'", -1))
		return
	}
	stream := method == "streamGenerateContent"
	if stream && r.URL.Query().Get("alt") != "sse" {
		fakewire.WriteJSON(w, http.StatusBadRequest, errorBody(http.StatusBadRequest, "", "fakegemini streams server-sent events only: add ?alt=sse", -1))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		fakewire.WriteJSON(w, http.StatusBadRequest, errorBody(http.StatusBadRequest, "", "request body is not valid JSON: "+err.Error(), -1))
		return
	}
	req := wr.toRequest(model)
	s.reqs.Add(captured{req: conformance.Request{Request: req, Stream: stream, Raw: body}, header: r.Header.Clone()})

	turn, err := s.player.Turn(req)
	if err != nil {
		fakewire.WriteJSON(w, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, "", err.Error(), -1))
		return
	}
	if !fakewire.Delay(r, turn.Delay) {
		return
	}
	if model == "" {
		model = Model
	}
	p := &play{w: w, sse: fakewire.SSE{W: w}, gone: r.Context().Done(), model: model, id: fmt.Sprintf("fake-gemini-%d", s.player.NextResponse())}
	if stream {
		p.stream(turn)
	} else {
		p.complete(turn)
	}
}

// play writes one response.
type play struct {
	w         http.ResponseWriter
	gone      <-chan struct{} // closed when the request's context ends
	model, id string
	sse       fakewire.SSE
}

func parts(t fake.Turn) (deltas []string, text string, usage *wireUsage, finish string) {
	deltas, text = fakewire.Text(t)
	if u := fakewire.Usage(t, len(deltas)); u != nil {
		usage = &wireUsage{PromptTokenCount: u.Input, CandidatesTokenCount: u.Output, TotalTokenCount: u.Total,
			ThoughtsTokenCount: u.Reasoning, CachedContentTokenCount: u.CacheRead}
	}
	return deltas, text, usage, wireFinish(t.FinishReason)
}

// wireFinish is a unified finish reason in Gemini's words.
func wireFinish(unified string) string {
	switch unified {
	case "", providers.FinishStop, providers.FinishToolCalls:
		return "STOP"
	case providers.FinishLength:
		return "MAX_TOKENS"
	case providers.FinishContentFilter:
		return "SAFETY"
	case providers.FinishOther:
		return "OTHER"
	}
	return unified
}

func callParts(calls []providers.ToolCall) []wirePart {
	var out []wirePart
	for _, c := range calls {
		out = append(out, wirePart{FunctionCall: &wireFunctionCall{ID: c.ID, Name: c.Name, Args: c.Arguments}})
	}
	return out
}

func (p *play) response(c *wireCandidate, usage *wireUsage) wireResponse {
	r := wireResponse{ModelVersion: p.model, ResponseID: p.id, UsageMetadata: usage}
	if c != nil {
		r.Candidates = []wireCandidate{*c}
	}
	return r
}

// complete writes a non-streamed GenerateContentResponse.
func (p *play) complete(t fake.Turn) {
	if t.Hang != nil {
		t.Hang.Wait(p.gone)
		return
	}
	_, text, usage, finish := parts(t)
	if ce := fakewire.TurnError(t); ce != nil {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			fakewire.WriteJSON(p.w, http.StatusOK, p.refusal(ce, usage))
		case contracts.CodeProviderInvalidResponse:
			fakewire.WriteInvalidJSON(p.w)
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
		default:
			writeHTTPError(p.w, ce)
		}
		return
	}
	content := &wireContent{Role: "model"}
	if text != "" || len(t.ToolCalls) == 0 {
		content.Parts = append(content.Parts, wirePart{Text: text})
	}
	content.Parts = append(content.Parts, callParts(t.ToolCalls)...)
	fakewire.WriteJSON(p.w, http.StatusOK, p.response(&wireCandidate{Content: content, FinishReason: finish}, usage))
}

// stream writes a streamed answer: one event per text delta, one event with every function
// call (whole arguments), and a last event with the finish reason and the usage.
func (p *play) stream(t fake.Turn) {
	deltas, _, usage, finish := parts(t)
	ce := fakewire.TurnError(t)
	if ce != nil && t.FailAfter == 0 {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			p.chunk(p.refusal(ce, usage))
		case contracts.CodeProviderInvalidResponse:
			p.event(`{"candidates": this is not JSON`)
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
		default:
			writeHTTPError(p.w, ce)
		}
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
		if !p.chunk(p.response(&wireCandidate{Content: &wireContent{Role: "model", Parts: []wirePart{{Text: d}}}}, nil)) {
			return
		}
	}
	if t.Hang != nil && ce == nil {
		t.Hang.Wait(p.gone)
		return
	}
	if ce != nil {
		switch ce.Code {
		case contracts.CodeProviderRefusal:
			p.chunk(p.refusal(ce, usage))
		case contracts.CodeProviderInvalidResponse:
			p.event(`{"candidates": this is not JSON`)
		case contracts.CodeProviderTransportError:
			fakewire.Cut(p.w)
		default:
			_, body := httpErrorBody(ce)
			b, _ := json.Marshal(body)
			p.event(string(b))
		}
		return
	}
	if len(t.ToolCalls) > 0 {
		if !p.chunk(p.response(&wireCandidate{Content: &wireContent{Role: "model", Parts: callParts(t.ToolCalls)}}, nil)) {
			return
		}
	}
	p.chunk(p.response(&wireCandidate{FinishReason: finish}, usage))
}

// refusal is the response of a refused answer: finishReason SAFETY with a blocked safety rating
// of Details["category"] (default [defaultCategory]); with Details["blockReason"] set, a
// blocked prompt (promptFeedback) instead.
func (p *play) refusal(ce *contracts.Error, usage *wireUsage) wireResponse {
	cat, _ := ce.Details["category"].(string)
	if cat == "" {
		cat = defaultCategory
	}
	ratings := []wireSafetyRating{{Category: cat, Probability: "HIGH", Blocked: true}}
	if br, ok := ce.Details["blockReason"].(string); ok && br != "" {
		r := p.response(nil, usage)
		r.PromptFeedback = &wirePromptFeedback{BlockReason: br, SafetyRatings: ratings}
		return r
	}
	return p.response(&wireCandidate{FinishReason: "SAFETY", FinishMessage: ce.Message, SafetyRatings: ratings}, usage)
}

func (p *play) chunk(r wireResponse) bool {
	b, err := json.Marshal(r)
	if err != nil {
		return false
	}
	return p.event(string(b))
}

// event writes one SSE event and flushes it.
func (p *play) event(data string) bool { return p.sse.Write("data: " + data + "\r\n\r\n") }

// httpErrorBody is the status and Google error body of an error: Status (default 500, or 400
// for a non-retryable error of another code than PROVIDER_HTTP_ERROR); Details["status"]
// overrides the google.rpc status; Details["retryAfterMs"] becomes a RetryInfo detail.
func httpErrorBody(ce *contracts.Error) (int, wireError) {
	status := fakewire.ErrorStatus(ce)
	rpc, _ := ce.Details["status"].(string)
	ms := -1
	if v, ok := fakewire.Number(ce.Details["retryAfterMs"]); ok && v >= 0 {
		ms = int(v)
	}
	return status, errorBody(status, rpc, ce.Message, ms)
}

// errorBody is Google's error JSON; retryAfterMs >= 0 adds a google.rpc.RetryInfo detail.
func errorBody(status int, rpcStatus, msg string, retryAfterMs int) wireError {
	if rpcStatus == "" {
		rpcStatus = defaultRPCStatus(status)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := wireError{Error: wireErrorBody{Code: status, Message: msg, Status: rpcStatus}}
	if retryAfterMs >= 0 {
		e.Error.Details = []map[string]any{{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": strconv.FormatFloat(float64(retryAfterMs)/1000, 'f', -1, 64) + "s",
		}}
	}
	return e
}

func defaultRPCStatus(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case status == http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case status == http.StatusForbidden:
		return "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		return "NOT_FOUND"
	case status == http.StatusRequestTimeout:
		return "DEADLINE_EXCEEDED"
	case status == http.StatusConflict:
		return "ABORTED"
	case status == http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case status == http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case status == http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	case status >= 500:
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

func writeHTTPError(w http.ResponseWriter, ce *contracts.Error) {
	status, body := httpErrorBody(ce)
	fakewire.WriteJSON(w, status, body)
}
