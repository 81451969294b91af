package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// failureOf decodes a JSON error's failure code.
func failureOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Failure struct {
			Code string `json:"code"`
		} `json:"failure"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e.Failure.Code
}

func post(t *testing.T, h http.Handler, path, body string) (int, []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w.Code, w.Body.Bytes()
}

// Every JSON route asks the authorization hook, with what the request reaches; without a hook
// they are closed unless AllowUnauthenticated, while the page itself is served.
func TestStudioAuthorization(t *testing.T) {
	closed := web.Handler(web.Options{Client: tc})
	for _, path := range []string{"/api/config", "/api/runs", "/api/sessions", "/api/interrupts", "/api/cost", "/api/workflows", "/api/runs/r1", "/api/sessions/s1/transcript"} {
		code, body := getRaw(t, closed, path)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", path, body)
		require.Equal(t, "UNAUTHORIZED", failureOf(t, body), path)
	}
	code, body := post(t, closed, "/api/runs/r1/answer", `{}`)
	require.Equal(t, http.StatusUnauthorized, code, "%s", body)
	code, _ = getRaw(t, closed, "/")
	require.Equal(t, http.StatusOK, code, "the page has no data of its own")

	var mu sync.Mutex
	var seen []sessions.Access
	h := web.Handler(web.Options{Client: tc, Authorize: func(r *http.Request, a sessions.Access) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, a)
		if a.SessionID == "blocked" || a.RunID == "blocked" {
			return errors.New("not yours")
		}
		return nil
	}})
	code, body = getRaw(t, h, "/api/sessions/blocked/transcript")
	require.Equal(t, http.StatusForbidden, code, "%s", body)
	require.Equal(t, "FORBIDDEN", failureOf(t, body))
	require.NotContains(t, string(body), "not yours", "the hook's text stays in the log")
	code, body = post(t, h, "/api/runs/blocked/answer", `{"token":"t","requestId":"r"}`)
	require.Equal(t, http.StatusForbidden, code, "%s", body)
	code, _ = getRaw(t, h, "/api/runs?session=s2")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []sessions.Access{
		{Wire: "web", Action: sessions.ActionRead, SessionID: "blocked"},
		{Wire: "web", Action: sessions.ActionAnswer, RunID: "blocked"},
		{Wire: "web", Action: sessions.ActionRead, SessionID: "s2"},
	}, seen)
}

type spent struct {
	Usage struct {
		Input  int `json:"input"`
		Output int `json:"output"`
		Total  int `json:"total"`
	} `json:"usage"`
	Cost struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

// The runs list, the cost report and a session's transcript price each run's tokens from its
// history, like its trace; sessions count their turns. All of it from a handler made after the
// runs ended.
func TestStudioCostTranscriptAndTurns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	tq := fmt.Sprintf("web-studio-cost-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, chosen.Options())
	svc, err := sessions.New(sessions.Options{Client: tc, TaskQueue: tq})
	require.NoError(t, err)
	session := fmt.Sprintf("studio-cost-%d", time.Now().UnixNano())
	prompts := []string{`"Where is order A-1002?"`, `"And what about order A-1001?"`}
	var runIDs []string
	for i, p := range prompts {
		ts, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: fmt.Sprint("t", i), Workflow: "support", Input: json.RawMessage(p)})
		require.NoError(t, err)
		require.NoError(t, tc.GetWorkflow(ctx, ts.RunID, "").Get(ctx, nil))
		runIDs = append(runIDs, ts.RunID)
	}
	prices := map[string]web.Price{"openai:gpt-4.1-mini": {Input: 2, Output: 8}}
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Prices: prices, DefaultModel: "openai:gpt-4.1-mini"})
	decode := func(path string, v any) {
		t.Helper()
		code, body := getRaw(t, h, path)
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		require.NoError(t, json.Unmarshal(body, v), "%s", body)
	}
	traces := map[string]spent{}
	var sum spent
	for _, id := range runIDs {
		var tr spent
		decode("/api/runs/"+id, &tr)
		require.Positive(t, tr.Usage.Input)
		require.InDelta(t, float64(tr.Usage.Input*2+tr.Usage.Output*8)/1e6, tr.Cost.Total, 1e-12)
		traces[id] = tr
		sum.Usage.Input += tr.Usage.Input
		sum.Usage.Output += tr.Usage.Output
		sum.Usage.Total += tr.Usage.Total
		sum.Cost.Total += tr.Cost.Total
	}

	var page struct {
		Runs []struct {
			RunID string `json:"runId"`
			spent
		} `json:"runs"`
	}
	require.Eventually(t, func() bool {
		decode("/api/runs?status=completed&session="+url.QueryEscape(session), &page)
		return len(page.Runs) == 2
	}, 30*time.Second, 200*time.Millisecond)
	for _, r := range page.Runs {
		require.Equal(t, traces[r.RunID], r.spent, "the list prices a run as its trace does")
	}

	for _, groupBy := range []string{"agent", "session"} {
		var rep struct {
			GroupBy string `json:"groupBy"`
			Rows    []struct {
				Key  string `json:"key"`
				Runs int    `json:"runs"`
				spent
			} `json:"rows"`
			Total struct {
				Runs int `json:"runs"`
				spent
			} `json:"total"`
			Truncated bool `json:"truncated"`
		}
		decode("/api/cost?groupBy="+groupBy+"&session="+url.QueryEscape(session), &rep)
		require.Equal(t, groupBy, rep.GroupBy)
		require.Len(t, rep.Rows, 1)
		key := map[string]string{"agent": "support", "session": session}[groupBy]
		require.Equal(t, key, rep.Rows[0].Key)
		require.Equal(t, 2, rep.Rows[0].Runs)
		require.Equal(t, sum.Usage, rep.Rows[0].Usage)
		require.InDelta(t, sum.Cost.Total, rep.Rows[0].Cost.Total, 1e-12)
		require.Equal(t, 2, rep.Total.Runs)
		require.Equal(t, sum.Usage, rep.Total.Usage)
		require.False(t, rep.Truncated)
	}
	code, body := getRaw(t, h, "/api/cost?groupBy=model")
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	require.Equal(t, "INVALID_REQUEST", failureOf(t, body))
	require.Contains(t, string(body), "groupBy must be agent or session")

	var tr struct {
		SessionID string `json:"sessionId"`
		Turns     []struct {
			RunID   string          `json:"runId"`
			Agent   string          `json:"agent"`
			Status  string          `json:"status"`
			Input   json.RawMessage `json:"input"`
			Entries []struct {
				Kind string `json:"kind"`
				Text string `json:"text"`
				Tool string `json:"tool"`
			} `json:"entries"`
			spent
		} `json:"turns"`
		Truncated bool `json:"truncated"`
	}
	decode("/api/sessions/"+url.PathEscape(session)+"/transcript", &tr)
	require.Equal(t, session, tr.SessionID)
	require.Len(t, tr.Turns, 2)
	for i, turn := range tr.Turns {
		require.Equal(t, runIDs[i], turn.RunID, "oldest first")
		require.Equal(t, "support", turn.Agent)
		require.Equal(t, "completed", turn.Status)
		require.JSONEq(t, prompts[i], string(turn.Input))
		require.Equal(t, traces[turn.RunID], turn.spent)
		var kinds []string
		var text string
		for _, e := range turn.Entries {
			kinds = append(kinds, e.Kind)
			text += e.Text
		}
		require.Equal(t, []string{"started", "model", "tool", "model", "node", "checkpoint", "ended"}, kinds)
		require.Equal(t, []string{"Order A-1002 (coffee grinder) is shipped.", "Order A-1001 (espresso machine) is delivered."}[i], text,
			"the model's text is in the transcript")
	}

	var list []web.SessionItem
	decode("/api/sessions", &list)
	var found *web.SessionItem
	for i := range list {
		if list[i].SessionID == session {
			found = &list[i]
		}
	}
	require.NotNil(t, found)
	require.Equal(t, 2, found.Turns)
	require.Equal(t, "support", found.Agent)
}

// POST /api/runs/{id}/answer answers a waiting run: a run of no session by its respond update,
// a session's run as the session's answer turn (the chat route's operation). A refused answer
// is a 400 and changes nothing.
func TestStudioAnswerRoute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprintf("web-studio-answer-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true},
		app.Options{Register: registerAgents})
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	pending := func(runID string) *contracts.PendingRequest {
		t.Helper()
		var p *contracts.PendingRequest
		require.Eventually(t, func() bool {
			v, err := kortyx.Query(ctx, tc, runID)
			p = v.Pending
			return err == nil && p != nil
		}, 20*time.Second, 100*time.Millisecond)
		return p
	}
	answer := func(runID string, body any) (int, []byte) {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		return post(t, h, "/api/runs/"+runID+"/answer", string(b))
	}

	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)}, kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	p := pending(run.GetID())
	for _, c := range []struct {
		body string
		code string
	}{
		{`not json`, "INVALID_REQUEST"},
		{`{"value":{"quantity":1}}`, "INVALID_REQUEST"},
		{`{"token":"` + p.Token + `","requestId":"` + p.RequestID + `","value":{"quantity":0,"speed":"slow"}}`, "INVALID_RESPONSE"},
	} {
		code, body := post(t, h, "/api/runs/"+run.GetID()+"/answer", c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.body, body)
		require.Equal(t, c.code, failureOf(t, body), "%s", body)
	}
	require.Equal(t, p.RequestID, pending(run.GetID()).RequestID, "a refused answer changes nothing")
	code, body := post(t, h, "/api/runs/run-no-such-run/answer", `{"token":"t","requestId":"r","text":"x"}`)
	require.Equal(t, http.StatusNotFound, code, "%s", body)
	require.Equal(t, "NOT_FOUND", failureOf(t, body))
	code, body = getRaw(t, h, "/api/runs/"+run.GetID())
	require.Equal(t, http.StatusOK, code, "%s", body)
	var waitingAt struct {
		Status string `json:"status"`
		Node   string `json:"node"`
	}
	require.NoError(t, json.Unmarshal(body, &waitingAt))
	require.Equal(t, "waiting", waitingAt.Status)
	require.Equal(t, "agent", waitingAt.Node, "the trace says where a waiting run waits")
	code, body = answer(run.GetID(), contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"quantity":2,"speed":"express"}`)})
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.JSONEq(t, `{"runId":"`+run.GetID()+`","requestId":"`+p.RequestID+`"}`, string(body))
	extras := pending(run.GetID())
	require.Equal(t, "Which extras?", extras.Input.Question)
	code, body = answer(run.GetID(), contracts.Response{Token: extras.Token, RequestID: extras.RequestID, Selected: []string{"gift"}})
	require.Equal(t, http.StatusOK, code, "%s", body)
	var res contracts.RunResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, "Shipping 2, express, with gift.", res.State.UI.Message)

	// A session's run: the answer is the session's answer turn.
	svc, err := sessions.New(sessions.Options{Client: tc, TaskQueue: tq})
	require.NoError(t, err)
	session := fmt.Sprintf("studio-answer-%d", time.Now().UnixNano())
	ts, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t1", Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)})
	require.NoError(t, err)
	p = pending(ts.RunID)
	code, body = answer(ts.RunID, contracts.Response{Token: p.Token, RequestID: p.RequestID, Value: json.RawMessage(`{"quantity":1,"speed":"standard"}`)})
	require.Equal(t, http.StatusOK, code, "%s", body)
	var ar struct {
		RunID     string `json:"runId"`
		SessionID string `json:"sessionId"`
		RequestID string `json:"requestId"`
	}
	require.NoError(t, json.Unmarshal(body, &ar))
	require.Equal(t, ts.RunID, ar.RunID)
	require.Equal(t, session, ar.SessionID)
	require.Equal(t, p.RequestID, ar.RequestID)
	extras = pending(ts.RunID)
	require.Equal(t, "Which extras?", extras.Input.Question)
	code, body = answer(ts.RunID, contracts.Response{Token: extras.Token, RequestID: extras.RequestID, Selected: []string{"track"}})
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.NoError(t, tc.GetWorkflow(ctx, ts.RunID, "").Get(ctx, &res))
	require.Equal(t, "Shipping 1, standard, with track.", res.State.UI.Message)
}

// A tool that runs as a local activity is in the trace from its marker: its result and
// attempt, marked local, without the arguments the marker does not record.
func TestTraceOfLocalToolCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	opts := chosen.Options()
	for i, tl := range opts.Tools {
		if tl.Name == "lookup_order" {
			opts.Tools[i] = tools.Local(tl)
		}
	}
	tq := fmt.Sprintf("web-local-tool-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, opts)
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`"Where is order A-1002?"`)},
		kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	code, body := getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true}), "/api/runs/"+run.GetID())
	require.Equal(t, http.StatusOK, code, "%s", body)
	var tr struct {
		ToolCalls int `json:"toolCalls"`
		Entries   []struct {
			Kind      string          `json:"kind"`
			Local     bool            `json:"local"`
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			Result    string          `json:"result"`
			Attempts  int             `json:"attempts"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(body, &tr))
	var kinds []string
	for _, e := range tr.Entries {
		kinds = append(kinds, e.Kind)
		if e.Kind == "tool" {
			require.True(t, e.Local)
			require.Empty(t, e.Tool)
			require.Empty(t, e.Arguments)
			require.Contains(t, e.Result, "A-1002")
			require.Equal(t, 1, e.Attempts)
		} else {
			require.False(t, e.Local, "%s", e.Kind)
		}
	}
	require.Equal(t, []string{"started", "model", "tool", "model", "ended"}, kinds)
	require.Equal(t, 1, tr.ToolCalls)
}

// A child run's question is asked at its root: the inbox lists it once, on the root, where it is
// answered.
func TestInboxListsAChildQuestionOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chosen, err := examples.Parse("research")
	require.NoError(t, err)
	tq := fmt.Sprintf("web-inbox-child-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, chosen.Options())
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: research.WorkflowID, Input: json.RawMessage(`"AI agents"`)},
		kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	var inbox []struct {
		RunID       string `json:"runId"`
		ParentRunID string `json:"parentRunId"`
		Agent       string `json:"agent"`
		Question    struct {
			RequestID string `json:"requestId"`
			Token     string `json:"token"`
			Question  string `json:"question"`
		} `json:"question"`
	}
	var body []byte
	require.Eventually(t, func() bool {
		var code int
		code, body = getRaw(t, h, "/api/interrupts?q="+url.QueryEscape(run.GetID()))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.NoError(t, json.Unmarshal(body, &inbox), "%s", body)
		return len(inbox) > 0
	}, 30*time.Second, 200*time.Millisecond)
	require.Len(t, inbox, 1, "%s", body)
	require.Equal(t, run.GetID(), inbox[0].RunID)
	require.Empty(t, inbox[0].ParentRunID)
	require.Equal(t, research.Question, inbox[0].Question.Question)
	code, body := post(t, h, "/api/runs/"+run.GetID()+"/answer", `{"token":"`+inbox[0].Question.Token+`","requestId":"`+inbox[0].Question.RequestID+`","selected":["no"]}`)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.NoError(t, run.Get(ctx, nil))
}

// An agent on the fast path: its model passes are read from their local-activity markers,
// marked local, with their text and tokens (priced as the worker's default model).
func TestTraceOfFastPathPasses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	opts := chosen.Options()
	opts.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		d, ok := reg.Lookup("support")
		require.True(t, ok)
		fast := *d
		fast.ID, fast.FastPath = "support-fast", true
		return reg.Add(&fast)
	}
	tq := fmt.Sprintf("web-fast-path-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, opts)
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "support-fast", Input: json.RawMessage(`"Where is order A-1002?"`)},
		kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Prices: map[string]web.Price{"openai:gpt-4.1-mini": {Input: 2, Output: 8}},
		DefaultModel: "openai:gpt-4.1-mini"})
	code, body := getRaw(t, h, "/api/runs/"+run.GetID())
	require.Equal(t, http.StatusOK, code, "%s", body)
	var tr struct {
		ModelPasses int `json:"modelPasses"`
		Usage       struct {
			Input  int `json:"input"`
			Output int `json:"output"`
		} `json:"usage"`
		Cost struct {
			Total float64 `json:"total"`
		} `json:"cost"`
		Entries []struct {
			Kind  string `json:"kind"`
			Local bool   `json:"local"`
			Text  string `json:"text"`
			Usage *struct {
				Input int `json:"input"`
			} `json:"usage"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(body, &tr))
	var kinds []string
	for _, e := range tr.Entries {
		kinds = append(kinds, e.Kind)
		if e.Kind == "model" {
			require.True(t, e.Local)
			require.NotNil(t, e.Usage)
			require.Positive(t, e.Usage.Input)
		}
	}
	require.Equal(t, []string{"started", "model", "tool", "model", "ended"}, kinds)
	require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", tr.Entries[3].Text)
	require.Equal(t, 2, tr.ModelPasses)
	require.Positive(t, tr.Usage.Input)
	require.InDelta(t, float64(tr.Usage.Input*2+tr.Usage.Output*8)/1e6, tr.Cost.Total, 1e-12)
}

// Issue 34: a run's trace shows its budget and its spend against it. A run under the worker's
// default money budget (recorded at its start, priced in EUR) that ended: the result's spend;
// a run of its own token budget waiting at the budget question: its state's spend, not final;
// a run that failed with BUDGET_EXHAUSTED: its own passes.
func TestTraceShowsBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	tq := fmt.Sprintf("web-budget-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true, Currency: "EUR",
		Prices: map[string]web.Price{"openai:gpt-4.1-mini": {Input: 1000, Output: 2000}}, Budget: contracts.Limits{MaxCost: 1}}, chosen.Options())
	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	budgetOf := func(id string) map[string]any {
		t.Helper()
		code, body := getRaw(t, h, "/api/runs/"+id)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var tr struct {
			Budget map[string]any `json:"budget"`
		}
		require.NoError(t, json.Unmarshal(body, &tr))
		return tr.Budget
	}
	start := func(l *contracts.Limits) client.WorkflowRun {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`"Where is order A-1002?"`), Limits: l},
			kortyx.StartOptions{TaskQueue: tq})
		require.NoError(t, err)
		return run
	}

	ended := start(nil)
	require.NoError(t, ended.Get(ctx, nil))
	// Two passes: 20 tokens in, 6 out, at 1000 and 2000 EUR per million.
	require.Equal(t, map[string]any{"maxCost": 1.0, "currency": "EUR", "tokens": 26.0, "cost": 0.032, "final": true}, budgetOf(ended.GetID()))

	waiting := start(&contracts.Limits{MaxTokens: 5})
	require.Eventually(t, func() bool { return isWaitingRun(ctx, waiting.GetID()) }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, map[string]any{"maxTokens": 5.0, "maxCost": 1.0, "currency": "EUR", "tokens": 0.0, "cost": 0.0, "final": false}, budgetOf(waiting.GetID()))
	require.NoError(t, tc.CancelWorkflow(ctx, waiting.GetID(), ""))

	failed := start(&contracts.Limits{MaxCost: 0.015, OnBudgetExhausted: contracts.BudgetFail})
	require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(failed.Get(ctx, nil)))
	b := budgetOf(failed.GetID())
	require.Equal(t, false, b["final"])
	require.Equal(t, 0.015, b["maxCost"])
}

// isWaitingRun reports whether the run's state query says it waits for an answer.
func isWaitingRun(ctx context.Context, id string) bool {
	v, err := kortyx.Query(ctx, tc, id)
	return err == nil && v.Status == contracts.StatusWaiting
}
