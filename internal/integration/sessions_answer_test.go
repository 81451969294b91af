package integration_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/testagents"
	"github.com/stretchr/testify/require"
)

// kortyx.AnswerTurn answers a session's question in one call: claim, deliver, and release the
// turn when the run refuses the answer or the caller's Claimed step fails; a reattached turn
// gets its answer again without running twice.
func TestAnswerTurnClaimsDeliversAndReleases(t *testing.T) {
	e := startWorker(t, tc)
	ctx := context.Background()
	session := "s-" + taskQueue(t)

	t1 := turn(t, e, session, testagents.EffectsWorkflow, "hello")
	resp, after := nextResponse(t, e.follow, t1.RunID, 0)
	name, _ := interruptOf(t, resp)

	var claims []contracts.TurnStarted
	claimed := func(_ context.Context, ts contracts.TurnStarted) error { claims = append(claims, ts); return nil }
	ts, err := kortyx.AnswerTurn(ctx, e.c, session, answer(name, "Ada"), kortyx.AnswerOptions{ClientTurnID: "t2", Claimed: claimed})
	require.NoError(t, err)
	require.Equal(t, contracts.TurnStarted{SessionID: session, RunID: t1.RunID, TurnIndex: 2}, ts)
	require.Equal(t, []contracts.TurnStarted{ts}, claims, "Claimed ran once, before the delivery")
	resp, after = nextResponse(t, e.follow, t1.RunID, after)
	require.Equal(t, []string{"interrupt", "checkpoint", "done"}, types(resp))
	plan, _ := interruptOf(t, resp)
	eventually(t, 10*time.Second, "the answer turn to end", func() bool { return sessionView(t, e, session).Active == nil })

	// The run refuses an answer: the turn is released and the question is open again.
	gone := false
	_, err = kortyx.AnswerTurn(ctx, e.c, session, answer(plan, "", "gold"), kortyx.AnswerOptions{ClientTurnID: "t3x",
		Gone: func() bool { gone = true; return true }})
	require.Equal(t, contracts.CodeInvalidResponse, contracts.CodeOf(err), "%v", err)
	require.False(t, gone, "a refusal is not a departure")
	v := sessionView(t, e, session)
	require.Nil(t, v.Active)
	require.Equal(t, []string{plan.ResumeToken}, []string{v.Pending[0].Token})

	// Claimed fails: nothing is delivered, the turn is released.
	broken := errors.New("the stream cannot be read")
	_, err = kortyx.AnswerTurn(ctx, e.c, session, answer(plan, "", "pro"), kortyx.AnswerOptions{
		Claimed: func(context.Context, contracts.TurnStarted) error { return broken }})
	require.ErrorIs(t, err, broken)
	v = sessionView(t, e, session)
	require.Nil(t, v.Active)
	require.Len(t, v.Pending, 1)
	require.Equal(t, []string{"before", "between Ada"}, readLines(t, e.effects), "the choice was not delivered")

	// The answer goes through; the same answer turn again reattaches to it and runs nothing twice.
	ts, err = kortyx.AnswerTurn(ctx, e.c, session, answer(plan, "", "pro"), kortyx.AnswerOptions{ClientTurnID: "t3"})
	require.NoError(t, err)
	resp, _ = nextResponse(t, e.follow, t1.RunID, after)
	require.Equal(t, []string{"message", "checkpoint", "done"}, types(resp))
	eventually(t, 10*time.Second, "the answer turn to end", func() bool { return sessionView(t, e, session).Active == nil })
	claims = nil
	again, err := kortyx.AnswerTurn(ctx, e.c, session, answer(plan, "", "pro"), kortyx.AnswerOptions{ClientTurnID: "t3", Claimed: claimed})
	require.NoError(t, err)
	require.Equal(t, contracts.TurnStarted{SessionID: session, RunID: ts.RunID, TurnIndex: ts.TurnIndex, Reattached: true, Ended: true}, again)
	require.Equal(t, []contracts.TurnStarted{again}, claims)
	require.Equal(t, []string{"before", "between Ada", "after pro"}, readLines(t, e.effects))
}
