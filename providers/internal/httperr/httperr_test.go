package httperr

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
)

func TestRetryAfterMs(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		header     http.Header
		want       int
		ok         bool
		headerOnly int // RetryAfterHeaderMs's answer (ok when > -1)
	}{
		{"none", http.Header{}, 0, false, -1},
		{"nil", nil, 0, false, -1},
		{"seconds", http.Header{"Retry-After": {"2"}}, 2000, true, 2000},
		{"fractional seconds", http.Header{"Retry-After": {"0.25"}}, 250, true, 250},
		{"http date", http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, 3000, true, 3000},
		{"http date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true, 0},
		{"milliseconds win", http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"1500"}}, 1500, true, 2000},
		{"fractional milliseconds", http.Header{"Retry-After-Ms": {"10.2"}}, 11, true, -1},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false, -1},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0, false, -1},
		{"bad milliseconds fall back to seconds", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"1"}}, 1000, true, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RetryAfterMs(tc.header, now)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
			got, ok = RetryAfterHeaderMs(tc.header, now)
			require.Equal(t, tc.headerOnly > -1, ok)
			require.Equal(t, max(tc.headerOnly, 0), got)
		})
	}
}

func TestRetryableStatus(t *testing.T) {
	var got []int
	for s := 400; s < 600; s++ {
		if RetryableStatus(s) {
			got = append(got, s)
		}
	}
	want := []int{408, 409, 429}
	for s := 500; s < 600; s++ {
		want = append(want, s)
	}
	require.Equal(t, want, got)
}

func TestSnippet(t *testing.T) {
	require.Equal(t, "a b c", Snippet(" a\n b\t\tc "))
	long := ""
	for range 301 {
		long += "é"
	}
	s := Snippet(long)
	require.Equal(t, 301, len([]rune(s)))
	require.Equal(t, "…", string([]rune(s)[300:]))
}

func TestServerWording(t *testing.T) {
	cause := errors.New("boom")
	s := Server("the Anthropic API")
	require.Equal(t, &contracts.Error{Code: contracts.CodeProviderTransportError, Retryable: true, Err: cause,
		Message: "The connection to the Anthropic API at http://x failed: boom",
		Details: map[string]any{"baseURL": "http://x"}}, s.Transport("http://x", cause))
	require.Equal(t, &contracts.Error{Code: contracts.CodeProviderInvalidResponse, Retryable: true, Err: cause,
		Message: "The Anthropic API at http://x sent a malformed response: no JSON",
		Details: map[string]any{"baseURL": "http://x"}}, s.InvalidResponse("http://x", "no JSON", cause))
	require.Equal(t, &contracts.Error{Code: contracts.CodeProviderConfiguration, Err: cause,
		Message: "The request to the Anthropic API could not be sent: boom"}, s.NotSent(cause))
	require.Equal(t, "Gemini at u sent a malformed response: w", Server("Gemini").InvalidResponse("u", "w", nil).Message)
}

func TestCaptureTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var oks []string
	client := Wrap(&http.Client{}, func(r *http.Request, _ *http.Response) { oks = append(oks, r.URL.Path) })
	get := func(c *Capture, path string) {
		t.Helper()
		req, err := http.NewRequestWithContext(WithCapture(t.Context(), c), http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}

	var none Capture
	attempted, status, header := none.Get()
	require.Equal(t, []any{false, 0, http.Header(nil)}, []any{attempted, status, header})

	var ok Capture
	get(&ok, "/ok")
	attempted, status, header = ok.Get()
	require.Equal(t, []any{true, 0, http.Header(nil)}, []any{attempted, status, header})

	var fail Capture
	get(&fail, "/fail")
	attempted, status, header = fail.Get()
	require.True(t, attempted)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, "3", header.Get("Retry-After"))
	require.Equal(t, []string{"/ok"}, oks, "ok sees the successful response only")

	// A request without a Capture goes through untouched.
	resp, err := client.Get(srv.URL + "/ok")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, []string{"/ok"}, oks)
}
