package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
)

// TestStudioOverview drives the home view, the Cost view, the graph's child workflows and
// node details, and the trace's folded payloads and compressed waits in headless Chromium.
func TestStudioOverview(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stamp := time.Now().UnixNano()
	agent := fmt.Sprintf("ov-%d", stamp)
	chosen, err := examples.Parse("support,research")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return reg.Add(overviewAgent(agent))
	}
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("studio-overview-%d", stamp), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true, WebPage: true, Prices: studioPrices}
	st := testenv.Run(t, ctx, cfg, o)
	base := "http://" + st.HTTPAddr + "/"
	open := browser(t, ctx, base)

	t.Run("home: runs by status, waiting questions by age, failures by code, each a link", func(t *testing.T) {
		startOverviewRuns(t, ctx, cfg.TaskQueue, agent, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true}))
		p := open(t, "#/home?agent="+url.QueryEscape(agent))
		require.Equal(t, "home", p.attr("#views a", "data-view"), "Home is first in the navigation")
		p.waitJS(`!!document.querySelector("#home-body[data-loaded]") && document.querySelectorAll("#home-failures .tile").length === 2`)
		require.Equal(t, []string{"running", "waiting", "completed", "failed", "cancelled"}, p.allAttrs("#home-runs .tile", "data-key"))
		require.Equal(t, []string{"1", "2", "2", "3", "1"}, p.allTexts("#home-runs .tile-count"))
		since := p.attr("#home-body > p time", "datetime")
		_, err := time.Parse(time.RFC3339, since)
		require.NoError(t, err)
		var hrefs []string
		for _, s := range []string{"running", "waiting", "completed", "failed", "cancelled"} {
			hrefs = append(hrefs, "#/runs?agent="+url.QueryEscape(agent)+"&status="+s+"&from="+url.QueryEscape(since))
		}
		require.Equal(t, hrefs, p.allAttrs("#home-runs .tile a", "href"))
		require.Equal(t, "Waiting questions: 2", p.text("#home-waiting-title"))
		require.Equal(t, []string{"2", "0", "0", "0"}, p.allTexts("#home-waiting .tile-count"))
		require.Equal(t, []string{"waiting under 10 min", "waiting 10 min to 1 h", "waiting 1 h to 1 day", "waiting over 1 day"}, p.allTexts("#home-waiting .tile-label"))
		require.Equal(t, []string{"#/interrupts", "#/interrupts", "#/interrupts", "#/interrupts"}, p.allAttrs("#home-waiting .tile a", "href"))
		require.Equal(t, []string{"DOMAIN_ERROR", "TERMINATED"}, p.allAttrs("#home-failures .tile", "data-key"))
		require.Equal(t, []string{"2", "1"}, p.allTexts("#home-failures .tile-count"))
		// A Kortyx code opens the runs list filtered by it; TERMINATED (no Kortyx code: Temporal
		// ended the run) the failed runs.
		failureHrefs := p.allAttrs("#home-failures .tile a", "href")
		require.Regexp(t, `^#/runs\?agent=[^&]+&status=failed&from=[^&]+&code=DOMAIN_ERROR$`, failureHrefs[0])
		require.Regexp(t, `^#/runs\?agent=[^&]+&status=failed&from=[^&]+$`, failureHrefs[1])
		// A figure opens the runs it counts.
		p.press(`#home-runs .tile[data-key="failed"] a`)
		p.waitJS(`document.body.dataset.view === "runs" && document.querySelectorAll("#runs-table tbody tr").length === 3`)
		require.Equal(t, []string{"failed", "failed", "failed"}, p.allAttrs("#runs-table tbody tr", "data-status"))
		require.Equal(t, agent, p.value("#f-agent"))
		p.hash("#/home?agent=" + url.QueryEscape(agent))
		p.waitJS(`document.body.dataset.view === "home" && !!document.querySelector('#home-waiting .tile a')`)
		p.press(`#home-waiting .tile a`)
		p.waitJS(`document.body.dataset.view === "interrupts"`)
	})

	// The research run: three child runs, the risks child asks through the root.
	root, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: research.WorkflowID, Input: json.RawMessage(`"durable execution"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
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

	t.Run("cost: currency, Temporal actions, a parent's roll-up of its children", func(t *testing.T) {
		// Its own 14 actions and its children's 2, 2 and 3 (TestRunActionsAndRollup), at $25
		// per million.
		p := open(t, "#/runs/"+url.PathEscape(root.GetID()))
		p.waitJS(`!!document.querySelector("#trace-body .trace .rows")`)
		require.Equal(t, "14 ≈ $0.00035", p.text(".figure.actions .figure-value"))
		require.Equal(t, "$0", p.text(".figure.cost-total .figure-value"))
		require.Equal(t, "4", p.attr("#trace-body .rollup", "data-runs"))
		require.Equal(t, "With its 3 child runs: 0 in / 0 out · cost $0 · 21 actions ≈ $0.000525", p.text("#trace-body .rollup"))
		require.Equal(t, "Temporal actions counted from the run's history (no queries or heartbeats), priced at $25 per million: an estimate.", p.text("#trace-body .action-price"))

		p.hash("#/cost?range=hour&q=" + url.QueryEscape(root.GetID()))
		p.waitJS(`document.body.dataset.view === "cost" && !!document.querySelector('#cost-runs tbody tr') && document.querySelector('#cost-runs td.children').textContent === "3"`)
		require.Equal(t, "hour", p.value("#c-range"))
		require.Equal(t, []string{root.GetID()}, p.allAttrs("#cost-runs tbody tr", "data-run"))
		row := "#cost-runs tbody tr "
		require.Equal(t, []string{research.WorkflowID, "3", "$0", "14 ≈ $0.00035", "$0", "21 ≈ $0.000525"},
			[]string{p.text(row + "td.agent"), p.text(row + "td.children"), p.text(row + "td.own-cost"), p.text(row + "td.own-actions"), p.text(row + "td.total-cost"), p.text(row + "td.total-actions")})
		cells := func(table, key string) []string { return p.allTexts(fmt.Sprintf(`#%s tr[data-key=%q] td`, table, key)) }
		require.Equal(t, []string{research.WorkflowID, research.TopicWorkflowID, "total"}, p.allAttrs("#cost-by-agent tbody tr", "data-key"))
		require.Equal(t, []string{research.WorkflowID, "1", "0", "0", "$0", "14", "$0.00035"}, cells("cost-by-agent", research.WorkflowID))
		require.Equal(t, []string{research.TopicWorkflowID, "3", "0", "0", "$0", "7", "$0.000175"}, cells("cost-by-agent", research.TopicWorkflowID))
		require.Equal(t, []string{"total", "4", "0", "0", "$0", "21", "$0.000525"}, cells("cost-by-agent", "total"))
		require.Equal(t, []string{"no session", "4", "0", "0", "$0", "21", "$0.000525"}, cells("cost-by-session", ""), "the children under their parent's session")
		require.Equal(t, []string{"4", "$0", "21 ≈ $0.000525", "$0.000525"}, p.allTexts("#cost-view-body .figures .figure-value"))
		// A range chosen in the form is the URL's.
		p.run(chromedp.SetValue(chromedp.CSS("#c-range"), "week"), chromedp.Click(chromedp.CSS("#cost-apply")))
		p.waitJS(`location.hash === "#/cost?range=week&q=` + url.QueryEscape(root.GetID()) + `"`)
	})

	t.Run("workflows: the research graph's child workflows, a node's details", func(t *testing.T) {
		p := open(t, "#/workflows?agent=research")
		svg := `#workflows-body svg.graph[data-agent="research"]`
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, svg))
		require.Equal(t, []string{"fanout"}, p.allAttrs(svg+` .node.kind-child[data-child="research.topic"]`, "data-parent"))
		require.Equal(t, []string{"fanout"}, p.allAttrs(svg+` .edge.spawn[data-child="research.topic"]`, "data-from"))
		require.Equal(t, []string{"research.topic", "child workflow"}, p.allTexts(svg+" .node.kind-child text"))
		p.run(chromedp.Click(chromedp.CSS(svg + ` .node[data-node="fanout"] rect`)))
		p.waitJS(`!!document.querySelector('#node-details [data-node="fanout"]')`)
		require.Equal(t, []string{"Kind", "Runs", "Child workflows", "Comes from", "Goes to"}, p.allTexts("#node-details dt"))
		require.Equal(t, []string{"go", "a Go function of the definition", "research.topic", "__start__", "summarize"}, p.allTexts("#node-details dd"))
		require.Equal(t, []string{"fanout"}, p.allAttrs(svg+" .node.selected", "data-node"))
		// The child workflow opens its own graph.
		p.run(chromedp.Click(chromedp.CSS(svg + ` .node.kind-child rect`)))
		p.waitJS(`!!document.querySelector('#workflows-body svg.graph[data-agent="research.topic"]')`)
		require.Equal(t, "#/workflows?agent=research.topic", p.str(`location.hash`))

		// A kortyx.reason node: its model, prompt, tools and approval policy, by keyboard.
		p.hash("#/workflows?agent=support")
		p.waitJS(`!!document.querySelector('#workflows-body svg.graph[data-agent="support"] .node[data-node="agent"]')`)
		p.eval(`(() => { document.querySelector('#workflows-body .node[data-node="agent"]').focus(); return true; })()`, new(bool))
		p.run(chromedp.KeyEvent("\r"))
		p.waitJS(`!!document.querySelector('#node-details [data-node="agent"]')`)
		require.Equal(t, []string{"Kind", "Runs", "Model", "Prompt", "Tools", "Approval", "Params", "Comes from", "Goes to"}, p.allTexts("#node-details dt"))
		field := func(k string) string { return p.text(fmt.Sprintf(`#node-details dd[data-field=%q]`, k)) }
		require.Equal(t, "kortyx.reason", field("Runs"))
		require.Equal(t, "the worker's default", field("Model"))
		require.Equal(t, "You are the support agent of an online shop. Look an order up with lookup_order before answering about it. Refund an order with refund only when the customer asks for a refund and the order is delivered or damaged. Answer in one or two short sentences.", field("Prompt"))
		require.Equal(t, "lookup_order, refund", field("Tools"))
		require.Equal(t, "[\n  \"refund\"\n]", field("Approval"))
	})

	t.Run("trace: payloads folded, long waits compressed", func(t *testing.T) {
		support, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`"Where is order A-1002?"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		require.NoError(t, support.Get(ctx, nil))
		p := open(t, "#/runs/"+url.PathEscape(support.GetID()))
		p.waitJS(`!!document.querySelector("#trace-body .trace .rows")`)
		// Every model and tool row has its payloads, each folded.
		require.True(t, p.bool(`(() => { const d = [...document.querySelectorAll("#trace-body details.row-payloads")];
		  return d.length > 0 && d.length === document.querySelectorAll('#trace-body li[data-kind="model"], #trace-body li[data-kind="tool"]').length && d.every((x) => !x.open); })()`))
		require.Equal(t, []string{"payload: arguments, result"}, p.allTexts(`#trace-body li[data-kind="tool"] details.row-payloads > summary`))
		arguments := `#trace-body li[data-kind="tool"] .payload[data-label="arguments"] pre`
		require.False(t, p.bool(fmt.Sprintf(`document.querySelector(%q).checkVisibility()`, arguments)), "folded: not drawn")
		p.run(chromedp.Click(chromedp.CSS(`#trace-body li[data-kind="tool"] details.row-payloads > summary`)))
		p.waitJS(fmt.Sprintf(`document.querySelector(%q).checkVisibility()`, arguments))
		require.Equal(t, "{\n  \"orderId\": \"A-1002\"\n}", p.text(arguments))

		// A run that sleeps 3 s between its start and its end: with waits over 1 s compressed,
		// the idle stretch is drawn 1 s long and marked; the axis still ends at its duration.
		nap, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: agent, Input: json.RawMessage(`"nap"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		require.NoError(t, nap.Get(ctx, nil))
		p.hash("#/runs/" + url.PathEscape(nap.GetID()))
		p.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q && !!document.querySelector("#trace-body .trace .rows")`, nap.GetID()))
		require.Equal(t, "real time", p.str(`document.querySelector("#trace-zoom").selectedOptions[0].textContent`))
		require.Zero(t, len(p.allAttrs("#trace-body .axis-break", "style")))
		last := p.str(`document.querySelector("#trace-body .axis span:last-child").textContent`)
		p.run(chromedp.SetValue(chromedp.CSS("#trace-zoom"), "1000"))
		p.eval(`(() => { document.getElementById("trace-zoom").dispatchEvent(new Event("change")); return true; })()`, new(bool))
		p.waitJS(`document.querySelectorAll("#trace-body .axis-break").length === 1`)
		require.Regexp(t, `^a wait of [0-9.]+ s, compressed$`, p.attr("#trace-body .axis-break", "title"))
		require.Equal(t, last, p.str(`document.querySelector("#trace-body .axis span:last-child").textContent`), "the axis says real times")
		require.Equal(t, "compress waits over 1 s", p.str(`document.querySelector("#trace-zoom").selectedOptions[0].textContent`))
	})

	t.Run("home and cost at 360 px", func(t *testing.T) {
		p := open(t, "#/home")
		p.run(chromedp.EmulateViewport(360, 800))
		for _, v := range []struct{ name, hash, ready string }{
			{"home", "#/home?agent=" + url.QueryEscape(agent), `!!document.querySelector("#home-body[data-loaded] .tile")`},
			{"cost", "#/cost?range=hour&q=" + url.QueryEscape(root.GetID()), `!!document.querySelector("#cost-runs")`},
			{"workflows", "#/workflows?agent=research", `!!document.querySelector("#workflows-body .node.kind-child")`},
		} {
			p.hash(v.hash)
			p.waitJS(fmt.Sprintf(`document.body.dataset.view === %q && %s`, v.name, v.ready))
			var problems []string
			p.eval(layoutCheck, &problems)
			require.Empty(t, problems, "%s at 360 px", v.name)
		}
	})
}
