package sessionstate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

const wfID = "kortyx-session:s1"

func yes() bool { return true }

// question is an open question asked by a run.
func question(token string) contracts.PendingRequest {
	return contracts.PendingRequest{RequestID: "req-" + token, Token: token, Workflow: "wf", Node: "ask"}
}

// checkpoint is a checkpoint of run at turn asking questions.
func checkpoint(id, run string, turn int, questions ...contracts.PendingRequest) protocol.Checkpoint {
	if questions == nil {
		questions = []contracts.PendingRequest{}
	}
	return protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: id, SessionID: "s1", RunID: run, TurnIndex: turn, CreatedAt: t0, Workflow: "wf", Nodes: []string{"n"},
		ActivePendingRequests: questions,
		Effects:               sessionapi.CheckpointEffects{StructuredStreamIDs: []string{"st-" + id}, InterruptTokens: []string{}}},
		Snapshot: &protocol.RunSnapshot{NextNode: "n-" + id}}
}

// fresh is a new session.
func fresh() *Machine {
	return New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1"}}, "q")
}

// prompted is a session whose first prompt turn (run-1, clientTurnId c1) is active.
func prompted(t *testing.T) *Machine {
	t.Helper()
	m := fresh()
	m.Claim("alice")
	m.StartSession("cp-0", t0, "wf")
	m.StartPrompt(sessionapi.TurnRequest{ClientTurnID: "c1", Workflow: "wf"}, "run-1", wfID, t0)
	return m
}

// asked is a session whose first turn (run-1) ended with checkpoint cp-1 asking question tok.
func asked(t *testing.T) *Machine {
	t.Helper()
	m := prompted(t)
	cp := checkpoint("cp-1", "run-1", 1, question("tok"))
	require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
	return m
}

func TestNew(t *testing.T) {
	tests := []struct {
		name  string
		in    protocol.SessionStart
		check func(t *testing.T, m *Machine)
	}{
		{"defaults", protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1"}}, func(t *testing.T, m *Machine) {
			require.Equal(t, protocol.DefaultMaxCheckpoints, m.In.MaxCheckpoints)
			require.Equal(t, "q", m.In.RunTaskQueue)
			require.NotNil(t, m.State.Pending)
			require.True(t, m.Empty())
			require.False(t, m.Forked())
		}},
		{"explicit settings kept", protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1", MaxCheckpoints: 3, RunTaskQueue: "runs"}}, func(t *testing.T, m *Machine) {
			require.Equal(t, 3, m.In.MaxCheckpoints)
			require.Equal(t, "runs", m.In.RunTaskQueue)
		}},
		{"a fork belongs to its source's owner", protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1"}, Owner: "alice"}, func(t *testing.T, m *Machine) {
			require.Equal(t, "alice", m.State.Owner)
		}},
		{"continued state is carried, not the input's owner", protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1"}, Owner: "bob", State: &protocol.SessionState{Owner: "alice", Head: "cp-1", NextTurn: 2}}, func(t *testing.T, m *Machine) {
			require.Equal(t, "alice", m.State.Owner)
			require.Equal(t, "cp-1", m.State.Head)
			require.NotNil(t, m.State.Pending)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, New(tc.in, "q")) })
	}
}

func TestStartForked(t *testing.T) {
	t.Run("open questions are asked by the initial run", func(t *testing.T) {
		cp := checkpoint("cp-f", "", 4, question("t1"), question("t2"))
		m := New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s2"}, Initial: &cp, InitialRunID: "run-f"}, "q")
		require.True(t, m.Forked())
		require.True(t, m.StartForked())
		require.Equal(t, "cp-f", m.State.Head)
		require.Equal(t, 5, m.State.NextTurn)
		require.Equal(t, []string{"run-f", "run-f"}, m.PendingRuns())
		require.Equal(t, "cp-f", m.State.Pending["t1"].CheckpointID)
	})
	t.Run("no open questions: nothing to restore", func(t *testing.T) {
		cp := checkpoint("cp-f", "", 4)
		m := New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s2"}, Initial: &cp}, "q")
		require.False(t, m.StartForked())
		require.Empty(t, m.State.Pending)
		require.False(t, m.Empty())
	})
}

func TestCheckStart(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T) *Machine
		req      sessionapi.TurnRequest
		code     contracts.Code
		again    *sessionapi.TurnStarted
		validate bool
	}{
		{name: "first turn of a new session", setup: func(*testing.T) *Machine { return fresh() },
			req: sessionapi.TurnRequest{Workflow: "wf", Owner: "alice"}},
		{name: "first turn names no workflow", setup: func(*testing.T) *Machine { return fresh() },
			req: sessionapi.TurnRequest{Workflow: "  "}, code: contracts.CodeUnknownWorkflow},
		{name: "later turn uses the head's workflow", setup: asked, req: sessionapi.TurnRequest{Owner: "alice"}},
		{name: "another owner is refused", setup: asked,
			req: sessionapi.TurnRequest{Workflow: "wf", Owner: "bob"}, code: contracts.CodeForbidden},
		{name: "no owner on an owned session is refused", setup: asked,
			req: sessionapi.TurnRequest{Workflow: "wf"}, code: contracts.CodeForbidden},
		{name: "busy", setup: prompted,
			req: sessionapi.TurnRequest{Workflow: "wf", Owner: "alice"}, code: contracts.CodeSessionBusy},
		{name: "busy is not decided while validating", setup: prompted, validate: true,
			req: sessionapi.TurnRequest{Workflow: "wf", Owner: "alice"}},
		{name: "same clientTurnId reattaches to the active turn", setup: prompted,
			req:   sessionapi.TurnRequest{ClientTurnID: "c1", Owner: "alice"},
			again: &sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true}},
		{name: "same clientTurnId reattaches to its committed turn", setup: asked,
			req:   sessionapi.TurnRequest{ClientTurnID: "c1", Owner: "alice"},
			again: &sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true, Ended: true}},
		{name: "a stopped turn runs again on retry", setup: stopped,
			req: sessionapi.TurnRequest{ClientTurnID: "c1", Owner: "alice"}},
		{name: "a stopped turn is given back to a reconnecting reader", setup: stopped,
			req:   sessionapi.TurnRequest{ClientTurnID: "c1", Owner: "alice", Reconnect: true},
			again: &sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true, Ended: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.setup(t)
			m.Validating = tc.validate
			again, err := m.CheckStart(tc.req)
			require.Equal(t, tc.code, codeOf(err))
			require.Equal(t, tc.again, again)
		})
	}
}

// stopped is a session whose first turn (run-1, c1) was stopped before it committed.
func stopped(t *testing.T) *Machine {
	t.Helper()
	m := prompted(t)
	a := m.Stoppable("")
	require.NotNil(t, a)
	m.Stopped(a)
	return m
}

func codeOf(err error) contracts.Code {
	if err == nil {
		return ""
	}
	return contracts.CodeOf(err)
}

func TestStartPrompt(t *testing.T) {
	t.Run("first turn: session start checkpoint, owner, run input", func(t *testing.T) {
		m := fresh()
		require.True(t, m.Claim("alice"))
		require.False(t, m.Claim("bob"), "an owned session keeps its owner")
		require.Nil(t, m.Head())
		m.StartSession("cp-0", t0, "wf")
		head := m.Head()
		require.Equal(t, "session start", head.Label)
		require.Equal(t, 0, head.TurnIndex)
		require.Equal(t, 1, m.State.NextTurn)
		wf, in, started := m.StartPrompt(sessionapi.TurnRequest{Workflow: "wf", ClientTurnID: "c1", Input: []byte(`"hi"`)}, "run-1", wfID, t0)
		require.Equal(t, "wf", wf)
		require.Equal(t, sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1}, started)
		require.Equal(t, &protocol.SessionBinding{WorkflowID: wfID, SessionID: "s1", TurnIndex: 1, ParentCheckpointID: "cp-0"}, in.Session)
		require.Nil(t, in.Prior)
		require.Equal(t, &sessionapi.ActiveTurn{RunID: "run-1", TurnIndex: 1, ClientTurnID: "c1", Kind: KindPrompt, Since: t0}, m.State.Active)
	})
	t.Run("next turn starts from the head and supersedes open questions", func(t *testing.T) {
		m := asked(t)
		require.Equal(t, []string{"run-1"}, m.PendingRuns())
		m.ClearPending()
		wf, in, started := m.StartPrompt(sessionapi.TurnRequest{}, "run-2", wfID, t0)
		require.Equal(t, "wf", wf, "the head's workflow")
		require.Equal(t, "n-cp-1", in.Prior.NextNode)
		require.Equal(t, 2, started.TurnIndex)
		require.Empty(t, m.State.Pending)
	})
	t.Run("a run that could not start frees the session", func(t *testing.T) {
		m := prompted(t)
		m.PromptNotStarted()
		require.Nil(t, m.State.Active)
	})
}

func TestCheckResume(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) *Machine
		req   protocol.ResumeTurnRequest
		code  contracts.Code
		again bool
	}{
		{"open question", asked, protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok"}, "", false},
		{"unknown token", asked, protocol.ResumeTurnRequest{Token: "nope", RequestID: "req-tok"}, contracts.CodeInvalidResume, false},
		{"blank token", asked, protocol.ResumeTurnRequest{Token: " ", RequestID: "req-tok"}, contracts.CodeInvalidResume, false},
		{"request id of another question", asked, protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-x"}, contracts.CodeResumeMismatch, false},
		{"busy", prompted, protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok"}, contracts.CodeSessionBusy, false},
		{"same clientTurnId and token reattach", resumed, protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok", ClientTurnID: "c2"}, "", true},
		{"same clientTurnId, other token: busy", resumed, protocol.ResumeTurnRequest{Token: "tok2", RequestID: "req-tok", ClientTurnID: "c2"}, contracts.CodeSessionBusy, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, again, err := tc.setup(t).CheckResume(tc.req)
			require.Equal(t, tc.code, codeOf(err))
			require.Equal(t, tc.again, again != nil)
			if tc.code == "" && !tc.again {
				require.Equal(t, "run-1", p.RunID)
			}
		})
	}
}

// resumed is asked with the answer turn of tok claimed (clientTurnId c2).
func resumed(t *testing.T) *Machine {
	t.Helper()
	m := asked(t)
	req := protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok", ClientTurnID: "c2"}
	p, again, err := m.CheckResume(req)
	require.NoError(t, err)
	require.Nil(t, again)
	require.Equal(t, sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 2}, m.Resume(req, p, t0))
	return m
}

func TestResumeAndAbort(t *testing.T) {
	t.Run("claiming closes the question", func(t *testing.T) {
		m := resumed(t)
		require.Empty(t, m.State.Pending)
		require.Equal(t, &sessionapi.ActiveTurn{RunID: "run-1", TurnIndex: 2, ClientTurnID: "c2", Kind: KindAnswer, Since: t0, Token: "tok"}, m.State.Active)
	})
	t.Run("abort on refusal opens the question again", func(t *testing.T) {
		m := resumed(t)
		require.True(t, m.Abort("run-1"))
		require.Nil(t, m.State.Active)
		require.Nil(t, m.Resumed)
		require.Equal(t, []string{"run-1"}, m.PendingRuns())
		_, _, err := m.CheckResume(protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok"})
		require.NoError(t, err)
	})
	t.Run("abort of another run changes nothing", func(t *testing.T) {
		m := resumed(t)
		require.False(t, m.Abort("run-9"))
		require.NotNil(t, m.State.Active)
		require.Empty(t, m.State.Pending)
	})
	t.Run("abort of a prompt turn reopens nothing", func(t *testing.T) {
		m := prompted(t)
		require.True(t, m.Abort("run-1"))
		require.Empty(t, m.State.Pending)
	})
	t.Run("abort after the answer's turn ended changes nothing", func(t *testing.T) {
		m := resumed(t)
		cp := checkpoint("cp-2", "run-1", 2)
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
		require.False(t, m.Abort("run-1"))
		require.Empty(t, m.State.Pending)
	})
}

func TestApply(t *testing.T) {
	t.Run("the active run's checkpoint commits and ends the turn", func(t *testing.T) {
		m := asked(t)
		require.Nil(t, m.State.Active)
		require.Equal(t, "cp-1", m.State.Head)
		require.Equal(t, 2, m.State.NextTurn)
		require.Len(t, m.State.Checkpoints, 2)
		require.Equal(t, protocol.PendingTurn{Request: question("tok"), RunID: "run-1", CheckpointID: "cp-1"}, m.State.Pending["tok"])
		require.Len(t, m.State.Recent, 1)
		require.True(t, m.State.Recent[0].Committed)
	})
	t.Run("a checkpoint without the turn's end keeps the turn", func(t *testing.T) {
		m := prompted(t)
		cp := checkpoint("cp-1", "run-1", 1)
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp}, t0, yes))
		require.True(t, m.State.Active.Committed)
		require.Equal(t, "cp-1", m.State.Head)
	})
	t.Run("a turn that ends without a checkpoint commits nothing", func(t *testing.T) {
		m := prompted(t)
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", TurnEnded: true, Closed: true}, t0, yes))
		require.Nil(t, m.State.Active)
		require.Equal(t, "cp-0", m.State.Head)
		require.False(t, m.State.Recent[0].Committed)
	})
	t.Run("a report before its turn is active is kept until it is", func(t *testing.T) {
		m := asked(t)
		m.ClearPending()
		cp := checkpoint("cp-2", "run-2", 2)
		rep := protocol.CheckpointReport{RunID: "run-2", Checkpoint: &cp, TurnEnded: true}
		require.False(t, m.Apply(rep, t0, yes))
		require.Equal(t, []protocol.CheckpointReport{rep}, m.State.Early)
		require.Equal(t, "cp-1", m.State.Head)
		m.StartPrompt(sessionapi.TurnRequest{}, "run-2", wfID, t0)
		require.True(t, m.ApplyEarly("run-2", t0, yes))
		require.Empty(t, m.State.Early)
		require.Equal(t, "cp-2", m.State.Head)
		require.Nil(t, m.State.Active)
	})
	t.Run("a report in the same task as the next prompt: the old run's report first", func(t *testing.T) {
		// run-1's end and the next prompt are delivered together; the handler drains first.
		m := prompted(t)
		cp := checkpoint("cp-1", "run-1", 1)
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
		_, err := m.CheckStart(sessionapi.TurnRequest{Owner: "alice"})
		require.NoError(t, err)
		_, _, started := m.StartPrompt(sessionapi.TurnRequest{}, "run-2", wfID, t0)
		require.Equal(t, 2, started.TurnIndex)
		require.False(t, m.ApplyEarly("run-2", t0, yes))
	})
	t.Run("an answer's report before its turn is claimed", func(t *testing.T) {
		// The answer went by update right after the claim; its run's report is seen in the
		// task before the claim's handler runs. Without an answered-on-run gate it waits.
		m := asked(t)
		cp := checkpoint("cp-2", "run-1", 2)
		rep := protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}
		require.False(t, m.Apply(rep, t0, func() bool { return false }))
		require.Len(t, m.State.Early, 1)
		req := protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok"}
		p, _, err := m.CheckResume(req)
		require.NoError(t, err)
		m.Resume(req, p, t0)
		require.True(t, m.ApplyEarly("run-1", t0, yes))
		require.Equal(t, "cp-2", m.State.Head)
		require.Nil(t, m.State.Active)
	})
	t.Run("a run answered outside the chat route is that answer's turn", func(t *testing.T) {
		m := asked(t)
		cp := checkpoint("cp-2", "run-1", 2, question("tok2"))
		asks := 0
		gate := func() bool { asks++; return true }
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp}, t0, gate))
		require.Equal(t, 1, asks)
		require.Equal(t, &sessionapi.ActiveTurn{RunID: "run-1", TurnIndex: 2, Kind: KindAnswer, Since: t0, Committed: true}, m.State.Active)
		require.Equal(t, "cp-2", m.State.Head)
		require.Equal(t, []string{"run-1"}, m.PendingRuns(), "only the new question is open")
		require.Contains(t, m.State.Pending, "tok2")
	})
	t.Run("the version gate is asked only for such a report", func(t *testing.T) {
		m := prompted(t)
		gate := func() bool { t.Fatal("gate asked"); return false }
		cp := checkpoint("cp-1", "run-1", 1)
		m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, gate)
		m.Apply(protocol.CheckpointReport{RunID: "run-x", Checkpoint: &cp}, t0, gate)
	})
	t.Run("a stale run's report is never applied", func(t *testing.T) {
		m := asked(t)
		cp := checkpoint("cp-x", "run-old", 5)
		require.False(t, m.Apply(protocol.CheckpointReport{RunID: "run-old", Checkpoint: &cp, TurnEnded: true}, t0, yes))
		require.Equal(t, "cp-1", m.State.Head)
		require.Len(t, m.State.Early, 1)
	})
	t.Run("a closed run's questions are no longer open", func(t *testing.T) {
		m := asked(t)
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Closed: true}, t0, yes))
		require.Empty(t, m.State.Pending)
		require.True(t, m.Empty() == false)
	})
	t.Run("a repeated report (a retried publish activity) is applied once", func(t *testing.T) {
		m := asked(t)
		cp := checkpoint("cp-1", "run-1", 1, question("tok"))
		again := protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}
		// Again while the question is open, and again once its answer's turn runs.
		require.False(t, m.Apply(again, t0, yes))
		req := protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok"}
		p, _, err := m.CheckResume(req)
		require.NoError(t, err)
		m.Resume(req, p, t0)
		require.False(t, m.Apply(again, t0, yes))
		require.Len(t, m.State.Checkpoints, 2, "cp-0 and cp-1, once")
		require.Empty(t, m.State.Early)
		require.Empty(t, m.State.Pending, "the answered question stays answered")
		require.Equal(t, "run-1", m.State.Active.RunID, "the answer's turn runs on")
		end := checkpoint("cp-2", "run-1", 2)
		require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &end, TurnEnded: true}, t0, yes))
		require.Equal(t, "cp-2", m.State.Head)
	})
	t.Run("early reports are bounded", func(t *testing.T) {
		m := asked(t)
		for i := 0; i < maxEarlyReports+4; i++ {
			m.Apply(protocol.CheckpointReport{RunID: "run-" + strings.Repeat("x", i+1)}, t0, yes)
		}
		require.Len(t, m.State.Early, maxEarlyReports)
		require.Equal(t, "run-xxxxx", m.State.Early[0].RunID, "the oldest are dropped")
	})
}

func TestStop(t *testing.T) {
	t.Run("stop frees the session and remembers the turn", func(t *testing.T) {
		m := stopped(t)
		require.Nil(t, m.State.Active)
		require.Equal(t, []sessionapi.ActiveTurn{{RunID: "run-1", TurnIndex: 1, ClientTurnID: "c1", Kind: KindPrompt, Since: t0}}, m.State.Recent)
	})
	t.Run("stop of another run is no stop", func(t *testing.T) {
		require.Nil(t, prompted(t).Stoppable("run-9"))
	})
	t.Run("stop of the active run by id", func(t *testing.T) {
		a := prompted(t).Stoppable("run-1")
		require.Equal(t, "run-1", a.RunID)
	})
	t.Run("idle session: nothing to stop", func(t *testing.T) {
		require.Nil(t, asked(t).Stoppable(""))
	})
	t.Run("a report that arrives first ends the turn: nothing to stop", func(t *testing.T) {
		m := prompted(t)
		cp := checkpoint("cp-1", "run-1", 1)
		m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes)
		require.Nil(t, m.Stoppable(""))
		require.Equal(t, "cp-1", m.State.Head)
	})
	t.Run("a report after the stop is stale", func(t *testing.T) {
		m := stopped(t)
		cp := checkpoint("cp-1", "run-1", 1)
		require.False(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
		require.Equal(t, "cp-0", m.State.Head)
		require.Nil(t, m.State.Active)
	})
	t.Run("stopping an answer turn does not reopen its question", func(t *testing.T) {
		m := resumed(t)
		m.Stopped(m.Stoppable(""))
		require.Nil(t, m.Resumed)
		require.False(t, m.Abort("run-1"))
		require.Empty(t, m.State.Pending)
	})
}

// twoTurns is a session with checkpoints cp-0, cp-1 (run-1, question tok) and cp-2 (run-2,
// question tok2, open).
func twoTurns(t *testing.T) *Machine {
	t.Helper()
	m := resumed(t)
	cp := checkpoint("cp-2", "run-1", 2, question("tok2"))
	require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
	return m
}

func TestRollback(t *testing.T) {
	t.Run("to an earlier checkpoint", func(t *testing.T) {
		m := twoTurns(t)
		plan, err := m.PlanRollback("cp-1")
		require.NoError(t, err)
		require.False(t, plan.Noop)
		require.Equal(t, []string{"run-1"}, plan.Cancel)
		require.Equal(t, []string{"st-cp-2"}, plan.Result.InvalidatedStructuredStreamIDs)
		require.Equal(t, []string{"tok2"}, plan.Result.InvalidatedInterruptTokens)
		require.Empty(t, m.PendingCancels(&plan), "the open question's run is cancelled already")
		target := m.CommitRollback(plan)
		require.Equal(t, "cp-1", m.State.Head)
		require.Equal(t, 2, m.State.NextTurn)
		require.Len(t, m.State.Checkpoints, 2)
		require.Empty(t, m.State.Pending)
		require.Len(t, m.State.Recent, 1, "the discarded turn c2 is forgotten")
		require.Equal(t, "c1", m.State.Recent[0].ClientTurnID)
		require.NotNil(t, target, "cp-1 asks tok again")
		in := m.RestoreInput(*target, wfID)
		require.Equal(t, &protocol.SessionBinding{WorkflowID: wfID, SessionID: "s1", TurnIndex: 2, ParentCheckpointID: "cp-1",
			Restore: true, Expect: []contracts.PendingRequest{question("tok")}}, in.Session)
		m.Reopen(*target, "run-r")
		require.Equal(t, []string{"run-r"}, m.PendingRuns())
	})
	t.Run("open questions of other runs are cancelled once each", func(t *testing.T) {
		m := twoTurns(t)
		m.State.Pending["tok3"] = protocol.PendingTurn{Request: question("tok3"), RunID: "run-9"}
		m.State.Pending["tok4"] = protocol.PendingTurn{Request: question("tok4"), RunID: "run-9"}
		plan, err := m.PlanRollback("cp-0")
		require.NoError(t, err)
		require.Equal(t, []string{"run-1"}, plan.Cancel)
		require.Equal(t, []string{"run-9"}, m.PendingCancels(&plan))
		require.Nil(t, m.CommitRollback(plan), "the session start asks nothing")
	})
	t.Run("to the head: nothing discarded", func(t *testing.T) {
		m := twoTurns(t)
		plan, err := m.PlanRollback("cp-2")
		require.NoError(t, err)
		require.True(t, plan.Noop)
		require.Equal(t, []contracts.PendingRequest{question("tok2")}, plan.Result.ActivePendingRequests)
	})
	t.Run("unknown checkpoint", func(t *testing.T) {
		_, err := twoTurns(t).PlanRollback("cp-9")
		require.Equal(t, contracts.CodeNotFound, codeOf(err))
	})
	t.Run("while an answer turn is claimed", func(t *testing.T) {
		_, err := resumed(t).PlanRollback("cp-0")
		require.Equal(t, contracts.CodeSessionBusy, codeOf(err))
	})
	t.Run("the validator leaves busy to the handler", func(t *testing.T) {
		m := resumed(t)
		m.Validating = true
		_, err := m.CheckTarget("cp-0")
		require.NoError(t, err)
	})
	t.Run("a checkpoint without its snapshot cannot be restored", func(t *testing.T) {
		cp := checkpoint("cp-1", "run-1", 1, question("tok"))
		cp.Snapshot = nil
		require.Equal(t, contracts.CodeResumeFailed, codeOf(CanRestore(cp)))
		require.NoError(t, CanRestore(checkpoint("cp-1", "run-1", 1)))
	})
}

func TestFork(t *testing.T) {
	t.Run("checks", func(t *testing.T) {
		tests := []struct {
			name string
			req  sessionapi.ForkRequest
			code contracts.Code
		}{
			{"a checkpoint", sessionapi.ForkRequest{CheckpointID: "cp-1"}, ""},
			{"a new id", sessionapi.ForkRequest{CheckpointID: "cp-1", NewSessionID: "s9"}, ""},
			{"unknown checkpoint", sessionapi.ForkRequest{CheckpointID: "cp-9"}, contracts.CodeNotFound},
			{"padded id", sessionapi.ForkRequest{CheckpointID: "cp-1", NewSessionID: " s9"}, contracts.CodeInvalidSession},
			{"its own id", sessionapi.ForkRequest{CheckpointID: "cp-1", NewSessionID: "s1"}, contracts.CodeInvalidSession},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				require.Equal(t, tc.code, codeOf(twoTurns(t).CheckFork(tc.req)))
			})
		}
	})
	t.Run("a busy session may fork", func(t *testing.T) {
		require.NoError(t, resumed(t).CheckFork(sessionapi.ForkRequest{CheckpointID: "cp-1"}))
	})
	t.Run("the copy reissues its questions under the given ids", func(t *testing.T) {
		m := twoTurns(t)
		src := m.ForkSource("cp-2")
		ids := ForkIDs{Session: "s2", Checkpoint: "cp-n", Run: "run-n",
			Requests: []sessionapi.ReissuedRequest{{Token: "new-tok", RequestID: "new-req"}}}
		at := t0.Add(time.Hour)
		fin, reissued := m.Fork(src, ids, at)
		require.Equal(t, []sessionapi.ReissuedRequest{{FromToken: "tok2", FromRequestID: "req-tok2", Token: "new-tok", RequestID: "new-req"}}, reissued)
		cp := fin.Initial
		require.Equal(t, "cp-n", cp.ID)
		require.Equal(t, "s2", cp.SessionID)
		require.Equal(t, "s1", cp.ParentSessionID)
		require.Equal(t, "cp-2", cp.ForkedFrom)
		require.Equal(t, at, cp.CreatedAt)
		require.Equal(t, []string{"new-tok"}, cp.Effects.InterruptTokens)
		require.Equal(t, "new-tok", cp.ActivePendingRequests[0].Token)
		require.Equal(t, protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s2", MaxCheckpoints: protocol.DefaultMaxCheckpoints, RunTaskQueue: "q"}, ParentSessionID: "s1", ForkedFrom: "cp-2", Initial: cp, InitialRunID: "run-n", Owner: "alice"}, fin)
		require.Equal(t, "tok2", m.ForkSource("cp-2").ActivePendingRequests[0].Token, "the source is unchanged")
	})
}

func TestPrune(t *testing.T) {
	m := New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1", MaxCheckpoints: 2}}, "q")
	m.StartSession("cp-0", t0, "wf")
	for i, run := range []string{"run-1", "run-2"} {
		m.StartPrompt(sessionapi.TurnRequest{}, run, wfID, t0)
		cp := checkpoint("cp-"+run, run, i+1)
		m.Apply(protocol.CheckpointReport{RunID: run, Checkpoint: &cp, TurnEnded: true}, t0, yes)
	}
	require.Equal(t, []string{"cp-run-1", "cp-run-2"}, []string{m.State.Checkpoints[0].ID, m.State.Checkpoints[1].ID})
	require.Equal(t, sessionapi.Checkpoint{}, m.Checkpoint("cp-0"))
	public, err := json.Marshal(m.Checkpoint("cp-run-2"))
	require.NoError(t, err)
	require.NotContains(t, string(public), `"snapshot"`, "the public checkpoint has no snapshot")
	require.NotNil(t, m.State.Checkpoints[1].Snapshot, "the session keeps it")
	require.Equal(t, 3, m.State.NextTurn)
}

func TestContinueAsNew(t *testing.T) {
	tests := []struct {
		name      string
		m         func(t *testing.T) *Machine
		suggested bool
		events    int
		due       bool
	}{
		{"suggested while idle", asked, true, 1, true},
		{"suggested while a turn runs", prompted, true, 1, false},
		{"not suggested", asked, false, 100, false},
		{"after the test's event count", func(t *testing.T) *Machine { m := asked(t); m.In.ContinueAsNewAfter = 3; return m }, false, 3, true},
		{"before the test's event count", func(t *testing.T) *Machine { m := asked(t); m.In.ContinueAsNewAfter = 3; return m }, false, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.due, tc.m(t).ContinueAsNewDue(tc.suggested, tc.events))
		})
	}
	t.Run("carries the state, not the fork's start", func(t *testing.T) {
		cp := checkpoint("cp-f", "", 1)
		m := New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s1"}, Initial: &cp, InitialRunID: "run-f"}, "q")
		m.StartForked()
		next := m.Carry()
		require.Nil(t, next.Initial)
		require.Empty(t, next.InitialRunID)
		require.Equal(t, "q", next.RunTaskQueue)
		require.Equal(t, "cp-f", next.State.Head)
	})
	t.Run("drops the oldest snapshots beyond the payload bound, never the head's", func(t *testing.T) {
		m := asked(t)
		big := strings.Repeat("x", MaxPayload/2)
		for i := range m.State.Checkpoints {
			m.State.Checkpoints[i].Snapshot = &protocol.RunSnapshot{NextNode: big}
		}
		cp := checkpoint("cp-2", "run-2", 2)
		cp.Snapshot = &protocol.RunSnapshot{NextNode: big}
		m.StartPrompt(sessionapi.TurnRequest{}, "run-2", wfID, t0)
		m.Apply(protocol.CheckpointReport{RunID: "run-2", Checkpoint: &cp, TurnEnded: true}, t0, yes)
		st := m.Carry().State
		require.Nil(t, st.Checkpoints[0].Snapshot)
		require.Nil(t, st.Checkpoints[1].Snapshot)
		require.NotNil(t, st.Checkpoints[2].Snapshot, "the head keeps its snapshot")
		require.NotNil(t, m.State.Checkpoints[0].Snapshot, "the live state is unchanged")
	})
}

// checkedAsked is asked with question tok (a choice of "a" or "b") asked by run-1 whose
// checkpoint carries the question's response schema (schema; nil: none).
func checkedAsked(t *testing.T, schema json.RawMessage) *Machine {
	t.Helper()
	m := prompted(t)
	q := question("tok")
	q.Input = contracts.InterruptInput{Kind: contracts.InterruptChoice, Options: []contracts.Option{{ID: "a"}, {ID: "b"}}}
	cp := checkpoint("cp-1", "run-1", 1, q)
	cp.Schemas = []json.RawMessage{schema}
	require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
	return m
}

// An answer carried in the request is checked as the run checks it, when the session knows the
// question's schema: a refused answer claims nothing. The turn records where its response
// begins when the offset is of the question's run, and the session delivers the answer itself.
func TestCarriedAnswer(t *testing.T) {
	onlyB := json.RawMessage(`{"const":"b"}`)
	ans := func(sel ...string) *contracts.Response {
		return &contracts.Response{Token: "tok", RequestID: "req-tok", Selected: sel}
	}
	tests := []struct {
		name      string
		setup     func(t *testing.T) *Machine
		answer    *contracts.Response
		streamRun string
		code      contracts.Code
		begin     int64
		delivered bool
	}{
		{"valid choice", func(t *testing.T) *Machine { return checkedAsked(t, nil) }, ans("a"), "run-1", "", 7, true},
		{"unknown option", func(t *testing.T) *Machine { return checkedAsked(t, nil) }, ans("c"), "run-1", contracts.CodeInvalidResponse, 0, false},
		{"two options for one choice", func(t *testing.T) *Machine { return checkedAsked(t, nil) }, ans("a", "b"), "run-1", contracts.CodeInvalidResponse, 0, false},
		{"schema allows", func(t *testing.T) *Machine { return checkedAsked(t, onlyB) }, ans("b"), "run-1", "", 7, true},
		{"schema refuses", func(t *testing.T) *Machine { return checkedAsked(t, onlyB) }, ans("a"), "run-1", contracts.CodeInvalidResponse, 0, false},
		{"cancel needs no content", func(t *testing.T) *Machine { return checkedAsked(t, onlyB) }, &contracts.Response{Token: "tok", RequestID: "req-tok", Cancel: true}, "run-1", "", 7, true},
		{"answer of another token", func(t *testing.T) *Machine { return checkedAsked(t, nil) }, &contracts.Response{Token: "other", RequestID: "req-tok", Selected: []string{"a"}}, "run-1", contracts.CodeInvalidResume, 0, false},
		{"offset of another run is not recorded", func(t *testing.T) *Machine { return checkedAsked(t, nil) }, ans("a"), "run-9", "", 0, true},
		{"question from before schemas: the caller delivers", asked, ans("zzz"), "run-1", "", 0, false},
		{"no answer: the caller delivers", func(t *testing.T) *Machine { return checkedAsked(t, nil) }, nil, "run-1", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.setup(t)
			req := protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok", ClientTurnID: "c2", Answer: tc.answer, StreamRun: tc.streamRun, From: 7}
			p, again, err := m.CheckResume(req)
			require.Equal(t, tc.code, codeOf(err), "%v", err)
			require.Nil(t, again)
			if tc.code != "" {
				return
			}
			require.Equal(t, tc.delivered, Delivers(req, p))
			ts := m.Resume(req, p, t0)
			require.Equal(t, sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 2, Begin: tc.begin, Delivered: tc.delivered}, ts)
			// The same answer turn again gets the recorded offset back.
			_, again, err = m.CheckResume(req)
			require.NoError(t, err)
			require.Equal(t, sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 2, Reattached: true, Begin: tc.begin, Delivered: tc.delivered}, *again)
		})
	}
	t.Run("a restored run's question records no offset", func(t *testing.T) {
		m := checkedAsked(t, nil)
		m.Reopen(m.State.Checkpoints[len(m.State.Checkpoints)-1], "run-2")
		require.Equal(t, "run-2", m.QuestionRun("tok"))
		req := protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok", Answer: ans("a"), StreamRun: "run-2", From: 7}
		p, _, err := m.CheckResume(req)
		require.NoError(t, err)
		require.Equal(t, sessionapi.TurnStarted{SessionID: "s1", RunID: "run-2", TurnIndex: 2, Delivered: true}, m.Resume(req, p, t0),
			"run-2 asks the question again at its start: the caller finds the response in the stream")
	})
	t.Run("no open question: no run", func(t *testing.T) {
		require.Empty(t, fresh().QuestionRun("tok"))
	})
}

// The view shows each open question's response schema by request id, when it has one.
func TestViewSchemas(t *testing.T) {
	onlyB := json.RawMessage(`{"const":"b"}`)
	v := checkedAsked(t, onlyB).View()
	require.Equal(t, []string{"req-tok"}, []string{v.Pending[0].RequestID})
	require.Equal(t, map[string]json.RawMessage{"req-tok": onlyB}, v.Schemas)
	require.Nil(t, checkedAsked(t, nil).View().Schemas, "a question without a schema")
	require.Nil(t, asked(t).View().Schemas, "a question from before schemas")
}

// A session's budget: each run's last report counts, whether it was applied as the active
// turn's, later from the early reports, or arrived after the run's turn (a stopped or closed
// run, a spend-only report after CompleteResponse); past protocol.MaxLiveRuns runs, the oldest
// run's last report is added to the session's spend for good.
func TestSessionBudgetSpend(t *testing.T) {
	m := fresh()
	m.StartSession("cp-0", t0, "wf")
	budget := contracts.Limits{MaxTokens: 1000}
	_, in, _ := m.StartPrompt(sessionapi.TurnRequest{Workflow: "wf", SessionBudget: &budget}, "run-1", wfID, t0)
	require.Equal(t, &protocol.SessionBudget{Limits: budget}, in.SessionBudget)

	cp := checkpoint("cp-1", "run-1", 1)
	rep := protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true, Spend: &protocol.RunSpendReport{Tokens: 26}}
	require.True(t, m.Apply(rep, t0, yes))
	m.Apply(rep, t0, yes) // the same report again (kept as early: its turn is over)
	require.Equal(t, 26, m.RunBudget().Spent.Tokens, "counted once")
	early := len(m.State.Early)
	require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Spend: &protocol.RunSpendReport{Tokens: 40}}, t0, yes), "after CompleteResponse")
	require.Len(t, m.State.Early, early, "a spend-only report is not kept for a turn")
	require.Equal(t, 40, m.RunBudget().Spent.Tokens)
	require.False(t, m.RunBudget().Warned)
	m.Apply(protocol.CheckpointReport{RunID: "run-1", Spend: &protocol.RunSpendReport{Tokens: 40, Warned: true}}, t0, yes)
	require.True(t, m.RunBudget().Warned, "a run warned: the next runs do not")

	_, _, _ = m.StartPrompt(sessionapi.TurnRequest{Workflow: "wf"}, "run-2", wfID, t0)
	m.Stopped(m.State.Active)
	m.Apply(protocol.CheckpointReport{RunID: "run-2", Closed: true, TurnEnded: true, Spend: &protocol.RunSpendReport{Tokens: 7, MoreTokens: 100}}, t0, yes)
	require.Equal(t, &protocol.SessionBudget{Limits: budget, Spent: contracts.Spend{Tokens: 47}, More: contracts.Spend{Tokens: 100}, Warned: true}, m.RunBudget(),
		"a stopped run's closing report counts")

	for i := 3; i < 3+protocol.MaxLiveRuns; i++ {
		m.Apply(protocol.CheckpointReport{RunID: fmt.Sprintf("run-%d", i), Closed: true, Spend: &protocol.RunSpendReport{Tokens: 1}}, t0, yes)
	}
	require.Len(t, m.State.Budget.Live, protocol.MaxLiveRuns)
	require.Equal(t, 47+protocol.MaxLiveRuns, m.RunBudget().Spent.Tokens, "folded runs still count")
	require.Equal(t, contracts.Spend{Tokens: 47 + protocol.MaxLiveRuns, MaxTokens: 1100}, *m.View().Budget)
}

// A session takes at most protocol.MaxWaiting waiting messages (queued and steering): one more
// is refused with SESSION_BUSY; a retry of a waiting one (its clientTurnId) is not.
func TestWaitingMessagesAreBounded(t *testing.T) {
	m := New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s"}}, "q")
	m.State.Active = &sessionapi.ActiveTurn{RunID: "run-1", TurnIndex: 1}
	in, _ := json.Marshal("more")
	for i := range protocol.MaxWaiting {
		req := sessionapi.TurnRequest{Workflow: "w", Input: in, Busy: sessionapi.BusyEnqueue, ClientTurnID: fmt.Sprintf("t%d", i)}
		_, err := m.CheckStart(req)
		require.NoError(t, err)
		m.Enqueue(req, fmt.Sprintf("q%d", i), req.Busy, time.Now())
	}
	_, err := m.CheckStart(sessionapi.TurnRequest{Workflow: "w", Input: in, Busy: sessionapi.BusySteer, ClientTurnID: "one-more"})
	require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(err))
	require.Contains(t, err.Error(), "32 messages waiting")
	_, err = m.CheckStart(sessionapi.TurnRequest{Workflow: "w", Input: in, Busy: sessionapi.BusyEnqueue, ClientTurnID: "t3"})
	require.NoError(t, err, "a retry of a waiting message")
	_, err = m.CheckStart(sessionapi.TurnRequest{Workflow: "w", Input: in, ClientTurnID: "plain"})
	require.Equal(t, contracts.CodeSessionBusy, contracts.CodeOf(err), "without a policy")
	_, err = m.CheckStart(sessionapi.TurnRequest{Workflow: "w", Input: in, Busy: "later"})
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))
}

// Stop ends the running turn only: a steering message it had not taken in joins the queue; a
// waiting message's clientTurnId sent again with other content is refused.
func TestStopQueuesSteeringMessages(t *testing.T) {
	m := New(protocol.SessionStart{SessionInput: protocol.SessionInput{SessionID: "s"}}, "q")
	a := &sessionapi.ActiveTurn{RunID: "run-1", TurnIndex: 1}
	m.State.Active = a
	in, _ := json.Marshal("Use the EU store.")
	req := sessionapi.TurnRequest{Workflow: "w", Input: in, Busy: sessionapi.BusySteer, ClientTurnID: "t2", Digest: "d1"}
	_, msg := m.AddSteer(req, "steer-1", time.Now())
	require.Equal(t, protocol.SteerMessage{Steer: contracts.Steer{ID: "steer-1", ClientTurnID: "t2", Content: "Use the EU store."}, TurnIndex: 1}, msg)
	other := req
	other.Digest = "d2"
	_, err := m.CheckStart(other)
	require.Equal(t, contracts.CodeClientTurnConflict, contracts.CodeOf(err))
	m.Stopped(a)
	require.Empty(t, m.State.Steers)
	require.Len(t, m.State.Queue, 1)
	require.Equal(t, "steer-1", m.State.Queue[0].ID)
	require.True(t, m.QueueReady())
}
