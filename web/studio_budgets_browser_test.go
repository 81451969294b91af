package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/stretchr/testify/require"
)

// TestStudioShowsSharedBudgets (issue 34) runs one order turn of the support agent under the
// worker's agent budget, then opens the Studio in headless Chromium: the home page's Shared
// budgets panel shows the agent's ledger (the turn's 26 tokens of the budget, no run holding a
// grant) and the run's trace what the run used of the agent's budget and what it was granted.
func TestStudioShowsSharedBudgets(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stamp := time.Now().UnixNano()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("studio-budgets-%d", stamp), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true, WebPage: true, AgentBudget: contracts.ScopeBudget{MaxTokens: 1_000_000}}
	st := testenv.Run(t, ctx, cfg, chosen.Options())
	base := "http://" + st.HTTPAddr + "/"
	get := func(path string, out any) int {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		if out != nil && resp.StatusCode == http.StatusOK {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		}
		return resp.StatusCode
	}
	require.Equal(t, http.StatusNotFound, get("api/budgets/agent/support", nil), "no pass made under the budget yet")

	session := fmt.Sprintf("budgets-%d", stamp)
	b, _ := json.Marshal(map[string]any{"sessionId": session, "workflowId": "support",
		"messages": []map[string]any{{"role": "user", "content": "Where is my order A-1002?"}}})
	resp, err := http.Post(base+"api/chat", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ledger struct {
		Settled     int `json:"settled"`
		SpentTokens int `json:"spentTokens"`
	}
	require.Eventually(t, func() bool { return get("api/budgets/agent/support", &ledger) == http.StatusOK && ledger.Settled == 1 },
		20*time.Second, 100*time.Millisecond, "the turn's run settled with the agent's ledger")
	require.Equal(t, 26, ledger.SpentTokens)

	open := browser(t, ctx, base)
	p := open(t, "#/home")
	p.waitJS(`!!document.querySelector('#home-budgets li.budget[data-key="support"]')`)
	require.Equal(t, "Agent support: 26 of 1000000 tokens · 0 runs holding 0 tokens", p.text(`#home-budgets li.budget[data-key="support"]`))

	var runs struct {
		Runs []struct {
			RunID string `json:"runId"`
		} `json:"runs"`
	}
	require.Equal(t, http.StatusOK, get("api/runs?agent=support&session="+session, &runs))
	require.Len(t, runs.Runs, 1)
	p = open(t, "#/runs/"+runs.Runs[0].RunID)
	p.waitJS(`!!document.querySelector("#trace-body .figure.budget-agent")`)
	require.Equal(t, "Agent budget (support)", p.text("#trace-body .figure.budget-agent .figure-label"))
	require.Equal(t, "this run 26 tokens of 100000 granted · ledger", p.text("#trace-body .figure.budget-agent .figure-value"))
	require.False(t, p.bool(`!!document.querySelector("#trace-body .figure.budget")`), "no run budget: no Budget figure")
}
