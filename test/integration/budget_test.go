package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/support"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/stretchr/testify/require"
)

// Issue 34, run budgets through two wires of the worker program: its default token budget
// (KORTYX_MAX_TOKENS) on the Kortyx chat route, and a run's own money budget started by a plain
// Temporal client, priced by the worker's price table (KORTYX_PRICES, a YAML file) in its
// currency (KORTYX_CURRENCY).
func TestRunBudgetsThroughChatAndTemporalClient(t *testing.T) {
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	require.NoError(t, os.WriteFile(prices, []byte("openai:gpt-4.1-mini: {input: 1000, output: 2000}\n"), 0o644))
	tq := taskQueue(t)
	p := startProcess(t, tq, nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_MAX_TOKENS=5",
		"KORTYX_PRICES="+prices, "KORTYX_CURRENCY=EUR")
	api := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	t.Run("chat: a budget of 5 tokens asks before each model pass", func(t *testing.T) {
		// The order question: the lookup pass, then the answer pass. Each is asked for, and
		// each Continue gives what the pass needs; the tool runs once, the answer is whole.
		budgetAsk := []string{"session", "limit-reached", "interrupt", "checkpoint", "done"}
		chunks, last := exactly(t, mpChat(t, api, prompt("budget-chat", "t1", support.WorkflowID, "Where is my order A-1002?")), 0, budgetAsk...)
		ask := firstOf(t, chunks, contracts.ChunkInterrupt)
		in := interruptInput(t, ask)
		require.Equal(t, "Budget reached — Continue?", in.Question)
		require.Equal(t, "budget-exhausted", in.ID)
		require.Equal(t, []string{"continue", "stop"}, []string{in.Options[0].ID, in.Options[1].ID})
		lr := firstOf(t, chunks, contracts.ChunkLimitReached)
		require.Equal(t, "maxTokens", lr.Limit)
		require.Equal(t, &contracts.BudgetStatus{Scope: "run", Limit: "maxTokens", MaxTokens: 5, Reserve: lr.Budget.Reserve}, lr.Budget)
		require.Greater(t, lr.Budget.Reserve, 5.0, "the pass's input alone is over the budget")
		require.Equal(t, fmt.Sprintf("Continue with %d more tokens", int(lr.Budget.Reserve)-5), in.Options[0].Label, "what the pass needs beyond the budget")

		chunks, last = exactly(t, mpChat(t, api, resumeBody("budget-chat", "t2", ask, "", map[string]any{"selected": "continue"})), last,
			"session", "tool-call-start", "tool-call-result", "limit-reached", "interrupt", "checkpoint", "done")
		ask = firstOf(t, chunks, contracts.ChunkInterrupt)
		require.Equal(t, 10, firstOf(t, chunks, contracts.ChunkLimitReached).Budget.Tokens, "the lookup pass's usage (10 in, 0 out)")

		chunks, _ = exactly(t, mpChat(t, api, resumeBody("budget-chat", "t3", ask, "", map[string]any{"selected": "continue"})), last, append([]string{"session"}, orderTurn[3:]...)...)
		require.Equal(t, orderText, sessions.Buffer(chunks).Text)
		// Replayed by TestReplayRecordedHistories on a registry without the worker's budget or
		// prices: the run replays from what it recorded at its start.
		recordHistory(t, tc, "budget-chat-run", runOfSession(t, "budget-chat"))
	})

	t.Run("temporal client: a money budget, priced in EUR", func(t *testing.T) {
		start := func(id string, l contracts.Limits) (contracts.RunResult, error) {
			b, _ := json.Marshal("Where is my order A-1002?")
			run, err := kortyx.StartRun(context.Background(), tc, contracts.RunInput{Workflow: support.WorkflowID, Input: b, Limits: &l},
				kortyx.StartOptions{TaskQueue: tq, RunID: id})
			require.NoError(t, err)
			return result(t, run)
		}
		// Enough for the turn: the spend is the fake model's usage, priced by the table.
		// The lookup pass (10 in, 0 out) and the answer (10 in, 6 out): 20 × 1000 + 6 × 2000
		// per million.
		res, err := start("budget-money-ok", contracts.Limits{MaxCost: 1, MaxTokens: 1_000_000})
		require.NoError(t, err)
		require.Equal(t, 26, res.State.Runtime.Spend.Tokens)
		require.InDelta(t, 0.032, res.State.Runtime.Spend.Cost, 1e-12)
		require.Equal(t, "EUR", res.State.Runtime.Spend.Currency)
		recordHistory(t, tc, "budget-money-run", "budget-money-ok")

		// Too little for the first pass, and "fail": BUDGET_EXHAUSTED, no model pass.
		_, err = start("budget-money-fail", contracts.Limits{MaxCost: 0.001, MaxTokens: 1_000_000, OnBudgetExhausted: "fail"})
		require.Equal(t, contracts.CodeBudgetExhausted, contracts.CodeOf(err), "%v", err)
		steps := statusSteps(t, history(t, tc, "budget-money-fail"))
		require.NotContains(t, steps, "activity:kortyx.Model")
		require.Equal(t, "failed", statusAttribute(t, tc, "budget-money-fail"))

		// A bad budget is refused with INVALID_INPUT.
		_, err = start("budget-money-bad", contracts.Limits{MaxCost: -1})
		require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err), "%v", err)
	})
}

// interruptInput decodes an interrupt chunk's question.
func interruptInput(t *testing.T, c contracts.Chunk) contracts.InterruptInput {
	t.Helper()
	var in contracts.InterruptInput
	require.NoError(t, json.Unmarshal(c.Input, &in))
	return in
}

// Issue 34, the session scope: the API's session budget (KORTYX_SESSION_MAX_TOKENS) bounds a
// chat session's turns together. Each order turn of the support agent spends 26 tokens (two
// passes: 10 in and 0 out, 10 in and 6 out); the session's turns go on until a pass cannot be
// granted under 200 tokens, where the turn asks "Session budget reached — Continue?" with the
// session's spend so far; Continue gives 200 more and the turn ends as usual, and so does the
// next one. Another session starts from nothing. Over the AI SDK's wire the same session budget
// asks at the same turn, as its kortyx_ask tool.
func TestSessionBudgetThroughChatAndAISDK(t *testing.T) {
	tq := taskQueue(t)
	p := startProcess(t, tq, nil, "KORTYX_HTTP_ADDR=127.0.0.1:0", "KORTYX_SESSION_MAX_TOKENS=200", "KORTYX_WEB_PAGE=1")
	api := p.apiURL(t)
	p.until(t, `msg="kortyx worker: polling task queue"`)

	order := "Where is my order A-1002?"
	var asked contracts.Chunk
	var lr contracts.Chunk
	var last int64
	turns := 0
	for turns < 12 && asked.Type == "" {
		turns++
		r := mpChat(t, api, prompt("sb-chat", fmt.Sprintf("t%d", turns), support.WorkflowID, order))
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		var chunks []contracts.Chunk
		for _, e := range r.Events[:len(r.Events)-1] {
			var c contracts.Chunk
			require.NoError(t, json.Unmarshal([]byte(e.Data), &c))
			chunks = append(chunks, c)
			if e.ID != "" {
				fmt.Sscan(e.ID, &last)
			}
		}
		for _, c := range chunks {
			switch c.Type {
			case contracts.ChunkInterrupt:
				asked = c
			case contracts.ChunkLimitReached:
				lr = c
			}
		}
		if asked.Type == "" {
			require.Equal(t, orderText, sessions.Buffer(chunks).Text, "turn %d", turns)
		}
	}
	require.NotEmpty(t, asked.Type, "the session's budget asked within 12 turns")
	require.Greater(t, turns, 1, "the first turns fit in the session's budget")
	in := interruptInput(t, asked)
	require.Equal(t, "Session budget reached — Continue?", in.Question)
	require.Equal(t, "session", lr.Budget.Scope)
	require.Equal(t, "maxTokens", lr.Budget.Limit)
	require.Equal(t, 200, lr.Budget.MaxTokens)
	spentBefore := 26 * (turns - 1)
	require.Contains(t, []int{spentBefore, spentBefore + 10}, lr.Budget.Tokens, "the earlier turns' spend, and this turn's first pass if it ran")
	require.Equal(t, "Continue with 200 more tokens", in.Options[0].Label)
	t.Logf("the session's budget asked at turn %d, with %d tokens spent", turns, lr.Budget.Tokens)

	chunks, _ := exactly(t, mpChat(t, api, resumeBody("sb-chat", "answer", asked, "", map[string]any{"selected": "continue"})), last,
		tailOf(orderTurn, lr.Budget.Tokens > spentBefore)...)
	require.Equal(t, orderText, sessions.Buffer(chunks).Text)
	// The next turn: within the session's budget and its allowance.
	chunks, _ = exactly(t, mpChat(t, api, prompt("sb-chat", "next", support.WorkflowID, order)), 0, orderTurn...)
	require.Equal(t, orderText, sessions.Buffer(chunks).Text)
	// The session's view (the Studio's session page reads it) has the budget, with the
	// allowance, and every turn's spend.
	res, err := http.Get(api + "/api/sessions/sb-chat")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	var view struct {
		Budget contracts.Spend `json:"budget"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&view))
	require.NoError(t, res.Body.Close())
	require.Equal(t, contracts.Spend{Tokens: 26 * (turns + 1), MaxTokens: 400}, view.Budget)
	// Another session starts from nothing.
	chunks, _ = exactly(t, mpChat(t, api, prompt("sb-other", "t1", support.WorkflowID, order)), 0, orderTurn...)
	require.Equal(t, orderText, sessions.Buffer(chunks).Text)

	// The AI SDK's wire: the same budget asks at the same turn.
	for i := 1; i <= turns; i++ {
		code, body := postJSON(t, api+"/api/ui/chat", fmt.Sprintf(`{"id":"sb-ui","trigger":"submit-message","messages":[{"id":"m%d","role":"user","parts":[{"type":"text","text":%q}]}]}`, i, order))
		require.Equal(t, http.StatusOK, code, body)
		var ask map[string]any
		for _, d := range sseData(body) {
			var p map[string]any
			if json.Unmarshal([]byte(d), &p) == nil && p["type"] == "tool-input-available" && p["toolName"] == "kortyx_ask" {
				ask = p
			}
		}
		if i < turns {
			require.Nil(t, ask, "turn %d: %s", i, body)
			continue
		}
		require.NotNil(t, ask, body)
		require.Equal(t, "kortyx_ask", ask["toolName"])
		require.Equal(t, "Session budget reached — Continue?", ask["input"].(map[string]any)["question"])
	}
}

// tailOf is the response to the answer of a budget question asked in an order turn: the rest of
// the turn (with its tool call when the question came before the first pass).
func tailOf(turn []string, afterLookup bool) []string {
	if afterLookup {
		return append([]string{"session"}, turn[3:]...)
	}
	return turn
}
