// Package httperr holds what the HTTP model providers (openai, anthropic, google) share on
// their side of the wire: the HTTP client they default to, the transport that records whether a
// request went out and the status and headers of an error response, the Retry-After readings,
// the statuses a later attempt can get past, and the wording of the errors that name the server.
// Each provider keeps its own classification of the API's error bodies.
package httperr

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// DefaultHTTPClient is the client a provider uses when its options give none: the default
// transport with bounded dial, TLS, response-header and idle timeouts, and no overall timeout
// (a streamed answer may take long).
func DefaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 10 * time.Minute
	t.ExpectContinueTimeout = time.Second
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// Capture records, for one call, whether a request went out and the status and headers of an
// error response (SDKs do not all expose response headers on errors). Put it in the request's
// context with [WithCapture]; the transport of a client from [Wrap] fills it.
type Capture struct {
	mu        sync.Mutex
	attempted bool
	status    int
	header    http.Header
}

type captureKey struct{}

// WithCapture returns ctx carrying c for the transport of a [Wrap]ped client.
func WithCapture(ctx context.Context, c *Capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// Get returns whether a request went out and the status and headers of the last error response
// (0 and nil when none).
func (c *Capture) Get() (attempted bool, status int, header http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempted, c.status, c.header
}

// Wrap returns a copy of base whose transport (base's, or http.DefaultTransport) fills the
// [Capture] found in a request's context. When ok is not nil it is called with every response
// below 300 of a request that carries a Capture, and may replace its body.
func Wrap(base *http.Client, ok func(r *http.Request, resp *http.Response)) *http.Client {
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &captureTransport{base: rt, ok: ok}
	return &c
}

type captureTransport struct {
	base http.RoundTripper
	ok   func(*http.Request, *http.Response)
}

func (t *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c, _ := r.Context().Value(captureKey{}).(*Capture)
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
	if c != nil && err == nil && resp.StatusCode < 300 && t.ok != nil {
		t.ok(r, resp)
	}
	return resp, err
}

// RetryableStatus reports whether an HTTP error status is one a later attempt can get past:
// 408, 409, 429 and 5xx. Providers narrow it further (authentication, quotas, …).
func RetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// RetryAfterMs reads retry-after-ms (milliseconds) or, when it is absent or not a number,
// [RetryAfterHeaderMs].
func RetryAfterMs(h http.Header, now time.Time) (int, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			return int(math.Ceil(f)), true
		}
	}
	return RetryAfterHeaderMs(h, now)
}

// RetryAfterHeaderMs reads Retry-After (seconds, rounded up to whole milliseconds, or an HTTP
// date, 0 when it has passed) as milliseconds.
func RetryAfterHeaderMs(h http.Header, now time.Time) (int, bool) {
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

// Snippet is the start of an error body, for a message: its whitespace collapsed, at most 300
// runes and "…".
func Snippet(body string) string {
	s := strings.Join(strings.Fields(body), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// Server is how a provider's messages name the server it talks to, in the middle of a sentence
// ("the Anthropic API", "Gemini").
type Server string

// NotSent is the configuration error of a request that could not be sent.
func (s Server) NotSent(cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: cause,
		Message: "The request to " + string(s) + " could not be sent: " + cause.Error()}
}

// Transport is the retryable error of a connection to the server at baseURL that failed.
func (s Server) Transport(baseURL string, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Err: cause,
		Message: fmt.Sprintf("The connection to %s at %s failed: %v", s, baseURL, cause),
		Details: map[string]any{"baseURL": baseURL}}
}

// InvalidResponse is the retryable error of a response the server at baseURL sent that could
// not be read; what says what was wrong.
func (s Server) InvalidResponse(baseURL, what string, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeProviderInvalidResponse, Retryable: true, Err: cause,
		Message: fmt.Sprintf("%s at %s sent a malformed response: %s", s.sentenceStart(), baseURL, what),
		Details: map[string]any{"baseURL": baseURL}}
}

// sentenceStart is the name with its first letter upper case (the names are ASCII).
func (s Server) sentenceStart() string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return string(s)
	}
	return string(s[0]-'a'+'A') + string(s[1:])
}
