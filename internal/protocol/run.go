package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
)

// RunStart is the parameter of the run workflow: what a client sets ([contracts.RunInput],
// whose fields it embeds, so a client's RunInput decodes into it) and what only Kortyx's
// workflows set.
type RunStart struct {
	contracts.RunInput
	// Snapshot, when set, starts the run from a saved state instead of from the start node
	// (continue-as-new, rollback and fork).
	Snapshot *RunSnapshot `json:"snapshot,omitempty"`
	// Session ties the run to a session: it reports a checkpoint at the end of each response.
	Session *SessionBinding `json:"session,omitempty"`
	// Prior, for a new turn of a session, is the head's state the turn continues from (data,
	// conversation, usage, workflow state); Input is the new message.
	Prior *RunSnapshot `json:"prior,omitempty"`
	// Child makes the run a child workflow call of another run (hooks.Workflow).
	Child *ChildBinding `json:"child,omitempty"`
	// IDs is the id source a lean run carries into continue-as-new (execution.LeanVersion).
	IDs *IDSource `json:"ids,omitempty"`
	// SessionBudget is the budget of the run's session across its turns, as the session gives
	// it to the run of a turn (nil: none).
	SessionBudget *SessionBudget `json:"sessionBudget,omitempty"`
	// Arrival says how the turn's message reached its session while another turn ran
	// (docs/steering.md): "enqueue" (it waited for the turns before it), "interrupt" (it
	// stopped the running turn); "" for a turn that started at once.
	Arrival string `json:"arrival,omitempty"`
	// Start is what the run would record in its first workflow task (the version of its first
	// change id, its id seed, the worker's local tools and budget, its pinned definition),
	// recorded instead by its starter — a session, or the parent run of a workflow call — in
	// this input: a run started with it records no marker to start (nil: the run records them).
	Start *StartRecord `json:"start,omitempty"`
}

// StartRecord is what a run's starter records for it in its input ([RunStart].Start): the
// input is in the run's history, so the run replays from it as it would from its own markers.
type StartRecord struct {
	// Version is the version of the run's first change id (workflows' pinned-definition change)
	// the run takes without asking workflow.GetVersion: never below the lean version.
	Version int `json:"version"`
	// Seed is the run's id seed (IDSource.Seed); Local the worker's local tools.
	Seed  []byte   `json:"seed"`
	Local []string `json:"local,omitempty"`
	// Budget is the worker's default budget, prices and shared budgets for a root run (nil:
	// none, or a workflow call's run).
	Budget *BudgetStart `json:"budget,omitempty"`
	// Pinned is the definition the run starts with, when it does not take it from its snapshot
	// (nil: the workflow is not registered on the starter's worker, or the run takes it from
	// its snapshot).
	Pinned *PinnedDefinition `json:"pinned,omitempty"`
}

// Derive returns 32 bytes derived from the seed and label without counting an id (Next
// counts): the seed of a run that a run or session with this source starts (label names the
// run), the same on every replay and in no id sequence of the starter.
func (s *IDSource) Derive(label string) []byte {
	mac := hmac.New(sha256.New, s.Seed)
	fmt.Fprintf(mac, "seed:%s", label) // Next writes "kind/count"
	return mac.Sum(nil)
}

// IDSource is what a lean run derives its ids from: a random seed recorded at its start, the
// count of ids derived so far, and the local tools it recorded with the seed. It is not part of
// snapshots: a run restored from a checkpoint records a seed of its own, so its ids never repeat
// another run's.
type IDSource struct {
	Seed  []byte   `json:"seed"`
	Seq   uint64   `json:"seq"`
	Local []string `json:"local,omitempty"`
}

// Next returns the next 32 derived bytes (HMAC-SHA256 of the seed over kind and the count of
// ids derived so far): deterministic in workflow code, since the seed and the count are durable.
func (s *IDSource) Next(kind string) []byte {
	s.Seq++
	mac := hmac.New(sha256.New, s.Seed)
	fmt.Fprintf(mac, "%s/%d", kind, s.Seq)
	return mac.Sum(nil)
}

// UUID returns prefix followed by a version-4-shaped UUID of the next derived bytes.
func (s *IDSource) UUID(prefix, kind string) string {
	var u uuid.UUID
	copy(u[:], s.Next(kind))
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return prefix + u.String()
}

// runStartJSON is RunStart's JSON in the field order of the recorded histories (RunInput had
// all these fields, in this order).
type runStartJSON struct {
	Workflow                string              `json:"workflow"`
	Input                   json.RawMessage     `json:"input,omitempty"`
	SessionID               string              `json:"sessionId,omitempty"`
	Context                 json.RawMessage     `json:"context,omitempty"`
	Messages                []contracts.Message `json:"messages,omitempty"`
	Snapshot                *RunSnapshot        `json:"snapshot,omitempty"`
	ContinueAsNewAfterNodes int                 `json:"continueAsNewAfterNodes,omitempty"`
	Session                 *SessionBinding     `json:"session,omitempty"`
	Prior                   *RunSnapshot        `json:"prior,omitempty"`
	Child                   *ChildBinding       `json:"child,omitempty"`
	Limits                  *contracts.Limits   `json:"limits,omitempty"`
	IDs                     *IDSource           `json:"ids,omitempty"`
	SessionBudget           *SessionBudget      `json:"sessionBudget,omitempty"`
	Arrival                 string              `json:"arrival,omitempty"`
	Tenant                  string              `json:"tenant,omitempty"`
	Start                   *StartRecord        `json:"start,omitempty"`
}

// MarshalJSON writes the fields in the order of the recorded histories (an embedded struct's
// fields would come first).
func (r RunStart) MarshalJSON() ([]byte, error) {
	return json.Marshal(runStartJSON{Workflow: r.Workflow, Input: r.Input, SessionID: r.SessionID, Context: r.Context,
		Messages: r.Messages, Snapshot: r.Snapshot, ContinueAsNewAfterNodes: r.ContinueAsNewAfterNodes,
		Session: r.Session, Prior: r.Prior, Child: r.Child, Limits: r.Limits, IDs: r.IDs, SessionBudget: r.SessionBudget, Arrival: r.Arrival, Tenant: r.Tenant, Start: r.Start})
}

// RunSnapshot is everything needed to continue a run in a new execution: the graph state, the
// hook state (node state, workflow state, journal) and where to go next.
type RunSnapshot struct {
	State contracts.GraphState `json:"state"`
	Hooks HookState            `json:"hooks"`
	// NextNode is the node to execute next in State.CurrentWorkflow.
	NextNode string `json:"nextNode"`
	// Seq is the number of workflow-side chunks published so far (their keys continue from it).
	Seq int64 `json:"seq"`
	// NodeExecutions counts node executions of the run so far.
	NodeExecutions int `json:"nodeExecutions"`
	// Activations counts node activations (a node run with its retries); child workflow ids
	// include it, so that a node running again calls new children.
	Activations int `json:"activations,omitempty"`
	// Budget is the root run's execution limits and what was consumed of them.
	Budget *Budget `json:"budget,omitempty"`
	// Rejections keeps the most recent rejected answers.
	Rejections []contracts.Rejection `json:"rejections,omitempty"`
	// Pinned is the definition of State.CurrentWorkflow the run runs (recorded when it
	// started or handed over); nil in snapshots of runs that started before pinning.
	Pinned *PinnedDefinition `json:"pinned,omitempty"`
	// Steers are the steering messages the run received and has not taken in; Steered the
	// ones its current response took in (never in a checkpoint's snapshot).
	Steers  []SteerMessage    `json:"steers,omitempty"`
	Steered []contracts.Steer `json:"steered,omitempty"`
}

// HookState is the durable state of hooks (spec F3.0): node state and the hook journal of the
// current node activation, and workflow state shared by all nodes of the run.
type HookState struct {
	NodeID        string                     `json:"nodeId,omitempty"`
	NodeSlots     []json.RawMessage          `json:"nodeSlots,omitempty"`
	Journal       map[string]JournalEntry    `json:"journal,omitempty"`
	WorkflowState map[string]json.RawMessage `json:"workflowState,omitempty"`
}

// JournalEntry is one recorded hook result.
type JournalEntry struct {
	Kind   string            `json:"kind"`
	Answer *contracts.Answer `json:"answer,omitempty"`
	Value  json.RawMessage   `json:"value,omitempty"`
	At     time.Time         `json:"at"`
}

// KeyedChunk is a chunk with its deterministic de-duplication key (see the stream package).
type KeyedChunk struct {
	Key   string          `json:"key"`
	Chunk contracts.Chunk `json:"chunk"`
}

// PublishInput is the input of the publish activity: workflow-side chunks of one run, in order.
type PublishInput struct {
	RunID  string       `json:"runId"`
	Chunks []KeyedChunk `json:"chunks"`
	// Report, when set, is the run's checkpoint report to its session, which the activity
	// signals to the session before it publishes the chunks (execution.ReportWithPublishVersion).
	Report *PublishReport `json:"report,omitempty"`
}

// PublishResult is what the publish activity returns: the report it signalled (nil: none),
// which its local activity marker keeps in the run's history (the Studio's trace reads it).
type PublishResult struct {
	Report *CheckpointReport `json:"report,omitempty"`
}

// PublishReport is a checkpoint report that the publish activity signals
// ([SessionCheckpointSignal]) to the session's workflow before it publishes: the session knows
// the checkpoint (a question, the end of a turn) before any client can see its chunks. A retried
// activity signals again; the session applies a checkpoint's report once.
type PublishReport struct {
	WorkflowID string           `json:"workflowId"`
	Report     CheckpointReport `json:"report"`
}
