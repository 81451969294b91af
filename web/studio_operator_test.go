package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/stretchr/testify/require"
)

// GET /api/runs orders its page by start, newest first, though Temporal's listing puts the open
// executions first: a run left open between two that closed is listed between them.
func TestRunsNewestFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprintf("web-order-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true},
		app.Options{Register: registerAgents})
	prefix := fmt.Sprintf("ord%d-", time.Now().UnixNano()%1e9)
	start := func(id, agent string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: agent, Input: json.RawMessage(`"hi"`)},
			kortyx.StartOptions{RunID: prefix + id, TaskQueue: tq})
		require.NoError(t, err)
		return run.GetID()
	}
	older := start("older", echoWorkflow)
	require.NoError(t, tc.GetWorkflow(ctx, older, "").Get(ctx, nil))
	open := start("open", formWorkflow)
	newer := start("newer", echoWorkflow)
	require.NoError(t, tc.GetWorkflow(ctx, newer, "").Get(ctx, nil))
	defer func() { _ = tc.TerminateWorkflow(context.Background(), open, "", "the test is over") }()

	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	list := func() runsPage {
		t.Helper()
		code, body := getRaw(t, h, "/api/runs?q="+url.QueryEscape(prefix))
		require.Equal(t, http.StatusOK, code, "%s", body)
		var p runsPage
		require.NoError(t, json.Unmarshal(body, &p))
		return p
	}
	var p runsPage
	require.Eventually(t, func() bool {
		p = list()
		return len(p.Runs) == 3 && p.Runs[0].Status == "completed" && p.Runs[1].Status == "waiting" && p.Runs[2].Status == "completed"
	}, 30*time.Second, 200*time.Millisecond, "%+v", p)
	require.Equal(t, []string{newer, open, older}, []string{p.Runs[0].RunID, p.Runs[1].RunID, p.Runs[2].RunID})
	require.True(t, p.Runs[0].StartedAt.After(p.Runs[1].StartedAt) && p.Runs[1].StartedAt.After(p.Runs[2].StartedAt))
}
