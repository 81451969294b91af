package fakegemini_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/stretchr/testify/require"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/providers/google/fakegemini"
)

func post(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

const hi = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

func TestWire(t *testing.T) {
	srv := fakegemini.NewScript(
		fake.Turn{Deltas: []string{"a", "b"}, Usage: providers.Usage{Input: 1, Output: 2, Reasoning: 3, CacheRead: 4, Total: 6}},
		fake.Turn{Text: "x", NoUsage: true, FinishReason: providers.FinishLength},
		fake.Turn{Err: &contracts.Error{Code: contracts.CodeProviderHTTPError, Status: 429, Message: "slow down",
			Details: map[string]any{"retryAfterMs": 1500}}},
	)
	defer srv.Close()
	status, ctype, body := post(t, srv.URL()+"v1beta/models/m:streamGenerateContent?alt=sse", hi)
	require.Equal(t, 200, status)
	require.Equal(t, "text/event-stream", ctype)
	require.Equal(t, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},"index":0}],"modelVersion":"m","responseId":"fake-gemini-1"}`+"\r\n\r\n"+
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"b"}]},"index":0}],"modelVersion":"m","responseId":"fake-gemini-1"}`+"\r\n\r\n"+
		`data: {"candidates":[{"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":6,"thoughtsTokenCount":3,"cachedContentTokenCount":4},"modelVersion":"m","responseId":"fake-gemini-1"}`+"\r\n\r\n",
		body)

	status, _, body = post(t, srv.URL()+"v1beta/models/m:generateContent", hi)
	require.Equal(t, 200, status)
	require.Equal(t, `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS","index":0}],"modelVersion":"m","responseId":"fake-gemini-2"}`, body)

	status, _, body = post(t, srv.URL()+"v1beta/models/m:generateContent", hi)
	require.Equal(t, 429, status)
	require.Equal(t, `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}`, body)

	status, _, body = post(t, srv.URL()+"v1beta/models/m:generateContent", hi)
	require.Equal(t, 500, status)
	require.Contains(t, body, "script exhausted: request 4 received, 3 turns scripted")

	status, _, _ = post(t, srv.URL()+"v1beta/models/m:countTokens", hi)
	require.Equal(t, 404, status)
	status, _, _ = post(t, srv.URL()+"v1beta/models/m:streamGenerateContent", hi)
	require.Equal(t, 400, status, "streaming needs alt=sse")
	status, _, _ = post(t, srv.URL()+"v1beta/models/m:generateContent", "{nope")
	require.Equal(t, 400, status)

	reqs := srv.Requests()
	require.Len(t, reqs, 4, "every well-formed request of a known method is recorded")
	require.True(t, reqs[0].Stream)
	require.False(t, reqs[1].Stream)
	require.Equal(t, "m", reqs[0].Model)
	require.Equal(t, hi, string(reqs[0].Raw))
}

func TestCanned(t *testing.T) {
	srv := fakegemini.New(nil)
	defer srv.Close()
	_, _, body := post(t, srv.URL()+"v1beta/models/m:generateContent", hi)
	require.Contains(t, body, `"text":"(fake model) You said: hi"`)
}
