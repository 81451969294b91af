package httpwire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/stretchr/testify/require"
)

func TestWriteErrorLogsEvery5xxWithItsCause(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		err     error
		want    int
		code    contracts.Code
		message string
		logged  []string // "" when nothing is logged
	}{
		{"plain error", 0, errors.New(`header key "temporal-resource-id" contains value with non-printable ASCII characters`), 500,
			contracts.CodeExecutionFailed, "An unexpected error occurred.",
			[]string{"level=ERROR", "status=500", "code=EXECUTION_FAILED", `non-printable ASCII characters`, "method=POST", "path=/api/chat"}},
		{"coded with cause", 0, &contracts.Error{Code: contracts.CodeTemporalUnavailable, Message: "Temporal is down.", Retryable: true,
			Err: errors.New("connection refused")}, 503, contracts.CodeTemporalUnavailable, "Temporal is down.",
			[]string{"status=503", "code=TEMPORAL_UNAVAILABLE", `error="Temporal is down."`, `cause="connection refused"`}},
		{"request error", 0, contracts.Errorf(contracts.CodeInvalidRequest, "Fix the body."), 400, contracts.CodeInvalidRequest, "Fix the body.", nil},
		{"status override", http.StatusMethodNotAllowed, contracts.Errorf(contracts.CodeInvalidRequest, "Use POST."), 405, contracts.CodeInvalidRequest, "Use POST.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			w := httptest.NewRecorder()
			httpwire.WriteError(w, httptest.NewRequest(http.MethodPost, "/api/chat", nil), logger, tc.status, tc.err)
			require.Equal(t, tc.want, w.Code)
			require.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var body httpwire.ErrorBody
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			require.Equal(t, tc.code, body.Failure.Code)
			require.Equal(t, tc.message, body.Error)
			require.Equal(t, tc.message, body.Failure.Message)
			require.NotContains(t, w.Body.String(), "non-printable", "no internal text reaches the client")
			require.NotContains(t, w.Body.String(), "connection refused")
			if tc.logged == nil {
				require.Empty(t, logs.String())
				return
			}
			for _, s := range tc.logged {
				require.Contains(t, logs.String(), s)
			}
		})
	}
}

func TestJSONErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("a")) })
	mux.HandleFunc("PUT /a", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/dir/", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("dir")) })
	h := httpwire.JSONErrors(mux, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
		code         contracts.Code
		allow        string
	}{
		{http.MethodGet, "/a", 200, "a", "", ""},
		{http.MethodGet, "/dir/x", 200, "dir", "", ""},
		{http.MethodGet, "/b", 404, "", contracts.CodeNotFound, ""},
		{http.MethodPost, "/a", 405, "", contracts.CodeInvalidRequest, "GET, HEAD, PUT"},
		{http.MethodGet, "/dir", 307, "", "", ""}, // the mux's redirect to /dir/ is kept
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		require.Equal(t, tc.status, w.Code, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.allow, w.Header().Get("Allow"), "%s %s", tc.method, tc.path)
		if tc.code == "" {
			if tc.body != "" {
				require.Equal(t, tc.body, w.Body.String())
			}
			continue
		}
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var body httpwire.ErrorBody
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		require.Equal(t, tc.code, body.Failure.Code, "%s %s", tc.method, tc.path)
	}
}

// A cause never reaches the client: the body has the safe message and code, the log the cause
// (a store's address, an upstream's text), also for a 4xx.
func TestWriteErrorKeepsCausesInTheLog(t *testing.T) {
	redis := &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Source: "redis",
		Message: "stream: Redis at 127.0.0.1:6390 did not answer (ping); check that it runs"}
	for name, tc := range map[string]struct {
		err    error
		status int
		level  string
	}{
		"5xx": {&contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Message: "The stream store (Redis) does not answer.", Err: redis}, 503, "level=ERROR"},
		"4xx": {&contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Fix the body.", Err: contracts.Errorf(contracts.CodeNotFound, "row 12 of table t")}, 400, "level=INFO"},
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			w := httptest.NewRecorder()
			httpwire.WriteError(w, httptest.NewRequest(http.MethodPost, "/api/chat", nil), slog.New(slog.NewTextHandler(&logs, nil)), 0, tc.err)
			require.Equal(t, tc.status, w.Code)
			var body map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			f := body["failure"].(map[string]any)
			require.NotContains(t, f, "cause", w.Body.String())
			require.NotContains(t, w.Body.String(), "127.0.0.1")
			require.NotContains(t, w.Body.String(), "row 12")
			require.Contains(t, logs.String(), tc.level)
			require.Contains(t, logs.String(), "cause=")
		})
	}
}

// The error chunk of a stream the broker cannot read: the broker's message (naming its
// store's address) is replaced, the chunk has no cause.
func TestErrorChunkIsSafe(t *testing.T) {
	var logs bytes.Buffer
	err := &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Source: "redis",
		Message: "stream: Redis at 127.0.0.1:6390 did not answer (read); check that it runs"}
	c := httpwire.ErrorChunk(slog.New(slog.NewTextHandler(&logs, nil)), "run-1", err)
	b, jerr := json.Marshal(c)
	require.NoError(t, jerr)
	require.JSONEq(t, `{"type":"error","message":"The stream store (Redis) did not answer; try again shortly.",
		"failure":{"version":1,"code":"STREAM_UNAVAILABLE","category":"persistence","message":"The stream store (Redis) did not answer; try again shortly.","retryable":true}}`, string(b))
	require.Contains(t, logs.String(), "127.0.0.1:6390")
	require.Contains(t, logs.String(), "run=run-1")
}

// A request whose client left (a page reload cancels what it had in flight) fails with the
// request's context.Canceled: that is no server error, so nothing is logged as one.
func TestWriteErrorWhenTheClientLeft(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodPost, "/api/checkpoints", nil).WithContext(ctx)
	httpwire.WriteError(httptest.NewRecorder(), r, logger, 0, fmt.Errorf("listing checkpoints: %w", context.Canceled))
	require.Empty(t, logs.String())

	// The same error on a request whose client is still there is a server error.
	httpwire.WriteError(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/checkpoints", nil), logger, 0,
		fmt.Errorf("listing checkpoints: %w", context.Canceled))
	require.Contains(t, logs.String(), "level=ERROR")
}

// The hook's error on every wire: a coded error is that failure, any other refuses.
func TestRefusal(t *testing.T) {
	require.NoError(t, httpwire.Refusal(nil))
	down := &contracts.Error{Code: contracts.CodeTemporalUnavailable, Message: "Temporal did not answer."}
	require.Same(t, down, httpwire.Refusal(down))
	f := contracts.FailureOf(httpwire.Refusal(errors.New("ldap: connection reset")))
	require.Equal(t, contracts.CodeForbidden, f.Code)
	require.Equal(t, "Forbidden.", f.Message)
}
