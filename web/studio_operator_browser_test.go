package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/research"
	"github.com/stretchr/testify/require"
)

// TestOperatorScenario is issue 33's operator, in headless Chromium with a real worker: a run
// whose MCP server is down is found from the home view (its figures link into the runs list),
// its trace shows the pending kortyx.ListTools attempts while it retries; the research example's
// child question is answered from the inbox, which names the child; a session is rolled back
// from a trace (confirmed first) and its history is marked; the home view's failures then lead
// to the run, failed with its code. The scenario's other steps run while the tool listing
// retries (about two and a half minutes), so the suite waits for it once.
func TestOperatorScenario(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s: apt-get install -y chromium", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, st := failureStack(t, ctx, "operator", true)
	base := "http://" + st.HTTPAddr + "/"
	open := browser(t, ctx, base)
	// The scenario's runs share a prefix: the home view's q filter keeps the figures to them.
	prefix := fmt.Sprintf("op%d-", time.Now().UnixNano())
	startRun := func(id, workflow, input string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: workflow, Input: json.RawMessage(input)},
			kortyx.StartOptions{RunID: prefix + id, TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		return run.GetID()
	}

	// The MCP run first: its tool listing retries until its schedule-to-close timeout.
	mcpRun := startRun("mcp", mcpDownWorkflow, `"hi"`)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), mcpRun, "", "the test is over") }()
	root := startRun("research", research.WorkflowID, `"AI agents"`)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), root, "", "the test is over") }()
	pendingRow := `#trace-body li.row.pending[data-activity="kortyx.ListTools"]`
	home := "#/home?q=" + url.QueryEscape(prefix)
	tileCount := func(panel, key string) string {
		return fmt.Sprintf(`(document.querySelector('#%s li.tile[data-key=%q] .tile-count') || {}).textContent`, panel, key)
	}

	t.Run("home: the running figure leads to the retrying run and its pending attempts", func(t *testing.T) {
		p := open(t, home)
		// Visibility is eventually consistent; the view asks again every 5 s.
		waitLong(p, tileCount("home-runs", "waiting")+` === "2" && `+tileCount("home-runs", "completed")+` === "2"`, time.Minute)
		// Running: the MCP run; waiting: the research run and its child that asks (its
		// KortyxStatus stays running, the question being its root's, and its state says
		// waiting, as the runs list shows it); completed: its two other children.
		require.Equal(t, []string{"1", "2", "2", "0", "0"}, p.allTexts("#home-runs li.tile .tile-count"))
		p.press(`#home-runs li.tile[data-key="running"] a`)
		row := fmt.Sprintf(`#runs-table tbody tr[data-run=%q]`, mcpRun)
		p.waitJS(`location.hash.startsWith("#/runs?") && ` + has(row))
		h := p.str(`location.hash`)
		require.Regexp(t, `^#/runs\?q=`+regexp.QuoteMeta(url.QueryEscape(prefix))+`&status=running&from=\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\dZ$`, h)
		require.Equal(t, []string{mcpRun}, p.allAttrs("#runs-table tbody tr", "data-run"), "the runs list asks an open child its state: the child that asks is waiting")
		require.Equal(t, "running", p.attr(row, "data-status"))

		p.press(row + " a.open-run")
		p.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q`, mcpRun))
		// The trace refreshes itself while the run retries: at least a second attempt.
		waitLong(p, fmt.Sprintf(`(() => { const e = document.querySelector(%q); const m = e && /^attempt (\d+) \/ ∞$/.exec(e.textContent); return !!m && Number(m[1]) >= 2; })()`,
			pendingRow+" .pending-attempt"), time.Minute)
		require.Equal(t, "activity kortyx.ListTools · agent", p.text(pendingRow+" .kind"))
		require.Equal(t, "EXECUTION_FAILED", p.text(pendingRow+" .last-failure .failure-code"))
		require.Equal(t, refusedMessage, p.text(pendingRow+" .last-failure .failure-message"))
		require.Equal(t, "running", p.str(`document.getElementById("trace-body").dataset.status`))
	})

	t.Run("inbox: the child's question, named and answered", func(t *testing.T) {
		p := open(t, home)
		waitLong(p, tileCount("home-waiting", "under 10 min")+` === "1"`, time.Minute)
		require.Equal(t, "Waiting questions: 1", p.text("#home-waiting-title"))
		p.press(`#home-waiting li.tile[data-key="under 10 min"] a`)
		card := fmt.Sprintf(`#inbox .interrupt[data-run=%q]`, root)
		p.waitJS(`location.hash === "#/interrupts" && ` + has(card+" .asker"))
		child := p.attr(card+" .asker", "data-run")
		require.Equal(t, "asked by "+research.TopicWorkflowID+" · node gather · run "+short(child)+" trace", p.text(card+" .asker"))
		require.Equal(t, research.Question, p.text(card+" form.question > p strong"))
		require.Equal(t, []string{"Yes, include them", "No, known risks only"}, p.allTexts(card+" form.question label"))
		p.press(card + ` input[value="yes"]`)
		p.press(card + ` form button[type="submit"]`)
		p.waitJS(fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && r.textContent !== "" && r.textContent !== "Sending…"; })()`, card+" .answer-result"))
		require.Equal(t, "Answered; the run completed.", p.text(card+" .answer-result > span"))
		var res contracts.RunResult
		require.NoError(t, tc.GetWorkflow(ctx, root, "").Get(ctx, &res))
		require.Equal(t, contracts.StatusCompleted, res.Status)
	})

	t.Run("a session rolled back from a trace, confirmed, is marked", func(t *testing.T) {
		p := open(t, "#/chat")
		var runs []string
		for _, m := range []string{"one", "two", "three"} {
			p.send(echoWorkflow, m)
			p.lastTurnEnded()
			p.run(chromedp.WaitVisible(chromedp.CSS(`.turn:last-child .run .id`)))
			runs = append(runs, p.attr(`.turn:last-child .run .id`, "data-id"))
		}
		session := p.text("#session-id")
		p.hash("#/runs/" + url.PathEscape(runs[0]))
		cp := `#trace-body .rows > li[data-kind="checkpoint"]`
		p.waitJS(has(cp + " button.rollback"))
		// The trace's counts are said with their plurals.
		var counts struct {
			Temporal struct{ Events, Activities, Updates, SignalsReceived int }
		}
		getJSON(t, base+"api/runs/"+url.PathEscape(runs[0]), &counts)
		c := counts.Temporal
		require.Equal(t, fmt.Sprintf("Temporal: %s, %s, %s, %s", plural(c.Events, "event", "events"), plural(c.Activities, "activity", "activities"),
			plural(c.Updates, "update", "updates"), plural(c.SignalsReceived, "signal", "signals")), p.text("#trace-body .temporal-counts summary"))
		p.press(cp + " button.rollback")
		require.Equal(t, "Roll back to turn 1?", p.text(confirmDialog+" h2"))
		require.Equal(t, "This discards 2 later checkpoints of session "+session+" (turn 2 to turn 3); a run still open among them is cancelled. The session goes on from turn 1; this cannot be undone.",
			p.text(confirmDialog+" p"))
		require.Equal(t, []string{"Keep the turns", "Roll back"}, p.allTexts(confirmDialog+" button"))
		p.press(confirmDialog + " button.confirm-keep")
		p.waitJS(`!document.querySelector("#confirm-dialog[open]")`)
		view, err := webService(tc, cfg.TaskQueue).View(ctx, session)
		require.NoError(t, err)
		require.Len(t, view.Checkpoints, 4, "Keep rolled nothing back")
		require.False(t, p.bool(has(cp+" .checkpoint-result")))
		p.press(cp + " button.rollback")
		p.press(confirmDialog + " button.confirm-ok")
		p.waitJS(has(cp + ` .checkpoint-result[data-action="rollback"]`))
		require.Equal(t, "Rolled back session "+short(session)+" to turn 1.", p.text(cp+` .checkpoint-result[data-action="rollback"]`))

		turn := `#sessions-body .session-transcript li.transcript-turn`
		p.hash("#/sessions/" + url.PathEscape(session))
		p.waitJS(fmt.Sprintf(`document.querySelectorAll(%q).length === 3`, turn))
		require.Equal(t, runs, p.allAttrs(turn, "data-run"))
		require.Equal(t, []string{"live", "rolledBack", "rolledBack"}, p.allAttrs(turn, "data-state"))
		require.Equal(t, "2 turns were rolled back: they are marked, and the session goes on without them.", p.text("#sessions-body .rolled-back-note"))
	})

	t.Run("trace: a pass that names no model names the default model", func(t *testing.T) {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`"Where is order A-9999?"`)}, kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
		require.NoError(t, err)
		require.NoError(t, run.Get(ctx, nil))
		var config struct {
			DefaultModel string `json:"defaultModel"`
		}
		getJSON(t, base+"api/config", &config)
		require.Equal(t, "openai:gpt-4.1-mini", config.DefaultModel)
		var tr struct {
			Entries []struct{ Kind, Model, Node string }
		}
		getJSON(t, base+"api/runs/"+url.PathEscape(run.GetID()), &tr)
		var want []string
		for _, e := range tr.Entries {
			if e.Kind == "model" {
				require.Empty(t, e.Model, "the support agent's passes name no model")
				want = append(want, "model openai:gpt-4.1-mini · "+e.Node)
			}
		}
		require.NotEmpty(t, want)
		p := open(t, "#/runs/"+url.PathEscape(run.GetID()))
		p.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q`, run.GetID()))
		require.Equal(t, want, p.allTexts(`#trace-body .rows > li[data-kind="model"] .kind`))
	})

	t.Run("home: the failure's code leads to the failed run", func(t *testing.T) {
		p := open(t, home)
		// kortyx.ListTools has no attempt limit and a schedule-to-close timeout of 3 minutes:
		// with its backoff (1 s doubling to 30 s) the run fails after about 151 s.
		waitLong(p, tileCount("home-failures", "EXECUTION_FAILED")+` === "1"`, 4*time.Minute)
		require.Equal(t, []string{"0", "0", "4", "1", "0"}, p.allTexts("#home-runs li.tile .tile-count"),
			"the research run and its children completed, the MCP run failed")
		p.press(`#home-failures li.tile[data-key="EXECUTION_FAILED"] a`)
		row := fmt.Sprintf(`#runs-table tbody tr[data-run=%q]`, mcpRun)
		p.waitJS(`location.hash.startsWith("#/runs?") && ` + has(row+" .error-code"))
		require.Equal(t, []string{mcpRun}, p.allAttrs("#runs-table tbody tr", "data-run"))
		require.Equal(t, "EXECUTION_FAILED", p.text(row+" td.error-cell .error-code"))

		p.press(row + " a.open-run")
		p.waitJS(fmt.Sprintf(`document.getElementById("trace-body").dataset.run === %q && document.getElementById("trace-body").dataset.status === "failed"`, mcpRun))
		var tr traceOf
		getJSON(t, base+"api/runs/"+url.PathEscape(mcpRun), &tr)
		require.Equal(t, "failed", tr.Status)
		require.NotNil(t, tr.Failure)
		require.Equal(t, "EXECUTION_FAILED", tr.Failure.Code)
		require.Equal(t, "kortyx.ListTools", tr.Failure.Activity)
		require.Equal(t, "agent", tr.Failure.Node)
		require.GreaterOrEqual(t, tr.Failure.Attempt, 3)
		i := slices.IndexFunc(tr.Entries, func(e traceEntry) bool { return e.Activity == "kortyx.ListTools" })
		require.GreaterOrEqual(t, i, 0)
		listing := tr.Entries[i]
		require.Equal(t, "activity", listing.Kind)
		require.True(t, listing.Internal)
		require.Nil(t, listing.Pending)
		require.Equal(t, tr.Failure.Attempt, listing.Attempts)
		require.Equal(t, &traceFailure{Code: "EXECUTION_FAILED", Message: refusedMessage, Node: "agent", Activity: "kortyx.ListTools", Attempt: tr.Failure.Attempt}, listing.Failure)
		require.Equal(t, &traceFailure{Code: "EXECUTION_FAILED", Message: refusedMessage, Node: "agent", Activity: "kortyx.ListTools", Attempt: tr.Failure.Attempt - 1}, listing.LastFailure)
		require.Equal(t, "EXECUTION_FAILED", p.text("#trace-body .trace-failure .failure-code"))
		require.Equal(t, refusedMessage, p.text("#trace-body .trace-failure .failure-message"))
		require.Equal(t, fmt.Sprintf("(node agent · kortyx.ListTools attempt %d)", tr.Failure.Attempt), p.text("#trace-body .trace-failure .failure-where"))
		// The failed activity is a row of its own, no longer pending.
		failed := `#trace-body li.row[data-activity="kortyx.ListTools"]`
		require.False(t, p.bool(has(pendingRow)))
		require.Equal(t, fmt.Sprintf("attempts %d", tr.Failure.Attempt), p.text(failed+" .attempts"))
		require.Equal(t, "EXECUTION_FAILED", p.text(failed+" .activity-failure .failure-code"))
		require.Equal(t, plural(tr.Failure.Attempt-1, "retry", "retries"), p.text(failed+" .retries"))
		p.docShot("studio-trace-failed-1280.png")
	})
}

// plural is util.js's: "1 retry", "2 retries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
