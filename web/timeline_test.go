package web_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// A run whose first answer (by signal) is rejected and whose second one (by update) is
// accepted shows both answers in its timeline, in order; a signal repeating the rejected
// answer adds no entry.
func TestTimelineShowsEachDistinctAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chosen, err := examples.Parse("triage")
	require.NoError(t, err)
	// No key: the in-process scripted fake model answers for openai.
	cfg := app.Config{TemporalAddress: srv.Address(), TaskQueue: fmt.Sprintf("web-timeline-%d", time.Now().UnixNano()), Namespace: "default",
		HTTPAddr: "127.0.0.1:0", FakeModels: true}
	testenv.Run(t, ctx, cfg, chosen.Options())

	run, err := kortyx.StartRun(ctx, tc, contracts.RunInput{Workflow: "triage", Input: json.RawMessage(`"I was charged twice on my invoice"`)},
		kortyx.StartOptions{TaskQueue: cfg.TaskQueue})
	require.NoError(t, err)
	runID := run.GetID()
	view := func(cond func(contracts.RunView) bool) contracts.RunView {
		t.Helper()
		var v contracts.RunView
		require.Eventually(t, func() bool {
			v, err = kortyx.Query(ctx, tc, runID)
			return err == nil && cond(v)
		}, 30*time.Second, 50*time.Millisecond)
		return v
	}
	pending := view(func(v contracts.RunView) bool { return v.Pending != nil }).Pending
	answer := func(id string) contracts.Response {
		return contracts.Response{Token: pending.Token, RequestID: pending.RequestID, Selected: []string{id}}
	}
	require.NoError(t, kortyx.Respond(ctx, tc, runID, answer("close")))
	view(func(v contracts.RunView) bool { return len(v.Rejections) == 1 })
	require.NoError(t, kortyx.Respond(ctx, tc, runID, answer("close")))
	view(func(v contracts.RunView) bool { return len(v.Rejections) == 2 })
	_, err = kortyx.RespondAndWait(ctx, tc, runID, "", answer("open"))
	require.NoError(t, err)
	var res contracts.RunResult
	require.NoError(t, run.Get(ctx, &res))

	tl, err := web.Timeline(ctx, web.Options{Client: tc, AllowUnauthenticated: true}, runID)
	require.NoError(t, err)
	var answers []string
	for _, e := range tl.Entries {
		if e.Kind == "answer" {
			require.Equal(t, pending.RequestID, e.RequestID)
			answers = append(answers, string(e.Answer))
		}
	}
	require.Equal(t, []string{`["close"]`, `["open"]`}, answers)
	require.Equal(t, "completed", tl.Status)
}
