package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/stretchr/testify/require"
)

// sharedTurn is one order turn of the support agent in a session of its own, on the Kortyx chat
// route (even turns) or the AI SDK's (odd turns), with headers. It returns the budget question's
// interrupt chunk (chat) or the kortyx_ask tool part (AI SDK) if the turn asked, and the
// limit-reached chunk's budget status.
type sharedTurn struct {
	wire    string
	session string
	asked   *contracts.Chunk
	aiAsk   map[string]any
	budget  *contracts.BudgetStatus
	last    int64
	text    string
	chunks  []contracts.Chunk
	rawBody string
}

func orderTurnOn(t *testing.T, api string, i int, prefix string, headers ...string) sharedTurn {
	t.Helper()
	order := "Where is my order A-1002?"
	if i%2 == 0 {
		st := sharedTurn{wire: "chat", session: fmt.Sprintf("%s-chat-%d", prefix, i)}
		r := mpChat(t, api, prompt(st.session, "t1", support.WorkflowID, order), headers...)
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		for _, e := range r.Events[:len(r.Events)-1] {
			var c contracts.Chunk
			require.NoError(t, json.Unmarshal([]byte(e.Data), &c))
			st.chunks = append(st.chunks, c)
			if e.ID != "" {
				fmt.Sscan(e.ID, &st.last)
			}
			switch c.Type {
			case contracts.ChunkInterrupt:
				st.asked = &c
			case contracts.ChunkLimitReached:
				st.budget = c.Budget
			}
		}
		st.text = sessions.Buffer(st.chunks).Text
		return st
	}
	st := sharedTurn{wire: "aisdk", session: fmt.Sprintf("%s-ui-%d", prefix, i)}
	r := mpPost(t, api+"/api/ui/chat", map[string]any{"id": st.session, "trigger": "submit-message",
		"messages": []map[string]any{{"id": "m1", "role": "user", "parts": []map[string]any{{"type": "text", "text": order}}}}}, headers...)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	st.rawBody = r.Body
	for _, d := range sseData(r.Body) {
		var p map[string]any
		if json.Unmarshal([]byte(d), &p) != nil {
			continue
		}
		switch {
		case p["type"] == "tool-input-available" && p["toolName"] == "kortyx_ask":
			st.aiAsk = p
		case p["type"] == "text-delta":
			st.text += p["delta"].(string)
		}
	}
	return st
}

// ledgerView reads a shared budget's ledger through the Studio's API.
func ledgerView(t *testing.T, api, scope, key string) protocol.LedgerView {
	t.Helper()
	res, err := http.Get(api + "/api/budgets/" + scope + "/" + key)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, http.StatusOK, res.StatusCode, string(b))
	}
	var v protocol.LedgerView
	require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
	return v
}

// settledLedger waits until the ledger of scope's key has settled runs runs (a run settles
// with its ledger after its response's last chunk) and returns its view.
func settledLedger(t *testing.T, api, scope, key string, runs int) protocol.LedgerView {
	t.Helper()
	var v protocol.LedgerView
	require.Eventually(t, func() bool {
		v = ledgerView(t, api, scope, key)
		return v.Settled >= runs
	}, 10*time.Second, 50*time.Millisecond, "the ledger's settled runs: want %d", runs)
	return v
}

// Issue 34, the agent scope: the worker's agent budget (KORTYX_AGENT_MAX_TOKENS=300) bounds the
// support agent's runs together, whatever session and wire they come from. Each order turn
// spends 26 tokens (two passes: 10 in and 0 out, 10 in and 6 out) and each turn runs in a
// session of its own, alternately on the Kortyx chat route and the AI SDK's; the turns go on
// until the agent's ledger cannot grant a pass its input and one output token, where the turn
// asks "Agent budget reached — Continue?" (on the AI SDK's wire: its kortyx_ask tool). After
// Continue, the turn ends as usual; the ledger, read through the Studio's API, counts every
// turn's 26 tokens once, and what Continue granted past the budget.
func TestAgentBudgetAcrossSessionsAndWires(t *testing.T) {
	tq := taskQueue(t)
	p := startProcess(t, tq, nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_AGENT_MAX_TOKENS=300", "KORTYX_WEB_PAGE=1")
	api := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	var st sharedTurn
	turns := 0
	for turns < 12 {
		st = orderTurnOn(t, api, turns, "agent")
		turns++
		if st.asked != nil || st.aiAsk != nil {
			break
		}
		require.Equal(t, orderText, st.text, "turn %d (%s)", turns, st.wire)
		if turns == 1 {
			// The first grant is the whole budget: its warning share is crossed at once.
			warn := firstOf(t, st.chunks, contracts.ChunkStatus)
			require.Equal(t, "Agent budget 80% used: 300 of 300 tokens", warn.Message)
			require.Equal(t, &contracts.BudgetStatus{Scope: "agent", Key: support.WorkflowID, Limit: "maxTokens", Tokens: 300, MaxTokens: 300}, warn.Budget)
		}
		// The run ended: it settled its 26 tokens with the ledger.
		v := settledLedger(t, api, contracts.ScopeAgent, support.WorkflowID, turns)
		require.Equal(t, 26*turns, v.SpentTokens, "turn %d", turns)
		require.Equal(t, turns, v.Settled)
		require.Empty(t, v.Live)
	}
	require.Greater(t, turns, 2, "the first turns fit in the agent's budget")
	require.Less(t, turns, 12, "the agent's budget asked within 12 turns")
	t.Logf("the agent's budget asked at turn %d (%s)", turns, st.wire)

	waiting := 0 // the AI SDK's turn that asked, still waiting
	if st.wire == "aisdk" {
		waiting = 1
		require.Equal(t, "Agent budget reached — Continue?", st.aiAsk["input"].(map[string]any)["question"], st.rawBody)
		// The next turn, on the chat route, asks the same.
		st = orderTurnOn(t, api, turns, "agent")
		turns++
		require.NotNil(t, st.asked)
	}
	in := interruptInput(t, *st.asked)
	require.Equal(t, "Agent budget reached — Continue?", in.Question)
	require.Equal(t, "budget-exhausted", in.ID)
	require.NotNil(t, st.budget)
	require.Equal(t, "agent", st.budget.Scope)
	require.Equal(t, support.WorkflowID, st.budget.Key)
	require.Equal(t, "maxTokens", st.budget.Limit)
	require.Equal(t, 300, st.budget.MaxTokens)
	require.Equal(t, 300, st.budget.Tokens, "the ledger granted all of its budget")

	// While the turns wait, their runs hold what they were granted.
	v := ledgerView(t, api, contracts.ScopeAgent, support.WorkflowID)
	require.Len(t, v.Live, 1+waiting)
	require.Equal(t, 300, v.Tokens)

	afterLookup := false
	for _, c := range st.chunks {
		afterLookup = afterLookup || c.Type == contracts.ChunkToolCallStart
	}
	chunks, _ := exactly(t, mpChat(t, api, resumeBody(st.session, "t2", *st.asked, "", map[string]any{"selected": "continue"})), st.last,
		tailOf(orderTurn, afterLookup)...)
	require.Equal(t, orderText, sessions.Buffer(chunks).Text)
	v = settledLedger(t, api, contracts.ScopeAgent, support.WorkflowID, turns-waiting)
	require.Len(t, v.Live, waiting)
	require.Equal(t, 26*(turns-waiting), v.SpentTokens, "every ended turn's passes counted once, the last one's too")
	require.Equal(t, turns-waiting, v.Settled)
	require.Positive(t, v.OverTokens, "Continue granted past the budget")
	// Continue did not raise the budget: the next turn, in another session, asks again.
	next := orderTurnOn(t, api, turns+1, "agent")
	require.True(t, next.asked != nil || next.aiAsk != nil, "the agent's budget is still used up")
	require.Equal(t, "agent", v.Scope)
	require.Equal(t, 300, v.Budget.MaxTokens)

	// The Studio's list of shared budgets has the ledger.
	res, err := http.Get(api + "/api/budgets?scope=agent")
	require.NoError(t, err)
	var list struct {
		Budgets []protocol.LedgerView `json:"budgets"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&list))
	require.NoError(t, res.Body.Close())
	keys := []string{}
	for _, b := range list.Budgets {
		keys = append(keys, b.Scope+"/"+b.Key)
	}
	require.Contains(t, keys, "agent/"+support.WorkflowID)
	// The run's trace shows what it used of the agent's budget.
	res, err = http.Get(api + "/api/runs/" + runOfSession(t, st.session))
	require.NoError(t, err)
	var trace struct {
		Budget struct {
			Scopes []contracts.ScopeSpend `json:"scopes"`
		} `json:"budget"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&trace))
	require.NoError(t, res.Body.Close())
	require.Len(t, trace.Budget.Scopes, 1)
	require.Equal(t, 26, trace.Budget.Scopes[0].Tokens)
	require.Equal(t, "agent", trace.Budget.Scopes[0].Scope)
	recordHistory(t, tc, "ledger-agent-run", runOfSession(t, st.session))
	recordHistory(t, tc, "ledger-agent", protocol.LedgerID(tq, contracts.ScopeAgent, support.WorkflowID, ""))
	// A bad scope is a 400.
	res, err = http.Get(api + "/api/budgets/team/x")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}

// Issue 34, the tenant scope: the worker's tenant budget (KORTYX_TENANT_MAX_TOKENS=300) bounds
// the runs of one tenant, the identity the API's wires take from the X-Tenant header
// (KORTYX_TENANT_HEADER; each session's owner), on the chat route and the AI SDK's. Tenant
// acme's turns go on until its budget asks; tenant globex's turn and a turn without a tenant
// are not bound by acme's; and a run a plain Temporal client starts for acme
// (RunInput.Tenant) asks the same question.
func TestTenantBudgetAcrossWiresAndTemporalClient(t *testing.T) {
	tq := taskQueue(t)
	p := startProcess(t, tq, nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_TENANT_MAX_TOKENS=300", "KORTYX_TENANT_HEADER=X-Tenant", "KORTYX_WEB_PAGE=1")
	api := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)
	require.Contains(t, p.log.String(), `msg="kortyx: the HTTP API takes the caller's identity from a request header: only a proxy that authenticates callers may set it" header=X-Tenant`,
		"the API says loudly that it trusts the header")

	turns := 0
	var st sharedTurn
	for turns < 12 {
		st = orderTurnOn(t, api, turns, "acme", "X-Tenant: acme")
		turns++
		if st.asked != nil || st.aiAsk != nil {
			break
		}
		require.Equal(t, orderText, st.text, "turn %d (%s)", turns, st.wire)
	}
	require.Greater(t, turns, 2)
	require.Less(t, turns, 12)
	if st.wire == "chat" {
		require.Equal(t, "Tenant budget reached — Continue?", interruptInput(t, *st.asked).Question)
		require.Equal(t, &contracts.BudgetStatus{Scope: "tenant", Key: "acme", Limit: "maxTokens", Tokens: 300, MaxTokens: 300, Reserve: st.budget.Reserve}, st.budget)
	} else {
		require.Equal(t, "Tenant budget reached — Continue?", st.aiAsk["input"].(map[string]any)["question"], st.rawBody)
	}
	v := settledLedger(t, api, contracts.ScopeTenant, "acme", turns-1)
	require.Equal(t, 26*(turns-1), v.SpentTokens)
	require.Len(t, v.Live, 1, "the waiting turn holds its grant")

	// Another tenant, and no tenant: not bound by acme's budget.
	other := orderTurnOn(t, api, 0, "globex", "X-Tenant: globex")
	require.Nil(t, other.asked)
	require.Equal(t, orderText, other.text)
	require.Equal(t, 26, settledLedger(t, api, contracts.ScopeTenant, "globex", 1).SpentTokens)
	none := orderTurnOn(t, api, 1, "nobody")
	require.Nil(t, none.aiAsk)
	require.Equal(t, orderText, none.text)
	// A session of acme refuses another owner's turn.
	r := mpChat(t, api, prompt("acme-chat-0", "other", support.WorkflowID, "hello"), "X-Tenant: globex")
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)

	// A plain Temporal client's run for acme asks the same question, and waits.
	b, _ := json.Marshal("Where is my order A-1002?")
	run, err := kortyx.StartRun(context.Background(), tc, contracts.RunInput{Workflow: support.WorkflowID, Input: b, Tenant: "acme"},
		kortyx.StartOptions{TaskQueue: tq, RunID: "tenant-acme-client"})
	require.NoError(t, err)
	var view contracts.RunView
	require.Eventually(t, func() bool {
		res, err := tc.QueryWorkflow(context.Background(), run.GetID(), "", contracts.StateQueryName)
		if err != nil || res.Get(&view) != nil {
			return false
		}
		return view.Pending != nil
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, "Tenant budget reached — Continue?", view.Pending.Input.Question)
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
	_, err = result(t, run)
	require.Error(t, err)
	// The cancelled run settled: only the waiting session turn holds a grant.
	require.Eventually(t, func() bool { return len(ledgerView(t, api, contracts.ScopeTenant, "acme").Live) == 1 }, 10*time.Second, 100*time.Millisecond)
}

// Issue 34: a declarative agent's own budget, from its YAML file (KORTYX_WORKFLOWS), with
// onBudgetExhausted "fail". Its budget of 10 tokens cannot hold the first pass's input: the
// pass's activity reserves at the agent's ledger and stops before the model, and the run fails
// with BUDGET_EXHAUSTED, having spent nothing; the ledger counts the run settled with 0 tokens.
// A fast-path agent's passes (local activities) reserve and settle the same way, and an agent
// budget with askAtWarn asks once at its warning share.
func TestYAMLAgentBudgetFails(t *testing.T) {
	dir := t.TempDir()
	desk, err := os.ReadFile(filepath.Join("testdata", "workflows", "desk.workflow.yaml"))
	require.NoError(t, err)
	capped := strings.Replace(string(desk), "id: desk\n", "id: capped-desk\nbudget: {maxTokens: 10, onBudgetExhausted: fail}\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "capped.workflow.yaml"), []byte(capped), 0o644))
	fast := strings.Replace(string(desk), "id: desk\n", "id: fast-desk\nfastPath: true\nbudget: {maxTokens: 100000}\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fast.workflow.yaml"), []byte(fast), 0o644))
	warn := strings.Replace(string(desk), "id: desk\n", "id: warn-desk\nbudget: {maxTokens: 100000, budgetWarnAt: 0.01, askAtWarn: true}\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "warn.workflow.yaml"), []byte(warn), 0o644))
	tq := taskQueue(t)
	p := startProcess(t, tq, nil, "KORTYX_WORKFLOWS="+dir)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	run := startRun(t, tc, tq, "capped-desk", "Where is my order A-1002?")
	_, err = result(t, run)
	require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "the agent budget of capped-desk is used up")
	models := 0
	for _, ev := range history(t, tc, run.GetID()).GetEvents() {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "kortyx.Model" {
			models++
		}
	}
	require.Equal(t, 1, models, "one pass activity, which reserved and stopped before the model")
	var v protocol.LedgerView
	require.Eventually(t, func() bool {
		res, err := tc.QueryWorkflow(context.Background(), protocol.LedgerID(tq, contracts.ScopeAgent, "capped-desk", ""), "", protocol.LedgerStateQuery)
		return err == nil && res.Get(&v) == nil && v.Settled == 1
	}, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, 0, v.SpentTokens)
	require.Equal(t, 10, v.Budget.MaxTokens)

	// The fast path: the passes are local activities, which reserve at the ledger the same way.
	run = startRun(t, tc, tq, "fast-desk", "Where is my order A-1002?")
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", res.State.Data["reply"])
	require.Eventually(t, func() bool {
		r, err := tc.QueryWorkflow(context.Background(), protocol.LedgerID(tq, contracts.ScopeAgent, "fast-desk", ""), "", protocol.LedgerStateQuery)
		return err == nil && r.Get(&v) == nil && v.Settled == 1
	}, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, res.State.Runtime.TokenUsage.Total, v.SpentTokens, "the ledger counts the run's usage")
	require.Positive(t, v.SpentTokens)

	// askAtWarn: the first pass's grant (a batch of 10,000 tokens) crosses the warning share of
	// 1 %, so the run asks once before its next pass; Continue goes on.
	run = startRun(t, tc, tq, "warn-desk", "Where is my order A-1002?")
	var view contracts.RunView
	require.Eventually(t, func() bool {
		r, err := tc.QueryWorkflow(context.Background(), run.GetID(), "", contracts.StateQueryName)
		return err == nil && r.Get(&view) == nil && view.Pending != nil
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "Agent budget almost used — Continue?", view.Pending.Input.Question)
	require.Equal(t, "budget-warning", view.Pending.Input.ID)
	require.NoError(t, kortyx.Respond(context.Background(), tc, run.GetID(), contracts.Response{Token: view.Pending.Token,
		RequestID: view.Pending.RequestID, Selected: []string{"continue"}}))
	res, err = result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Order A-1002 (coffee grinder) is shipped.", res.State.Data["reply"])
}
