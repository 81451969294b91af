package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

func TestAnsweredBySignal(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hello")
	ctx := context.Background()

	first, off := nextResponse(t, e.follow, run.GetID(), 0)
	require.Equal(t, []string{"structured-data", "interrupt", "done"}, types(first))
	ask, in := interruptOf(t, first)
	require.Equal(t, "What is your name?", in.Question)
	eventually(t, 10*time.Second, "the run to be listed as waiting", func() bool { return isWaiting(t, tc, run.GetID()) })
	require.Equal(t, "waiting", statusAttribute(t, tc, run.GetID()))

	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(ask, "Ada")))
	second, off := nextResponse(t, e.follow, run.GetID(), off)
	require.Equal(t, []string{"interrupt", "done"}, types(second))
	plan, in := interruptOf(t, second)
	require.Equal(t, contracts.InterruptChoice, in.Kind)
	require.NotEqual(t, ask.ResumeToken, plan.ResumeToken)

	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(plan, "", "pro")))
	last, _ := nextResponse(t, e.follow, run.GetID(), off)
	require.Equal(t, []string{"message", "done"}, types(last))
	require.Equal(t, "Welcome Ada, you are on pro.", last[0].Content)

	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "Ada", res.State.Data["name"])
	require.Equal(t, []string{"before", "between Ada", "after pro"}, readLines(t, e.effects), "each side effect exactly once")
	require.Equal(t, "completed", statusAttribute(t, tc, run.GetID()))
	require.False(t, isWaiting(t, tc, run.GetID()))
	recordHistory(t, tc, "effects-signal", run.GetID())
}

func TestAnsweredByUpdate(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hello")
	ctx := context.Background()
	first, off := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, first)

	// The workflow task that published the interrupt completes a moment later; once the
	// status reads waiting, the history is still until an answer is accepted.
	eventually(t, 10*time.Second, "the waiting status", func() bool { return statusAttribute(t, tc, run.GetID()) == "waiting" })
	before := historyLength(t, tc, run.GetID())
	tests := []struct {
		name string
		resp contracts.Response
		code contracts.Code
	}{
		{name: "empty text", resp: answer(ask, "  "), code: contracts.CodeInvalidResponse},
		{name: "forged token", resp: contracts.Response{Token: "forged", RequestID: ask.RequestID, Text: "x"}, code: contracts.CodeInvalidResume},
		{name: "other request", resp: contracts.Response{Token: ask.ResumeToken, RequestID: "human-other", Text: "x"}, code: contracts.CodeResumeMismatch},
	}
	for _, tt := range tests {
		_, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "bad-"+tt.name, tt.resp)
		require.Equal(t, tt.code, contracts.CodeOf(err), "%s: %v", tt.name, err)
		if tt.code == contracts.CodeInvalidResponse {
			require.NotEmpty(t, contracts.FailureOf(err).Issues, "per-field reasons")
		}
	}
	require.Equal(t, before, historyLength(t, tc, run.GetID()), "rejected updates write no history")

	res1, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "answer-1", answer(ask, "Grace"))
	require.NoError(t, err)
	require.Equal(t, ask.RequestID, res1.RequestID)
	res2, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "answer-1", answer(ask, "Grace"))
	require.NoError(t, err, "a repeated update id returns the stored result")
	require.Equal(t, res1, res2)

	second, _ := nextResponse(t, e.follow, run.GetID(), off)
	plan, _ := interruptOf(t, second)
	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(plan, "", "platinum"))
	require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(err))
	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(plan, "", "basic"))
	require.NoError(t, err)

	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "basic", res.State.Data["plan"])
	require.Equal(t, []string{"before", "between Grace", "after basic"}, readLines(t, e.effects))
	recordHistory(t, tc, "effects-update", run.GetID())
}

func TestInvalidSignalIsRecordedAndRunKeepsWaiting(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hello")
	ctx := context.Background()
	first, off := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, first)

	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), contracts.Response{Token: "forged", RequestID: ask.RequestID, Text: "Eve"}))
	var view contracts.RunView
	eventually(t, 10*time.Second, "the rejection to show in the query", func() bool {
		var err error
		view, err = kortyx.Query(ctx, tc, run.GetID())
		require.NoError(t, err)
		return len(view.Rejections) == 1
	})
	require.Equal(t, contracts.CodeInvalidResume, view.Rejections[0].Failure.Code)
	require.Equal(t, contracts.StatusWaiting, view.Status)
	require.NotNil(t, view.Pending)
	require.Equal(t, ask.RequestID, view.Pending.RequestID)

	ctxTimeout, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rejected contracts.Chunk
	errStop := errors.New("stop")
	require.ErrorIs(t, e.follow(ctxTimeout, run.GetID(), off, stream.UntilCancel, func(_ int64, c contracts.Chunk) error {
		rejected = c
		return errStop
	}), errStop)
	require.Equal(t, contracts.ChunkResumeRejected, rejected.Type)
	require.Equal(t, contracts.CodeInvalidResume, rejected.Failure.Code)

	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(ask, "Ada")))
	second, _ := nextResponse(t, e.follow, run.GetID(), off+1)
	plan, _ := interruptOf(t, second)
	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(plan, "", "pro")))
	_, err := result(t, run)
	require.NoError(t, err)
}

func TestCancelWhileWaiting(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hello")
	first, off := nextResponse(t, e.follow, run.GetID(), 0)
	interruptOf(t, first)
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
	last, _ := nextResponse(t, e.follow, run.GetID(), off)
	require.Equal(t, []string{"cancelled", "done"}, types(last))
	require.Equal(t, "Execution cancelled.", last[0].Reason)
	_, err := result(t, run)
	require.True(t, temporal.IsCanceledError(err), "err: %v", err)
	require.Equal(t, contracts.CodeExecutionCancelled, contracts.CodeOf(err))
	require.Equal(t, "cancelled", statusAttribute(t, tc, run.GetID()))
	require.Equal(t, []string{"before"}, readLines(t, e.effects))
	recordHistory(t, tc, "effects-cancelled", run.GetID())
}

func TestCancelByAnswer(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, testagents.EffectsWorkflow, "hello")
	first, off := nextResponse(t, e.follow, run.GetID(), 0)
	ask, _ := interruptOf(t, first)
	res, err := kortyx.RespondAndWait(context.Background(), tc, run.GetID(), "", contracts.Response{Token: ask.ResumeToken, RequestID: ask.RequestID, Cancel: true})
	require.NoError(t, err)
	require.True(t, res.Cancelled)
	last, _ := nextResponse(t, e.follow, run.GetID(), off)
	require.Equal(t, []string{"cancelled", "done"}, types(last))
	_, err = result(t, run)
	require.True(t, temporal.IsCanceledError(err))
}

func TestTriageWithRevisionLoop(t *testing.T) {
	e := startWorker(t, tc)
	run := startRun(t, tc, e.tq, "triage", "My invoice shows a refund that never arrived")
	ctx := context.Background()
	resp, off := nextResponse(t, e.follow, run.GetID(), 0)
	confirm, in := interruptOf(t, resp)
	require.Equal(t, `Open a billing ticket "Billing question"?`, in.Question)
	_, err := kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(confirm, "", "revise"))
	require.NoError(t, err)
	resp, off = nextResponse(t, e.follow, run.GetID(), off)
	summary, _ := interruptOf(t, resp)
	require.NoError(t, kortyx.Respond(ctx, tc, run.GetID(), answer(summary, "Refund missing since May")))
	resp, off = nextResponse(t, e.follow, run.GetID(), off)
	var final contracts.Chunk
	for _, c := range resp {
		if c.Type == contracts.ChunkStructuredData && c.Kind == contracts.StructuredFinal {
			final = c
		}
	}
	var ticket struct{ Summary string }
	require.NoError(t, json.Unmarshal(final.Data, &ticket))
	require.Equal(t, "Refund missing since May", ticket.Summary)
	confirm, _ = interruptOf(t, resp)
	_, err = kortyx.RespondAndWait(ctx, tc, run.GetID(), "", answer(confirm, "", "open"))
	require.NoError(t, err)
	last, _ := nextResponse(t, e.follow, run.GetID(), off)
	require.Equal(t, []string{"message", "done"}, types(last))
	res, err := result(t, run)
	require.NoError(t, err)
	require.Equal(t, "billing", res.State.Data["topic"])
	recordHistory(t, tc, "triage-revise", run.GetID())
}
