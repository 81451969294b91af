package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// flakyPrompt is the prompt whose first model pass fails (retryable) and is retried.
const flakyPrompt = "Are you there? (flaky)"

// studioPrices is the price table of the studio's stack: the support agent's passes name no
// model, so the worker's default (the fake model's openai:gpt-4.1-mini) prices them.
var studioPrices = map[string]web.Price{"openai:gpt-4.1-mini": {Input: 2, Output: 8}, "anthropic:claude-sonnet-4-5": {Input: 3, Output: 15}}

// TestStudio drives the studio's views (runs, sessions, interrupts, trace, workflows) in
// headless Chromium against a stack like the dev worker's, with a price table.
func TestStudio(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terminateOpenRuns(t, ctx)
	chosen, err := examples.Parse("support,triage,research")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return registerAgents(reg)
	}
	o.DefaultWorkflow = "support"
	// The support agent's fake model, except for the flaky prompt: its first pass fails with a
	// retryable provider error, the retry answers.
	supportModel := o.FakeModel
	var flakyPasses atomic.Int32
	o.FakeModel = func(req providers.Request) fake.Turn {
		for _, m := range req.Messages {
			if m.Role == providers.RoleUser && m.Content == flakyPrompt {
				if flakyPasses.Add(1) == 1 {
					return fake.Fail(contracts.CodeProviderHTTPError, true, "the model is busy")
				}
				return fake.Text("Back again.")
			}
		}
		return supportModel(req)
	}
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("studio-%d", time.Now().UnixNano()), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true, WebPage: true, Prices: studioPrices}
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "http://temporal-ui.invalid")
	st := testenv.Run(t, ctx, cfg, o)
	base := "http://" + st.HTTPAddr + "/"
	svc := webService(tc, cfg.TaskQueue)
	open := browser(t, ctx, base)
	stamp := time.Now().UnixNano()

	var supportRun, triageRun string

	t.Run("runs: filters, paging and the URL", func(t *testing.T) {
		prefix := fmt.Sprintf("runs-%d", stamp)
		for _, s := range []string{"a", "b", "c"} {
			_, err := svc.Start(ctx, prefix+"-"+s, sessions.TurnRequest{ClientTurnID: "t1", Workflow: echoWorkflow, Input: json.RawMessage(`"hi"`)})
			require.NoError(t, err)
		}
		w, err := svc.Start(ctx, prefix+"-w", sessions.TurnRequest{ClientTurnID: "t1", Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)})
		require.NoError(t, err)
		// Visibility is eventually consistent: wait until the route lists the four runs settled.
		require.Eventually(t, func() bool {
			got := runsOf(t, base, "q="+prefix)
			return len(got) == 4 && got[0].Status == "waiting" && got[0].Question != nil && got[1].Status == "completed" && got[2].Status == "completed" && got[3].Status == "completed"
		}, 20*time.Second, 100*time.Millisecond)

		p := open(t, "#/runs?q="+prefix+"&pageSize=3")
		rows := `#runs-table tbody tr`
		p.waitJS(`document.querySelectorAll("#runs-table tbody tr").length === 3`)
		require.Equal(t, []string{"waiting", "completed", "completed"}, p.allAttrs(rows, "data-status"), "newest first")
		require.Equal(t, []string{formWorkflow, echoWorkflow, echoWorkflow}, p.allTexts(rows+" td.agent"))
		require.Equal(t, []string{"How should we ship it?", "", ""}, p.allTexts(rows+" td.question-text"))
		require.Equal(t, w.RunID, p.attr(rows+":first-child td:first-child .id", "data-id"))
		// The filters are the URL's and shown in the form.
		require.Equal(t, prefix, p.value("#f-q"))
		require.Equal(t, "3", p.value("#f-pageSize"))
		// Page two: the last run; back returns to page one.
		p.run(chromedp.Click(chromedp.CSS("#runs-next")))
		p.waitJS(`location.hash.includes("pageToken=") && document.querySelectorAll("#runs-table tbody tr").length === 1`)
		require.Equal(t, []string{"completed"}, p.allAttrs(rows, "data-status"))
		require.True(t, p.bool(`document.getElementById("runs-next").disabled`), "the last page has no next page")
		p.run(chromedp.NavigateBack())
		p.waitJS(`!location.hash.includes("pageToken=") && document.querySelectorAll("#runs-table tbody tr").length === 3`)
		// A filter set in the form goes to the URL: status waiting.
		p.run(chromedp.SetValue(chromedp.CSS("#f-status"), "waiting"), chromedp.Click(chromedp.CSS("#runs-apply")))
		p.waitJS(`document.querySelectorAll("#runs-table tbody tr").length === 1`)
		require.Equal(t, "#/runs?status=waiting&q="+prefix+"&pageSize=3", p.str(`location.hash`))
		require.Equal(t, []string{"waiting"}, p.allAttrs(rows, "data-status"))
		// Another filter from a shared URL: the echo agent's runs only.
		p.hash("#/runs?agent=" + echoWorkflow + "&q=" + prefix)
		p.waitJS(`document.querySelectorAll("#runs-table tbody tr").length === 3`)
		require.Equal(t, []string{echoWorkflow, echoWorkflow, echoWorkflow}, p.allTexts(rows+" td.agent"))
		require.Equal(t, echoWorkflow, p.value("#f-agent"))
		// A bad filter is the route's typed error, shown.
		p.hash("#/runs?from=yesterday")
		p.waitJS(`document.getElementById("status").textContent.startsWith("INVALID_REQUEST")`)
		// A row opens its trace.
		p.hash("#/runs?q=" + prefix + "-w")
		p.waitJS(`document.querySelectorAll("#runs-table tbody tr").length === 1`)
		p.run(chromedp.Click(chromedp.CSS(rows + " td.agent")))
		p.waitJS(fmt.Sprintf(`document.body.dataset.view === "trace" && document.getElementById("trace-body").dataset.run === %q`, w.RunID))
	})

	t.Run("interrupts: answer in place and the chat continues", func(t *testing.T) {
		older, newer := fmt.Sprintf("inbox-%d-1", stamp), fmt.Sprintf("inbox-%d-2", stamp)
		for _, s := range []string{older, newer} {
			_, err := svc.Start(ctx, s, sessions.TurnRequest{ClientTurnID: "t1", Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)})
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool { return len(interruptsOf(t, base, older)) == 1 && len(interruptsOf(t, base, newer)) == 1 }, 20*time.Second, 100*time.Millisecond)
		p := open(t, "#/interrupts")
		card := func(s string) string { return fmt.Sprintf(`#inbox .interrupt[data-session=%q]`, s) }
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, card(older)+` form[data-kind="custom"]`, card(newer)))
		var order []string
		p.eval(fmt.Sprintf(`[...document.querySelectorAll("#inbox .interrupt")].map(c => c.dataset.session).filter(s => s === %q || s === %q)`, older, newer), &order)
		require.Equal(t, []string{older, newer}, order, "oldest first")
		require.Regexp(t, `^waiting \d`, p.text(card(older)+" .age"))
		require.Equal(t, formWorkflow, p.text(card(older)+" .who .agent"))
		require.Equal(t, "How should we ship it?", p.text(card(older)+" form p strong"))
		// Answered from the form built from the question's schema.
		p.run(chromedp.SetValue(chromedp.CSS(card(older)+` input[name="quantity"]`), "2"),
			chromedp.SetValue(chromedp.CSS(card(older)+` select[name="speed"]`), `"express"`),
			chromedp.Click(chromedp.CSS(card(older)+` form button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(card(older) + " .next-question")))
		require.Equal(t, "Answered; the run asks next: Which extras?", p.text(card(older)+" .next-question"))
		// The run went on: its next question comes into the inbox, answered there too.
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card(older)+` form[data-kind="multi-choice"]`))
		p.run(chromedp.Click(chromedp.CSS(card(older)+` form[data-kind="multi-choice"] input[value="gift"]`)),
			chromedp.Click(chromedp.CSS(card(older)+` form[data-kind="multi-choice"] button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(card(older) + " .next-message")))
		require.Equal(t, "Answered; the run said: Shipping 2, express, with gift.", p.text(card(older)+" .next-message"))
		// Then it leaves the inbox; the other stays.
		p.waitJS(fmt.Sprintf(`!document.querySelector(%q) && !!document.querySelector(%q)`, card(older), card(newer)))
		view, err := svc.View(ctx, older)
		require.NoError(t, err)
		require.Empty(t, view.Pending)
		require.Nil(t, view.Active)

		// A tool approval asked in the chat shows the tool, its arguments and who asked.
		c := open(t, "#/chat")
		c.send("support", "Please refund order A-1001, it arrived broken.")
		c.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		session := c.text("#session-id")
		supportRun = c.attr(`.turn:last-child .run .id`, "data-id")
		c.hash("#/interrupts")
		c.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card(session)))
		require.Equal(t, "refund", c.text(card(session)+" .approval-tool"))
		require.Equal(t, refundArgs("A-1001", "delivered"), c.text(card(session)+" .approval-args"))
		require.Equal(t, "support", c.text(card(session)+" .who .agent"))
		require.Equal(t, []string{supportRun, session}, c.allAttrs(card(session)+" .who .id", "data-id"))
		c.run(chromedp.Click(chromedp.CSS(card(session)+` input[value="approve"]`)), chromedp.Click(chromedp.CSS(card(session)+` form button[type="submit"]`)))
		c.waitJS(fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && r.textContent !== "" && r.textContent !== "Sending…"; })()`, card(session)+" .answer-result"))
		require.Equal(t, "Answered; the run said: Done: order A-1001 is refunded (R-5001, full amount).", c.text(card(session)+" .answer-result > span"))
		c.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card(session)))

		// The sessions' transcripts: the prompt, the model's text, the tool calls, the
		// questions and the answers given here (an answer continues its run: one turn each).
		turn := `#sessions-body .session-transcript li.transcript-turn`
		c.hash("#/sessions/" + url.PathEscape(session))
		c.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 1 && !!document.querySelector(%q)`, turn, turn+" .answered"))
		require.Equal(t, []string{supportRun}, c.allAttrs(turn, "data-run"))
		require.Equal(t, []string{"Please refund order A-1001, it arrived broken."}, c.allTexts(turn+" .prompt"))
		require.Equal(t, []string{
			`→ lookup_order{"orderId":"A-1001"}← {"orderId":"A-1001","item":"espresso machine","total":249,"status":"delivered"}`,
			"? Approve refund?",
			`answered ["approve"]`,
			`→ refund{"orderId":"A-1001","reason":"customer request: delivered"}← {"refundId":"R-5001","orderId":"A-1001","amount":249}`,
			"Done: order A-1001 is refunded (R-5001, full amount).",
		}, c.allTexts(turn+" .assistant > :not(.run)"))
		require.Equal(t, []string{"Done: order A-1001 is refunded (R-5001, full amount)."}, c.allTexts(turn+" .model-text"))
		c.hash("#/sessions/" + url.PathEscape(older))
		c.waitJS(fmt.Sprintf(`document.getElementById("sessions-body").dataset.session === %q && document.querySelectorAll(%q).length === 1`, older, turn))
		require.Equal(t, []string{"ship it"}, c.allTexts(turn+" .prompt"))
		require.Equal(t, []string{"? How should we ship it?", `answered {"quantity":2,"speed":"express"}`, "? Which extras?", `answered ["gift"]`},
			c.allTexts(turn+" .assistant > :not(.run)"))
	})

	t.Run("interrupts: a run of no session answered by its route, to its end", func(t *testing.T) {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		p := open(t, "#/interrupts")
		card := fmt.Sprintf(`#inbox .interrupt[data-run=%q]`, run.GetID())
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` form[data-kind="custom"]`))
		require.Equal(t, "", p.attr(card, "data-session"))
		require.Contains(t, p.text(card+" .who"), "· no session ·")
		// A card being filled in stays where it is when the inbox refreshes: the field in
		// focus keeps it (a card moved in the page would lose it).
		quantity := card + ` input[name="quantity"]`
		loaded := p.str(`document.getElementById("inbox").dataset.loaded`)
		p.eval(fmt.Sprintf(`(() => { document.querySelector(%q).focus(); return true })()`, quantity), new(bool))
		p.waitJS(fmt.Sprintf(`document.getElementById("inbox").dataset.loaded !== %q`, loaded))
		require.True(t, p.bool(fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, quantity)), "the focus after a refresh")
		// The page sends POST /api/runs/{id}/answer (the chat route needs a session): the
		// requests it made say so.
		p.run(chromedp.SetValue(chromedp.CSS(card+` input[name="quantity"]`), "3"),
			chromedp.SetValue(chromedp.CSS(card+` select[name="speed"]`), `"standard"`),
			chromedp.Click(chromedp.CSS(card+` form[data-kind="custom"] button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(card + " .next-question")))
		require.Equal(t, "Answered; the run asks next: Which extras?", p.text(card+" .next-question"))
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` form[data-kind="multi-choice"]`))
		p.run(chromedp.Click(chromedp.CSS(card+` form[data-kind="multi-choice"] input[value="track"]`)),
			chromedp.Click(chromedp.CSS(card+` form[data-kind="multi-choice"] button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(card + " .run-ended")))
		require.Equal(t, "Answered; the run completed.", p.text(card+" .run-ended"))
		var res contracts.RunResult
		require.NoError(t, run.Get(ctx, &res))
		require.Equal(t, "Shipping 3, standard, with track.", res.State.UI.Message)
		var posted []string
		p.eval(`performance.getEntriesByType("resource").map(e => new URL(e.name).pathname).filter(u => u.endsWith("/answer") || u === "/api/chat")`, &posted)
		answerPath := "/api/runs/" + run.GetID() + "/answer"
		require.Equal(t, []string{answerPath, answerPath}, posted)
		p.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, card))
	})

	t.Run("cost: the runs table's tokens and cost, by agent and by session, turns and the transcript", func(t *testing.T) {
		prefix := fmt.Sprintf("cost-%d", stamp)
		two, one := prefix+"-two", prefix+"-one"
		prompts := []string{"Where is order A-1002?", "And what about order A-1003?"}
		var runIDs []string
		for i, s := range []struct{ session, prompt string }{{two, prompts[0]}, {two, prompts[1]}, {one, prompts[0]}} {
			in, err := json.Marshal(s.prompt)
			require.NoError(t, err)
			ts, err := svc.Start(ctx, s.session, sessions.TurnRequest{ClientTurnID: fmt.Sprint("t", i), Workflow: "support", Input: in})
			require.NoError(t, err)
			require.NoError(t, tc.GetWorkflow(ctx, ts.RunID, "").Get(ctx, nil))
			runIDs = append(runIDs, ts.RunID)
		}
		require.Eventually(t, func() bool {
			got := runsOf(t, base, "status=completed&q="+prefix)
			return len(got) == 3
		}, 20*time.Second, 100*time.Millisecond)
		p := open(t, "#/runs?q="+prefix)
		rows := `#runs-table tbody tr`
		p.waitJS(`document.querySelectorAll("#runs-table tbody tr").length === 3`)
		require.Equal(t, []string{runIDs[2], runIDs[1], runIDs[0]}, p.allAttrs(rows, "data-run"), "newest first")
		// Two passes of 10 input tokens, an answer of 6 output tokens, at 2 and 8 per million.
		require.Equal(t, []string{"20 in / 6 out", "20 in / 6 out", "20 in / 6 out"}, p.allTexts(rows+" td.tokens"))
		require.Equal(t, []string{"$0.000088", "$0.000088", "$0.000088"}, p.allTexts(rows+" td.cost"))
		// The report of GET /api/cost under the table, by agent, then by session.
		p.run(chromedp.Click(chromedp.CSS("#runs-cost summary")))
		p.waitJS(`!!document.querySelector("#cost-table")`)
		cells := func(key string) []string { return p.allTexts(fmt.Sprintf(`#cost-table tr[data-key=%q] td`, key)) }
		require.Equal(t, []string{"support", "total"}, p.allAttrs("#cost-table tbody tr", "data-key"))
		require.Equal(t, []string{"support", "3", "60", "18", "$0.000264"}, cells("support"))
		require.Equal(t, []string{"total", "3", "60", "18", "$0.000264"}, cells("total"))
		p.run(chromedp.SetValue(chromedp.CSS("#cost-group"), "session"))
		p.eval(`(() => { document.getElementById("cost-group").dispatchEvent(new Event("change")); return true; })()`, new(bool))
		p.waitJS(fmt.Sprintf(`!!document.querySelector('#cost-table tr[data-key=%q]')`, two))
		require.Equal(t, []string{two, one, "total"}, p.allAttrs("#cost-table tbody tr", "data-key"), "most expensive first")
		require.Equal(t, []string{two, "2", "40", "12", "$0.000176"}, cells(two))
		require.Equal(t, []string{one, "1", "20", "6", "$0.000088"}, cells(one))
		require.Equal(t, []string{"total", "3", "60", "18", "$0.000264"}, cells("total"))

		// The sessions list counts the turns; a session's view is its transcript.
		p.hash("#/sessions")
		row := func(s string) string { return fmt.Sprintf(`#sessions-table tr[data-session=%q]`, s) }
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, row(two), row(one)))
		require.Equal(t, "2", p.text(row(two)+" td.turns"))
		require.Equal(t, "1", p.text(row(one)+" td.turns"))
		p.hash("#/sessions/" + url.PathEscape(two))
		turn := `#sessions-body .session-transcript li.transcript-turn`
		p.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, turn))
		require.Equal(t, []string{runIDs[0], runIDs[1]}, p.allAttrs(turn, "data-run"), "oldest first")
		require.Equal(t, prompts, p.allTexts(turn+" .prompt"))
		require.Equal(t, []string{"Order A-1002 (coffee grinder) is shipped.", "Order A-1003 (milk frother) is damaged."}, p.allTexts(turn+" .model-text"))
		require.Equal(t, []string{"lookup_order", "lookup_order"}, p.allAttrs(turn+" .tool", "data-tool"))
		var loose []string
		p.eval(`[...document.getElementById("sessions-body").childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent)`, &loose)
		require.Empty(t, loose, "nothing drawn between the session view's parts (no \"null\" of a part left out)")
		if os.Getenv("KORTYX_WRITE_SCREENSHOTS") == "1" {
			ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			cancel()
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "images", "studio-session-1280.png"), png, 0o644))
		}
	})

	t.Run("trace: cost from the price table, waterfall and payloads", func(t *testing.T) {
		require.NotEmpty(t, supportRun, "the interrupts subtest ran")
		p := open(t, "#/runs/"+supportRun)
		p.waitJS(`!!document.querySelector("#trace-body .trace .rows")`)
		// 30 input and 8 output tokens at 2 and 8 per million: 0.000124.
		require.Equal(t, "30 in / 8 out / 38 total", p.text(".figure.tokens .figure-value"))
		require.Equal(t, "$0.000124", p.text(".figure.cost-total .figure-value"))
		require.Equal(t, []string{"openai:gpt-4.1-mini", "30", "8", "0", "$0.000124"}, p.allTexts(`.cost-table tr[data-model="openai:gpt-4.1-mini"] td`))
		require.Equal(t, "3", p.text(".figure.passes .figure-value"))
		require.Equal(t, "2", p.text(".figure.tools .figure-value"))
		require.Equal(t, []string{"started", "model", "tool", "model", "node", "question", "checkpoint", "answer", "tool", "model", "checkpoint", "ended"},
			p.allAttrs("#trace-body .rows > li", "data-kind"))
		// The model passes and tools are bars of their duration; the question's bar ends at its
		// answer; the trace's Temporal counts are those of the route.
		var widths []float64
		p.eval(`[...document.querySelectorAll('#trace-body li[data-kind="model"] .bar, #trace-body li[data-kind="tool"] .bar')].map(b => b.getBoundingClientRect().width)`, &widths)
		require.Len(t, widths, 5)
		for _, w := range widths {
			require.Positive(t, w)
		}
		require.Equal(t, []string{"bar bar-question"}, p.allAttrs(`#trace-body li[data-kind="question"] .bar`, "class"))
		require.Equal(t, []string{"10 in / 0 out", "10 in / 0 out", "10 in / 8 out"}, p.allTexts(`#trace-body li[data-kind="model"] .tokens`))
		require.Equal(t, []string{"attempt 1", "attempt 1"}, p.allTexts(`#trace-body li[data-kind="tool"] .attempts`))
		require.Equal(t, "{\n  \"orderId\": \"A-1001\"\n}", p.text(`#trace-body li[data-kind="tool"] .payload[data-label="arguments"] pre`))
		require.Equal(t, "[\n  \"approve\"\n]", p.text(`#trace-body li[data-kind="answer"] .payload[data-label="answer"] pre`))
		// The question (its options and the call it approves) is over 400 characters: folded.
		require.Regexp(t, `^question \(\d{3,} characters\)$`, p.text(`#trace-body li[data-kind="question"] details.payload.folded summary`))
		require.False(t, p.bool(`document.querySelector('#trace-body li[data-kind="question"] details.payload').open`))
		var tr struct {
			Temporal map[string]int `json:"temporal"`
		}
		getJSON(t, base+"api/runs/"+supportRun, &tr)
		require.Equal(t, fmt.Sprint(tr.Temporal["events"]), p.text(`.temporal-counts dd[data-count="events"]`))
		require.Equal(t, fmt.Sprint(tr.Temporal["activities"]), p.text(`.temporal-counts dd[data-count="activities"]`))
		require.Equal(t, "http://temporal-ui.invalid/namespaces/default/workflows/"+supportRun, p.attr("#trace-body .trace-head a.temporal-link", "href"))
		// Short ids copy on click.
		p.eval(`(() => { window.__copied = ""; Object.defineProperty(navigator, "clipboard", { value: { writeText: async (s) => { window.__copied = s; } }, configurable: true }); return true; })()`, new(bool))
		p.run(chromedp.Click(chromedp.CSS("#trace-body .trace-head .id")))
		p.waitJS(fmt.Sprintf(`window.__copied === %q`, supportRun))
		require.Less(t, len(p.text("#trace-body .trace-head .id")), len(supportRun), "the id is shown short")
	})

	t.Run("trace: a research run's child expanded", func(t *testing.T) {
		session := fmt.Sprintf("research-%d", stamp)
		ts, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t1", Workflow: "research", Input: json.RawMessage(`"durable execution"`)})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(interruptsOf(t, base, session)) == 1 }, 20*time.Second, 100*time.Millisecond)
		p := open(t, "#/runs/"+ts.RunID)
		// Two children have ended (background, practice); the risks child waits for its answer,
		// drawn last, waiting.
		p.waitJS(`document.querySelectorAll('#trace-body .rows > li[data-kind="child"]').length === 3`)
		require.Equal(t, []string{"completed", "completed", "waiting"}, p.allTexts(`#trace-body .rows > li[data-kind="child"] .child-status`))
		child := p.attr(`#trace-body .rows > li[data-kind="child"] button.expand`, "data-child")
		p.run(chromedp.Click(chromedp.CSS(`#trace-body .rows > li[data-kind="child"] button.expand`)))
		nested := fmt.Sprintf(`#trace-body .child-box .trace.nested[data-run=%q]`, child)
		p.run(chromedp.WaitVisible(chromedp.CSS(nested)))
		require.Equal(t, "true", p.attr(`#trace-body .rows > li[data-kind="child"] button.expand`, "aria-expanded"))
		require.Equal(t, "research.topic", p.text(nested+" .trace-workflow"))
		var ct struct {
			Entries []struct {
				Kind string `json:"kind"`
			} `json:"entries"`
		}
		getJSON(t, base+"api/runs/"+url.PathEscape(child), &ct)
		var kinds []string
		for _, e := range ct.Entries {
			kinds = append(kinds, e.Kind)
		}
		require.Equal(t, "started", kinds[0])
		require.Equal(t, "ended", kinds[len(kinds)-1])
		require.Equal(t, kinds, p.allAttrs(nested+" .rows > li", "data-kind"))
		require.Equal(t, "completed", p.attr(nested+" .trace-line .badge", "data-status"))
		// Collapsed again.
		p.run(chromedp.Click(chromedp.CSS(`#trace-body .rows > li[data-kind="child"] button.expand`)))
		p.waitJS(`document.querySelector('#trace-body .rows > li[data-kind="child"] .child-box').hidden`)
	})

	t.Run("trace: roll back and fork from a checkpoint, the fork drawn as a branch", func(t *testing.T) {
		p := open(t, "#/chat")
		p.send(echoWorkflow, "one")
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		first := p.attr(`.turn:last-child .run .id`, "data-id")
		p.send(echoWorkflow, "two")
		p.lastTurnEnded()
		session := p.text("#session-id")
		p.hash("#/runs/" + first)
		cp := `#trace-body .rows > li[data-kind="checkpoint"]`
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, cp+" button.rollback"))
		require.Equal(t, []string{"checkpoint · turn 1"}, p.allTexts(cp+" .kind"))
		cpID := p.attr(cp+" button.rollback", "data-checkpoint")
		p.run(chromedp.Click(chromedp.CSS(cp + " button.rollback")))
		require.Equal(t, "This discards 1 later checkpoint of session "+session+" (turn 2); a run still open among them is cancelled. The session goes on from turn 1; this cannot be undone.",
			p.text(confirmDialog+" p"), "the trace's Roll back asks first")
		p.press(confirmDialog + " button.confirm-ok")
		p.run(chromedp.WaitVisible(chromedp.CSS(cp + ` .checkpoint-result[data-action="rollback"]`)))
		require.Equal(t, "Rolled back session "+short(session)+" to turn 1.", p.text(cp+` .checkpoint-result[data-action="rollback"]`))
		view, err := svc.View(ctx, session)
		require.NoError(t, err)
		require.Equal(t, cpID, view.Head)
		p.run(chromedp.Click(chromedp.CSS(cp + " button.fork")))
		p.run(chromedp.WaitVisible(chromedp.CSS(cp + ` .checkpoint-result[data-action="fork"]`)))
		fork := p.attr(cp+` .checkpoint-result[data-action="fork"]`, "data-session")
		require.NotEqual(t, session, fork)
		fv, err := svc.View(ctx, fork)
		require.NoError(t, err)
		require.Equal(t, session, fv.ParentSessionID)
		require.Equal(t, cpID, fv.ForkedFrom)
		// The fork's session view: where it came from, and its line leaving the parent's at the
		// forked checkpoint.
		p.run(chromedp.Click(chromedp.CSS(cp + " a.fork-link")))
		p.waitJS(fmt.Sprintf(`document.getElementById("sessions-body").dataset.session === %q`, fork))
		require.Equal(t, session, p.text("#sessions-body .parent-link"))
		require.Equal(t, []string{session, fork}, p.allAttrs("#sessions-body svg.branches g.lane", "data-session"))
		var xs []float64
		p.eval(fmt.Sprintf(`[document.querySelector('svg.branches g.lane.parent circle[data-checkpoint=%q]').getAttribute("cx"), document.querySelector("svg.branches g.lane.self circle").getAttribute("cx")].map(Number)`, cpID), &xs)
		require.Equal(t, xs[0], xs[1], "the fork leaves the parent's line at the checkpoint it was forked from")
		// The sessions list has both, with their agent.
		p.hash("#/sessions")
		p.waitJS(fmt.Sprintf(`!!document.querySelector('#sessions-table tr[data-session=%q]') && !!document.querySelector('#sessions-table tr[data-session=%q]')`, session, fork))
		require.Equal(t, echoWorkflow, p.text(fmt.Sprintf(`#sessions-table tr[data-session=%q] td.agent`, session)))
	})

	t.Run("workflows: the graph highlights a waiting node", func(t *testing.T) {
		session := fmt.Sprintf("graph-%d", stamp)
		ts, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t1", Workflow: "triage", Input: json.RawMessage(`"I was charged twice on my last invoice"`)})
		require.NoError(t, err)
		triageRun = ts.RunID
		require.Eventually(t, func() bool { return len(interruptsOf(t, base, session)) == 1 }, 20*time.Second, 100*time.Millisecond)
		p := open(t, "#/workflows?run="+triageRun)
		svg := `#workflows-body svg.graph[data-agent="triage"]`
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, svg+" .node.waiting"))
		require.Equal(t, []string{"confirm"}, p.allAttrs(svg+" .node.waiting", "data-node"))
		require.Equal(t, []string{"__start__", "classify", "confirm", "draft"}, sorted(p.allAttrs(svg+" .node.visited", "data-node")))
		require.Equal(t, []string{"__start__>classify", "classify>draft", "draft>confirm"}, p.allEdges(svg+" .edge.walked"))
		// The conditions are drawn on their edges; every node of the definition is drawn.
		require.Equal(t, []string{"confirm>open", "confirm>revise"}, p.allEdges(svg+" .edge.conditional"))
		require.Equal(t, []string{"open", "revise"}, p.allTexts(svg+" .edge.conditional .edge-label"))
		require.Equal(t, []string{"__end__", "__start__", "classify", "confirm", "draft", "open", "revise"}, sorted(p.allAttrs(svg+" .node", "data-node")))
		require.Equal(t, "confirm", p.text("#workflows-body .waiting-node"))
		// Without a run nothing is highlighted.
		p.hash("#/workflows?agent=" + formWorkflow)
		p.waitJS(`!!document.querySelector('#workflows-body svg.graph[data-agent="web-form"]')`)
		require.Empty(t, p.allAttrs("#workflows-body .node.visited", "data-node"))
	})

	t.Run("a retried model pass: its status in the chat, its retry in the trace", func(t *testing.T) {
		p := open(t, "#/chat")
		p.send("support", flakyPrompt)
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		require.Equal(t, "Back again.", p.text(`.turn:last-child .text`))
		require.Equal(t, "… model openai:gpt-4.1-mini failed (attempt 1 of 5), retrying in 1 s", p.text(`.turn:last-child .status-chunk`))
		run := p.attr(`.turn:last-child .run .id`, "data-id")
		p.hash("#/runs/" + run)
		p.waitJS(`!!document.querySelector('#trace-body li[data-kind="model"]')`)
		require.Equal(t, []string{"2 attempts"}, p.allTexts(`#trace-body li[data-kind="model"] .retries`))
		require.Equal(t, []string{"bar bar-model retried"}, p.allAttrs(`#trace-body li[data-kind="model"] .bar`, "class"))
		require.Len(t, p.allAttrs(`#trace-body li[data-kind="model"] .bar .attempt-mark`, "style"), 1, "one mark: one retry")
	})

	t.Run("layout at 360 and 1280 px, themes, keyboard, nothing from elsewhere", func(t *testing.T) {
		require.NotEmpty(t, supportRun)
		require.NotEmpty(t, triageRun)
		p := open(t, "#/runs")
		write := os.Getenv("KORTYX_WRITE_SCREENSHOTS") == "1"
		views := []struct{ name, hash, ready string }{
			{"chat", "#/chat", `!!document.querySelector("#composer")`},
			{"runs", "#/runs", `document.querySelectorAll("#runs-table tbody tr").length > 0`},
			{"sessions", "#/sessions", `document.querySelectorAll("#sessions-table tbody tr").length > 0`},
			{"interrupts", "#/interrupts", `document.querySelectorAll("#inbox .interrupt").length > 0`},
			{"trace", "#/runs/" + supportRun, `!!document.querySelector("#trace-body .rows")`},
			{"workflows", "#/workflows?run=" + triageRun, `!!document.querySelector("#workflows-body .node.waiting")`},
		}
		for _, width := range []int64{360, 1280} {
			p.run(chromedp.EmulateViewport(width, 800))
			for _, v := range views {
				p.hash(v.hash)
				p.waitJS(fmt.Sprintf(`document.body.dataset.view === %q && %s`, v.name, v.ready))
				var problems []string
				p.eval(layoutCheck, &problems)
				require.Empty(t, problems, "%s at %d px", v.name, width)
				if v.name == "runs" {
					// Narrow, the table's rows stack as cards; wide, it is a table.
					want := map[int64]string{360: "block", 1280: "table-row"}[width]
					require.Equal(t, want, p.str(`getComputedStyle(document.querySelector("#runs-table tbody tr")).display`))
				}
				if write {
					ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
					png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
					cancel()
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "images", fmt.Sprintf("studio-%s-%d.png", v.name, width)), png, 0o644))
				}
			}
		}
		// The theme button goes system → light → dark; dark changes the colours.
		bg := func() string { return p.str(`getComputedStyle(document.body).backgroundColor`) }
		p.run(chromedp.Click(chromedp.CSS("#theme")))
		require.Equal(t, "light", p.str(`document.documentElement.dataset.theme`))
		light := bg()
		p.run(chromedp.Click(chromedp.CSS("#theme")))
		require.Equal(t, "dark", p.str(`document.documentElement.dataset.theme`))
		require.NotEqual(t, light, bg())
		require.Equal(t, "Theme: dark", p.text("#theme"))
		if write {
			p.hash("#/runs/" + supportRun)
			p.waitJS(`document.body.dataset.view === "trace" && !!document.querySelector("#trace-body .rows")`)
			ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			cancel()
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "images", "studio-trace-dark-1280.png"), png, 0o644))
		}
		p.run(chromedp.Click(chromedp.CSS("#theme")))
		require.Equal(t, "system", p.str(`localStorage.getItem("kortyx.theme")`))
		// The keyboard: the first Tab reaches the skip link, drawn with a focus ring; Enter on it
		// moves to the content.
		p.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)), chromedp.KeyEvent("\t"))
		require.Equal(t, "skip-link", p.str(`document.activeElement.className`))
		require.Equal(t, "solid", p.str(`getComputedStyle(document.activeElement).outlineStyle`))
		p.run(chromedp.KeyEvent("\r"))
		p.waitJS(`document.activeElement.id === "content"`)
		p.run(chromedp.KeyEvent("\t"))
		require.True(t, p.bool(`!!document.activeElement.closest("section.view:not([hidden])")`), "then the view's first control")
		// Every request the page made went to its own origin.
		var elsewhere []string
		p.eval(`performance.getEntriesByType("resource").concat(performance.getEntriesByType("navigation")).map(e => e.name).filter(u => !u.startsWith(location.origin + "/"))`, &elsewhere)
		require.Empty(t, elsewhere)
		var all int
		p.eval(`performance.getEntriesByType("resource").length`, &all)
		require.Positive(t, all)
	})

	t.Run("trace: a run's budget and its spend against it", func(t *testing.T) {
		ts, err := svc.Start(ctx, fmt.Sprintf("budget-%d", stamp), sessions.TurnRequest{ClientTurnID: "t1", Workflow: "support",
			Input: json.RawMessage(`"Where is my order A-1002?"`), Limits: &contracts.Limits{MaxTokens: 1_000_000, MaxCost: 1},
			SessionBudget: &contracts.Limits{MaxTokens: 1000}})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			v, err := kortyx.Query(ctx, tc, ts.RunID)
			return err == nil && v.Status == contracts.StatusCompleted
		}, 20*time.Second, 100*time.Millisecond)
		p := open(t, "#/runs/"+ts.RunID)
		p.waitJS(`!!document.querySelector("#trace-body .figure.budget")`)
		// The two passes: 20 in and 6 out, at 2 and 8 per million (the stack's price table).
		require.Equal(t, "26 of 1000000 tokens · $0.000088 of $1", p.text("#trace-body .figure.budget .figure-value"))
		// The session's page: its budget across turns and what its runs spent.
		p = open(t, "#/sessions/"+ts.SessionID)
		p.waitJS(`!!document.querySelector(".session-budget")`)
		require.Equal(t, "Budget: 26 of 1000 tokens", p.text(".session-budget"))
	})
}

// TestStudioOnAPIOnly drives the studio served by an --api-only process over Redis: the worker
// runs apart (no HTTP), the API process starts after its runs ended or began waiting, and what
// the page shows comes from Temporal and Redis, not from the process that ran them.
func TestStudioOnAPIOnly(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	terminateOpenRuns(t, ctx)
	redis := redistest.Start(t)
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return registerAgents(reg)
	}
	tq := fmt.Sprintf("studio-api-only-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", RedisURL: redis.URL(), FakeModels: true}, o)
	svc := webService(tc, tq)
	prefix := fmt.Sprintf("api-only-%d", time.Now().UnixNano())
	done, ask := prefix+"-done", prefix+"-ask"
	ts, err := svc.Start(ctx, done, sessions.TurnRequest{ClientTurnID: "t1", Workflow: "support", Input: json.RawMessage(`"Where is order A-1002?"`)})
	require.NoError(t, err)
	require.NoError(t, tc.GetWorkflow(ctx, ts.RunID, "").Get(ctx, nil))
	doneRun := ts.RunID
	ts, err = svc.Start(ctx, ask, sessions.TurnRequest{ClientTurnID: "t1", Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)})
	require.NoError(t, err)
	askRun := ts.RunID
	require.Eventually(t, func() bool {
		v, err := kortyx.Query(ctx, tc, askRun)
		return err == nil && v.Pending != nil
	}, 20*time.Second, 100*time.Millisecond)

	// The API process starts now: its routes, its page and the streams it reads from Redis.
	api := testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", RedisURL: redis.URL(),
		HTTPAddr: "127.0.0.1:0", WebPage: true, Prices: studioPrices}, app.Options{APIOnly: true, Register: o.Register})
	base := "http://" + api.HTTPAddr + "/"
	open := browser(t, ctx, base)

	t.Run("runs that ended before the process started, the inbox, the chat over Redis, a trace", func(t *testing.T) {
		require.Eventually(t, func() bool {
			got := runsOf(t, base, "q="+prefix)
			return len(got) == 2 && got[0].Status == "waiting" && got[1].Status == "completed"
		}, 20*time.Second, 100*time.Millisecond)
		p := open(t, "#/runs?q="+prefix)
		rows := `#runs-table tbody tr`
		p.waitJS(`document.querySelectorAll("#runs-table tbody tr").length === 2`)
		require.Equal(t, []string{askRun, doneRun}, p.allAttrs(rows, "data-run"))
		require.Equal(t, []string{"waiting", "completed"}, p.allAttrs(rows, "data-status"))
		require.Equal(t, []string{formWorkflow, "support"}, p.allTexts(rows+" td.agent"))
		require.Equal(t, []string{"How should we ship it?", ""}, p.allTexts(rows+" td.question-text"))
		// Priced on this process from its price table: the support run's two passes of 10
		// input tokens and its answer of 6; the form agent calls no model.
		require.Equal(t, []string{"0 in / 0 out", "20 in / 6 out"}, p.allTexts(rows+" td.tokens"))
		require.Equal(t, []string{"$0", "$0.000088"}, p.allTexts(rows+" td.cost"))

		// The inbox answers the session's question; the answer's response comes over Redis
		// from the worker's stream.
		p.hash("#/interrupts")
		card := fmt.Sprintf(`#inbox .interrupt[data-session=%q]`, ask)
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` form[data-kind="custom"]`))
		p.run(chromedp.SetValue(chromedp.CSS(card+` input[name="quantity"]`), "1"),
			chromedp.SetValue(chromedp.CSS(card+` select[name="speed"]`), `"standard"`),
			chromedp.Click(chromedp.CSS(card+` form[data-kind="custom"] button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(card + " .next-question")))
		require.Equal(t, "Answered; the run asks next: Which extras?", p.text(card+" .next-question"))
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` form[data-kind="multi-choice"]`))
		p.run(chromedp.Click(chromedp.CSS(card+` form[data-kind="multi-choice"] input[value="gift"]`)),
			chromedp.Click(chromedp.CSS(card+` form[data-kind="multi-choice"] button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(card + " .next-message")))
		require.Equal(t, "Answered; the run said: Shipping 1, standard, with gift.", p.text(card+" .next-message"))
		var streams []string
		p.eval(`performance.getEntriesByType("resource").map(e => new URL(e.name)).filter(u => u.pathname.endsWith("/stream")).map(u => u.pathname)`, &streams)
		require.Equal(t, []string{"/v1/runs/" + askRun + "/stream", "/v1/runs/" + askRun + "/stream"}, streams)
		// The chat goes on in that session: its next prompt streams over Redis too.
		p.run(chromedp.Click(chromedp.CSS(card + " button.open-chat")))
		p.waitJS(fmt.Sprintf(`document.body.dataset.view === "chat" && document.getElementById("session-id").textContent === %q`, ask))
		// The process suggests the agents of its program (their definitions), as a worker does.
		reg := workflows.NewRegistry()
		require.NoError(t, o.Register(reg))
		var agents []string
		for _, d := range reg.Workflows() {
			agents = append(agents, d.ID)
		}
		require.Contains(t, agents, formWorkflow)
		require.Equal(t, agents, p.allAttrs("#workflow-names option", "value"))
		p.send(formWorkflow, "ship it again")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="custom"]`)))
		require.Equal(t, "How should we ship it?", p.text(`.turn:last-child form.question p strong`))
		p.lastTurnEnded()

		// A trace opens, from the history of a run this process never saw running.
		p.hash("#/runs/" + doneRun)
		p.waitJS(`!!document.querySelector("#trace-body .trace .rows")`)
		require.Equal(t, []string{"started", "model", "tool", "model", "node", "checkpoint", "ended"}, p.allAttrs("#trace-body .rows > li", "data-kind"))
		require.Equal(t, "$0.000088", p.text(".figure.cost-total .figure-value"))
	})
}

// terminateOpenRuns ends the runs the package's earlier tests left open on the shared dev
// server. The inbox lists every waiting run of the namespace and asks each for its question; a
// run whose worker has stopped makes that query wait for the request's timeout, which would
// slow every inbox request of this test.
func terminateOpenRuns(t *testing.T, ctx context.Context) {
	t.Helper()
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 200, NextPageToken: token, Query: "ExecutionStatus = 'Running'"})
		require.NoError(t, err)
		for _, e := range resp.Executions {
			err := tc.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "the studio test starts from a namespace without open runs")
			var nf *serviceerror.NotFound
			if err != nil && !errors.As(err, &nf) {
				require.NoError(t, err)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	// Visibility is eventually consistent: wait until it lists no open run.
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 1, Query: "ExecutionStatus = 'Running'"})
		return err == nil && len(resp.Executions) == 0
	}, 20*time.Second, 100*time.Millisecond)
}

// layoutCheck lists what does not fit: a page wider than the window, a navigation that is not
// drawn inside the window, an element of the shown view reaching out of the window (besides
// what sits in a scrolling box).
const layoutCheck = `(() => {
  const w = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > w) out.push("the page is " + document.documentElement.scrollWidth + " px wide in a " + w + " px window");
  for (const a of document.querySelectorAll("#views a")) {
    const r = a.getBoundingClientRect();
    if (r.width === 0 || r.left < 0 || r.right > w + 0.5 || r.top < 0) out.push("nav " + a.textContent.trim() + ": from " + r.left + " to " + r.right);
  }
  const view = document.querySelector("section.view:not([hidden])");
  if (!view) return ["no view shown"];
  for (const e of view.querySelectorAll("*")) {
    if (e.closest(".table-wrap, .graph-scroll, pre, details:not([open])")) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.left < -0.5 || r.right > w + 0.5) { out.push((e.id || e.className || e.tagName) + ": from " + Math.round(r.left) + " to " + Math.round(r.right)); if (out.length > 8) break; }
  }
  return out;
})()`

// browser starts Chromium for the test; open(t, hash) opens a tab on the studio at hash.
func browser(t *testing.T, ctx context.Context, base string) func(*testing.T, string) *page {
	flags := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.Flag("headless", "new"),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		flags = append(flags, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, flags...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	require.NoError(t, chromedp.Do(bctx), "starting Chromium")
	return func(t *testing.T, hash string) *page {
		tctx, cancelTab := chromedp.NewContext(bctx)
		t.Cleanup(cancelTab)
		require.NoError(t, chromedp.Do(tctx), "opening a tab")
		p := &page{t: t, ctx: tctx, base: base}
		t.Cleanup(func() {
			if t.Failed() {
				p.shot()
			}
		})
		p.run(chromedp.Navigate(base+hash), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		return p
	}
}

// hash goes to a route of the page (a history entry, as a click on a link).
func (p *page) hash(h string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`(() => { location.hash = %q; return true; })()`, h), new(bool))
}

func (p *page) str(js string) string {
	p.t.Helper()
	var s string
	p.eval(js, &s)
	return s
}

func (p *page) bool(js string) bool {
	p.t.Helper()
	var b bool
	p.eval(js, &b)
	return b
}

func (p *page) value(sel string) string {
	p.t.Helper()
	return p.str(fmt.Sprintf(`document.querySelector(%q).value`, sel))
}

// allEdges are the edges sel matches, as from>to.
func (p *page) allEdges(sel string) []string {
	p.t.Helper()
	var out []string
	p.eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.dataset.from + ">" + e.dataset.to)`, sel), &out)
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// short is an id as the page shows it shortened.
func short(id string) string {
	if len([]rune(id)) <= 18 {
		return id
	}
	r := []rune(id)
	return string(r[:10]) + "…" + string(r[len(r)-6:])
}

type listedRun struct {
	RunID    string          `json:"runId"`
	Status   string          `json:"status"`
	Question json.RawMessage `json:"question"`
}

func runsOf(t *testing.T, base, query string) []listedRun {
	t.Helper()
	var page struct {
		Runs []listedRun `json:"runs"`
	}
	getJSON(t, base+"api/runs?"+query, &page)
	return page.Runs
}

// interruptsOf are the inbox's questions of a session.
func interruptsOf(t *testing.T, base, session string) []json.RawMessage {
	t.Helper()
	var all []struct {
		SessionID string `json:"sessionId"`
	}
	var raw []json.RawMessage
	getJSON(t, base+"api/interrupts", &raw)
	b, _ := json.Marshal(raw)
	require.NoError(t, json.Unmarshal(b, &all))
	var out []json.RawMessage
	for i, it := range all {
		if it.SessionID == session {
			out = append(out, raw[i])
		}
	}
	return out
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, url)
	require.NoError(t, json.NewDecoder(res.Body).Decode(out))
}
