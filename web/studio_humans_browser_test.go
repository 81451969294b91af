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
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// waitWorkflow streams one word, then waits an hour: a turn that runs until it is stopped.
const waitWorkflow = "web-wait"

// registerWait registers the waiting agent.
func registerWait(reg *workflows.Registry) error {
	wait := func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
		if _, err := hooks.StructuredData(ctx, hooks.StructuredDataOptions{StreamID: "wait", DataType: "wait", Kind: contracts.StructuredTextDelta, Path: "text", Delta: "waiting"}); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := hooks.Flush(ctx); err != nil {
			return workflows.NodeResult{}, err
		}
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return workflows.NodeResult{}, err
		}
		return workflows.NodeResult{UI: &workflows.UI{Message: "Done waiting."}}, nil
	}
	return reg.Add(&workflows.Definition{ID: waitWorkflow, Version: "1", Nodes: map[string]workflows.Node{"agent": {Run: wait}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}})
}

// confirmDialog is the page's confirmation dialog while it is open.
const confirmDialog = `#confirm-dialog[open]`

// TestStudioHumans drives what an operator decides and reads in the studio: approvals with
// nothing chosen for them, confirmations before cancelling a run or rolling back, a session's
// history told as it is (rolled-back and inherited turns, earlier turns in another tab), and
// the figures and texts of the chat.
func TestStudioHumans(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terminateOpenRuns(t, ctx)
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		if err := registerWait(reg); err != nil {
			return err
		}
		return registerAgents(reg)
	}
	o.DefaultWorkflow = "support"
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("humans-%d", time.Now().UnixNano()), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true, WebPage: true, Prices: studioPrices}
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "http://temporal-ui.invalid")
	st := testenv.Run(t, ctx, cfg, o)
	base := "http://" + st.HTTPAddr + "/"
	svc := webService(tc, cfg.TaskQueue)
	open := browser(t, ctx, base)
	stamp := time.Now().UnixNano()

	t.Run("approvals: nothing chosen, Answer disabled until a choice", func(t *testing.T) {
		p := open(t, "#/chat")
		p.send("support", "Please refund order A-1001, it arrived broken.")
		form := `.turn:last-child form.question[data-kind="choice"]`
		p.run(chromedp.WaitVisible(chromedp.CSS(form)))
		require.Equal(t, []string{"approve", "deny"}, p.allAttrs(form+` input[type="radio"]`, "value"))
		require.Empty(t, p.allAttrs(form+` input:checked`, "value"), "no option is chosen for the operator")
		require.True(t, p.bool(fmt.Sprintf(`document.querySelector(%q).disabled`, form+` button[type="submit"]`)))
		// The same question in the inbox: nothing chosen, Answer disabled.
		session := p.text("#session-id")
		card := fmt.Sprintf(`#inbox .interrupt[data-session=%q]`, session)
		p.hash("#/interrupts")
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` form[data-kind="choice"]`))
		require.Empty(t, p.allAttrs(card+` input:checked`, "value"))
		require.True(t, p.bool(fmt.Sprintf(`document.querySelector(%q).disabled`, card+` button[type="submit"]`)))
		// Back in the chat: a choice enables Answer; Deny is sent.
		p.hash("#/chat")
		p.run(chromedp.WaitVisible(chromedp.CSS(form)), chromedp.Click(chromedp.CSS(form+` input[value="deny"]`)))
		require.False(t, p.bool(fmt.Sprintf(`document.querySelector(%q).disabled`, form+` button[type="submit"]`)))
		p.run(chromedp.Click(chromedp.CSS(form + ` button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		require.Equal(t, "Deny", p.text(`.turn:last-child .user`))
		require.Equal(t, []string{"Answered."}, p.allTexts(`.turn:first-child form.question .answer-state`))
	})

	t.Run("cancelling a run is confirmed, then said as it is", func(t *testing.T) {
		// In the chat: Cancel run asks first; Keep changes nothing.
		p := open(t, "#/chat")
		p.send(formWorkflow, "ship it")
		form := `.turn:last-child form.question[data-kind="custom"]`
		p.run(chromedp.WaitVisible(chromedp.CSS(form)))
		require.Equal(t, "Cancel run", p.text(form+" button.cancel"))
		p.press(form + " button.cancel")
		p.run(chromedp.WaitVisible(chromedp.CSS(confirmDialog)))
		require.Equal(t, "Cancel the run?", p.text(confirmDialog+" h2"))
		require.Equal(t, "Cancel does not skip this question: it cancels the run that asks it. The run ends, cancelled, and does nothing more; this cannot be undone.",
			p.text(confirmDialog+" p"))
		require.Equal(t, []string{"Keep the question", "Cancel the run"}, p.allTexts(confirmDialog+" button"))
		require.Equal(t, "confirm-keep secondary", p.str(`document.activeElement.className`), "the focus is on Keep")
		p.press(confirmDialog + " button.confirm-keep")
		p.waitJS(`!document.querySelector("#confirm-dialog[open]")`)
		require.Equal(t, 1, len(p.allAttrs(".turn", "data-turn")), "nothing was sent")
		require.Len(t, p.allAttrs(form+` button[type="submit"]`, "type"), 1, "the question is still open")
		// Confirmed: the run is cancelled.
		p.press(form + " button.cancel")
		p.press(confirmDialog + " button.confirm-ok")
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		require.Equal(t, "Run cancelled.", p.text(`.turn:last-child .cancelled`))
		require.Equal(t, "Cancelled.", p.text("#status"))

		// In the inbox: the card says the run was cancelled, not that it was answered.
		session := fmt.Sprintf("humans-cancel-%d", stamp)
		_, err := svc.Start(ctx, session, sessions.TurnRequest{ClientTurnID: "t1", Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)})
		require.NoError(t, err)
		card := fmt.Sprintf(`#inbox .interrupt[data-session=%q]`, session)
		p.hash("#/interrupts")
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` form[data-kind="custom"]`))
		p.press(card + " button.cancel")
		p.run(chromedp.WaitVisible(chromedp.CSS(confirmDialog)))
		require.Equal(t, "Cancel the run?", p.text(confirmDialog+" h2"))
		p.press(confirmDialog + " button.confirm-ok")
		p.run(chromedp.WaitVisible(chromedp.CSS(card + " .run-cancelled")))
		require.Equal(t, "Run cancelled.", p.text(card+" .answer-result > span"))
	})

	var source, fork string
	var runs []string
	t.Run("rollback is confirmed with what it discards; rolled-back turns are marked", func(t *testing.T) {
		p := open(t, "#/chat")
		for _, m := range []string{"one", "two", "three"} {
			p.send(echoWorkflow, m)
			p.lastTurnEnded()
			p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
			runs = append(runs, p.attr(`.turn:last-child .run .id`, "data-id"))
		}
		source = p.text("#session-id")
		first := p.attr(`.turn:first-child .checkpoint`, "data-checkpoint")
		p.waitJS(`document.querySelectorAll("#checkpoints li").length === 4`)
		p.press(`#checkpoints li[data-checkpoint="` + first + `"] button.rollback`)
		p.run(chromedp.WaitVisible(chromedp.CSS(confirmDialog)))
		require.Equal(t, "Roll back to turn 1?", p.text(confirmDialog+" h2"))
		require.Equal(t, "This discards 2 later checkpoints (turn 2 to turn 3) and 2 turns of this transcript after it; a run still open among them is cancelled. The session goes on from turn 1; this cannot be undone.",
			p.text(confirmDialog+" p"))
		require.Equal(t, []string{"Keep the turns", "Roll back"}, p.allTexts(confirmDialog+" button"))
		p.press(confirmDialog + " button.confirm-keep")
		p.waitJS(`!document.querySelector("#confirm-dialog[open]")`)
		view, err := svc.View(ctx, source)
		require.NoError(t, err)
		require.Len(t, view.Checkpoints, 4, "Keep rolled nothing back")
		require.Len(t, p.allAttrs(".turn", "data-turn"), 3)
		p.press(`#checkpoints li[data-checkpoint="` + first + `"] button.rollback`)
		p.press(confirmDialog + " button.confirm-ok")
		p.waitJS(`document.getElementById("status").textContent === "Rolled back to turn 1."`)
		p.waitJS(`document.querySelectorAll(".turn").length === 1`)
		p.send(echoWorkflow, "four")
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		runs = append(runs, p.attr(`.turn:last-child .run .id`, "data-id"))
		require.Equal(t, []string{"Turn 1: one", "Turn 2: four"}, p.allTexts(".message"))

		// The session's view: every turn, the two rolled back marked.
		turn := `#sessions-body .session-transcript li.transcript-turn`
		p.hash("#/sessions/" + url.PathEscape(source))
		p.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 4`, turn))
		require.Equal(t, runs, p.allAttrs(turn, "data-run"))
		require.Equal(t, []string{"one", "two", "three", "four"}, p.allTexts(turn+" .prompt"))
		require.Equal(t, []string{"live", "rolledBack", "rolledBack", "live"}, p.allAttrs(turn, "data-state"))
		require.Equal(t, []string{"Rolled back: the session no longer goes on from this turn.", "Rolled back: the session no longer goes on from this turn."},
			p.allTexts(turn+" .turn-state"))
		require.Equal(t, "2 turns were rolled back: they are marked, and the session goes on without them.", p.text("#sessions-body .rolled-back-note"))
	})

	t.Run("a fork's transcript shows the turns it inherited", func(t *testing.T) {
		require.Len(t, runs, 4, "the rollback subtest ran")
		p := open(t, "#/chat")
		p.hash("#/sessions/" + url.PathEscape(source))
		p.waitJS(`document.getElementById("sessions-body").dataset.loaded === "detail"`)
		p.press("#sessions-body button.open-chat")
		p.waitJS(fmt.Sprintf(`document.body.dataset.view === "chat" && document.getElementById("session-id").textContent === %q`, source))
		// The head's checkpoint (turn 2, of "four"): fork from it.
		p.waitJS(`document.querySelectorAll("#checkpoints li").length === 3`)
		p.press(`#checkpoints li:last-child button.fork`)
		p.waitJS(fmt.Sprintf(`document.getElementById("session-id").textContent !== %q`, source))
		fork = p.text("#session-id")
		// The chat shows the turns the fork inherited, from the server.
		remote := `#transcript .remote .remote-turns li.transcript-turn`
		p.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, remote))
		require.Equal(t, []string{"inherited", "inherited"}, p.allAttrs(remote, "data-state"))
		require.Equal(t, []string{"one", "four"}, p.allTexts(remote+" .prompt"))
		p.send(echoWorkflow, "five")
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		five := p.attr(`.turn:last-child .run .id`, "data-id")
		require.Equal(t, []string{"Turn 3: five"}, p.allTexts(".turn .message"), "the fork goes on from turn 2")

		turn := `#sessions-body .session-transcript li.transcript-turn`
		p.hash("#/sessions/" + url.PathEscape(fork))
		p.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 3`, turn))
		require.Equal(t, []string{runs[0], runs[3], five}, p.allAttrs(turn, "data-run"))
		require.Equal(t, []string{"one", "four", "five"}, p.allTexts(turn+" .prompt"))
		require.Equal(t, []string{"inherited", "inherited", "live"}, p.allAttrs(turn, "data-state"))
		want := "Inherited from session " + source + " (before the fork)."
		require.Equal(t, []string{want, want}, p.allTexts(turn+" .turn-state"))
		require.Equal(t, []string{source, source}, p.allTexts(turn+" .turn-state .parent-link"))
	})

	t.Run("another tab shows a session's earlier turns", func(t *testing.T) {
		require.NotEmpty(t, source, "the rollback subtest ran")
		p := open(t, "#/chat") // a new tab: its sessionStorage holds no turn of that session
		btn := fmt.Sprintf(`#sessions button[data-session=%q]`, source)
		p.press(btn)
		turn := `#transcript .remote .remote-turns li.transcript-turn`
		p.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 4`, turn))
		require.Equal(t, "Earlier turns of this session, from the server (4 turns):", p.text("#transcript .remote-note"))
		require.Equal(t, []string{"one", "two", "three", "four"}, p.allTexts(turn+" .prompt"))
		require.Equal(t, []string{"live", "rolledBack", "rolledBack", "live"}, p.allAttrs(turn, "data-state"))
		require.Equal(t, runs, p.allAttrs(turn+" .run .id", "data-id"))
		// A new turn there goes on from the head: turn 3.
		p.send(echoWorkflow, "six")
		p.lastTurnEnded()
		require.Equal(t, []string{"Turn 3: six"}, p.allTexts(".turn .message"))
	})

	t.Run("formatting: durations, plurals, costs", func(t *testing.T) {
		p := open(t, "#/chat")
		var got []string
		p.eval(`import("/static/util.js").then(u => [
			u.ms(850), u.ms(999.6), u.ms(2400), u.ms(59960), u.ms(119600), u.ms(125000), u.ms(3599600), u.ms(7800000),
			u.plural(0, "signal"), u.plural(1, "signal"), u.plural(2, "signal"), u.plural(1, "entry", "entries"), u.plural(3, "entry", "entries"),
			u.money(0.000088), u.money(0.000264, "USD"), u.money(1e-7), u.money(0), u.money(0.25, "EUR"), u.money(1234.5678), u.money(undefined)])`, &got)
		require.Equal(t, []string{
			"850 ms", "1.0 s", "2.4 s", "1 min 0 s", "2 min 0 s", "2 min 5 s", "1 h 0 min", "2 h 10 min",
			"0 signals", "1 signal", "2 signals", "1 entry", "3 entries",
			"$0.000088", "$0.000264", "< $0.000001", "$0", "0.25 EUR", "$1235", "—",
		}, got)
		// /api/config names the default model and the currency.
		var cfg struct {
			DefaultModel string `json:"defaultModel"`
			Currency     string `json:"currency"`
		}
		getJSON(t, base+"api/config", &cfg)
		require.Equal(t, "openai:gpt-4.1-mini", cfg.DefaultModel)
		require.Equal(t, "USD", cfg.Currency)
	})

	t.Run("the chat: run line during a turn, status after a reconnect, the agent kept", func(t *testing.T) {
		p := open(t, "#/chat")
		p.send(waitWorkflow, "wait")
		// While the turn runs (Stop enabled), its run line shows the run and links its trace.
		p.waitJS(`!!document.querySelector(".turn:last-child .run .id") && !document.getElementById("stop").disabled`)
		run := p.attr(`.turn:last-child .run .id`, "data-id")
		require.Equal(t, "#/runs/"+url.PathEscape(run), p.attr(`.turn:last-child .run a.trace-link`, "href"))
		require.Equal(t, "Running…", p.text("#status"))
		// A reload reconnects to the running turn: the status says it runs again.
		p.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		p.waitJS(`document.getElementById("status").textContent === "Running…"`)
		require.Equal(t, waitWorkflow, p.value("#workflow"), "the agent field is kept across the reload")
		require.Equal(t, run, p.attr(`.turn:last-child .run .id`, "data-id"))
		p.run(chromedp.Click(chromedp.CSS("#stop")))
		p.lastTurnEnded()
		p.waitJS(`document.getElementById("status").textContent === "Cancelled."`)
		// The inspector names the default model of a pass that names none.
		p.send("support", "Where is order A-1002?")
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run button.inspect`)))
		p.press(`.turn:last-child .run button.inspect`)
		p.waitJS(`document.querySelectorAll('#timeline li[data-kind="model"]').length === 2`)
		for _, s := range p.allTexts(`#timeline li[data-kind="model"]`) {
			require.Regexp(t, `^model openai:gpt-4\.1-mini · `, s)
		}
	})

	t.Run("a compact header at 400 px", func(t *testing.T) {
		p := open(t, "#/chat")
		p.run(chromedp.EmulateViewport(400, 800))
		p.waitJS(`document.documentElement.clientWidth === 400`)
		// Two rows (the title, the status and the theme; the navigation), with or without a
		// status; it was 152 px before.
		for _, status := range []string{"", "Waiting for your answer."} {
			var h float64
			p.eval(fmt.Sprintf(`(() => { document.getElementById("status").textContent = %q; return document.querySelector("header").getBoundingClientRect().height; })()`, status), &h)
			require.LessOrEqual(t, h, 64.0, "the header with the status %q", status)
		}
		var problems []string
		p.eval(layoutCheck, &problems)
		require.Empty(t, problems)
	})
}
