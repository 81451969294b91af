package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/internal/httperr"
)

// server is how the messages name the server.
const server = httperr.Server("Gemini")

// capture records, for one Generate call, whether a request went out and the status and headers
// of an error response (the SDK's APIError has no headers; [httperr.Capture]), and the
// finishMessage of the answer (the SDK drops it on the Gemini API backend; it keeps it on Vertex AI).
type capture struct {
	httperr.Capture
	mu            sync.Mutex
	finishMessage string
}

type captureKey struct{}

// withCapture returns ctx carrying c for the transport of [wrapClient].
func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(httperr.WithCapture(ctx, &c.Capture), captureKey{}, c)
}

// wrapClient returns a copy of base whose transport fills the capture of a request's context,
// watching successful bodies for their finishMessage.
func wrapClient(base *http.Client) *http.Client {
	return httperr.Wrap(base, func(r *http.Request, resp *http.Response) {
		c, _ := r.Context().Value(captureKey{}).(*capture)
		if c != nil && resp.Body != nil {
			sse := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
			resp.Body = &finishWatcher{rc: resp.Body, c: c, sse: sse}
		}
	})
}

// getFinishMessage returns the last non-empty finishMessage the response carried.
func (c *capture) getFinishMessage() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finishMessage
}

// maxWatched bounds what a [finishWatcher] keeps of one response (a whole body, or one event).
const maxWatched = 8 << 20

// finishWatcher passes a successful response body through to the SDK unchanged and records the
// first candidate's finishMessage it carries in the capture: per "data:" line of a stream,
// from the whole body otherwise. A body or event longer than maxWatched is not looked at.
type finishWatcher struct {
	rc   io.ReadCloser
	c    *capture
	sse  bool
	buf  []byte
	skip bool // the current event (or the body) is longer than maxWatched
}

func (w *finishWatcher) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	w.take(p[:n])
	if err == io.EOF {
		if !w.skip {
			w.look(w.buf)
		}
		w.buf, w.skip = nil, false
	}
	return n, err
}

func (w *finishWatcher) Close() error { return w.rc.Close() }

func (w *finishWatcher) take(b []byte) {
	for len(b) > 0 {
		if !w.sse {
			if !w.skip && len(w.buf)+len(b) <= maxWatched {
				w.buf = append(w.buf, b...)
			} else {
				w.buf, w.skip = nil, true
			}
			return
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !w.skip && len(w.buf)+len(b) <= maxWatched {
				w.buf = append(w.buf, b...)
			} else {
				w.buf, w.skip = w.buf[:0], true
			}
			return
		}
		if !w.skip && len(w.buf)+i <= maxWatched {
			w.look(append(w.buf, b[:i]...))
		}
		w.buf, w.skip = w.buf[:0], false
		b = b[i+1:]
	}
}

// look records the finishMessage of one event or body, if it has one.
func (w *finishWatcher) look(b []byte) {
	if w.sse {
		prefix, data, ok := bytes.Cut(bytes.TrimSpace(b), []byte(":"))
		if !ok || string(prefix) != "data" {
			return
		}
		b = data
	}
	if !bytes.Contains(b, []byte(`"finishMessage"`)) {
		return
	}
	var r struct {
		Candidates []struct {
			FinishMessage string `json:"finishMessage"`
		} `json:"candidates"`
	}
	if json.Unmarshal(b, &r) != nil || len(r.Candidates) == 0 || r.Candidates[0].FinishMessage == "" {
		return
	}
	w.c.mu.Lock()
	w.c.finishMessage = r.Candidates[0].FinishMessage
	w.c.mu.Unlock()
}

// Statuses of google.rpc.Status that retrying the same request cannot fix.
var permanentStatuses = map[string]bool{
	"INVALID_ARGUMENT": true, "FAILED_PRECONDITION": true, "PERMISSION_DENIED": true,
	"UNAUTHENTICATED": true, "NOT_FOUND": true, "OUT_OF_RANGE": true, "UNIMPLEMENTED": true,
}

// classify turns an error of the SDK or the HTTP client into the one error Generate returns.
// Cancellation of ctx is returned as ctx.Err(), never as a provider error.
func (p *Provider) classify(ctx context.Context, err error, h *capture) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	attempted, status, header := h.Get()
	var (
		apiErr genai.APIError
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &apiErr):
		st := apiErr.Code
		if status != 0 {
			st = status
		}
		return httpError(st, apiErr, header, err)
	case p.capture && !attempted:
		// The SDK refused the request before sending it (e.g. a field the backend lacks).
		return server.NotSent(err)
	case errors.As(err, &syn), errors.As(err, &typ):
		return server.InvalidResponse(p.baseURL, "a response chunk is not valid JSON", err)
	}
	return server.Transport(p.baseURL, err)
}

// httpError classifies an error response (or an error event inside a stream): retryable for
// 408, 409, 429 and 5xx, never for 400, 401, 403 or 404 or a status that names a bad request.
// The retry delay comes from the body's google.rpc.RetryInfo or the Retry-After header.
func httpError(status int, apiErr genai.APIError, header http.Header, cause error) *contracts.Error {
	rpcStatus := apiErr.Status
	if _, err := strconv.Atoi(strings.Fields(rpcStatus + " x")[0]); err == nil {
		rpcStatus = "" // the SDK puts the HTTP status line here for a body that is not Google's error JSON
	}
	retryable := httperr.RetryableStatus(status)
	if status == 0 {
		retryable = !permanentStatuses[rpcStatus]
	}
	if status == http.StatusBadRequest || status == http.StatusUnauthorized || status == http.StatusForbidden ||
		status == http.StatusNotFound || permanentStatuses[rpcStatus] {
		retryable = false
	}

	var b strings.Builder
	if status == 0 {
		b.WriteString("Gemini reported an error in the stream")
	} else {
		fmt.Fprintf(&b, "Gemini returned %d %s", status, http.StatusText(status))
	}
	if rpcStatus != "" {
		b.WriteString(" (" + rpcStatus + ")")
	}
	if msg := strings.TrimSpace(apiErr.Message); msg != "" {
		if r := []rune(strings.Join(strings.Fields(msg), " ")); len(r) > 300 {
			msg = string(r[:300]) + "…"
		}
		b.WriteString(": " + msg)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || rpcStatus == "UNAUTHENTICATED" || rpcStatus == "PERMISSION_DENIED":
		b.WriteString(" (check the API key: " + EnvAPIKey + " or google.Options.APIKey, or the Vertex AI credentials)")
	case status == http.StatusNotFound:
		b.WriteString(" (check the model id, e.g. gemini-2.5-flash, and the base URL)")
	case status == http.StatusTooManyRequests:
		b.WriteString(" (rate limit or quota: retried after the delay the server asks for)")
	}
	e := &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: status, Retryable: retryable,
		Message: b.String(), Err: cause}
	details := map[string]any{}
	if rpcStatus != "" {
		details["status"] = rpcStatus
	}
	ms, ok := retryInfoMs(apiErr.Details)
	if !ok {
		ms, ok = httperr.RetryAfterHeaderMs(header, time.Now())
	}
	if ok && retryable {
		details["retryAfterMs"] = ms
		e.RetryAfter = time.Duration(ms) * time.Millisecond
	}
	if len(details) > 0 {
		e.Details = details
	}
	return e
}

// retryInfoMs reads the retryDelay of a google.rpc.RetryInfo detail (a protobuf Duration in
// JSON: "7s", "1.5s").
func retryInfoMs(details []map[string]any) (int, bool) {
	for _, d := range details {
		t, _ := d["@type"].(string)
		if !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if dur, err := time.ParseDuration(s); err == nil && dur >= 0 {
			return int((dur + time.Millisecond - 1) / time.Millisecond), true
		}
	}
	return 0, false
}
