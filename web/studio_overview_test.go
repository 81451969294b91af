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
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// overviewAgent is an agent whose input says what its run does: "ok" completes, "fail" fails
// with DOMAIN_ERROR, "ask" waits for an answer, "sleep" (and "cancel-me", "terminate-me") runs
// for an hour, "nap" sleeps 3 s
// (a wait the trace's time scale can compress) and completes.
func overviewAgent(id string) *workflows.Definition {
	run := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		switch in.Text() {
		case "fail":
			return workflows.NodeResult{}, contracts.Errorf(contracts.CodeDomainError, "the overview agent fails")
		case "ask":
			a, err := hooks.AskText(ctx, "name", "Your name?")
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{UI: &workflows.UI{Message: "Hello " + a}}, nil
		case "sleep", "nap", "cancel-me", "terminate-me":
			d := time.Hour
			if in.Text() == "nap" {
				d = 3 * time.Second
			}
			if err := workflow.Sleep(ctx, d); err != nil {
				return workflows.NodeResult{}, err
			}
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "done"}}, nil
	}
	return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: run}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}
}

// startOverviewRuns starts, with agent, two runs that complete, two that fail, two that wait,
// one that runs, one cancelled and one terminated, and waits until visibility lists them so.
func startOverviewRuns(t *testing.T, ctx context.Context, tq, agent string, h http.Handler) (runs map[string][]string) {
	t.Helper()
	runs = map[string][]string{}
	start := func(what string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: agent, Input: json.RawMessage(fmt.Sprintf("%q", what))}, kortyx.StartOptions{TaskQueue: tq})
		require.NoError(t, err)
		runs[what] = append(runs[what], run.GetID())
		return run.GetID()
	}
	for _, what := range []string{"ok", "ok", "fail", "fail", "ask", "ask", "sleep"} {
		start(what)
	}
	cancelled, terminated := start("cancel-me"), start("terminate-me")
	require.NoError(t, tc.CancelWorkflow(ctx, cancelled, ""))
	require.NoError(t, tc.TerminateWorkflow(ctx, terminated, "", "the test ends it"))
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), runs["sleep"][0], "", "the test is over") })
	list := func(status string) int {
		code, body := getRaw(t, h, "/api/runs?agent="+url.QueryEscape(agent)+"&status="+status)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var p runsPage
		require.NoError(t, json.Unmarshal(body, &p))
		return len(p.Runs)
	}
	require.Eventually(t, func() bool {
		return list("completed") == 2 && list("failed") == 3 && list("waiting") == 2 && list("running") == 1 && list("cancelled") == 1
	}, 30*time.Second, 200*time.Millisecond)
	return runs
}

// GET /api/overview counts an agent's runs of the last hour by status (as the runs list's
// status filters list them), its waiting questions by age and its failures by code.
func TestOverviewRoute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stamp := time.Now().UnixNano()
	agent := fmt.Sprintf("ov-%d", stamp)
	tq := fmt.Sprintf("web-overview-%d", stamp)
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true},
		app.Options{Register: func(reg *workflows.Registry) error { return reg.Add(overviewAgent(agent)) }})
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	runs := startOverviewRuns(t, ctx, tq, agent, h)

	code, body := getRaw(t, h, "/api/overview?agent="+url.QueryEscape(agent))
	require.Equal(t, http.StatusOK, code, "%s", body)
	var ov map[string]any
	require.NoError(t, json.Unmarshal(body, &ov))
	since, err := time.Parse(time.RFC3339, ov["since"].(string))
	require.NoError(t, err)
	now, err := time.Parse(time.RFC3339Nano, ov["now"].(string))
	require.NoError(t, err)
	require.Equal(t, now.Add(-time.Hour).Truncate(time.Second), since, "the last hour, to the second")
	delete(ov, "since")
	delete(ov, "now")
	b, _ := json.Marshal(ov)
	require.JSONEq(t, `{
	  "runs": {"running": 1, "waiting": 2, "completed": 2, "failed": 3, "cancelled": 1},
	  "waiting": [{"label": "under 10 min", "fromMs": 0, "toMs": 600000, "count": 2},
	    {"label": "10 min to 1 h", "fromMs": 600000, "toMs": 3600000, "count": 0},
	    {"label": "1 h to 1 day", "fromMs": 3600000, "toMs": 86400000, "count": 0},
	    {"label": "over 1 day", "fromMs": 86400000, "count": 0}],
	  "waitingTotal": 2,
	  "failures": [{"code": "DOMAIN_ERROR", "count": 2}, {"code": "TERMINATED", "count": 1}],
	  "failuresRead": 3}`, string(b))

	// The failed rows of the runs list say the same codes: a run Temporal terminated is
	// TERMINATED there too.
	code, body = getRaw(t, h, "/api/runs?agent="+url.QueryEscape(agent)+"&status=failed")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var failed struct {
		Runs []struct {
			RunID string `json:"runId"`
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(body, &failed))
	codes := map[string]string{}
	for _, r := range failed.Runs {
		codes[r.RunID] = r.Error.Code
	}
	require.Equal(t, map[string]string{runs["fail"][0]: "DOMAIN_ERROR", runs["fail"][1]: "DOMAIN_ERROR", runs["terminate-me"][0]: "TERMINATED"}, codes)
	for _, r := range failed.Runs {
		if r.RunID == runs["terminate-me"][0] {
			require.Equal(t, "The run was terminated.", r.Error.Message)
		}
	}

	// Bad filters are the runs list's typed errors.
	code, body = getRaw(t, h, "/api/overview?agent=it's")
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	require.Equal(t, "INVALID_REQUEST", failureOf(t, body))
}

type actionsCost struct {
	Total       float64 `json:"total"`
	Currency    string  `json:"currency"`
	Actions     int     `json:"actions"`
	ActionPrice float64 `json:"actionPrice"`
	ActionsCost float64 `json:"actionsCost"`
}

// A trace counts the run's billable Temporal actions from its history and prices them in the
// studio's currency; a run with child runs rolls theirs up, and GET /api/cost lists it with
// them.
func TestRunActionsAndRollup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprintf("web-actions-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true},
		app.Options{Register: func(reg *workflows.Registry) error {
			if err := registerAgents(reg); err != nil {
				return err
			}
			return research.Register(reg)
		}})
	type traceCost struct {
		Cost   actionsCost `json:"cost"`
		Rollup *struct {
			Runs int         `json:"runs"`
			Cost actionsCost `json:"cost"`
		} `json:"rollup"`
		Entries []struct {
			Kind       string `json:"kind"`
			ChildRunID string `json:"childRunId"`
		} `json:"entries"`
	}
	traceOf := func(h http.Handler, id string) traceCost {
		t.Helper()
		code, body := getRaw(t, h, "/api/runs/"+url.PathEscape(id))
		require.Equal(t, http.StatusOK, code, "%s", body)
		var tr traceCost
		require.NoError(t, json.Unmarshal(body, &tr))
		return tr
	}

	// The echo run: its start, its one workflow task's markers, its status upsert (the version
	// marker's TemporalChangeVersion upsert is not billed): 3 actions.
	echo, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: echoWorkflow, Input: json.RawMessage(`"hi"`)}, kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	require.NoError(t, echo.Get(ctx, nil))
	tr := traceOf(web.Handler(web.Options{Client: tc, AllowUnauthenticated: true}), echo.GetID())
	require.Equal(t, actionsCost{Currency: "USD", Actions: 3, ActionPrice: 25, ActionsCost: 3 * 25 / 1e6}, tr.Cost)
	require.Nil(t, tr.Rollup, "no child runs, no roll-up")
	price := 50.0
	tr = traceOf(web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Currency: "EUR", ActionPrice: &price}), echo.GetID())
	require.Equal(t, actionsCost{Currency: "EUR", Actions: 3, ActionPrice: 50, ActionsCost: 3 * 50 / 1e6}, tr.Cost)
	free := 0.0
	tr = traceOf(web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, ActionPrice: &free}), echo.GetID())
	require.Equal(t, actionsCost{Currency: "USD", Actions: 3}, tr.Cost)

	// The research run: three child runs (one asks through the root), all rolled up.
	root, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: research.WorkflowID, Input: json.RawMessage(`"durable execution"`)}, kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	var pending *contracts.PendingRequest
	require.Eventually(t, func() bool {
		v, err := kortyx.Query(ctx, tc, root.GetID())
		if err == nil && v.Pending != nil {
			pending = v.Pending
		}
		return pending != nil
	}, 30*time.Second, 100*time.Millisecond)
	_, err = kortyx.RespondAndWait(ctx, tc, root.GetID(), "", contracts.Response{Token: pending.Token, RequestID: pending.RequestID, Selected: []string{"no"}})
	require.NoError(t, err)
	require.NoError(t, root.Get(ctx, nil))
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	tr = traceOf(h, root.GetID())
	var kids []string
	for _, e := range tr.Entries {
		if e.Kind == "child" {
			kids = append(kids, e.ChildRunID)
		}
	}
	require.Len(t, kids, 3)
	// The children: one marker task and the final status upsert each, and the risks child's
	// answer (a signal from the root); the root: its start, two per child, the answer's
	// update, its marker tasks, signals and upserts.
	sum := tr.Cost.Actions
	var own []int
	for _, id := range kids {
		k := traceOf(h, id)
		require.Nil(t, k.Rollup)
		sum += k.Cost.Actions
		own = append(own, k.Cost.Actions)
	}
	require.Equal(t, []int{2, 2, 3}, own)
	require.Equal(t, 14, tr.Cost.Actions)
	require.Equal(t, 21, sum)
	require.NotNil(t, tr.Rollup)
	require.Equal(t, 4, tr.Rollup.Runs)
	require.Equal(t, sum, tr.Rollup.Cost.Actions, "the parent's own actions and its children's")
	require.Equal(t, actionsCost{Currency: "USD", Actions: sum, ActionPrice: 25, ActionsCost: float64(sum) * 25 / 1e6}, tr.Rollup.Cost)

	// GET /api/cost lists the research run with its children rolled up into it; by agent the
	// children count under their own agent, by session under the root's.
	type costRow struct {
		Key  string      `json:"key"`
		Runs int         `json:"runs"`
		Cost actionsCost `json:"cost"`
	}
	var rep struct {
		Rows []costRow `json:"rows"`
		Runs []struct {
			RunID    string  `json:"runId"`
			Agent    string  `json:"agent"`
			Children int     `json:"children"`
			Own      costRow `json:"own"`
			Total    costRow `json:"total"`
		} `json:"runs"`
	}
	q := "&q=" + url.QueryEscape(root.GetID())
	require.Eventually(t, func() bool {
		code, body := getRaw(t, h, "/api/cost?groupBy=agent"+q)
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.NoError(t, json.Unmarshal(body, &rep))
		return len(rep.Runs) == 1 && rep.Runs[0].Children == 3
	}, 30*time.Second, 200*time.Millisecond)
	r := rep.Runs[0]
	require.Equal(t, root.GetID(), r.RunID)
	require.Equal(t, research.WorkflowID, r.Agent)
	require.Equal(t, costRow{Key: root.GetID(), Runs: 1, Cost: tr.Cost}, r.Own)
	require.Equal(t, costRow{Key: root.GetID(), Runs: 4, Cost: tr.Rollup.Cost}, r.Total)
	require.Equal(t, []costRow{{Key: research.WorkflowID, Runs: 1, Cost: tr.Cost},
		{Key: research.TopicWorkflowID, Runs: 3, Cost: actionsCost{Currency: "USD", Actions: 7, ActionPrice: 25, ActionsCost: 7 * 25 / 1e6}}}, rep.Rows,
		"by agent, the children under their own agent; the most expensive first")
	code, body := getRaw(t, h, "/api/cost?groupBy=session"+q)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Equal(t, []costRow{{Key: "", Runs: 4, Cost: tr.Rollup.Cost}}, rep.Rows, "a run of no session, with its children")
}

// GET /api/workflows says which node starts which child workflow (workflows.Node.Children),
// with each node's version and metadata.
func TestWorkflowsRouteChildren(t *testing.T) {
	reg := workflows.NewRegistry()
	require.NoError(t, research.Register(reg))
	code, body := getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Registry: reg}), "/api/workflows")
	require.Equal(t, http.StatusOK, code)
	var list []struct {
		ID    string            `json:"id"`
		Nodes []json.RawMessage `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list, 2)
	require.Equal(t, research.WorkflowID, list[0].ID)
	var nodes []string
	for _, n := range list[0].Nodes {
		nodes = append(nodes, string(n))
	}
	require.Equal(t, []string{`{"id":"fanout","children":["research.topic"],"kind":"go"}`, `{"id":"summarize","kind":"go"}`,
		`{"id":"__start__","kind":"start"}`, `{"id":"__end__","kind":"end"}`}, nodes)

	reg = workflows.NewRegistry()
	def := overviewAgent("ov-meta")
	n := def.Nodes["agent"]
	n.Version, n.Metadata = "2", map[string]any{"owner": "ops"}
	def.Nodes["agent"] = n
	require.NoError(t, reg.Add(def))
	code, body = getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Registry: reg}), "/api/workflows")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &list))
	require.JSONEq(t, `{"id":"agent","version":"2","metadata":{"owner":"ops"},"kind":"go"}`, string(list[0].Nodes[0]))
}
