package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kortyx-go/kortyx/contracts"
)

// capture records, for one Generate call, whether a request went out and the status and
// headers of an error response (go-openai does not expose response headers on errors).
type capture struct {
	mu        sync.Mutex
	attempted bool
	status    int
	header    http.Header
}

type captureKey struct{}

func (c *capture) get() (attempted bool, status int, header http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempted, c.status, c.header
}

// captureTransport fills the [capture] found in a request's context.
type captureTransport struct{ base http.RoundTripper }

func (t *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c, _ := r.Context().Value(captureKey{}).(*capture)
	if c != nil {
		c.mu.Lock()
		c.attempted = true
		c.mu.Unlock()
	}
	resp, err := t.base.RoundTrip(r)
	if c != nil && err == nil && resp.StatusCode >= 400 {
		c.mu.Lock()
		c.status, c.header = resp.StatusCode, resp.Header.Clone()
		c.mu.Unlock()
	}
	return resp, err
}

// Error codes and types of an exhausted quota: retrying cannot help.
var quotaCodes = map[string]bool{"insufficient_quota": true, "billing_hard_limit_reached": true}

// classify turns an error of go-openai or the HTTP client into the one error Generate returns.
// Cancellation of ctx is returned as ctx.Err(), never as a provider error.
func classify(ctx context.Context, err error, h *capture, baseURL string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	attempted, status, header := h.get()
	var (
		reqErr *goopenai.RequestError
		apiErr *goopenai.APIError
		urlErr *url.Error
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		// An error response whose body is not an OpenAI error object.
		msg := ""
		if errors.As(reqErr.Err, &apiErr) {
			msg = apiErr.Message
		} else {
			msg = snippet(reqErr.Body)
		}
		return httpError(reqErr.HTTPStatusCode, msg, apiErr, header, err)
	case errors.As(err, &apiErr):
		// An error response (HTTPStatusCode set) or an error event in a stream (no status).
		if apiErr.HTTPStatusCode == 0 && status == 0 {
			return httpError(0, apiErr.Message, apiErr, nil, err)
		}
		st := apiErr.HTTPStatusCode
		if st == 0 {
			st = status
		}
		return httpError(st, apiErr.Message, apiErr, header, err)
	case !attempted:
		return &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: err,
			Message: "The request to the OpenAI-compatible server could not be sent: " + err.Error()}
	case errors.As(err, &urlErr):
		return transportError(baseURL, err)
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages), errors.Is(err, io.EOF):
		return invalidResponse(baseURL, err.Error(), err)
	}
	return transportError(baseURL, err)
}

// httpError classifies an HTTP error status: retryable for 408, 409, 429 and 5xx, except for
// authentication failures and exhausted quotas. Status 0 is an error event inside a stream,
// retryable unless it names a bad request, an authentication failure or an exhausted quota.
func httpError(status int, providerMsg string, apiErr *goopenai.APIError, header http.Header, cause error) *contracts.Error {
	var code, typ string
	if apiErr != nil {
		typ = apiErr.Type
		switch c := apiErr.Code.(type) {
		case nil:
		case int: // go-openai decodes "code": null as 0
			if c != 0 {
				code = strconv.Itoa(c)
			}
		default:
			code = fmt.Sprint(c)
		}
	}
	quota := quotaCodes[code] || quotaCodes[typ]
	var retryable bool
	if status == 0 {
		retryable = !quota && !strings.Contains(typ, "invalid_request") &&
			!strings.Contains(typ, "authentication") && !strings.Contains(typ, "permission")
	} else {
		retryable = status == http.StatusRequestTimeout || status == http.StatusConflict ||
			status == http.StatusTooManyRequests || status >= 500
		if quota || status == http.StatusUnauthorized || status == http.StatusForbidden {
			retryable = false
		}
	}

	var b strings.Builder
	if status == 0 {
		b.WriteString("OpenAI-compatible server reported an error in the stream")
	} else {
		fmt.Fprintf(&b, "OpenAI-compatible server returned %d %s", status, http.StatusText(status))
	}
	if providerMsg = strings.TrimSpace(providerMsg); providerMsg != "" {
		b.WriteString(": ")
		b.WriteString(providerMsg)
	}
	switch {
	case quota:
		b.WriteString(" (the account's quota is exhausted: check its plan and billing)")
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		b.WriteString(" (check the API key: " + EnvAPIKey + " or openai.Options.APIKey)")
	case status == http.StatusNotFound:
		b.WriteString(" (check the model id and the base URL)")
	}

	e := &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: status, Retryable: retryable,
		Message: b.String(), Err: cause}
	details := map[string]any{}
	if typ != "" {
		details["type"] = typ
	}
	if code != "" {
		details["code"] = code
	}
	if ms, ok := retryAfterMs(header, time.Now()); ok {
		details["retryAfterMs"] = ms
	}
	if len(details) > 0 {
		e.Details = details
	}
	return e
}

// retryAfterMs reads retry-after-ms (milliseconds) or Retry-After (seconds or an HTTP date).
func retryAfterMs(h http.Header, now time.Time) (int, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			return int(math.Ceil(f)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
		return int(math.Ceil(f * 1000)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return int(max(t.Sub(now), 0).Milliseconds()), true
	}
	return 0, false
}

func transportError(baseURL string, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Err: cause,
		Message: fmt.Sprintf("The connection to the OpenAI-compatible server at %s failed: %v", baseURL, cause),
		Details: map[string]any{"baseURL": baseURL}}
}

func invalidResponse(baseURL, what string, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderInvalidResponse, Retryable: true, Err: cause,
		Message: fmt.Sprintf("The OpenAI-compatible server at %s sent a malformed response: %s", baseURL, what),
		Details: map[string]any{"baseURL": baseURL}}
}

func refusal(text string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderRefusal, Message: "The model refused to answer: " + text,
		Details: map[string]any{"refusal": text}}
}

// snippet is the start of an error body, for a message.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}
