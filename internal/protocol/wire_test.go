package protocol

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/stretchr/testify/require"
)

// TestWireUnchanged checks that every payload that moved here from package contracts encodes
// byte for byte as it did there: testdata/wire.golden holds, for fully populated values, the
// JSON the contracts types produced before the move (named by their type then). Decoding the
// golden JSON and encoding it again must give the same bytes too.
func TestWireUnchanged(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pr := contracts.PendingRequest{}
	require.NoError(t, json.Unmarshal([]byte(`{"token":"tk","requestId":"rq","kind":"text","question":"q?"}`), &pr))
	snap := &RunSnapshot{State: contracts.GraphState{Input: "hi", LastNode: "a", CurrentWorkflow: "w", Data: map[string]any{"k": 1}},
		Hooks: HookState{NodeID: "a", NodeSlots: []json.RawMessage{json.RawMessage(`1`)},
			Journal:       map[string]JournalEntry{"interrupt:x": {Kind: "interrupt", Answer: &contracts.Answer{}, Value: json.RawMessage(`{"a":1}`), At: at}},
			WorkflowState: map[string]json.RawMessage{"s": json.RawMessage(`"v"`)}},
		NextNode: "b", Seq: 3, NodeExecutions: 4, Activations: 5,
		Budget:     &Budget{Limits: contracts.Limits{MaxToolCalls: 2}, Consumed: map[string]int{"maxToolCalls": 1}, Seq: 2},
		Rejections: []contracts.Rejection{{}}}
	in := RunStart{RunInput: contracts.RunInput{Workflow: "w", Input: json.RawMessage(`"hi"`), SessionID: "s", Context: json.RawMessage(`{"c":1}`),
		Messages: []contracts.Message{{Role: "user", Content: "x"}}, ContinueAsNewAfterNodes: 7, Limits: &contracts.Limits{MaxNodeExecutions: 9}},
		Snapshot: snap,
		Session:  &SessionBinding{WorkflowID: "kortyx-session:s", SessionID: "s", TurnIndex: 2, ParentCheckpointID: "cp", Restore: true, Expect: []contracts.PendingRequest{pr}},
		Prior:    snap, Child: &ChildBinding{ParentID: "p", RootID: "r", Stream: "r", Depth: 1, Node: "n", CallID: "c", Limits: contracts.Limits{MaxModelPasses: 3}}}
	cp := &Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: "cp1", SessionID: "s", RunID: "run", TurnIndex: 1, CreatedAt: at, Workflow: "w", Nodes: []string{"a"},
		Effects: sessionapi.CheckpointEffects{StructuredStreamIDs: []string{"x"}, InterruptTokens: []string{"t"}}, ActivePendingRequests: []contracts.PendingRequest{pr},
		ParentCheckpointID: "cp0", Label: "l", ParentSessionID: "ps", ForkedFrom: "ff"}, Snapshot: snap}
	rep := CheckpointReport{RunID: "run", Checkpoint: cp, TurnEnded: true, Closed: true}
	st := &SessionState{Checkpoints: []Checkpoint{*cp}, Head: "cp1", Active: &sessionapi.ActiveTurn{RunID: "run", TurnIndex: 1, ClientTurnID: "ct", Kind: "prompt", Since: at, Token: "tk", Committed: true},
		Pending: map[string]PendingTurn{"tk": {Request: pr, RunID: "run", CheckpointID: "cp1"}}, NextTurn: 2, Owner: "o",
		Recent: []sessionapi.ActiveTurn{{RunID: "r0"}}, Early: []CheckpointReport{rep}}
	sin := SessionStart{SessionInput: SessionInput{SessionID: "s", MaxCheckpoints: 3, RunTaskQueue: "q"},
		ParentSessionID: "ps", ForkedFrom: "ff", Initial: cp, InitialRunID: "ir", Owner: "o", State: st, ContinueAsNewAfter: 4}
	cq := ChildQuestion{Child: "c", Request: pr, Schema: json.RawMessage(`{"type":"object"}`), Snapshot: snap}
	co := ChildOutcome{Data: map[string]any{"x": 1}, Failure: &contracts.Failure{Code: "X", Message: "m"}}
	fr := sessionapi.ForkResult{SessionID: "s2", ParentSessionID: "s", ForkedFrom: "cp1", Checkpoint: cp.Public(), RunID: "r", Reissued: []sessionapi.ReissuedRequest{{FromToken: "a"}}}
	sv := sessionapi.SessionView{SessionID: "s", Head: "cp1", Checkpoints: []sessionapi.CheckpointSummary{cp.Summary()}, Active: st.Active, Pending: []contracts.PendingRequest{pr}, Owner: "o"}
	pub := PublishInput{RunID: "r", Chunks: []KeyedChunk{{Key: "w:1", Chunk: contracts.Chunk{Type: "text-delta"}}}}
	values := []struct {
		was string
		v   any
		dec func() any // a fresh value to decode the golden JSON into
	}{
		{"contracts.RunInput", in, func() any { return &RunStart{} }},
		{"contracts.CheckpointReport", rep, func() any { return &CheckpointReport{} }},
		{"contracts.SessionInput", sin, func() any { return &SessionStart{} }},
		{"contracts.ChildQuestion", cq, func() any { return &ChildQuestion{} }},
		{"contracts.ChildOutcome", co, func() any { return &ChildOutcome{} }},
		{"contracts.Reservation", Reservation{ID: "1", From: "f", Kind: "k"}, func() any { return &Reservation{} }},
		{"contracts.Grant", Grant{ID: "1"}, func() any { return &Grant{} }},
		{"contracts.Checkpoint", cp.Public(), func() any { return &sessionapi.Checkpoint{} }},
		{"contracts.ForkResult", fr, func() any { return &sessionapi.ForkResult{} }},
		{"contracts.SessionView", sv, func() any { return &sessionapi.SessionView{} }},
		{"contracts.PublishInput", pub, func() any { return &PublishInput{} }},
	}
	f, err := os.Open("testdata/wire.golden")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for _, want := range values {
		require.True(t, sc.Scan())
		require.Equal(t, want.was, sc.Text())
		require.True(t, sc.Scan())
		golden := sc.Text()
		got, err := json.Marshal(want.v)
		require.NoError(t, err)
		require.Equal(t, golden, string(got), want.was)
		back := want.dec()
		require.NoError(t, json.Unmarshal([]byte(golden), back), want.was)
		again, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, golden, string(again), want.was+" decoded and encoded again")
	}
	require.False(t, sc.Scan(), "more golden lines than values")
}

// TestClientInputsDecode checks that what a plain Temporal client sends — a RunInput, a
// SessionInput — decodes into the workflows' parameters with every field.
func TestClientInputsDecode(t *testing.T) {
	in := contracts.RunInput{Workflow: "w", Input: json.RawMessage(`"hi"`), SessionID: "s", Context: json.RawMessage(`{"c":1}`),
		Messages: []contracts.Message{{Role: "user", Content: "x"}}, ContinueAsNewAfterNodes: 2, Limits: &contracts.Limits{MaxToolCalls: 1}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var rs RunStart
	require.NoError(t, json.Unmarshal(b, &rs))
	require.Equal(t, RunStart{RunInput: in}, rs)
	again, err := json.Marshal(rs)
	require.NoError(t, err)
	require.Equal(t, string(b), string(again))

	sin := SessionInput{SessionID: "s", MaxCheckpoints: 3, RunTaskQueue: "q"}
	b, err = json.Marshal(sin)
	require.NoError(t, err)
	var ss SessionStart
	require.NoError(t, json.Unmarshal(b, &ss))
	require.Equal(t, SessionStart{SessionInput: sin}, ss)
}
