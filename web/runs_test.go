package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/app"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/test/testenv"
	"github.com/kortyx-go/kortyx/web"
	"github.com/stretchr/testify/require"
)

type runsPage struct {
	Runs []struct {
		RunID      string     `json:"runId"`
		Agent      string     `json:"agent"`
		Status     string     `json:"status"`
		SessionID  string     `json:"sessionId"`
		StartedAt  time.Time  `json:"startedAt"`
		ClosedAt   *time.Time `json:"closedAt"`
		DurationMs int64      `json:"durationMs"`
		Question   *struct {
			RequestID string `json:"requestId"`
			Token     string `json:"token"`
			Kind      string `json:"kind"`
			Node      string `json:"node"`
		} `json:"question"`
	} `json:"runs"`
	NextPageToken string `json:"nextPageToken"`
}

// GET /api/runs and GET /api/interrupts read Temporal visibility and the runs' state queries,
// never a process's memory: a handler built after the runs ended lists them, filtered by agent,
// status, session, time and text, a page at a time.
func TestRunsAndInterruptsRoutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprintf("web-runs-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true},
		app.Options{Register: registerAgents})
	prefix := fmt.Sprintf("lr%d-", time.Now().UnixNano()%1e9) // this test's sessions
	start := func(agent, session string) string {
		run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: agent, SessionID: prefix + session, Input: json.RawMessage(`"hi"`)},
			kortyx.StartOptions{TaskQueue: tq})
		require.NoError(t, err)
		return run.GetID()
	}
	before := time.Now().Add(-time.Second)
	echo, failed, waiting := start(echoWorkflow, "a"), start(failWorkflow, "b"), start(formWorkflow, "c")
	more := []string{}
	for range 5 {
		more = append(more, start(echoWorkflow, "d"))
	}

	h := web.Handler(web.Options{Client: tc, AllowUnauthenticated: true})
	list := func(query string) runsPage {
		t.Helper()
		code, body := getRaw(t, h, "/api/runs?"+query)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var p runsPage
		require.NoError(t, json.Unmarshal(body, &p))
		return p
	}
	ids := func(p runsPage) []string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.RunID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	q := "q=" + url.QueryEscape(prefix)
	// Visibility is eventually consistent: ask until every run has its final status.
	require.Eventually(t, func() bool {
		return len(list(q+"&status=completed").Runs) == 6 && len(list(q+"&status=failed").Runs) == 1 && len(list(q+"&status=waiting").Runs) == 1
	}, 30*time.Second, 200*time.Millisecond)

	all := list(q)
	require.Equal(t, sorted(append([]string{echo, failed, waiting}, more...)...), ids(all))
	require.Empty(t, all.NextPageToken)
	for _, r := range all.Runs {
		require.True(t, r.StartedAt.After(before), "%+v", r)
		switch r.RunID {
		case waiting:
			require.Equal(t, formWorkflow, r.Agent)
			require.Equal(t, "waiting", r.Status)
			require.Equal(t, prefix+"c", r.SessionID)
			require.Nil(t, r.ClosedAt)
			require.NotNil(t, r.Question, "a waiting run shows its question")
			require.Equal(t, "custom", r.Question.Kind)
			require.Equal(t, "agent", r.Question.Node)
			require.NotEmpty(t, r.Question.Token)
		case failed:
			require.Equal(t, "failed", r.Status)
			require.NotNil(t, r.ClosedAt)
			require.Nil(t, r.Question)
		default:
			require.Equal(t, echoWorkflow, r.Agent)
			require.Equal(t, "completed", r.Status)
			require.NotNil(t, r.ClosedAt)
			require.Equal(t, r.ClosedAt.Sub(r.StartedAt).Milliseconds(), r.DurationMs)
		}
	}
	require.Equal(t, []string{failed}, ids(list(q+"&status=failed")))
	require.Equal(t, []string{waiting}, ids(list(q+"&status=waiting")))
	require.Empty(t, list(q+"&status=cancelled").Runs)
	require.Equal(t, sorted(append([]string{echo}, more...)...), ids(list(q+"&agent="+echoWorkflow)))
	require.Equal(t, sorted(more...), ids(list("session="+url.QueryEscape(prefix+"d"))))
	require.Equal(t, []string{waiting}, ids(list("q="+url.QueryEscape(waiting))), "q matches a run id prefix")
	require.Empty(t, list(q+"&from="+url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))).Runs)
	require.Empty(t, list(q+"&to="+url.QueryEscape(before.Add(-time.Hour).UTC().Format(time.RFC3339))).Runs)
	require.Len(t, list(q+"&from="+url.QueryEscape(before.UTC().Format(time.RFC3339))).Runs, 8)

	// Pages of 3: 3, 3, 2, every run once.
	var paged []string
	token, pages := "", 0
	for {
		p := list(q + "&pageSize=3&pageToken=" + token)
		pages++
		require.LessOrEqual(t, len(p.Runs), 3)
		for _, r := range p.Runs {
			paged = append(paged, r.RunID)
		}
		if token = p.NextPageToken; token == "" {
			break
		}
		require.Less(t, pages, 5)
	}
	slices.Sort(paged)
	require.Equal(t, ids(all), paged)
	require.GreaterOrEqual(t, pages, 3)

	// Bad filters are 400 INVALID_REQUEST and say what to fix.
	for query, msg := range map[string]string{
		"status=sleeping":     "Fix the filters. (status: status must be one of running, waiting, completed, failed, cancelled)",
		"from=yesterday":      "Fix the filters. (from: from must be an RFC 3339 time such as 2026-12-01T09:00:00Z)",
		"agent=a'b":           "Fix the filters. (agent: agent must not contain quotes or backslashes)",
		"pageSize=1000":       "pageSize must be a number from 1 to 200.",
		"pageToken=%21%21%21": "pageToken is not a token of this route: pass the nextPageToken of the previous page.",
	} {
		code, body := get(t, h, "/api/runs?"+query)
		require.Equal(t, http.StatusBadRequest, code, query)
		require.Equal(t, "INVALID_REQUEST", body["failure"].(map[string]any)["code"], query)
		require.Equal(t, msg, body["error"], query)
	}

	// The inbox: the one open question of these sessions.
	code, body := getRaw(t, h, "/api/interrupts?"+q)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var inbox []struct {
		RunID    string `json:"runId"`
		AgeMs    int64  `json:"ageMs"`
		Question struct {
			Kind string `json:"kind"`
		} `json:"question"`
	}
	require.NoError(t, json.Unmarshal(body, &inbox))
	require.Len(t, inbox, 1, "%s", body)
	require.Equal(t, waiting, inbox[0].RunID)
	require.Equal(t, "custom", inbox[0].Question.Kind)
	require.GreaterOrEqual(t, inbox[0].AgeMs, int64(0))
}

// GET /api/runs/{id} is the run's trace: its timeline, its bounds and what it cost on
// Temporal's side, counted from its history.
func TestRunTraceCountsTemporalWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tq := fmt.Sprintf("web-trace-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true},
		app.Options{Register: registerAgents})
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: echoWorkflow, Input: json.RawMessage(`"hi"`)}, kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	code, body := getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true}), "/api/runs/"+run.GetID())
	require.Equal(t, http.StatusOK, code, "%s", body)
	var tr struct {
		Status     string         `json:"status"`
		StartedAt  time.Time      `json:"startedAt"`
		ClosedAt   *time.Time     `json:"closedAt"`
		DurationMs int64          `json:"durationMs"`
		Temporal   map[string]int `json:"temporal"`
	}
	require.NoError(t, json.Unmarshal(body, &tr))
	require.Equal(t, "completed", tr.Status)
	require.NotNil(t, tr.ClosedAt)
	require.Equal(t, tr.ClosedAt.Sub(tr.StartedAt).Milliseconds(), tr.DurationMs)
	events := 0
	for it := tc.GetWorkflowHistory(ctx, run.GetID(), "", false, 0); it.HasNext(); {
		_, err := it.Next()
		require.NoError(t, err)
		events++
	}
	require.Equal(t, events, tr.Temporal["events"])
	// The echo agent's run (read from its history): one workflow task; four markers — the
	// version marker of the pinned definition, the side effect recording it, the side effect
	// recording the lean run's id seed, one local activity publishing the chunks —; two
	// upserts: TemporalChangeVersion (the version marker's) and KortyxStatus=completed.
	delete(tr.Temporal, "events")
	require.Equal(t, map[string]int{"workflowTasks": 1, "activities": 0, "activityAttempts": 0, "localActivities": 1, "markers": 4,
		"signalsReceived": 0, "signalsSent": 0, "updates": 0, "timers": 0, "children": 0, "searchAttributeUpserts": 2, "continuedAsNew": 0}, tr.Temporal)
}

// A trace prices its tokens by model with the operator's table; a model the table lacks is
// listed as unpriced.
func TestRunTraceCost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chosen, err := examples.Parse("support")
	require.NoError(t, err)
	tq := fmt.Sprintf("web-cost-%d", time.Now().UnixNano())
	testenv.Run(t, ctx, app.Config{TemporalAddress: srv.Address(), TaskQueue: tq, Namespace: "default", FakeModels: true}, chosen.Options())
	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "support", Input: json.RawMessage(`{"message":"Where is order A-1002?"}`)},
		kortyx.StartOptions{TaskQueue: tq})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	type trace struct {
		Usage struct {
			Input  int `json:"input"`
			Output int `json:"output"`
		} `json:"usage"`
		ModelPasses int `json:"modelPasses"`
		Cost        struct {
			Total  float64 `json:"total"`
			Models map[string]struct {
				Usage struct {
					Input  int `json:"input"`
					Output int `json:"output"`
				} `json:"usage"`
				Cost float64 `json:"cost"`
			} `json:"models"`
			Unpriced []string `json:"unpriced"`
		} `json:"cost"`
	}
	get := func(prices map[string]web.Price) trace {
		// The support agent's passes name no model: the worker's default prices them.
		code, body := getRaw(t, web.Handler(web.Options{Client: tc, AllowUnauthenticated: true, Prices: prices, DefaultModel: "openai:gpt-4.1-mini"}), "/api/runs/"+run.GetID())
		require.Equal(t, http.StatusOK, code, "%s", body)
		var tr trace
		require.NoError(t, json.Unmarshal(body, &tr), "%s", body)
		return tr
	}
	tr := get(map[string]web.Price{"openai:gpt-4.1-mini": {Input: 2, Output: 8}, "anthropic:claude-sonnet-4-5": {Input: 3, Output: 15}})
	require.Positive(t, tr.ModelPasses)
	require.Len(t, tr.Cost.Models, 1, "%+v", tr.Cost)
	m := tr.Cost.Models["openai:gpt-4.1-mini"]
	require.Equal(t, tr.Usage.Input, m.Usage.Input, "the one model has all the run's tokens")
	require.Equal(t, tr.Usage.Output, m.Usage.Output)
	require.Positive(t, m.Usage.Input)
	want := float64(m.Usage.Input*2+m.Usage.Output*8) / 1e6
	require.InDelta(t, want, m.Cost, 1e-12)
	require.InDelta(t, want, tr.Cost.Total, 1e-12)
	require.Empty(t, tr.Cost.Unpriced)

	none := get(nil)
	require.Zero(t, none.Cost.Total)
	require.Equal(t, []string{"openai:gpt-4.1-mini"}, none.Cost.Unpriced)
}

func TestLoadPrices(t *testing.T) {
	dir := t.TempDir()
	good := dir + "/prices.json"
	require.NoError(t, os.WriteFile(good, []byte(`{"openai:gpt-4.1-mini": {"input": 0.4, "output": 1.6, "cacheRead": 0.1}}`), 0o644))
	p, err := web.LoadPrices(good)
	require.NoError(t, err)
	require.Equal(t, map[string]web.Price{"openai:gpt-4.1-mini": {Input: 0.4, Output: 1.6, CacheRead: 0.1}}, p)
	bad := dir + "/bad.json"
	require.NoError(t, os.WriteFile(bad, []byte(`{"openai:gpt-4.1-mini": 0.4}`), 0o644))
	_, err = web.LoadPrices(bad)
	require.ErrorContains(t, err, `the price table `+bad+` (KORTYX_PRICES) must be a JSON or YAML object of {input, output, cacheRead?, cacheWrite?} per million tokens by "provider:model"`)

	yamlTable := dir + "/prices.yaml"
	require.NoError(t, os.WriteFile(yamlTable, []byte("openai:gpt-4.1-mini:\n  input: 0.4\n  output: 1.6\n  cacheRead: 0.1\n"), 0o644))
	p, err = web.LoadPrices(yamlTable)
	require.NoError(t, err)
	require.Equal(t, map[string]web.Price{"openai:gpt-4.1-mini": {Input: 0.4, Output: 1.6, CacheRead: 0.1}}, p)

	for name, text := range map[string]string{
		"nokey.yaml":    "gpt-4.1-mini: {input: 0.4, output: 1.6}\n",
		"negative.json": `{"openai:gpt-4.1-mini": {"input": -1, "output": 1.6}}`,
	} {
		path := dir + "/" + name
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		_, err = web.LoadPrices(path)
		require.ErrorContains(t, err, `the price table `+path+` (KORTYX_PRICES): the`, name)
	}
}
