package sessionstate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/stretchr/testify/require"
)

func boundRun() *RunSide {
	return NewRunSide(protocol.SessionBinding{WorkflowID: wfID, SessionID: "s1", TurnIndex: 3, ParentCheckpointID: "cp-2"})
}

func runSnap() protocol.RunSnapshot {
	return protocol.RunSnapshot{State: contracts.GraphState{CurrentWorkflow: "wf", Data: map[string]any{"k": "v"}}, NextNode: "next",
		Hooks: protocol.HookState{NodeID: "n", Journal: map[string]protocol.JournalEntry{"interrupt#0": {Kind: "pending"}},
			WorkflowState: map[string]json.RawMessage{"w": json.RawMessage(`1`)}}}
}

// A checkpoint holds what the response ran and streamed (each once, in order), the binding's
// turn and parent, the label and the question; committing it moves on to the next turn.
func TestRunSideCheckpointAndCommit(t *testing.T) {
	s := boundRun()
	for _, n := range []string{"a", "b", "a"} {
		s.Touched(n)
	}
	for _, id := range []string{"st-1", "", "st-2", "st-1"} {
		s.Published(id)
	}
	s.Label(protocol.LimitCheckpoint)
	q := question("tok")
	cp, err := s.Checkpoint("cp-3", "run-1", t0, runSnap(), &q, json.RawMessage(`{"type":"string"}`), false)
	require.NoError(t, err)
	require.Equal(t, sessionapi.Checkpoint{ID: "cp-3", SessionID: "s1", RunID: "run-1", TurnIndex: 3, CreatedAt: t0, Workflow: "wf",
		Nodes: []string{"a", "b"}, Effects: sessionapi.CheckpointEffects{StructuredStreamIDs: []string{"st-1", "st-2"}, InterruptTokens: []string{"tok"}},
		ActivePendingRequests: []contracts.PendingRequest{q}, ParentCheckpointID: "cp-2", Label: protocol.LimitCheckpoint}, cp.Public())
	require.Equal(t, runSnap(), *cp.Snapshot, "not final: the whole snapshot")
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"type":"string"}`)}, cp.Schemas, "the question's response schema, for the session")
	require.Equal(t, &protocol.SessionBinding{WorkflowID: wfID, SessionID: "s1", TurnIndex: 3, ParentCheckpointID: "cp-2"}, s.Binding(),
		"building a checkpoint changes nothing")

	require.Equal(t, protocol.CheckpointReport{RunID: "run-1", Checkpoint: &cp, TurnEnded: true}, s.Report(cp))
	s.Committed(cp)
	require.Equal(t, &protocol.SessionBinding{WorkflowID: wfID, SessionID: "s1", TurnIndex: 4, ParentCheckpointID: "cp-3"}, s.Binding())
	next, err := s.Checkpoint("cp-4", "run-1", t0, runSnap(), nil, nil, false)
	require.NoError(t, err)
	require.Equal(t, []string{}, next.Nodes, "the next response starts afresh")
	require.Equal(t, sessionapi.CheckpointEffects{StructuredStreamIDs: []string{}, InterruptTokens: []string{}}, next.Effects)
	require.Equal(t, []contracts.PendingRequest{}, next.ActivePendingRequests)
	require.Nil(t, next.Schemas)
	require.Empty(t, next.Label, "a label names one checkpoint")
}

// The final checkpoint keeps only the workflow state of the hooks and no next node; the
// snapshot is a copy.
func TestRunSideFinalCheckpoint(t *testing.T) {
	s := boundRun()
	snap := runSnap()
	cp, err := s.Checkpoint("cp-3", "run-1", t0, snap, nil, nil, true)
	require.NoError(t, err)
	require.Equal(t, "", cp.Snapshot.NextNode)
	require.Equal(t, protocol.HookState{WorkflowState: map[string]json.RawMessage{"w": json.RawMessage(`1`)}}, cp.Snapshot.Hooks)
	snap.State.Data["k"] = "changed"
	require.Equal(t, "v", cp.Snapshot.State.Data["k"])
}

// A checkpoint whose report would not fit in a Temporal payload is refused, and nothing changes.
func TestRunSideCheckpointTooLarge(t *testing.T) {
	s := boundRun()
	s.Touched("a")
	snap := runSnap()
	snap.State.Data["blob"] = strings.Repeat("x", protocol.PayloadLimit)
	_, err := s.Checkpoint("cp-3", "run-1", t0, snap, nil, nil, false)
	require.Equal(t, contracts.CodePayloadTooLarge, contracts.CodeOf(err))
	cp, err := s.Checkpoint("cp-3", "run-1", t0, runSnap(), nil, nil, false)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, cp.Nodes)
	require.Equal(t, 3, cp.TurnIndex)
}

// A restored run re-exposes its question once, without a checkpoint, and its response starts
// afresh; the binding it continues as new with no longer restores.
func TestRunSideReexposing(t *testing.T) {
	s := NewRunSide(protocol.SessionBinding{WorkflowID: wfID, SessionID: "s1", TurnIndex: 5, ParentCheckpointID: "cp-4", Restore: true,
		Expect: []contracts.PendingRequest{question("tok")}})
	s.Touched("a")
	require.True(t, s.Binding().Restore)
	require.True(t, s.Reexposing())
	require.False(t, s.Reexposing())
	require.False(t, s.Binding().Restore)
	require.Equal(t, []contracts.PendingRequest{question("tok")}, s.Binding().Expect)
	cp, err := s.Checkpoint("cp-5", "run-1", t0, runSnap(), nil, nil, false)
	require.NoError(t, err)
	require.Equal(t, []string{}, cp.Nodes)

	plain := boundRun()
	require.False(t, plain.Reexposing())
}

func TestRunSideClosed(t *testing.T) {
	s := boundRun()
	require.Equal(t, protocol.CheckpointReport{RunID: "run-1", TurnEnded: true, Closed: true}, s.Closed("run-1", true, nil))
	require.Equal(t, protocol.CheckpointReport{RunID: "run-1", Closed: true}, s.Closed("run-1", false, nil), "after CompleteResponse the turn ended before")
	require.Equal(t, []string{"steer-1"}, s.Closed("run-1", true, []contracts.Steer{{ID: "steer-1", Content: "EU"}}).Steered)
}
