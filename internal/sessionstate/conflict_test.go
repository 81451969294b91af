package sessionstate

import (
	"testing"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
)

// promptedWith is a session whose first prompt turn (run-1, clientTurnId c1) with digest is
// active; ended commits it, stop stops it.
func promptedWith(digest string, end func(t *testing.T, m *Machine)) func(t *testing.T) *Machine {
	return func(t *testing.T) *Machine {
		m := fresh()
		m.Claim("alice")
		m.StartSession("cp-0", t0, "wf")
		m.StartPrompt(sessionapi.TurnRequest{ClientTurnID: "c1", Workflow: "wf", Digest: digest}, "run-1", wfID, t0)
		if end != nil {
			end(t, m)
		}
		return m
	}
}

func commitTurn(t *testing.T, m *Machine) {
	cp := checkpoint("cp-1", "run-1", 1, question("tok"))
	require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
}

func stopTurn(t *testing.T, m *Machine) {
	a := m.Stoppable("")
	require.NotNil(t, a)
	m.Stopped(a)
}

// answeredWith is asked with the answer turn of tok claimed by clientTurnId c2 with digest;
// end, if set, ends it with a committed checkpoint.
func answeredWith(digest string, end bool) func(t *testing.T) *Machine {
	return func(t *testing.T) *Machine {
		m := asked(t)
		req := protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok", ClientTurnID: "c2", Digest: digest}
		p, again, err := m.CheckResume(req)
		require.NoError(t, err)
		require.Nil(t, again)
		m.Resume(req, p, t0)
		require.Equal(t, digest, m.State.Active.Digest, "the turn keeps its request's digest")
		if end {
			cp := checkpoint("cp-2", "run-1", 2)
			require.True(t, m.Apply(protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, t0, yes))
		}
		return m
	}
}

// A clientTurnId the session remembers, sent again with other content, is refused with
// CLIENT_TURN_CONFLICT, whatever became of its turn; the same content reattaches as before, and
// a turn or a request without a digest (from before digests) matches any.
func TestClientTurnConflict(t *testing.T) {
	const conflict = contracts.CodeClientTurnConflict
	reattached := &sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true}
	ended := &sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 1, Reattached: true, Ended: true}
	prompts := []struct {
		name     string
		setup    func(t *testing.T) *Machine
		digest   string
		validate bool
		code     contracts.Code
		again    *sessionapi.TurnStarted
	}{
		{name: "active turn, same input", setup: promptedWith("d1", nil), digest: "d1", again: reattached},
		{name: "active turn, other input", setup: promptedWith("d1", nil), digest: "d2", code: conflict},
		{name: "active turn, other input, in the validator", setup: promptedWith("d1", nil), digest: "d2", validate: true, code: conflict},
		{name: "committed turn, same input", setup: promptedWith("d1", commitTurn), digest: "d1", again: ended},
		{name: "committed turn, other input", setup: promptedWith("d1", commitTurn), digest: "d2", code: conflict},
		{name: "stopped turn, same input runs again", setup: promptedWith("d1", stopTurn), digest: "d1"},
		{name: "stopped turn, other input", setup: promptedWith("d1", stopTurn), digest: "d2", code: conflict},
		{name: "turn without a digest matches any", setup: promptedWith("", nil), digest: "d2", again: reattached},
		{name: "request without a digest matches", setup: promptedWith("d1", commitTurn), digest: "", again: ended},
	}
	for _, tc := range prompts {
		t.Run("prompt/"+tc.name, func(t *testing.T) {
			m := tc.setup(t)
			m.Validating = tc.validate
			again, err := m.CheckStart(sessionapi.TurnRequest{ClientTurnID: "c1", Owner: "alice", Digest: tc.digest})
			require.Equal(t, tc.code, codeOf(err))
			require.Equal(t, tc.again, again)
			if tc.code == conflict {
				require.Equal(t, `clientTurnId "c1" was already used in session "s1" with another message: a retry must repeat the same request; send a new message with a new clientTurnId.`,
					err.Error())
				require.Equal(t, map[string]any{"clientTurnId": "c1", "turnIndex": 1}, contracts.FailureOf(err).Details)
			}
		})
	}

	answers := []struct {
		name   string
		setup  func(t *testing.T) *Machine
		digest string
		code   contracts.Code
		ended  bool
	}{
		{name: "active turn, same answer", setup: answeredWith("approve", false), digest: "approve"},
		{name: "active turn, other answer", setup: answeredWith("approve", false), digest: "deny", code: conflict},
		{name: "committed turn, same answer", setup: answeredWith("approve", true), digest: "approve", ended: true},
		{name: "committed turn, other answer", setup: answeredWith("approve", true), digest: "deny", code: conflict},
		{name: "turn without a digest matches any", setup: answeredWith("", true), digest: "deny", ended: true},
	}
	for _, tc := range answers {
		t.Run("answer/"+tc.name, func(t *testing.T) {
			m := tc.setup(t)
			_, again, err := m.CheckResume(protocol.ResumeTurnRequest{Token: "tok", RequestID: "req-tok", ClientTurnID: "c2", Digest: tc.digest})
			require.Equal(t, tc.code, codeOf(err))
			if tc.code != "" {
				require.Nil(t, again)
				require.Equal(t, `clientTurnId "c2" was already used in session "s1" with another answer: a retry must repeat the same request; send a new answer with a new clientTurnId.`,
					err.Error())
				return
			}
			require.Equal(t, &sessionapi.TurnStarted{SessionID: "s1", RunID: "run-1", TurnIndex: 2, Reattached: true, Ended: tc.ended}, again)
		})
	}
}
