package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// The failure test agents.
const (
	codedFailWorkflow = "web-coded-fail" // fails with REASON_MAX_STEPS_REACHED
	mcpDownWorkflow   = "web-mcp-down"   // its Reason call lists the tools of an MCP server that refuses connections
)

// codedFailMessage is the coded failure's message.
const codedFailMessage = "The tool loop used all its model passes without a final answer."

// refusedMCP is an MCP server address that refuses connections.
const refusedMCP = "http://127.0.0.1:1/mcp"

// refusedMessage is the safe message of a tool listing that refusedMCP did not answer.
const refusedMessage = "MCP server " + refusedMCP + " did not answer: its tools could not be listed."

func registerFailureAgents(reg *workflows.Registry) error {
	one := func(id string, fn workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: fn}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}
	}
	coded := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		return workflows.NodeResult{}, contracts.Errorf(contracts.CodeReasonMaxSteps, codedFailMessage)
	}
	mcpDown := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "a", Input: in.Text(), MCP: []hooks.MCPServer{{URL: refusedMCP}}})
		if err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
	}
	return reg.Add(one(codedFailWorkflow, coded), one(mcpDownWorkflow, mcpDown))
}

// failureStack runs a worker with the support and research examples, the studio's test agents
// and the failure agents, on a task queue of its own.
func failureStack(t *testing.T, ctx context.Context, name string, web bool) (app.Config, app.Running) {
	t.Helper()
	chosen, err := examples.Parse("support,research")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		if err := registerAgents(reg); err != nil {
			return err
		}
		return registerFailureAgents(reg)
	}
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("%s-%d", name, time.Now().UnixNano()), Namespace: "default", FakeModels: true}
	if web {
		cfg.HTTPAddr, cfg.WebPage = "127.0.0.1:0", true
	}
	return cfg, testenv.Run(t, ctx, cfg, o)
}

// traceFailure is a failure of the trace route.
type traceFailure struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Node     string `json:"node"`
	Activity string `json:"activity"`
	Attempt  int    `json:"attempt"`
	Raw      string `json:"raw"`
}

type traceEntry struct {
	Kind        string        `json:"kind"`
	Node        string        `json:"node"`
	Tool        string        `json:"tool"`
	Activity    string        `json:"activity"`
	Internal    bool          `json:"internal"`
	Attempts    int           `json:"attempts"`
	Status      string        `json:"status"`
	ChildRunID  string        `json:"childRunId"`
	Result      string        `json:"result"`
	Error       string        `json:"error"`
	Failure     *traceFailure `json:"failure"`
	LastFailure *traceFailure `json:"lastFailure"`
	Pending     *struct {
		State           string        `json:"state"`
		Attempt         int           `json:"attempt"`
		MaximumAttempts int           `json:"maximumAttempts"`
		LastFailure     *traceFailure `json:"lastFailure"`
		NextAttemptAt   *time.Time    `json:"nextAttemptAt"`
		ExpiresAt       *time.Time    `json:"expiresAt"`
	} `json:"pending"`
}

type traceOf struct {
	Status  string        `json:"status"`
	Failure *traceFailure `json:"failure"`
	Entries []traceEntry  `json:"entries"`
}

func getTrace(t *testing.T, h http.Handler, path string) traceOf {
	t.Helper()
	code, body := getRaw(t, h, path)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var tr traceOf
	require.NoError(t, json.Unmarshal(body, &tr), "%s", body)
	return tr
}

type errorRow struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func listRuns(t *testing.T, h http.Handler, query string) []errorRow {
	t.Helper()
	code, body := getRaw(t, h, "/api/runs?"+query)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var page struct {
		Runs []errorRow `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(body, &page), "%s", body)
	return page.Runs
}

// A failed run's trace and row carry its failure's code and safe message, derived from the
// failure's type and details; the raw cause only for a request that asks (raw=1) and may read
// it; the runs list filters by code; a failed tool call shows the tool's own error text.
func TestFailuresInTraceAndRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, _ := failureStack(t, ctx, "web-failures", false)
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	start := func(workflow, input string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: workflow, Input: json.RawMessage(input)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		_ = run.Get(ctx, nil)
		return run.GetID()
	}
	coded := start(codedFailWorkflow, `"go"`)
	plain := start(failWorkflow, `"go"`)

	tr := getTrace(t, h, "/api/runs/"+coded)
	require.Equal(t, "failed", tr.Status)
	want := &traceFailure{Code: "REASON_MAX_STEPS_REACHED", Message: codedFailMessage}
	require.Equal(t, want, tr.Failure)
	end := tr.Entries[len(tr.Entries)-1]
	require.Equal(t, "ended", end.Kind)
	require.Equal(t, codedFailMessage, end.Error)
	require.Equal(t, want, end.Failure)
	// The raw cause: asked for, and allowed (a studio without a hook, in development).
	raw := getTrace(t, h, "/api/runs/"+coded+"?raw=1")
	require.Equal(t, &traceFailure{Code: "REASON_MAX_STEPS_REACHED", Message: codedFailMessage, Raw: codedFailMessage}, raw.Failure)

	tr = getTrace(t, h, "/api/runs/"+plain)
	require.Equal(t, &traceFailure{Code: "EXECUTION_FAILED", Message: "An unexpected error occurred."}, tr.Failure, "a Go error's text is not a safe message")
	raw = getTrace(t, h, "/api/runs/"+plain+"?raw=1")
	require.Equal(t, "the test agent fails", raw.Failure.Raw)

	// With an authorization hook, raw failures are for the requests RawFailures allows.
	allow := func(*http.Request, sessions.Access) error { return nil }
	hooked := web.Handler(web.Options{Client: tc, Authorize: allow})
	code, body := getRaw(t, hooked, "/api/runs/"+plain+"?raw=1")
	require.Equal(t, http.StatusForbidden, code, "%s", body)
	require.Equal(t, "FORBIDDEN", failureOf(t, body))
	require.NotContains(t, string(getTraceBody(t, hooked, "/api/runs/"+plain)), "the test agent fails")
	operator := web.Handler(web.Options{Client: tc, Authorize: allow, RawFailures: func(r *http.Request) bool { return r.Header.Get("X-Operator") == "yes" }})
	req, _ := http.NewRequest(http.MethodGet, "/api/runs/"+plain+"?raw=1", nil)
	req.Header.Set("X-Operator", "yes")
	code, body = serve(operator, req)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Contains(t, string(body), `"raw":"the test agent fails"`)
	var cfgBody struct {
		RawFailures bool `json:"rawFailures"`
	}
	_, body = getRaw(t, hooked, "/api/config")
	require.NoError(t, json.Unmarshal(body, &cfgBody))
	require.False(t, cfgBody.RawFailures)
	_, body = getRaw(t, h, "/api/config")
	require.NoError(t, json.Unmarshal(body, &cfgBody))
	require.True(t, cfgBody.RawFailures)

	// The runs list: each failed row's error, and the code filter.
	var rows []errorRow
	require.Eventually(t, func() bool {
		rows = listRuns(t, h, "q="+url.QueryEscape(coded))
		return len(rows) == 1 && rows[0].Status == "failed"
	}, 20*time.Second, 100*time.Millisecond)
	require.NotNil(t, rows[0].Error)
	require.Equal(t, "REASON_MAX_STEPS_REACHED", rows[0].Error.Code)
	require.Equal(t, codedFailMessage, rows[0].Error.Message)
	rows = listRuns(t, h, "code=REASON_MAX_STEPS_REACHED&agent="+codedFailWorkflow)
	require.True(t, slices.ContainsFunc(rows, func(r errorRow) bool { return r.RunID == coded }))
	for _, r := range rows {
		require.Equal(t, "REASON_MAX_STEPS_REACHED", r.Error.Code)
	}
	require.Empty(t, listRuns(t, h, "code=EXECUTION_FAILED&q="+url.QueryEscape(coded)))
	require.Len(t, listRuns(t, h, "code=EXECUTION_FAILED&q="+url.QueryEscape(plain)), 1)
	code, body = getRaw(t, h, "/api/runs?code=not-a-code")
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	require.Equal(t, "INVALID_REQUEST", failureOf(t, body))
	require.Contains(t, string(body), "code must be a Kortyx error code such as EXECUTION_FAILED")

	// A failed tool call: the tool's own error text, with the descriptor's code.
	sup := start("support", `"Where is order A-9999?"`)
	tr = getTrace(t, h, "/api/runs/"+sup)
	i := slices.IndexFunc(tr.Entries, func(e traceEntry) bool { return e.Kind == "tool" })
	require.GreaterOrEqual(t, i, 0)
	tool := tr.Entries[i]
	require.Equal(t, "lookup_order", tool.Tool)
	require.Equal(t, "no order A-9999", tool.Error)
	require.Empty(t, tool.Result, "the error is not repeated as a result")
	require.Equal(t, &traceFailure{Code: "EXECUTION_FAILED", Message: "no order A-9999", Activity: "kortyx.Tool", Attempt: 1}, tool.Failure)
}

func getTraceBody(t *testing.T, h http.Handler, path string) []byte {
	t.Helper()
	code, body := getRaw(t, h, path)
	require.Equal(t, http.StatusOK, code, "%s", body)
	return body
}

func serve(h http.Handler, r *http.Request) (int, []byte) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

// A run whose MCP server refuses connections: while kortyx.ListTools retries, the trace shows it
// as a pending internal activity of its node with its attempt, its last failure and its next
// attempt (DescribeWorkflowExecution's pending activities).
func TestTraceShowsPendingActivity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, _ := failureStack(t, ctx, "web-pending", false)
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: mcpDownWorkflow, Input: json.RawMessage(`"hi"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
	require.NoError(t, err)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), run.GetID(), "", "the test is over") }()
	var pending traceEntry
	require.Eventually(t, func() bool {
		tr := getTrace(t, h, "/api/runs/"+run.GetID())
		for _, e := range tr.Entries {
			if e.Pending != nil && e.Pending.Attempt >= 3 && e.Pending.LastFailure != nil {
				pending = e
				return true
			}
		}
		return false
	}, 60*time.Second, 250*time.Millisecond)
	require.Equal(t, "activity", pending.Kind)
	require.Equal(t, "kortyx.ListTools", pending.Activity)
	require.True(t, pending.Internal)
	require.Equal(t, "agent", pending.Node)
	require.Equal(t, pending.Pending.Attempt, pending.Attempts)
	require.Equal(t, 0, pending.Pending.MaximumAttempts, "no attempt limit: bounded by its schedule-to-close timeout")
	require.NotNil(t, pending.Pending.ExpiresAt)
	require.Contains(t, []string{"scheduled", "started"}, pending.Pending.State)
	if pending.Pending.State == "scheduled" { // waiting for its next attempt
		require.NotNil(t, pending.Pending.NextAttemptAt)
	}
	lf := pending.Pending.LastFailure
	require.Equal(t, "EXECUTION_FAILED", lf.Code)
	require.Equal(t, refusedMessage, lf.Message)
	require.Equal(t, "kortyx.ListTools", lf.Activity)
	require.Equal(t, "agent", lf.Node)
	require.Empty(t, lf.Raw)
	// The raw cause, for an operator: the connection refused.
	tr := getTrace(t, h, "/api/runs/"+run.GetID()+"?raw=1")
	i := slices.IndexFunc(tr.Entries, func(e traceEntry) bool { return e.Pending != nil })
	require.GreaterOrEqual(t, i, 0)
	require.Contains(t, tr.Entries[i].Pending.LastFailure.Raw, "connection refused")
}

// A child that asks a question is named in the inbox (the child run and its agent, with the
// root that presents it) and drawn, waiting, in its parent's trace; the runs list, its own
// trace, the parent's trace and the inbox give it the same status.
func TestChildThatAsksIsNamed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, _ := failureStack(t, ctx, "web-child-asks", false)
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: research.WorkflowID, Input: json.RawMessage(`"AI agents"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
	require.NoError(t, err)
	type inboxItem struct {
		RunID string `json:"runId"`
		Agent string `json:"agent"`
		Asker *struct {
			RunID       string `json:"runId"`
			Agent       string `json:"agent"`
			Node        string `json:"node"`
			ParentRunID string `json:"parentRunId"`
		} `json:"asker"`
	}
	var inbox []inboxItem
	require.Eventually(t, func() bool {
		code, body := getRaw(t, h, "/api/interrupts?q="+url.QueryEscape(run.GetID()))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.NoError(t, json.Unmarshal(body, &inbox), "%s", body)
		return len(inbox) == 1 && inbox[0].Asker != nil
	}, 30*time.Second, 200*time.Millisecond)
	it := inbox[0]
	require.Equal(t, run.GetID(), it.RunID, "answered at the root")
	require.Equal(t, research.WorkflowID, it.Agent)
	require.Equal(t, research.TopicWorkflowID, it.Asker.Agent)
	require.Equal(t, run.GetID(), it.Asker.ParentRunID)
	require.NotEqual(t, run.GetID(), it.Asker.RunID)
	child := it.Asker.RunID

	// The parent's trace draws the asking child, waiting; the finished ones completed.
	tr := getTrace(t, h, "/api/runs/"+run.GetID())
	require.Equal(t, "waiting", tr.Status)
	statuses := map[string]string{}
	for _, e := range tr.Entries {
		if e.Kind == "child" {
			statuses[e.ChildRunID] = e.Status
		}
	}
	require.Len(t, statuses, 3, "%v", statuses)
	require.Equal(t, "waiting", statuses[child])
	n := 0
	for id, s := range statuses {
		if id != child {
			require.Equal(t, "completed", s)
			n++
		}
	}
	require.Equal(t, 2, n)
	// Its own trace and the runs list agree.
	require.Equal(t, "waiting", getTrace(t, h, "/api/runs/"+url.PathEscape(child)).Status)
	rows := listRuns(t, h, "q="+url.QueryEscape(child))
	require.Len(t, rows, 1)
	require.Equal(t, "waiting", rows[0].Status)
	waiting := listRuns(t, h, "status=waiting&agent="+research.TopicWorkflowID)
	require.True(t, slices.ContainsFunc(waiting, func(r errorRow) bool { return r.RunID == child }), "the waiting filter finds the child")
	running := listRuns(t, h, "status=running&agent="+research.TopicWorkflowID)
	require.False(t, slices.ContainsFunc(running, func(r errorRow) bool { return r.RunID == child }), "the running filter does not")
	_ = tc.TerminateWorkflow(ctx, run.GetID(), "", "the test is over")
}
