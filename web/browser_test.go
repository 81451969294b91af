package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/stretchr/testify/require"
)

const chromium = "/usr/bin/chromium"

// page is the chat page in one tab of the shared browser.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// artifacts is where failing tests leave their screenshots: $KORTYX_ARTIFACTS, else
// web/testdata/artifacts (git-ignored).
func artifacts() string {
	if d := os.Getenv("KORTYX_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join("testdata", "artifacts")
}

func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.shot()
		p.t.Fatalf("browser: %v", err)
	}
}

// shot saves a screenshot of the page (on failure).
func (p *page) shot() {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("no screenshot: %v", err)
		return
	}
	dir, _ := filepath.Abs(artifacts())
	_ = os.MkdirAll(dir, 0o755)
	file := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(p.t.Name())+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Logf("no screenshot: %v", err)
		return
	}
	p.t.Logf("screenshot: %s", file)
}

// text is the text content of the first element sel matches.
func (p *page) text(sel string) string {
	p.t.Helper()
	p.run(chromedp.WaitReady(chromedp.CSS(sel)))
	var s string
	p.eval(fmt.Sprintf(`document.querySelector(%q).textContent`, sel), &s)
	return s
}

// eval evaluates the expression into out (a pointer to its JSON form).
func (p *page) eval(js string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
	if err == nil {
		err = json.Unmarshal(v, out)
	}
	if err != nil {
		p.shot()
		p.t.Fatalf("browser: evaluating %s: %v", js, err)
	}
}

// waitJS waits until the expression is true.
func (p *page) waitJS(js string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		p.shot()
		p.t.Fatalf("browser: waiting for %s: %v", js, err)
	}
}

func (p *page) send(workflow, message string) {
	p.t.Helper()
	var before int
	p.eval(`document.querySelectorAll(".turn").length`, &before)
	p.run(chromedp.SetValue(chromedp.CSS("#workflow"), workflow), chromedp.SendKeys(chromedp.CSS("#message"), message), chromedp.Click(chromedp.CSS("#send")))
	p.waitJS(fmt.Sprintf(`document.querySelectorAll(".turn").length === %d`, before+1))
}

// lastTurnEnded waits for the last turn's response to end (its [DONE]).
func (p *page) lastTurnEnded() {
	p.t.Helper()
	p.waitJS(`(() => { const t = JSON.parse(sessionStorage.getItem("kortyx.turns." + sessionStorage.getItem("kortyx.session")) || "[]"); return t.length > 0 && t[t.length-1].ended === true; })()`)
}

func (p *page) attr(sel, name string) string {
	p.t.Helper()
	var s string
	p.eval(fmt.Sprintf(`document.querySelector(%q).getAttribute(%q)`, sel, name), &s)
	return s
}

func (p *page) allAttrs(sel, name string) []string {
	p.t.Helper()
	var out []string
	p.eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.getAttribute(%q))`, sel, name), &out)
	return out
}

func (p *page) allTexts(sel string) []string {
	p.t.Helper()
	var out []string
	p.eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, sel), &out)
	return out
}

func TestPage(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	if _, err := exec.LookPath(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chosen, err := examples.Parse("support,triage")
	require.NoError(t, err)
	opts, err := chosen.Backend()
	require.NoError(t, err)
	opts.FakeServers = true // no key: the scripted fake server of the OpenAI wire
	backend, err := app.NewBackend(ctx, opts)
	require.NoError(t, err)
	defer backend.Close()
	reg, err := app.Registry(backend, chosen.Register, registerAgents)
	require.NoError(t, err)
	cfg := app.Config{TaskQueue: fmt.Sprintf("web-%d", time.Now().UnixNano()), Namespace: "default"}
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "http://temporal-ui.invalid")
	st, err := app.StartStack(ctx, tc, cfg, app.StackOptions{Registry: reg, Backend: backend, HTTPAddr: "127.0.0.1:0", DefaultWorkflow: "support"})
	require.NoError(t, err)
	defer st.Stop()
	base := "http://" + st.HTTPAddr + "/"

	flags := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.Flag("headless", "new"),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		flags = append(flags, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, flags...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	require.NoError(t, chromedp.Do(bctx), "starting Chromium")

	open := func(t *testing.T) *page {
		tctx, cancelTab := chromedp.NewContext(bctx)
		t.Cleanup(cancelTab)
		// The tab lives as long as the context of its first action: no timeout on that one.
		require.NoError(t, chromedp.Do(tctx), "opening a tab")
		p := &page{t: t, ctx: tctx, base: base}
		t.Cleanup(func() {
			if t.Failed() {
				p.shot()
			}
		})
		p.run(chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		return p
	}
	var supportRun string

	t.Run("support approves a refund", func(t *testing.T) {
		p := open(t)
		p.send("support", "Please refund order A-1001, it arrived broken.")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, "← "+`{"orderId":"A-1001","item":"espresso machine","total":249,"status":"delivered"}`,
			p.text(`.tool[data-tool="lookup_order"] .tool-result`))
		require.Equal(t, "Approve refund?", p.text(`.turn:last-child form.question p strong`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child form.question input[value="approve"]`)),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", p.text(`.turn:last-child .text`))
		require.Equal(t, "← "+`{"refundId":"R-5001","orderId":"A-1001","amount":249}`, p.text(`.turn:last-child .tool[data-tool="refund"] .tool-result`))
		require.Equal(t, []string{"Answered."}, p.allTexts(`.turn:first-child form.question .meta`))
		supportRun = p.text(`.turn:last-child .run code`)
		var href string
		p.eval(`document.querySelector(".turn:last-child a.temporal-link").getAttribute("href")`, &href)
		require.Equal(t, "http://temporal-ui.invalid/namespaces/default/workflows/"+supportRun, href)
	})

	t.Run("triage card and questions", func(t *testing.T) {
		p := open(t)
		p.send("triage", "I was charged twice on my last invoice")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, []string{"Billing question", "billing", "I was charged twice on my last invoice", "billing, from-chat"},
			p.allTexts(`.turn:last-child .structured[data-final="true"] dd`))
		require.Equal(t, []string{"title", "topic", "summary", "tags"}, p.allTexts(`.turn:last-child .structured[data-final="true"] dt`))
		require.Equal(t, `Open a billing ticket "Billing question"?`, p.text(`.turn:last-child form.question p strong`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child input[value="revise"]`)), chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="text"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, "What should the ticket say?", p.text(`.turn:last-child form.question p strong`))
		p.run(chromedp.SendKeys(chromedp.CSS(`.turn:last-child form.question input[type="text"]`), "Refund the duplicate charge"),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:nth-child(3) form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, "Refund the duplicate charge", p.text(`.turn:last-child .structured[data-final="true"] dd[data-field="summary"]`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child input[value="open"]`)), chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.lastTurnEnded()
		require.Regexp(t, `^Opened billing ticket T-\S+: Refund the duplicate charge$`, p.text(`.turn:last-child .message`))
		// KORTYX_SCREENSHOT=1 refreshes the README's picture of the page.
		if os.Getenv("KORTYX_SCREENSHOT") != "" {
			p.run(chromedp.Click(chromedp.CSS(`.turn:first-child .run button.inspect`)), chromedp.WaitVisible(chromedp.CSS(`#timeline .totals`)))
			ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
			defer cancel()
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "images", "chat-page.png"), png, 0o644))
		}
	})

	t.Run("custom question form", func(t *testing.T) {
		p := open(t)
		p.send(formWorkflow, "ship it")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="custom"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, "How should we ship it?", p.text(`.turn:last-child form.question p strong`))
		require.Equal(t, []string{"Quantity (required)", "Speed (required)"}, p.allTexts(`.turn:last-child form.question .field label`))
		p.run(chromedp.SendKeys(chromedp.CSS(`.turn:last-child input[name="quantity"]`), "0"),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		require.Equal(t, []string{"must be at least 1", "required"}, p.allTexts(`.turn:last-child .field .field-error`))
		var turns int
		p.eval(`document.querySelectorAll(".turn").length`, &turns)
		require.Equal(t, 1, turns, "an invalid answer is not sent")
		p.run(chromedp.SetValue(chromedp.CSS(`.turn:last-child input[name="quantity"]`), "3"),
			chromedp.SetValue(chromedp.CSS(`.turn:last-child select[name="speed"]`), `"express"`),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		require.Equal(t, `{"quantity":3,"speed":"express"}`, p.text(`.turn:last-child .user`))
		// Then a multi-choice question: none chosen is refused on the page, two are sent.
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="multi-choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		require.Equal(t, []string{"Gift wrap", "Insurance", "Tracking"}, p.allTexts(`.turn:last-child form.question .option label`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		require.Equal(t, "Choose at least one option.", p.text(`.turn:last-child form.question > .field-error`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child input[value="gift"]`)), chromedp.Click(chromedp.CSS(`.turn:last-child input[value="track"]`)),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 3`)
		p.lastTurnEnded()
		require.Equal(t, "Gift wrap, Tracking", p.text(`.turn:last-child .user`))
		require.Equal(t, "Shipping 3, express, with gift and track.", p.text(`.turn:last-child .message`))
	})

	t.Run("cancel a question", func(t *testing.T) {
		p := open(t)
		p.send(formWorkflow, "ship it")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="custom"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child form.question button.cancel`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		require.Equal(t, "Cancel", p.text(`.turn:last-child .user`))
		require.Equal(t, "Run cancelled.", p.text(`.turn:last-child .cancelled`))
		require.Equal(t, []string{"Answered."}, p.allTexts(`.turn:first-child form.question .meta`))
	})

	t.Run("errors show their code and message", func(t *testing.T) {
		p := open(t)
		p.send("no-such-agent", "hello")
		p.lastTurnEnded()
		require.Equal(t, []string{"UNKNOWN_WORKFLOW"}, p.allAttrs(`.turn:last-child .error`, "data-code"))
		require.Regexp(t, `^UNKNOWN_WORKFLOW: .*no-such-agent`, p.text(`.turn:last-child .error`))
	})

	t.Run("reload mid-stream loses and repeats nothing", func(t *testing.T) {
		p := open(t)
		p.send(tickerWorkflow, "tick")
		p.waitJS(`(() => { const d = document.querySelector('.turn:last-child dd[data-field="text"]'); return d && d.textContent.split(" ").length >= 3; })()`)
		p.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		p.lastTurnEnded()
		// The transcript is the run's result, exactly.
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run code`)))
		view, err := kortyx.Query(ctx, tc, p.text(`.turn:last-child .run code`))
		require.NoError(t, err)
		require.Equal(t, strings.Join(tickerWords, " "), view.State.Data["text"])
		require.Equal(t, view.State.Data["text"], p.text(`.turn:last-child dd[data-field="text"]`))
		require.Equal(t, "Done ticking.", p.text(`.turn:last-child .message`))
		// Every chunk of the run once, in order: offsets 1..n, n the broker's last.
		var ids []int64
		p.eval(`JSON.parse(sessionStorage.getItem("kortyx.turns." + sessionStorage.getItem("kortyx.session"))).at(-1).chunks.filter(c => c.id !== undefined && c.id !== null).map(c => c.id)`, &ids)
		require.NotEmpty(t, ids)
		for i, id := range ids {
			require.Equal(t, int64(i+1), id, "offsets %v", ids)
		}
		var deltas []string
		p.eval(`JSON.parse(sessionStorage.getItem("kortyx.turns." + sessionStorage.getItem("kortyx.session"))).at(-1).chunks.filter(c => c.chunk.type === "structured-data").map(c => c.chunk.delta)`, &deltas)
		require.Equal(t, strings.Join(tickerWords, " "), strings.Join(deltas, ""))
		require.Len(t, deltas, len(tickerWords))
	})

	t.Run("stop", func(t *testing.T) {
		p := open(t)
		p.send(tickerWorkflow, "tick")
		p.waitJS(`!!document.querySelector('.turn:last-child dd[data-field="text"]')`)
		p.run(chromedp.Click(chromedp.CSS("#stop")))
		p.lastTurnEnded()
		require.Equal(t, "Run cancelled.", p.text(`.turn:last-child .cancelled`))
		require.Empty(t, p.allTexts(`.turn:last-child .message`))
		got := p.text(`.turn:last-child dd[data-field="text"]`)
		require.NotEqual(t, strings.Join(tickerWords, " "), got, "the run stopped before its end")
	})

	t.Run("rollback and fork", func(t *testing.T) {
		p := open(t)
		p.send(echoWorkflow, "one")
		p.lastTurnEnded()
		p.send(echoWorkflow, "two")
		p.lastTurnEnded()
		require.Equal(t, []string{"Turn 1: one", "Turn 2: two"}, p.allTexts(".message"))
		// The session's checkpoints: its start (turn 0) and one per turn.
		p.waitJS(`document.querySelectorAll("#checkpoints li").length === 3`)
		first := p.attr(`.turn:first-child .checkpoint`, "data-checkpoint")
		require.Equal(t, []string{"turn 0 · web-echo · Roll back Fork", "turn 1 · web-echo · agentRoll back Fork", "turn 2 · web-echo · agentRoll back Fork"}, p.allTexts("#checkpoints li"))
		p.run(chromedp.Click(chromedp.CSS(`#checkpoints li[data-checkpoint="` + first + `"] button.rollback`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(`#status`)))
		p.waitJS(`document.getElementById("status").textContent.startsWith("Rolled back")`)
		require.Equal(t, "Rolled back to turn 1.", p.text("#status"))
		p.waitJS(`document.querySelectorAll(".turn").length === 1`)
		p.send(echoWorkflow, "three")
		p.lastTurnEnded()
		require.Equal(t, []string{"Turn 1: one", "Turn 2: three"}, p.allTexts(".message"))
		source := p.text("#session-id")
		p.waitJS(`document.querySelectorAll("#checkpoints li").length === 3`)
		p.run(chromedp.Click(chromedp.CSS(`#checkpoints li[data-checkpoint="` + first + `"] button.fork`)))
		p.waitJS(fmt.Sprintf(`document.getElementById("session-id").textContent !== %q`, source))
		require.Equal(t, []string{"Turn 1: one"}, p.allTexts(".message"))
		p.send(echoWorkflow, "four")
		p.lastTurnEnded()
		require.Equal(t, []string{"Turn 1: one", "Turn 2: four"}, p.allTexts(".message"))
		// Both sessions are listed (visibility is eventually consistent: the list is asked
		// again after each turn), the fork marked as the current one.
		fork := p.text("#session-id")
		p.waitJS(fmt.Sprintf(`!!document.querySelector('#sessions button[data-session=%q][aria-current="true"]') && !!document.querySelector('#sessions button[data-session=%q][aria-current="false"]')`, fork, source))
		var order []string
		p.eval(fmt.Sprintf(`[...document.querySelectorAll("#sessions button.session")].map(b => b.dataset.session).filter(s => s === %q || s === %q)`, fork, source), &order)
		require.Equal(t, []string{fork, source}, order, "newest first")
	})

	t.Run("inspector timeline", func(t *testing.T) {
		require.NotEmpty(t, supportRun, "the support subtest ran")
		p := open(t)
		p.run(chromedp.SendKeys(chromedp.CSS("#inspect-run"), supportRun), chromedp.Click(chromedp.CSS(`#inspect-form button`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(`#timeline .totals`)))
		// Durations and checkpoint ids differ from run to run.
		ms, cp := regexp.MustCompile(`\d+ ms`), regexp.MustCompile(`cp-[0-9a-f-]{36}`)
		var got []string
		for _, s := range p.allTexts("#timeline li") {
			got = append(got, cp.ReplaceAllString(ms.ReplaceAllString(s, "N ms"), "cp-ID"))
		}
		require.Equal(t, "support · completed · 3 model passes · 2 tool calls · tokens 30 in / 8 out / 38 total", p.text("#timeline .totals"))
		require.Equal(t, "nodes: agent", p.text("#timeline .nodes"))
		require.Equal(t, []string{
			"run started",
			"model (the worker's default) · 10 tokens (10 in, 0 out) · tool-calls · N ms",
			`tool lookup_order {"orderId":"A-1001"} → {"orderId":"A-1001","item":"espresso machine","total":249,"status":"delivered"} · N ms · attempt 1`,
			"model (the worker's default) · 10 tokens (10 in, 0 out) · tool-calls · N ms",
			"node agent",
			"question choice: Approve refund?",
			"checkpoint cp-ID (turn 1) Roll back Fork",
			`answer ["approve"]`,
			`tool refund {"orderId":"A-1001","reason":"customer request: delivered"} → {"refundId":"R-5001","orderId":"A-1001","amount":249} · N ms · attempt 1`,
			"model (the worker's default) · 18 tokens (10 in, 8 out) · stop · N ms",
			"checkpoint cp-ID (turn 2) Roll back Fork",
			"run completed",
		}, got)
		// From the timeline's first checkpoint: fork, then the fork's transcript is empty and
		// its session is the page's.
		source := p.text("#session-id")
		p.run(chromedp.Click(chromedp.CSS(`#timeline li[data-kind="checkpoint"] button.fork`)))
		p.waitJS(fmt.Sprintf(`document.getElementById("session-id").textContent !== %q && document.getElementById("session-id").textContent !== "(new)"`, source))
	})
}
