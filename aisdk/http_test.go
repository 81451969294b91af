package aisdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/aisdk"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/nodeclient"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// post sends a chat request body and returns the response and its whole body.
func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	return do(t, http.MethodPost, url, body)
}

func do(t *testing.T, method, url, body string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func prompt(id, agent, messageID, text string) string {
	return `{"id":"` + id + `","agent":"` + agent + `","messages":[{"id":"` + messageID + `","role":"user","parts":[{"type":"text","text":"` + text + `"}]}]}`
}

// TestHTTP checks the routes below the AI SDK: the framing, a retried request, refusals, the
// authorization hook.
func TestHTTP(t *testing.T) {
	o, _ := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue(), ""), o)
	base := "http://" + st.HTTPAddr + "/api/ui/chat"

	t.Run("retry reattaches", func(t *testing.T) {
		id := uuid.NewString()
		res, first := post(t, base, prompt(id, "hello", "m1", "hi"))
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "v1", res.Header.Get("X-Vercel-Ai-Ui-Message-Stream"))
		require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
		require.Regexp(t, `^data: \{"type":"start"\}\n\ndata: \{"type":"start-step"\}\n\n(.|\n)*data: \{"type":"finish","finishReason":"tool-calls"\}\n\ndata: \[DONE\]\n\n$`, first)
		// The same message again: the same turn, not a second run.
		_, again := post(t, base, prompt(id, "hello", "m1", "hi"))
		require.Equal(t, first, again)
		svc, err := sessions.New(sessions.Options{Client: st.Client})
		require.NoError(t, err)
		v, err := svc.View(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, v.Checkpoints, 2, "the session's start and one turn")
		require.Equal(t, 1, v.Checkpoints[1].TurnIndex)
		require.Len(t, v.Pending, 1)
		// The turn ended (its question waits): nothing to reattach to.
		res, body := do(t, http.MethodGet, base+"/"+id+"/stream", "")
		require.Equal(t, http.StatusNoContent, res.StatusCode)
		require.Empty(t, body)
	})

	t.Run("cancel sent again", func(t *testing.T) {
		id := uuid.NewString()
		res, asked := post(t, base, prompt(id, "hello", "m1", "hi"))
		require.Equal(t, 200, res.StatusCode)
		m := regexp.MustCompile(`"toolCallId":"(human-[^".]+)\.([^"]+)"`).FindStringSubmatch(asked)
		require.NotNil(t, m, asked)
		call, requestID := m[0][len(`"toolCallId":"`):len(m[0])-1], m[1]
		cancel := func(session, call string) string {
			return `{"id":"` + session + `","messages":[` + `{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]},` +
				`{"id":"a1","role":"assistant","parts":[{"type":"step-start"},{"type":"tool-kortyx_ask","toolCallId":"` + call +
				`","state":"output-error","input":{"question":"What is your name?"},"errorText":"not telling"}]}]}`
		}
		// The response ends the question: a step after it with the call's output-error again (the
		// SDK writes its message then), abort and finish "other".
		want := `data: {"type":"start"}` + "\n\n" + `data: {"type":"start-step"}` + "\n\n" +
			`data: {"type":"tool-output-error","toolCallId":"` + call + `","errorText":"not telling"}` + "\n\n" +
			`data: {"type":"abort","reason":"Execution cancelled."}` + "\n\n" + `data: {"type":"finish-step"}` + "\n\n" +
			`data: {"type":"finish","finishReason":"other"}` + "\n\n" + "data: [DONE]\n\n"
		res, body := post(t, base, cancel(id, call))
		require.Equal(t, 200, res.StatusCode, body)
		require.Equal(t, want, body)
		cancelled(t, st, id) // and the session has ended the turn: the same cancel finds it ended

		// The same cancel again (a retried request, another tab): the same response, no error.
		res, body = post(t, base, cancel(id, call))
		require.Equal(t, 200, res.StatusCode, body)
		require.Equal(t, want, body)

		// A cancel of a question this session does not ask is refused.
		for _, forged := range []string{requestID + ".forged", "human-forged.forged"} {
			res, body = post(t, base, cancel(id, forged))
			require.Equal(t, 400, res.StatusCode, body)
			require.Equal(t, string(contracts.CodeInvalidResume), code(t, body), forged)
		}
		other := uuid.NewString()
		res, _ = post(t, base, prompt(other, "hello", "m1", "hi"))
		require.Equal(t, 200, res.StatusCode)
		res, body = post(t, base, cancel(other, call))
		require.Equal(t, 400, res.StatusCode, body)
		require.Equal(t, string(contracts.CodeInvalidResume), code(t, body), "a question of another session")
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			method, url, body string
			status            int
			code              contracts.Code
		}{
			{http.MethodPost, base, `{}`, 400, contracts.CodeInvalidRequest},
			{http.MethodPost, base, `{"id":"x","messages":[{"id":"a","role":"assistant","parts":[]}]}`, 400, contracts.CodeInvalidRequest},
			{http.MethodPost, base, prompt(uuid.NewString(), "nope", "m1", "hi"), 404, contracts.CodeUnknownWorkflow},
			{http.MethodGet, base + "/a%20b/stream", "", 400, contracts.CodeInvalidRequest},
			{http.MethodGet, base, "", 405, contracts.CodeInvalidRequest},
		} {
			res, body := do(t, tc.method, tc.url, tc.body)
			require.Equal(t, tc.status, res.StatusCode, "%s %s: %s", tc.method, tc.url, body)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"))
			require.Equal(t, string(tc.code), code(t, body))
		}
	})

	t.Run("authorize", func(t *testing.T) {
		svc, err := sessions.New(sessions.Options{Client: st.Client, Broker: st.Broker, TaskQueue: "unused"})
		require.NoError(t, err)
		_, err = aisdk.New(svc, aisdk.Options{})
		require.ErrorContains(t, err, "Options.Authorize is required")
		_, err = aisdk.New(nil, aisdk.Options{AllowUnauthenticated: true})
		require.ErrorContains(t, err, "the session service is required")
		noBroker, err := sessions.New(sessions.Options{Client: st.Client})
		require.NoError(t, err)
		_, err = aisdk.New(noBroker, aisdk.Options{AllowUnauthenticated: true})
		require.ErrorContains(t, err, "the session service has no broker")
		var seen []sessions.Access
		refuse := error(&contracts.Error{Code: contracts.CodeUnauthorized, Message: "Sign in first."})
		h, err := aisdk.New(svc, aisdk.Options{
			Authorize: func(r *http.Request, a sessions.Access) error {
				seen = append(seen, a)
				return refuse
			}})
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.Handle("POST /chat", h)
		mux.Handle("GET /chat/{id}/stream", h)
		srv := httptest.NewServer(mux)
		defer srv.Close()
		res, body := post(t, srv.URL+"/chat", prompt("c1", "hello", "m1", "hi"))
		require.Equal(t, 401, res.StatusCode)
		require.Equal(t, string(contracts.CodeUnauthorized), code(t, body))
		refuse = errors.New("not yours")
		answer := `{"id":"c1","messages":[{"id":"a","role":"assistant","parts":[{"type":"tool-kortyx_ask","toolCallId":"human-1.t","state":"output-available","output":"Ada"}]}]}`
		res, body = post(t, srv.URL+"/chat", answer)
		require.Equal(t, 403, res.StatusCode)
		require.Equal(t, string(contracts.CodeForbidden), code(t, body))
		res, _ = do(t, http.MethodGet, srv.URL+"/chat/c1/stream", "")
		require.Equal(t, 403, res.StatusCode)
		require.Equal(t, []sessions.Access{{Wire: "aisdk", Action: sessions.ActionStart, SessionID: "c1", Workflow: "hello"},
			{Wire: "aisdk", Action: sessions.ActionAnswer, SessionID: "c1"}, {Wire: "aisdk", Action: sessions.ActionRead, SessionID: "c1"}}, seen)
	})
}

// TestDocsExample runs the commands of docs/aisdk.md's example against the dev API of a test
// worker (`go run ./worker` is this app.Run; `npm ci` is nodeclient.Install) and compares their
// output with the page, where "…" stands for any text.
func TestDocsExample(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(env.Root, "docs", "aisdk.md"))
	require.NoError(t, err)
	o, _ := options(t)
	st := testenv.Run(t, context.Background(), config(taskQueue(), ""), o)
	nodeclient.Install(t)
	text := string(page)
	text = text[strings.Index(text, "## Example"):]
	var ran []string
	for _, block := range strings.Split(text, "```")[1:] {
		if !strings.HasPrefix(block, "\n$ ") {
			continue
		}
		lines := strings.Split(strings.TrimPrefix(block, "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			cmd, ok := strings.CutPrefix(lines[i], "$ ")
			if !ok {
				continue
			}
			var want []string
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
				i++
				want = append(want, lines[i])
			}
			ran = append(ran, cmd)
			var out string
			switch cmd {
			case "go run ./worker", "cd test/npmclients && npm ci":
				continue // the test's worker; nodeclient.Install
			default:
				cmd = strings.ReplaceAll(cmd, "localhost:8080", st.HTTPAddr)
				cmd = strings.ReplaceAll(cmd, `"id":"chat-1"`, `"id":"`+uuid.NewString()+`"`)
				c := exec.Command("sh", "-c", cmd)
				c.Dir = nodeclient.Dir(t)
				b, err := c.CombinedOutput()
				require.NoError(t, err, "%s: %s", cmd, b)
				out = string(b)
			}
			pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSpace(strings.Join(want, "\n"))), "…", ".*") + "$"
			require.Regexp(t, pattern, strings.TrimSpace(out), cmd)
		}
	}
	require.Equal(t, []string{"go run ./worker", "cd test/npmclients && npm ci", "node aisdk-example.mjs http://localhost:8080",
		`curl -sN localhost:8080/api/ui/chat -d '{"id":"chat-1","agent":"hello","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}]}'`}, ran)
}

// With CORS origins (the dev API passes app.Config.CORSOrigins), a browser app on an allowed
// origin may call both routes: the preflight is answered, the response carries the origin; a
// page of another origin is refused its preflight.
func TestCORS(t *testing.T) {
	o, _ := options(t)
	cfg := config(taskQueue(), "")
	cfg.CORSOrigins = []string{"http://app.example:*"}
	st := testenv.Run(t, context.Background(), cfg, o)
	base := "http://" + st.HTTPAddr + "/api/ui/chat"
	preflight := func(url, origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, url, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	for _, url := range []string{base, base + "/some-chat/stream"} {
		res := preflight(url, "http://app.example:3000")
		require.Equal(t, http.StatusNoContent, res.StatusCode, url)
		require.Equal(t, "http://app.example:3000", res.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "GET, POST, OPTIONS", res.Header.Get("Access-Control-Allow-Methods"))
		require.Equal(t, http.StatusForbidden, preflight(url, "http://evil.example").StatusCode, url)
	}
	req, err := http.NewRequest(http.MethodGet, base+"/"+uuid.NewString()+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://app.example:3000")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode, "no turn runs")
	require.Equal(t, "http://app.example:3000", res.Header.Get("Access-Control-Allow-Origin"))
}
