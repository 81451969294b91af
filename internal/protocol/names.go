package protocol

import (
	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/temporal"
)

// Wire names only Kortyx's own workflows, activities and clients use (the names a plain
// Temporal client needs are in contracts: the run workflow, the respond signal and update, the
// state query, the search attributes). Persisted in histories: they never change;
// names_test.go pins every value.
const (
	// PublishActivityName is the local activity that publishes workflow-side chunks.
	PublishActivityName = "kortyx.Publish"
	// ModelActivityName is the activity of one model pass ([ModelPassInput] → [ModelResponse]).
	ModelActivityName = "kortyx.Model"
	// ToolActivityName is the activity of one tool call ([ToolCallInput] → [ToolResult]).
	ToolActivityName = "kortyx.Tool"
	// ListToolsActivityName lists the tools of MCP servers ([ListToolsInput] → []OfferedTool).
	ListToolsActivityName = "kortyx.ListTools"
)

// Wire names of sessions (spec F5.3–F5.5).
const (
	// SessionWorkflowName is the workflow type of a session: one execution per session id
	// (workflow ID [SessionWorkflowID]), holding its checkpoints and serializing its turns.
	SessionWorkflowName = "kortyx.Session"
	// SessionStartTurnUpdate starts a prompt turn ([TurnRequest] → [TurnStarted]).
	SessionStartTurnUpdate = "kortyx.Session.StartTurn"
	// SessionStartTurnByCallerUpdate starts a prompt turn whose run its caller starts
	// ([TurnRequest] → [StartedTurn], the run's Launch when the turn starts at once). A worker
	// of a release before it has no handler and rejects it (nothing is written): the caller
	// sends SessionStartTurnUpdate then.
	SessionStartTurnByCallerUpdate = "kortyx.Session.StartTurnByCaller"
	// SessionResumeTurnUpdate claims an answer turn ([ResumeTurnRequest] → [TurnStarted]).
	SessionResumeTurnUpdate = "kortyx.Session.ResumeTurn"
	// SessionAbortTurnUpdate releases a claimed turn whose run could not continue (run id).
	SessionAbortTurnUpdate = "kortyx.Session.AbortTurn"
	// SessionStopUpdate cancels the session's active run (the Stop button).
	SessionStopUpdate = "kortyx.Session.Stop"
	// SessionRollbackUpdate restores a checkpoint (checkpoint id → [RollbackResult]).
	SessionRollbackUpdate = "kortyx.Session.Rollback"
	// SessionForkUpdate copies a checkpoint into a new session ([ForkRequest] → [ForkResult]).
	SessionForkUpdate = "kortyx.Session.Fork"
	// SessionCheckpointSignal is how a run reports a checkpoint and the end of a turn ([CheckpointReport]).
	SessionCheckpointSignal = "kortyx.Session.Checkpoint"
	// SessionQueryName returns a [SessionView].
	SessionQueryName = "kortyx.Session.State"
	// SessionCheckpointQueryName returns one [Checkpoint] (without its snapshot) by id.
	SessionCheckpointQueryName = "kortyx.Session.Checkpoint"
)

// Wire names of child workflow calls.
const (
	// ChildQuestionSignal carries a question of a child run to its parent ([ChildQuestion]).
	ChildQuestionSignal = "kortyx.Child.Question"
)

// Wire names of the shared budget of a run tree.
const (
	// BudgetReserveSignal asks the root run for one unit of a limit ([Reservation]).
	BudgetReserveSignal = "kortyx.Budget.Reserve"
	// BudgetGrantSignal answers a reservation ([Grant]).
	BudgetGrantSignal = "kortyx.Budget.Grant"
	// SteerSignal carries a steering message from the session to its running turn's run
	// ([SteerMessage]).
	SteerSignal = "kortyx.Steer"
)

// SessionOwnerMemo is the memo field of a session workflow that names its owner (see
// [TurnRequest].Owner). It is set when the session's first turn is accepted (or when a fork
// creates the session) and never changes; read it without a worker through the workflow's
// description. It holds an application's user id, never a token or user content.
const SessionOwnerMemo = "kortyxOwner"

// Typed keys of the search attributes ([contracts.SearchAttributeSession], …).
var (
	SessionKey  = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeSession)
	WorkflowKey = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeWorkflow)
	StatusKey   = temporal.NewSearchAttributeKeyKeyword(contracts.SearchAttributeStatus)
)

// SearchAttributeNames returns every search attribute a namespace needs, all of type Keyword
// (a new slice each call).
func SearchAttributeNames() []string {
	return []string{contracts.SearchAttributeSession, contracts.SearchAttributeWorkflow, contracts.SearchAttributeStatus}
}
