package chat

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

func parse(t *testing.T, body string) (*Request, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(body))
	return parseRequest(r, 1<<20)
}

func TestParseRequest(t *testing.T) {
	req, err := parse(t, `{"sessionId": "  s1 ", "clientTurnId": " t1", "workflowId": "echo", "stream": false, "extra": 1,
		"context": {"plan": "pro"},
		"messages": [{"role": "user", "content": "hi", "id": " m1 "}, {"role": "assistant", "content": "hello"},
			{"role": "user", "content": "  again  ", "metadata": {"note": "kept"}}]}`)
	require.NoError(t, err)
	require.Equal(t, "s1", req.SessionID)
	require.Equal(t, "t1", req.ClientTurnID)
	require.Equal(t, "echo", req.WorkflowID)
	require.False(t, *req.Stream)
	require.JSONEq(t, `{"plan": "pro"}`, string(req.Context))
	require.Equal(t, "m1", req.Messages[0].ID)
	require.Equal(t, "again", req.input())
	require.Nil(t, req.ResumeOf())
	b, err := json.Marshal(req.last().Metadata)
	require.NoError(t, err)
	require.JSONEq(t, `{"note": "kept"}`, string(b), "metadata other than resume is kept")
}

func TestParseRequestRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		path []any
	}{
		"invalid JSON":        {`{"messages": [`, nil},
		"not an object":       {`"hi"`, nil},
		"no messages":         {`{}`, []any{"messages"}},
		"empty messages":      {`{"messages": []}`, []any{"messages"}},
		"messages not a list": {`{"messages": {}}`, []any{"messages"}},
		"unknown message key": {`{"messages": [{"role": "user", "content": "hi", "name": "x"}]}`, []any{"messages", float64(0)}},
		"bad role":            {`{"messages": [{"role": "tool", "content": "hi"}]}`, []any{"messages", float64(0), "role"}},
		"sessionId number":    {`{"sessionId": 1, "messages": [{"role": "user", "content": "hi"}]}`, []any{"sessionId"}},
		"sessionId too long":  {`{"sessionId": "` + strings.Repeat("s", 257) + `", "messages": [{"role": "user", "content": "hi"}]}`, []any{"sessionId"}},
		"stream not a bool":   {`{"stream": "no", "messages": [{"role": "user", "content": "hi"}]}`, []any{"stream"}},
		"context not object":  {`{"context": [1], "messages": [{"role": "user", "content": "hi"}]}`, []any{"context"}},
		"unknown resume key": {`{"messages": [{"role": "user", "content": "hi", "metadata": {"resume": {"token": "t", "requestId": "r", "x": 1}}}]}`,
			[]any{"messages", float64(0)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.body)
			require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err), "err: %v", err)
			f := contracts.FailureOf(err)
			require.Equal(t, http.StatusBadRequest, httpStatus(f))
			if tc.path != nil {
				require.NotEmpty(t, f.Issues, "issues of %v", err)
				b, _ := json.Marshal(f.Issues[0].Path)
				var got []any
				require.NoError(t, json.Unmarshal(b, &got))
				require.Equal(t, tc.path, got)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(`{"messages": [{"role": "user", "content": "`+strings.Repeat("a", 200)+`"}]}`))
	_, err := parseRequest(r, 100)
	require.Equal(t, contracts.CodeInvalidRequest, contracts.CodeOf(err))
	require.ErrorContains(t, err, "larger than 100 bytes")
}

func TestResumeResponse(t *testing.T) {
	res := func(js string) *Resume {
		req, err := parse(t, `{"messages": [{"role": "user", "content": " typed ", "metadata": {"resume": `+js+`}}]}`)
		require.NoError(t, err)
		return req.ResumeOf()
	}
	for name, tc := range map[string]struct {
		resume string
		want   contracts.Response
	}{
		"text from content": {`{"token": " tok ", "requestId": "r"}`, contracts.Response{Token: "tok", RequestID: "r", Text: "typed"}},
		"selected string":   {`{"token": "tok", "requestId": "r", "selected": "a"}`, contracts.Response{Token: "tok", RequestID: "r", Selected: []string{"a"}}},
		"selected list":     {`{"token": "tok", "requestId": "r", "selected": ["a", "b"]}`, contracts.Response{Token: "tok", RequestID: "r", Selected: []string{"a", "b"}}},
		"choice":            {`{"token": "tok", "requestId": "r", "choice": {"id": "a"}}`, contracts.Response{Token: "tok", RequestID: "r", Selected: []string{"a"}}},
		"choices":           {`{"token": "tok", "requestId": "r", "choices": [{"id": "a"}, {"id": "c"}]}`, contracts.Response{Token: "tok", RequestID: "r", Selected: []string{"a", "c"}}},
		"value":             {`{"token": "tok", "requestId": "r", "value": {"n": 1}}`, contracts.Response{Token: "tok", RequestID: "r", Value: json.RawMessage(`{"n": 1}`)}},
		"cancel":            {`{"token": "tok", "requestId": "r", "cancel": true}`, contracts.Response{Token: "tok", RequestID: "r", Cancel: true}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, res(tc.resume).response(" typed "))
		})
	}
}

func TestNewHandlerOptions(t *testing.T) {
	c := lazyClient(t)
	b := stream.NewMemory(stream.MemoryOptions{})
	withBroker, noBroker := service(t, c, b), service(t, c, nil)
	for name, tc := range map[string]struct {
		svc  *sessions.Service
		o    Options
		want string
	}{
		"no service": {nil, Options{AllowUnauthenticated: true}, "the session service is required"},
		"no broker":  {noBroker, Options{AllowUnauthenticated: true}, "the session service has no broker"},
		"no auth":    {withBroker, Options{}, "Options.Authorize is required"},
		"continue":   {withBroker, Options{AllowUnauthenticated: true, Disconnect: disconnectContinue}, `disconnect: "continue" requires onExecution`},
		"bad mode":   {withBroker, Options{AllowUnauthenticated: true, Disconnect: "later"}, "Options.Disconnect must be"},
		"dev":        {withBroker, Options{AllowUnauthenticated: true}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewHandler(tc.svc, tc.o)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := NewHandler(service(t, c, b), Options{AllowUnauthenticated: true, Disconnect: disconnectContinue, OnExecution: func(<-chan struct{}) {}})
	require.NoError(t, err)
	_, err = NewCheckpointHandler(service(t, c, nil), CheckpointOptions{})
	require.ErrorContains(t, err, "CheckpointOptions.Authorize is required")
}

// Requests the routes refuse before any Temporal call: wrong method, bad body, refused
// authorization, callback preconditions.
func TestRefusedBeforeWork(t *testing.T) {
	calls := 0
	h, err := NewHandler(service(t, lazyClient(t), stream.NewMemory(stream.MemoryOptions{})), Options{
		Authorize: func(r *http.Request, a sessions.Access) error {
			if r.Header.Get("Authorization") == "" {
				return &contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in."}
			}
			if a.SessionID == "theirs" {
				return errBoom
			}
			return nil
		},
		OnTurnAccepted: func(ctx context.Context, ev TurnAccepted) error { calls++; return nil }})
	require.NoError(t, err)
	do := func(method, body string, auth bool) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/api/chat", strings.NewReader(body))
		if auth {
			r.Header.Set("Authorization", "Bearer me")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	ok := `{"sessionId": "mine", "clientTurnId": "t1", "messages": [{"role": "user", "content": "hi"}]}`
	w := do(http.MethodGet, ok, true)
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Equal(t, http.MethodPost, w.Header().Get("Allow"))
	require.Equal(t, http.StatusUnauthorized, do(http.MethodPost, ok, false).Code)
	w = do(http.MethodPost, strings.Replace(ok, "mine", "theirs", 1), true)
	require.Equal(t, http.StatusForbidden, w.Code)
	var body struct {
		Error   string            `json:"error"`
		Failure contracts.Failure `json:"failure"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.Equal(t, contracts.CodeForbidden, body.Failure.Code)
	require.NotContains(t, w.Body.String(), "boom", "the authorizer's own error stays on the server")
	require.Equal(t, http.StatusBadRequest, do(http.MethodPost, strings.Replace(ok, `"t1"`, `""`, 1), true).Code)
	require.Equal(t, http.StatusBadRequest, do(http.MethodPost, `{"sessionId": "mine", "clientTurnId": "t1", "messages": [{"role": "user", "content": "  "}]}`, true).Code)
	require.Zero(t, calls, "no turn was accepted")
}

var errBoom = errors.New("boom")

// lazyClient is a Temporal client that connects on first use (these tests never use it).
func lazyClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.NewLazyClient(client.Options{})
	require.NoError(t, err)
	return c
}

func TestCheckpointRequestRefusals(t *testing.T) {
	h, err := NewCheckpointHandler(service(t, lazyClient(t), nil), CheckpointOptions{AllowUnauthenticated: true})
	require.NoError(t, err)
	for name, body := range map[string]string{
		"invalid JSON":         `{`,
		"unknown action":       `{"action": "delete", "sessionId": "s"}`,
		"no session":           `{"action": "list"}`,
		"get without id":       `{"action": "get", "sessionId": "s"}`,
		"rollback without id":  `{"action": "rollback", "sessionId": "s", "checkpointId": " "}`,
		"newSessionId on get":  `{"action": "get", "sessionId": "s", "checkpointId": "cp-1", "newSessionId": "n"}`,
		"unknown key":          `{"action": "list", "sessionId": "s", "limit": 3}`,
		"fork without id":      `{"action": "fork", "sessionId": "s", "newSessionId": "n"}`,
		"session not a string": `{"action": "list", "sessionId": 7}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/checkpoints", strings.NewReader(body)))
			require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
			require.Contains(t, w.Body.String(), `"code":"INVALID_REQUEST"`)
		})
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/checkpoints", nil))
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
}

func TestCallbackFailuresAreContained(t *testing.T) {
	err := runCallback(phaseForked, func() error { panic("boom") })
	require.Equal(t, contracts.CodeChatLifecycleHookFailed, contracts.CodeOf(err))
	require.ErrorContains(t, errors.Unwrap(err), "forked hook panicked: boom")
	require.Equal(t, "forked", contracts.FailureOf(err).Details["phase"])
	require.NoError(t, runCallback(phaseForked, func() error { return nil }))

	var got []LifecycleError
	reportCallbackError(func(ev LifecycleError) { got = append(got, ev); panic("the reporter fails too") }, slog.Default(),
		LifecycleError{Phase: phaseForked, Err: err})
	require.Len(t, got, 1, "a panicking OnLifecycleError is swallowed")
}
