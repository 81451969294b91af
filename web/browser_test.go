package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
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

// docShot writes a screenshot of the page to docs/images/name when KORTYX_WRITE_SCREENSHOTS=1
// (how the docs' Studio images are made).
func (p *page) docShot(name string) {
	if os.Getenv("KORTYX_WRITE_SCREENSHOTS") != "1" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(p.t, err)
	require.NoError(p.t, os.WriteFile(filepath.Join("..", "docs", "images", name), png, 0o644))
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

// press clicks the element sel with the DOM's click(), not at its place on the screen: the
// left column's lists (sessions above checkpoints) re-render while the page refreshes them,
// and a click at a position read before a re-render that moved the list lands on whatever
// moved there (a clean-clone run once failed "fork from an open question" with a fork that
// kept no turn and asked nothing, as a fork from the turn-0 checkpoint above it does).
func (p *page) press(sel string) {
	p.t.Helper()
	p.run(chromedp.WaitVisible(chromedp.CSS(sel)))
	var ok bool
	p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel), &ok)
	if !ok {
		p.shot()
		p.t.Fatalf("browser: no element %s to click", sel)
	}
}

// eval evaluates the expression (awaiting it when it is a promise) into out (a pointer to its
// JSON form).
func (p *page) eval(js string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
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
	o := chosen.Options()
	o.Register = func(reg *workflows.Registry) error {
		if err := chosen.Register(reg); err != nil {
			return err
		}
		return registerAgents(reg)
	}
	reg := workflows.NewRegistry() // the worker's agents, for the page's suggestions
	require.NoError(t, o.Register(reg))
	o.DefaultWorkflow = "support"
	// No key: the in-process scripted fake model answers for openai; the chat page is served.
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("web-%d", time.Now().UnixNano()), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true, WebPage: true}
	t.Setenv("KORTYX_TEMPORAL_UI_URL", "http://temporal-ui.invalid")
	st := testenv.Run(t, ctx, cfg, o)
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
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		require.Equal(t, "← "+`{"orderId":"A-1001","item":"espresso machine","total":249,"status":"delivered"}`,
			p.text(`.tool[data-tool="lookup_order"] .tool-result`))
		require.Equal(t, "Approve refund?", p.text(`.turn:last-child form.question p strong`))
		// The approval names the call it approves: the tool and its arguments.
		require.Equal(t, "refund", p.text(`.turn:last-child form.question .approval-tool`))
		require.Equal(t, refundArgs("A-1001", "delivered"), p.text(`.turn:last-child form.question .approval-args`))
		require.Equal(t, "Waiting for your answer.", p.text("#status"))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child form.question input[value="approve"]`)),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.lastTurnEnded()
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		require.Equal(t, "Done: order A-1001 is refunded (R-5001, full amount).", p.text(`.turn:last-child .text`))
		require.Equal(t, "← "+`{"refundId":"R-5001","orderId":"A-1001","amount":249}`, p.text(`.turn:last-child .tool[data-tool="refund"] .tool-result`))
		require.Equal(t, []string{"Answered."}, p.allTexts(`.turn:first-child form.question .meta`))
		require.Empty(t, p.text("#status"), "the status says nothing after a completed turn")
		supportRun = p.attr(`.turn:last-child .run .id`, "data-id")
		var href string
		p.eval(`document.querySelector(".turn:last-child a.temporal-link").getAttribute("href")`, &href)
		require.Equal(t, "http://temporal-ui.invalid/namespaces/default/workflows/"+supportRun, href)
	})

	t.Run("support denies a refund", func(t *testing.T) {
		p := open(t)
		p.send("support", "Please refund order A-1003, it arrived broken.")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		require.Equal(t, refundArgs("A-1003", "damaged"), p.text(`.turn:last-child form.question .approval-args`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child form.question input[value="deny"]`)),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		// The denied call is drawn as denied, not as a result.
		require.Equal(t, []string{"tool denied"}, p.allAttrs(`.turn:last-child .tool[data-tool="refund"]`, "class"))
		require.Equal(t, "✗ Denied: not run. The model was told: Tool call denied by user.", p.text(`.turn:last-child .tool[data-tool="refund"] .tool-denied`))
		require.Empty(t, p.allTexts(`.turn:last-child .tool[data-tool="refund"] .tool-result`))
		require.Equal(t, "I have not refunded order A-1003: Tool call denied by user.", p.text(`.turn:last-child .text`))
		require.Equal(t, []string{"Answered."}, p.allTexts(`.turn:first-child form.question .meta`))
	})

	t.Run("triage card and questions", func(t *testing.T) {
		p := open(t)
		p.send("triage", "I was charged twice on my last invoice")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		require.Equal(t, []string{"Billing question", "billing", "I was charged twice on my last invoice", "billing, from-chat"},
			p.allTexts(`.turn:last-child .structured[data-final="true"] dd`))
		require.Equal(t, []string{"title", "topic", "summary", "tags"}, p.allTexts(`.turn:last-child .structured[data-final="true"] dt`))
		require.Equal(t, `Open a billing ticket "Billing question"?`, p.text(`.turn:last-child form.question p strong`))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child input[value="revise"]`)), chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="text"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		require.Equal(t, "What should the ticket say?", p.text(`.turn:last-child form.question p strong`))
		p.run(chromedp.SendKeys(chromedp.CSS(`.turn:last-child form.question input[type="text"]`), "Refund the duplicate charge"),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:nth-child(3) form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
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
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="custom"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
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
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="multi-choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
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
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="custom"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		p.run(chromedp.Click(chromedp.CSS(`.turn:last-child form.question button.cancel`)))
		p.press(confirmDialog + " button.confirm-ok") // the page asks first
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		require.Equal(t, "Cancel", p.text(`.turn:last-child .user`))
		require.Equal(t, "Run cancelled.", p.text(`.turn:last-child .cancelled`))
		require.Equal(t, []string{"Cancelled."}, p.allTexts(`.turn:first-child form.question .meta`))
		require.Equal(t, "Cancelled.", p.text("#status"))
	})

	t.Run("errors show their code and message", func(t *testing.T) {
		p := open(t)
		p.send("no-such-agent", "hello")
		p.lastTurnEnded()
		require.Equal(t, []string{"UNKNOWN_WORKFLOW"}, p.allAttrs(`.turn:last-child .error`, "data-code"))
		require.Regexp(t, `^UNKNOWN_WORKFLOW: .*no-such-agent`, p.text(`.turn:last-child .error`))
		require.Equal(t, "Failed: UNKNOWN_WORKFLOW", p.text("#status"))
		// A run that fails: its response is error, done.
		p.send(failWorkflow, "fail")
		p.lastTurnEnded()
		require.Equal(t, []string{failCode}, p.allAttrs(`.turn:last-child .error`, "data-code"))
		require.Equal(t, "Failed: "+failCode, p.text("#status"))
	})

	t.Run("reload mid-stream loses and repeats nothing", func(t *testing.T) {
		p := open(t)
		p.send(tickerWorkflow, "tick")
		p.waitJS(`(() => { const d = document.querySelector('.turn:last-child dd[data-field="text"]'); return d && d.textContent.split(" ").length >= 3; })()`)
		p.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		p.lastTurnEnded()
		// The transcript is the run's result, exactly.
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		view, err := kortyx.Query(ctx, tc, p.attr(`.turn:last-child .run .id`, "data-id"))
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
		// Stop is enabled only while a turn runs.
		p.waitJS(`document.getElementById("stop").disabled`)
		p.send(tickerWorkflow, "tick")
		p.waitJS(`!!document.querySelector('.turn:last-child dd[data-field="text"]')`)
		p.waitJS(`!document.getElementById("stop").disabled`)
		p.run(chromedp.Click(chromedp.CSS("#stop")))
		p.lastTurnEnded()
		p.waitJS(`document.getElementById("stop").disabled`)
		require.Equal(t, "Run cancelled.", p.text(`.turn:last-child .cancelled`))
		p.waitJS(`document.getElementById("status").textContent === "Cancelled."`)
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
		p.press(`#checkpoints li[data-checkpoint="` + first + `"] button.rollback`)
		p.press(confirmDialog + " button.confirm-ok") // the page asks first
		p.run(chromedp.WaitVisible(chromedp.CSS(`#status`)))
		p.waitJS(`document.getElementById("status").textContent.startsWith("Rolled back")`)
		require.Equal(t, "Rolled back to turn 1.", p.text("#status"))
		p.waitJS(`document.querySelectorAll(".turn").length === 1`)
		p.send(echoWorkflow, "three")
		p.lastTurnEnded()
		require.Equal(t, []string{"Turn 1: one", "Turn 2: three"}, p.allTexts(".message"))
		source := p.text("#session-id")
		p.waitJS(`document.querySelectorAll("#checkpoints li").length === 3`)
		p.press(`#checkpoints li[data-checkpoint="` + first + `"] button.fork`)
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
		ms, cp := regexp.MustCompile(`\d+ ms`), regexp.MustCompile(`cp-[0-9a-f-]{36}(@\S+)?`)
		var got []string
		for _, s := range p.allTexts("#timeline li") {
			got = append(got, cp.ReplaceAllString(ms.ReplaceAllString(s, "N ms"), "cp-ID"))
		}
		require.Equal(t, "support · completed · 3 model passes · 2 tool calls · tokens 30 in / 8 out / 38 total", p.text("#timeline .totals"))
		require.Equal(t, "nodes: agent", p.text("#timeline .nodes"))
		require.Equal(t, []string{
			"run started",
			"model openai:gpt-4.1-mini · 10 tokens (10 in, 0 out) · tool-calls · N ms",
			`tool lookup_order {"orderId":"A-1001"} → {"orderId":"A-1001","item":"espresso machine","total":249,"status":"delivered"} · N ms · attempt 1`,
			"model openai:gpt-4.1-mini · 10 tokens (10 in, 0 out) · tool-calls · N ms",
			"node agent",
			"question choice: Approve refund?",
			"checkpoint cp-ID (turn 1) Roll back Fork",
			`answer ["approve"]`,
			`tool refund {"orderId":"A-1001","reason":"customer request: delivered"} → {"refundId":"R-5001","orderId":"A-1001","amount":249} · N ms · attempt 1`,
			"model openai:gpt-4.1-mini · 18 tokens (10 in, 8 out) · stop · N ms",
			"checkpoint cp-ID (turn 2) Roll back Fork",
			"run completed",
		}, got)
		// From the timeline's first checkpoint: fork, then the fork's transcript is empty and
		// its session is the page's.
		source := p.text("#session-id")
		p.run(chromedp.Click(chromedp.CSS(`#timeline li[data-kind="checkpoint"] button.fork`)))
		p.waitJS(fmt.Sprintf(`document.getElementById("session-id").textContent !== %q && document.getElementById("session-id").textContent !== "(new)"`, source))
	})

	t.Run("fork from an open question", func(t *testing.T) {
		p := open(t)
		p.send(formWorkflow, "ship it")
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="custom"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		cp := p.attr(`.turn:first-child .checkpoint`, "data-checkpoint")
		source := p.text("#session-id")
		p.waitJS(`document.querySelectorAll("#checkpoints li").length === 2`)
		p.press(`#checkpoints li[data-checkpoint="` + cp + `"] button.fork`)
		p.waitJS(fmt.Sprintf(`document.getElementById("session-id").textContent !== %q`, source))
		fork := p.text("#session-id")
		// The copied question carries the fork's token and request id, not the source's.
		view, err := webService(tc, "").View(ctx, fork)
		require.NoError(t, err)
		require.Len(t, view.Pending, 1)
		var asked []string
		p.eval(`(() => { const t = JSON.parse(sessionStorage.getItem("kortyx.turns." + sessionStorage.getItem("kortyx.session"))); const c = t[0].chunks.map(x => x.chunk).find(c => c.type === "interrupt"); return [c.resumeToken, c.requestId]; })()`, &asked)
		require.Equal(t, []string{view.Pending[0].Token, view.Pending[0].RequestID}, asked)
		// Answered in the fork, the question goes on to the next one.
		p.run(chromedp.SetValue(chromedp.CSS(`.turn:last-child input[name="quantity"]`), "2"),
			chromedp.SetValue(chromedp.CSS(`.turn:last-child select[name="speed"]`), `"standard"`),
			chromedp.Click(chromedp.CSS(`.turn:last-child form.question button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 2`)
		p.lastTurnEnded()
		require.Empty(t, p.allTexts(`.turn:last-child .error`))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="multi-choice"]`)))
		require.Equal(t, fork, p.text("#session-id"))
	})

	t.Run("sessions from the server", func(t *testing.T) {
		// A session this browser never saw, waiting for an answer, and one whose turn completed.
		// The completed ones' ids have a quote and a backslash, which a visibility query cannot
		// hold; the first starts with one.
		waiting, done := fmt.Sprintf("elsewhere-%d", time.Now().UnixNano()), fmt.Sprintf(`elsewhere-o'done\-%d`, time.Now().UnixNano())
		quoted := fmt.Sprintf(`'quoted-%d`, time.Now().UnixNano())
		_, err := webService(tc, cfg.TaskQueue).Start(ctx, quoted, sessions.TurnRequest{ClientTurnID: "t1", Workflow: echoWorkflow, Input: json.RawMessage(`"hi"`)})
		require.NoError(t, err)
		ts, err := webService(tc, cfg.TaskQueue).Start(ctx, waiting, sessions.TurnRequest{ClientTurnID: "t1", Workflow: formWorkflow, Input: json.RawMessage(`"ship it"`)})
		require.NoError(t, err)
		tsDone, err := webService(tc, cfg.TaskQueue).Start(ctx, done, sessions.TurnRequest{ClientTurnID: "t1", Workflow: echoWorkflow, Input: json.RawMessage(`"hi"`)})
		require.NoError(t, err)
		// Visibility is eventually consistent: ask until both runs have their final status.
		var items map[string]web.SessionItem
		var raw map[string]map[string]any
		require.Eventually(t, func() bool {
			items, raw = sessionsList(t, base)
			return items[waiting].Status == "waiting" && items[done].Status == "completed" && items[quoted].Status == "completed"
		}, 20*time.Second, 100*time.Millisecond, "the sessions list: %v", items)
		w := items[waiting]
		require.Equal(t, formWorkflow, w.Agent)
		require.Equal(t, ts.RunID, w.RunID)
		require.False(t, w.LastActivityAt.Before(w.StartedAt))
		require.Equal(t, echoWorkflow, items[done].Agent)
		require.Equal(t, tsDone.RunID, items[done].RunID)
		require.Equal(t, []string{"agent", "lastActivityAt", "runId", "sessionId", "startedAt", "status", "turns"}, slices.Sorted(maps.Keys(raw[waiting])))

		p := open(t)
		btn := fmt.Sprintf(`#sessions button[data-session=%q]`, waiting)
		p.run(chromedp.WaitVisible(chromedp.CSS(btn)))
		require.Equal(t, formWorkflow, p.text(btn+" .session-agent"))
		require.Equal(t, "waiting", p.text(btn+" .session-status"))
		require.Equal(t, raw[waiting]["lastActivityAt"], p.attr(btn+" time", "datetime"))
		require.Equal(t, "completed", p.text(fmt.Sprintf(`#sessions button[data-session=%q] .session-status`, done)))
		// Opened here, it shows its open question, which can be answered.
		p.run(chromedp.Click(chromedp.CSS(btn)), chromedp.WaitVisible(chromedp.CSS(`.remote form.question[data-kind="custom"]`)))
		require.Equal(t, waiting, p.text("#session-id"))
		require.Equal(t, "Earlier turns of this session, from the server (1 turn):", p.text(".remote > p"))
		require.Equal(t, "How should we ship it?", p.text(`.remote form.question p strong`))
		p.run(chromedp.SetValue(chromedp.CSS(`.remote input[name="quantity"]`), "1"),
			chromedp.SetValue(chromedp.CSS(`.remote select[name="speed"]`), `"express"`),
			chromedp.Click(chromedp.CSS(`.remote form.question button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 1`)
		p.lastTurnEnded()
		require.Empty(t, p.allTexts(`.turn:last-child .error`))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="multi-choice"]`)))
		require.Equal(t, []string{"Answered."}, p.allTexts(`.remote form.question .meta`))
	})

	t.Run("a question asked over A2A, answered in the page", func(t *testing.T) {
		// Another wire of the same API (A2A, package a2aserver) starts the session; the page
		// lists it from the server, opens it and answers its question; A2A then sees the next one.
		session := fmt.Sprintf("a2a-%d", time.Now().UnixNano())
		rpc := func(method, params string) map[string]any {
			t.Helper()
			res, err := http.Post(base+"a2a/"+formWorkflow, "application/json",
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
			require.NoError(t, err)
			defer res.Body.Close()
			var out struct {
				Result map[string]any `json:"result"`
				Error  any            `json:"error"`
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
			require.Nil(t, out.Error)
			return out.Result
		}
		state := func(task map[string]any) string { return task["status"].(map[string]any)["state"].(string) }
		task := rpc("message/send", `{"message":{"kind":"message","messageId":"m-1","role":"user","contextId":"`+session+`","parts":[{"kind":"text","text":"ship it"}]}}`)
		require.Equal(t, "input-required", state(task))
		// Visibility is eventually consistent: the page lists what the server lists.
		require.Eventually(t, func() bool {
			items, _ := sessionsList(t, base)
			return items[session].Status == "waiting"
		}, 20*time.Second, 100*time.Millisecond)
		p := open(t)
		btn := fmt.Sprintf(`#sessions button[data-session=%q]`, session)
		p.run(chromedp.WaitVisible(chromedp.CSS(btn)), chromedp.Click(chromedp.CSS(btn)), chromedp.WaitVisible(chromedp.CSS(`.remote form.question[data-kind="custom"]`)))
		require.Equal(t, "How should we ship it?", p.text(`.remote form.question p strong`))
		p.run(chromedp.SetValue(chromedp.CSS(`.remote input[name="quantity"]`), "3"),
			chromedp.SetValue(chromedp.CSS(`.remote select[name="speed"]`), `"express"`),
			chromedp.Click(chromedp.CSS(`.remote form.question button[type="submit"]`)))
		p.waitJS(`document.querySelectorAll(".turn").length === 1`)
		p.lastTurnEnded()
		require.Empty(t, p.allTexts(`.turn:last-child .error`))
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="multi-choice"]`)))
		// The A2A task asks the next question now.
		got := rpc("tasks/get", `{"id":"`+task["id"].(string)+`"}`)
		require.Equal(t, "input-required", state(got))
		parts := got["status"].(map[string]any)["message"].(map[string]any)["parts"].([]any)
		require.Equal(t, "Which extras?", parts[0].(map[string]any)["text"])
	})

	t.Run("agent suggestions from the registry", func(t *testing.T) {
		p := open(t)
		var want []string
		for _, d := range reg.Workflows() {
			want = append(want, d.ID)
		}
		require.Contains(t, want, echoWorkflow)
		require.Equal(t, want, p.allAttrs("#workflow-names option", "value"))
		require.Equal(t, echoWorkflow+" — "+echoDescription, p.attr(fmt.Sprintf(`#workflow-names option[value=%q]`, echoWorkflow), "label"))
		require.Equal(t, "default: support", p.attr("#workflow", "placeholder"))
	})

	t.Run("favicon", func(t *testing.T) {
		p := open(t)
		var href string
		p.eval(`document.querySelector('link[rel="icon"]').href`, &href)
		require.Equal(t, base+"favicon.ico", href)
		var got string
		p.eval(`fetch("/favicon.ico").then(r => r.status + " " + r.headers.get("Content-Type"))`, &got)
		require.Equal(t, "200 image/svg+xml", got)
		var width int
		p.eval(`new Promise((ok, fail) => { const i = new Image(); i.onload = () => ok(i.naturalWidth); i.onerror = () => fail(new Error("the icon does not load")); i.src = "/favicon.ico"; })`, &width)
		require.Positive(t, width)
		// Nothing the page loaded failed.
		var bad []string
		p.eval(`performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).filter(e => e.responseStatus >= 400).map(e => e.responseStatus + " " + e.name)`, &bad)
		require.Empty(t, bad)
	})

	t.Run("narrow screen", func(t *testing.T) {
		p := open(t)
		p.run(chromedp.EmulateViewport(360, 740), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		p.send("support", "Please refund order A-1003, it arrived broken.") // denied above, so refundable
		p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child form.question[data-kind="choice"]`)), chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
		p.waitJS(`document.querySelectorAll("#sessions button.session").length > 0`)
		// The session commits the turn's checkpoint just after the response ends; the page asks
		// until it is listed.
		p.waitJS(`document.querySelectorAll("#checkpoints li").length > 0`)
		var width int
		p.eval(`document.documentElement.clientWidth`, &width)
		require.Equal(t, 360, width)
		var problems []string
		p.eval(narrowCheck, &problems)
		require.Empty(t, problems)
		// One column: the chat first, then the sessions, then the inspector.
		var tops []float64
		p.eval(`["#chat", "#sidebar", "#inspector"].map(s => document.querySelector(s).getBoundingClientRect().top)`, &tops)
		require.Len(t, tops, 3)
		require.Less(t, tops[0], tops[1])
		require.Less(t, tops[1], tops[2])
	})
}

// refundArgs are the support example's refund arguments as the page shows them.
func refundArgs(order, status string) string {
	return fmt.Sprintf("{\n  \"orderId\": %q,\n  \"reason\": \"customer request: %s\"\n}", order, status)
}

// failCode is the code of the failWorkflow's run.
const failCode = "EXECUTION_FAILED"

// narrowCheck lists what does not fit the window: a page wider than the window, or a key element
// that is missing, not drawn, or reaching out of the window.
const narrowCheck = `(() => {
  const w = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > w) out.push("the page is " + document.documentElement.scrollWidth + " px wide in a " + w + " px window");
  for (const sel of ["header h1", "#status", "#session-id", "#transcript", ".turn:last-child form.question", ".turn:last-child .approval-args",
    ".turn:last-child .run", "#workflow", "#message", "#send", "#stop", "#new-session", "#sessions button.session", "#checkpoints", "#inspect-run"]) {
    const e = document.querySelector(sel);
    if (!e) { out.push(sel + ": missing"); continue; }
    const r = e.getBoundingClientRect();
    if (sel !== "#status" && (r.width === 0 || r.height === 0)) out.push(sel + ": not drawn");
    if (r.left < 0 || r.right > w + 0.5) out.push(sel + ": from " + r.left + " to " + r.right + " px");
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === "visible") out.push(sel + ": its content overflows");
  }
  return out;
})()`

// sessionsList is GET /api/sessions by session id, decoded and raw.
func sessionsList(t *testing.T, base string) (map[string]web.SessionItem, map[string]map[string]any) {
	t.Helper()
	res, err := http.Get(base + "api/sessions")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var items []web.SessionItem
	require.NoError(t, json.Unmarshal(body, &items))
	var raw []map[string]any
	require.NoError(t, json.Unmarshal(body, &raw))
	byID, rawByID := map[string]web.SessionItem{}, map[string]map[string]any{}
	for i, it := range items {
		byID[it.SessionID], rawByID[it.SessionID] = it, raw[i]
	}
	return byID, rawByID
}

// webService is the session service of client c for sessions on task queue tq.
func webService(c client.Client, tq string) *sessions.Service {
	svc, err := sessions.New(sessions.Options{Client: c, TaskQueue: tq})
	if err != nil {
		panic(err)
	}
	return svc
}
