package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// The studio's routes on an --api-only process over Redis (KORTYX_WEB_PAGE=true): runs that
// ended, or began waiting, before the process started are listed, filtered, priced from
// KORTYX_PRICES and answered; a session's transcript is read from Temporal. The worker is another
// process's stack with no HTTP API.
func TestStudioOnAPIOnlyOverRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	redis := redistest.Start(t)
	chosen, err := examples.Parse("support,hello")
	require.NoError(t, err)
	tq := taskQueue(t)
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, RedisURL: redis.URL(), FakeModels: true}, chosen.Options())

	prefix := fmt.Sprintf("studio-%d-", time.Now().UnixNano()%1e9)
	start := func(agent, session, input string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: agent, SessionID: prefix + session, Input: json.RawMessage(input)},
			kortyx.StartOptions{TaskQueue: tq})
		require.NoError(t, err)
		return run.GetID()
	}
	done := start("support", "a", `"Where is order A-1002?"`)
	require.NoError(t, tc.GetWorkflow(ctx, done, "").Get(ctx, nil))
	waiting := start("hello", "b", `"hi"`)
	svc, err := sessions.New(sessions.Options{Client: tc, TaskQueue: tq})
	require.NoError(t, err)
	session := prefix + "chat"
	ts, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t1", Workflow: "hello", Input: json.RawMessage(`"hi"`)})
	require.NoError(t, err)

	prices := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{"openai:gpt-4.1-mini": {"input": 2, "output": 8}}`), 0o644))
	api := startProgram(t, tq, []string{"--api-only"}, "KORTYX_REDIS_URL="+redis.URL(), "KORTYX_HTTP_ADDR=127.0.0.1:0",
		"KORTYX_EXAMPLES=support,hello", "KORTYX_WEB_PAGE=true", "KORTYX_PRICES="+prices)
	base := "http://" + strings.TrimPrefix(logAttr(api.until(t, `msg="kortyx worker: HTTP API"`), "addr"), "http://")
	get := func(path string, v any) int {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if v != nil && resp.StatusCode == http.StatusOK {
			require.NoError(t, json.Unmarshal(b, v), "%s", b)
		}
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get("/", nil), "the page")

	type row struct {
		RunID    string `json:"runId"`
		Agent    string `json:"agent"`
		Status   string `json:"status"`
		Question *struct {
			RequestID string `json:"requestId"`
			Token     string `json:"token"`
			Question  string `json:"question"`
		} `json:"question"`
		Usage *struct {
			Input  int `json:"input"`
			Output int `json:"output"`
		} `json:"usage"`
		Cost *struct {
			Total float64 `json:"total"`
		} `json:"cost"`
	}
	var page struct {
		Runs []row `json:"runs"`
	}
	q := "q=" + url.QueryEscape(prefix)
	require.Eventually(t, func() bool {
		return get("/api/runs?"+q+"&status=waiting", &page) == http.StatusOK && len(page.Runs) == 2
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, http.StatusOK, get("/api/runs?"+q+"&agent=support", &page))
	require.Len(t, page.Runs, 1)
	sup := page.Runs[0]
	require.Equal(t, done, sup.RunID)
	require.Equal(t, "completed", sup.Status)
	require.NotNil(t, sup.Usage)
	require.Positive(t, sup.Usage.Input)
	require.InDelta(t, float64(sup.Usage.Input*2+sup.Usage.Output*8)/1e6, sup.Cost.Total, 1e-12, "priced from KORTYX_PRICES")

	var inbox []row
	require.Equal(t, http.StatusOK, get("/api/interrupts?"+q, &inbox))
	require.Len(t, inbox, 2)
	byRun := map[string]row{}
	for _, r := range inbox {
		require.Equal(t, "What is your name?", r.Question.Question)
		byRun[r.RunID] = r
	}
	require.Contains(t, byRun, waiting)
	require.Contains(t, byRun, ts.RunID)

	answer := func(runID string, r row, text string) map[string]any {
		b, err := json.Marshal(contracts.Response{Token: r.Question.Token, RequestID: r.Question.RequestID, Text: text})
		require.NoError(t, err)
		resp, err := http.Post(base+"/api/runs/"+runID+"/answer", "application/json", strings.NewReader(string(b)))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		var out map[string]any
		require.NoError(t, json.Unmarshal(body, &out))
		return out
	}
	answer(waiting, byRun[waiting], "Ada")
	var res contracts.RunResult
	require.NoError(t, tc.GetWorkflow(ctx, waiting, "").Get(ctx, &res))
	require.Equal(t, "Hello, Ada!", res.State.UI.Message)

	out := answer(ts.RunID, byRun[ts.RunID], "Grace")
	require.Equal(t, session, out["sessionId"], "a session's question is the session's answer turn")
	require.Positive(t, out["begin"], "with Redis, the answer says where its response begins")
	require.NoError(t, tc.GetWorkflow(ctx, ts.RunID, "").Get(ctx, &res))
	require.Equal(t, "Hello, Grace!", res.State.UI.Message)

	var tr struct {
		Turns []struct {
			RunID   string `json:"runId"`
			Entries []struct {
				Kind   string          `json:"kind"`
				Answer json.RawMessage `json:"answer"`
			} `json:"entries"`
		} `json:"turns"`
	}
	require.Equal(t, http.StatusOK, get("/api/sessions/"+url.PathEscape(session)+"/transcript", &tr))
	require.Len(t, tr.Turns, 1)
	require.Equal(t, ts.RunID, tr.Turns[0].RunID)
	var answers []string
	for _, e := range tr.Turns[0].Entries {
		if e.Kind == "answer" {
			answers = append(answers, string(e.Answer))
		}
	}
	require.Equal(t, []string{`"Grace"`}, answers)

	var wfs []struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusOK, get("/api/workflows", &wfs))
	var ids []string
	for _, w := range wfs {
		ids = append(ids, w.ID)
	}
	require.Equal(t, []string{"hello", "support"}, ids)
}
