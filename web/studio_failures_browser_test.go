package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/stretchr/testify/require"
)

// TestStudioFailures drives the trace, the runs table and the inbox in headless Chromium with a
// real worker: an activity retrying live, then failing with its code; a coded failure in the
// runs table's error column and its code filter; a child's question named in the inbox and the
// child drawn waiting in its parent's trace. (The retried activity failing the run is
// TestOperatorScenario's: the suite waits for it once.)
func TestStudioFailures(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, st := failureStack(t, ctx, "studio-failures", true)
	base := "http://" + st.HTTPAddr + "/"
	open := browser(t, ctx, base)
	startRun := func(workflow, input string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: workflow, Input: json.RawMessage(input)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		return run.GetID()
	}

	// The MCP run is started first: its tool listing retries while the other subtests run.
	mcpRun := startRun(mcpDownWorkflow, `"hi"`)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), mcpRun, "", "the test is over") }()
	pendingRow := `#trace-body li.row.pending[data-activity="kortyx.ListTools"]`

	t.Run("trace: a retrying activity, live", func(t *testing.T) {
		trace := open(t, "#/runs/"+url.PathEscape(mcpRun))
		trace.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q`, mcpRun))
		// The trace asks again by itself while the run is open: the attempt count grows.
		attempt := func() int {
			var s string
			trace.eval(fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, pendingRow+" .pending-attempt"), &s)
			m := regexp.MustCompile(`^attempt (\d+) / ∞$`).FindStringSubmatch(s)
			if m == nil {
				return 0
			}
			n, _ := strconv.Atoi(m[1])
			return n
		}
		trace.waitJS(`!!document.querySelector(` + strconv.Quote(pendingRow) + `)`)
		first := attempt()
		require.GreaterOrEqual(t, first, 1)
		waitLong(trace, fmt.Sprintf(`(() => { const e = document.querySelector(%q); const m = e && /^attempt (\d+) \/ ∞$/.exec(e.textContent); return !!m && Number(m[1]) > %d && Number(m[1]) >= 3; })()`,
			pendingRow+" .pending-attempt", first), time.Minute)
		require.NotEmpty(t, trace.str(`document.getElementById("trace-body").dataset.refreshes`), "redrawn by the refresh")
		require.Equal(t, "activity kortyx.ListTools · agent", trace.text(pendingRow+" .kind"))
		require.Contains(t, []string{"scheduled", "started"}, trace.text(pendingRow+" .pending-state"))
		require.Equal(t, "EXECUTION_FAILED", trace.text(pendingRow+" .last-failure .failure-code"))
		require.Equal(t, refusedMessage, trace.text(pendingRow+" .last-failure .failure-message"))
		var both []string // read at once: a refresh may draw the row again between two reads
		trace.eval(fmt.Sprintf(`[document.querySelector(%q).textContent, document.querySelector(%q).textContent]`,
			pendingRow+" .pending-attempt", pendingRow+" .last-failure .failure-where"), &both)
		n, err := strconv.Atoi(regexp.MustCompile(`^attempt (\d+) / ∞$`).FindStringSubmatch(both[0])[1])
		require.NoError(t, err)
		require.Equal(t, "(node agent · kortyx.ListTools attempt "+strconv.Itoa(n-1)+")", both[1], "the last failure is the attempt before")
		// The raw cause, for the operator of this development studio (no authorization hook).
		require.Contains(t, trace.text(pendingRow+" .last-failure .raw-cause pre"), "connect: connection refused")
		require.Regexp(t, `^gives up by \d{2}:\d{2}:\d{2}`, trace.text(pendingRow+" .expires"), "no attempt limit, but a schedule-to-close timeout")
		require.Equal(t, "live", trace.text("#trace-body .trace-line .live"))
		trace.docShot("studio-trace-pending-1280.png")
	})

	t.Run("runs: the error column and the code filter", func(t *testing.T) {
		coded := startRun(codedFailWorkflow, `"go"`)
		plain := startRun(failWorkflow, `"go"`)
		for _, id := range []string{coded, plain} {
			require.Error(t, tc.GetWorkflow(ctx, id, "").Get(ctx, nil))
		}
		p := open(t, "#/runs?agent="+codedFailWorkflow)
		row := fmt.Sprintf(`#runs-table tbody tr[data-run=%q]`, coded)
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q) && document.querySelector(%q).dataset.status === "failed" && !!document.querySelector(%q)`, row, row, row+" .error-code"))
		require.Equal(t, "REASON_MAX_STEPS_REACHED", p.text(row+" td.error-cell .error-code"))
		require.Equal(t, codedFailMessage, p.text(row+" td.error-cell .error-text"))
		// The filter form's code goes to the URL and the route.
		p.run(chromedp.SetValue(chromedp.CSS("#f-agent"), ""), chromedp.SetValue(chromedp.CSS("#f-code"), "REASON_MAX_STEPS_REACHED"), chromedp.Click(chromedp.CSS("#runs-apply")))
		p.waitJS(fmt.Sprintf(`location.hash === "#/runs?code=REASON_MAX_STEPS_REACHED" && !!document.querySelector(%q)`, row))
		codes := p.allTexts(`#runs-table tbody tr td.error-cell .error-code`)
		require.NotEmpty(t, codes)
		for _, c := range codes {
			require.Equal(t, "REASON_MAX_STEPS_REACHED", c)
		}
		require.Equal(t, "REASON_MAX_STEPS_REACHED", p.value("#f-code"))
		p.hash("#/runs?code=EXECUTION_FAILED&agent=" + failWorkflow)
		p.waitJS(has(fmt.Sprintf(`#runs-table tbody tr[data-run=%q]`, plain)))
		require.False(t, p.bool(fmt.Sprintf(`!!document.querySelector(%q)`, row)), "a run of another code is not listed")
		require.Equal(t, "An unexpected error occurred.", p.text(fmt.Sprintf(`#runs-table tbody tr[data-run=%q] td.error-cell .error-text`, plain)))
		// The failed run's trace: its code and message at the top and on its end.
		p.hash("#/runs/" + url.PathEscape(coded))
		p.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q`, coded))
		require.Equal(t, "REASON_MAX_STEPS_REACHED", p.text("#trace-body .trace-failure .failure-code"))
		require.Equal(t, codedFailMessage, p.text("#trace-body .trace-failure .failure-message"))
		require.Equal(t, "REASON_MAX_STEPS_REACHED", p.text(`#trace-body li[data-kind="ended"] .failure-code`))
	})

	t.Run("research: the child that asks, in the inbox and its parent's trace", func(t *testing.T) {
		root := startRun(research.WorkflowID, `"AI agents"`)
		defer func() { _ = tc.TerminateWorkflow(context.Background(), root, "", "the test is over") }()
		p := open(t, "#/interrupts")
		card := fmt.Sprintf(`#inbox .interrupt[data-run=%q]`, root)
		p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+" .asker"))
		child := p.attr(card+" .asker", "data-run")
		require.NotEqual(t, root, child)
		require.Equal(t, research.TopicWorkflowID, p.text(card+" .asker-agent"))
		require.Equal(t, child, p.attr(card+" .asker .id", "data-id"))
		require.Equal(t, research.WorkflowID, p.text(card+" .who .agent"))
		require.Equal(t, root, p.attr(card+" .who > .id", "data-id"))
		require.Equal(t, "asked by "+research.TopicWorkflowID+" · node gather · run "+short(child)+" trace", p.text(card+" .asker"))
		require.Contains(t, p.text(card+" .who"), " trace · in "+research.WorkflowID+" · root run "+short(root)+" trace · no session · waiting ")
		p.docShot("studio-interrupts-child-1280.png")

		p.hash("#/runs/" + url.PathEscape(root))
		p.waitJS(`document.querySelectorAll("#trace-body li[data-kind=child]").length === 3 && ` + has(fmt.Sprintf(`#trace-body li[data-child=%q]`, child)))
		require.Equal(t, "waiting", p.text(fmt.Sprintf(`#trace-body li[data-child=%q] .child-status`, child)))
		var others []string
		p.eval(fmt.Sprintf(`[...document.querySelectorAll("#trace-body li[data-kind=child]")].filter(e => e.dataset.child !== %q).map(e => e.querySelector(".child-status").textContent)`, child), &others)
		require.Equal(t, []string{"completed", "completed"}, others)
		p.docShot("studio-trace-child-waiting-1280.png")
		// The child's own trace and the runs list say the same.
		p.hash("#/runs/" + url.PathEscape(child))
		p.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q`, child))
		require.Equal(t, "waiting", p.attr("#trace-body .trace-line .badge", "data-status"))
		p.hash("#/runs?q=" + url.QueryEscape(child))
		p.waitJS(has(fmt.Sprintf(`#runs-table tbody tr[data-run=%q]`, child)))
		require.Equal(t, "waiting", p.attr(fmt.Sprintf(`#runs-table tbody tr[data-run=%q]`, child), "data-status"))
		require.Equal(t, research.Question, p.text(fmt.Sprintf(`#runs-table tbody tr[data-run=%q] td.question-text`, child)))
	})
	// The run failing with its code, once its listing gives up, is TestOperatorScenario's.
}

// has is the expression that sel matches an element.
func has(sel string) string { return "!!document.querySelector(" + strconv.Quote(sel) + ")" }

// waitLong waits until the expression is true, for up to d (the page helpers wait 20 s).
func waitLong(p *page, js string, d time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		p.shot()
		p.t.Fatalf("browser: waiting %s for %s: %v", d, js, err)
	}
}
