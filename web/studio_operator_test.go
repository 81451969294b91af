package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
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

// internalAgent lists the tools of a working MCP server, then answers.
const internalAgent = "web-mcp-up"

// The run's own activities that completed at their first attempt (a local one too) are listed
// apart, in the trace's internal, with the node an activity id names; they are not entries.
func TestTraceListsInternalActivities(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tools := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1"}, nil)
	tools.AddTool(&sdk.Tool{Name: "add", Description: "Adds a and b.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	mcpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return tools }, nil))
	defer mcpSrv.Close()
	register := func(reg *workflows.Registry) error {
		node := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "a", Input: in.Text(), MCP: []hooks.MCPServer{{URL: mcpSrv.URL}}})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
		}
		return reg.Add(&workflows.Definition{ID: internalAgent, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: node}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}})
	}
	tq := fmt.Sprintf("web-internal-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, app.Options{Register: register})
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: internalAgent, Input: json.RawMessage(`"hi"`)}, kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))

	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	code, body := getRaw(t, h, "/api/runs/"+run.GetID())
	require.Equal(t, http.StatusOK, code, "%s", body)
	var tr struct {
		Entries  []traceEntry `json:"entries"`
		Internal []traceEntry `json:"internal"`
	}
	require.NoError(t, json.Unmarshal(body, &tr), "%s", body)
	require.Equal(t, []traceEntry{{Kind: "activity", Node: "agent", Activity: "kortyx.ListTools", Internal: true, Attempts: 1},
		{Kind: "activity", Activity: "kortyx.Publish", Internal: true, Attempts: 1}}, tr.Internal, "the tool listing, then the local publish (no node)")
	for _, e := range tr.Entries {
		require.NotEqual(t, "kortyx.ListTools", e.Activity, "not an entry")
	}
}
