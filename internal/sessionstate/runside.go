package sessionstate

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
)

// RunSide is the run's half of the session protocol: the binding a run of a session was
// started with, what its current response ran and streamed, and the checkpoints and reports it
// sends its session (which the [Machine] applies). Like the machine it makes no Temporal calls:
// the run state (execution.Run, through its execution.SessionSide interface) generates the
// checkpoint id, reads the time, signals the report and queues the checkpoint chunk, in this
// order: [RunSide.Checkpoint], [RunSide.Report], the signal, the chunk, [RunSide.Committed].
type RunSide struct {
	b       protocol.SessionBinding
	nodes   []string // the nodes the current response ran, in order, each once
	streams []string // the structured streams it published to, in order, each once
	label   string   // the label of the next checkpoint
}

// NewRunSide is the run side of binding b.
func NewRunSide(b protocol.SessionBinding) *RunSide {
	b.Expect = append([]contracts.PendingRequest(nil), b.Expect...)
	return &RunSide{b: b}
}

// Binding is the binding as it stands (for continue-as-new): the turn index and parent of the
// next checkpoint, and whether the run still re-exposes a restored question.
func (s *RunSide) Binding() *protocol.SessionBinding {
	b := s.b
	b.Expect = append([]contracts.PendingRequest(nil), s.b.Expect...)
	return &b
}

// Touched records that the current response ran node.
func (s *RunSide) Touched(node string) { s.nodes = appendNew(s.nodes, node) }

// Published records that the current response published to the structured stream id.
func (s *RunSide) Published(id string) {
	if id != "" {
		s.streams = appendNew(s.streams, id)
	}
}

// Label names the next checkpoint.
func (s *RunSide) Label(label string) { s.label = label }

// Reexposing reports, once, that the question the run asks now is the one a rollback or fork
// restored it to ask again: its checkpoint exists already, so none is taken, and the response
// starts afresh.
func (s *RunSide) Reexposing() bool {
	if !s.b.Restore {
		return false
	}
	s.b.Restore = false
	s.nodes, s.streams = nil, nil
	return true
}

// Checkpoint builds the checkpoint of the run as it stands: id and now are its id and time,
// snap the run's snapshot (copied), pending the question the run waits for (nil at the end of
// a response) and schema its response schema (nil: none), final marks the run's end (the snapshot keeps only the workflow state). A
// checkpoint whose report would exceed Temporal's payload limit fails with PAYLOAD_TOO_LARGE.
// Nothing changes until [RunSide.Committed].
func (s *RunSide) Checkpoint(id, runID string, now time.Time, snap protocol.RunSnapshot, pending *contracts.PendingRequest, schema json.RawMessage, final bool) (protocol.Checkpoint, error) {
	wf := snap.State.CurrentWorkflow
	steered := snap.Steered
	snap = protocol.Clone(snap)
	snap.Steers, snap.Steered = nil, nil // the run's own bookkeeping, not state to continue from
	if final {
		snap.NextNode = ""
		snap.Hooks = protocol.HookState{WorkflowState: snap.Hooks.WorkflowState}
	}
	cp := protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{
		ID: id, SessionID: s.b.SessionID, RunID: runID, TurnIndex: s.b.TurnIndex, CreatedAt: now,
		Workflow: wf, Nodes: append([]string{}, s.nodes...),
		Effects:               sessionapi.CheckpointEffects{StructuredStreamIDs: append([]string{}, s.streams...), InterruptTokens: []string{}},
		ActivePendingRequests: []contracts.PendingRequest{},
		ParentCheckpointID:    s.b.ParentCheckpointID,
		Label:                 s.label,
	}, Snapshot: &snap}
	if len(steered) > 0 {
		cp.Effects.Steered = append([]contracts.Steer(nil), steered...)
	}
	if pending != nil {
		cp.Effects.InterruptTokens = []string{pending.Token}
		cp.ActivePendingRequests = []contracts.PendingRequest{*pending}
		cp.Schemas = []json.RawMessage{schema}
	}
	if err := protocol.CheckPayload(fmt.Sprintf("the checkpoint of session turn %d", cp.TurnIndex),
		protocol.CheckpointReport{RunID: runID, Checkpoint: &cp, TurnEnded: true}, protocol.CheckpointFix); err != nil {
		return cp, err
	}
	return cp, nil
}

// Report is the report that commits cp at the session (the next checkpoint has no label).
func (s *RunSide) Report(cp protocol.Checkpoint) protocol.CheckpointReport {
	s.label = ""
	return protocol.CheckpointReport{RunID: cp.RunID, Checkpoint: &cp, TurnEnded: true, Steered: SteerIDs(cp.Effects.Steered)}
}

// Committed moves on after cp was reported: the next checkpoint is the next turn's, with cp as
// its parent, and the next response starts afresh.
func (s *RunSide) Committed(cp protocol.Checkpoint) {
	s.b.TurnIndex++
	s.b.ParentCheckpointID = cp.ID
	s.nodes, s.streams = nil, nil
}

// Closed is the report of run runID that ended without a checkpoint (failure, cancel): its
// questions can no longer be answered, and its turn is over unless CompleteResponse ended the
// turn before (turnEnded false).
func (s *RunSide) Closed(runID string, turnEnded bool, steered []contracts.Steer) protocol.CheckpointReport {
	return protocol.CheckpointReport{RunID: runID, TurnEnded: turnEnded, Closed: true, Steered: SteerIDs(steered)}
}

// SteerIDs are the ids of steering messages taken in.
func SteerIDs(steered []contracts.Steer) []string {
	var ids []string
	for _, st := range steered {
		ids = append(ids, st.ID)
	}
	return ids
}
