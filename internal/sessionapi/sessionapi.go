// Package sessionapi holds the types of the session service's calls and of the chat and
// checkpoint routes' answers (turns, checkpoints, rollback, fork, the session view): what the
// session workflow returns and the service hands to its callers. Package sessions exports them
// under the same names (type aliases); they live here so that the session workflow, which may not
// import the client side, shares them. Their JSON is the wire's (TestWireUnchanged).
package sessionapi

import (
	"encoding/json"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// CheckpointEffects are what a turn published that a rollback invalidates.
type CheckpointEffects struct {
	StructuredStreamIDs []string `json:"structuredStreamIds"`
	InterruptTokens     []string `json:"interruptTokens"`
	// Steered are the messages the turn's run took into its conversation while it ran
	// (policy "steer", docs/steering.md), in the order it took them in.
	Steered []contracts.Steer `json:"steered,omitempty"`
}

// Checkpoint is a session checkpoint (spec F5.3): the state after a turn, from which the next
// turn starts and to which a session can be rolled back or forked. The session keeps it
// together with the run state to continue from, which never leaves the server.
type Checkpoint struct {
	ID                    string                     `json:"id"`
	SessionID             string                     `json:"sessionId"`
	RunID                 string                     `json:"runId,omitempty"`
	TurnIndex             int                        `json:"turnIndex"`
	CreatedAt             time.Time                  `json:"createdAt"`
	Workflow              string                     `json:"workflow"`
	Nodes                 []string                   `json:"nodes"`
	Effects               CheckpointEffects          `json:"effects"`
	ActivePendingRequests []contracts.PendingRequest `json:"activePendingRequests"`
	ParentCheckpointID    string                     `json:"parentCheckpointId,omitempty"`
	Label                 string                     `json:"label,omitempty"`
	ParentSessionID       string                     `json:"parentSessionId,omitempty"`
	ForkedFrom            string                     `json:"forkedFrom,omitempty"`
}

// CheckpointSummary is a checkpoint without its run id, state, effects and pending requests.
type CheckpointSummary struct {
	ID                 string    `json:"id"`
	SessionID          string    `json:"sessionId"`
	TurnIndex          int       `json:"turnIndex"`
	CreatedAt          time.Time `json:"createdAt"`
	Workflow           string    `json:"workflow"`
	Nodes              []string  `json:"nodes"`
	ParentCheckpointID string    `json:"parentCheckpointId,omitempty"`
	Label              string    `json:"label,omitempty"`
	ParentSessionID    string    `json:"parentSessionId,omitempty"`
	ForkedFrom         string    `json:"forkedFrom,omitempty"`
}

// TurnRequest starts a prompt turn.
type TurnRequest struct {
	ClientTurnID string              `json:"clientTurnId,omitempty"`
	Workflow     string              `json:"workflow,omitempty"` // default: the head's workflow
	Input        json.RawMessage     `json:"input"`
	Messages     []contracts.Message `json:"messages,omitempty"`
	Context      json.RawMessage     `json:"context,omitempty"`
	// Reconnect marks a reader coming back for its turn (an SSE Last-Event-ID): it reattaches
	// also to a turn that failed or was stopped, which a plain retry runs again.
	Reconnect bool `json:"reconnect,omitempty"`
	// Limits override the worker's execution limits for this turn's run.
	Limits *contracts.Limits `json:"limits,omitempty"`
	// SessionBudget sets the session's budget across its turns (its MaxTokens, MaxCost,
	// OnBudgetExhausted; docs/budgets.md): the latest turn that names one sets it.
	SessionBudget *contracts.Limits `json:"sessionBudget,omitempty"`
	// Owner is the application's id of the caller. The first accepted turn of a session makes
	// it the session's owner; a later turn with another owner is refused with FORBIDDEN. Empty
	// means no owner (development): such a session refuses turns that name one.
	Owner string `json:"owner,omitempty"`
	// Digest identifies the turn's content (its input); kortyx.StartTurn sets it. The same
	// ClientTurnID with another digest is refused with CLIENT_TURN_CONFLICT.
	Digest string `json:"digest,omitempty"`
	// Busy is what the session does with the message when a turn is running (docs/steering.md):
	// [BusyReject] ("" too: SESSION_BUSY), [BusyEnqueue], [BusyInterrupt] or [BusySteer].
	Busy string `json:"busy,omitempty"`
}

// The policies of a message sent while a turn runs ([TurnRequest].Busy).
const (
	// BusyReject refuses the message with SESSION_BUSY (the default).
	BusyReject = "reject"
	// BusyEnqueue makes the message the next turn: it starts when the turns before it ended.
	BusyEnqueue = "enqueue"
	// BusyInterrupt cancels the running turn and starts a new one with its message and this one.
	BusyInterrupt = "interrupt"
	// BusySteer adds the message to the running turn's conversation at its next model pass.
	BusySteer = "steer"
)

// CheckBusy checks a busy policy ("" is [BusyReject]).
func CheckBusy(p string) error {
	switch p {
	case "", BusyReject, BusyEnqueue, BusyInterrupt, BusySteer:
		return nil
	}
	return contracts.Errorf(contracts.CodeInvalidInput, "busy %q is not a policy: use reject, enqueue, interrupt or steer.", p)
}

// TurnStarted says which run carries a turn.
type TurnStarted struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
	TurnIndex int    `json:"turnIndex"`
	// Reattached is true when the same clientTurnId asked again, while its turn was active or
	// after it ended: the caller gets the run of that turn instead of a second execution.
	Reattached bool `json:"reattached,omitempty"`
	// Ended is true when the reattached turn is over (its response can be read in full).
	Ended bool `json:"ended,omitempty"`
	// Begin is the offset of the run's stream after which an answer turn's response begins (0:
	// not recorded; a prompt's response begins the stream).
	Begin int64 `json:"begin,omitempty"`
	// Delivered is set when the session delivered the answer to the run itself
	// (the answer request carries the answer).
	Delivered bool `json:"delivered,omitempty"`
	// Kind says how a message sent while a turn ran was taken ("" : the session was idle, a
	// prompt turn): [BusyEnqueue] (the turn started after the ones before it), [BusyInterrupt]
	// (Interrupted names the run it cancelled) or [BusySteer] (RunID is the running turn's run,
	// which takes the message in at its next model pass; SteerID names it there).
	Kind        string `json:"kind,omitempty"`
	Interrupted string `json:"interrupted,omitempty"`
	SteerID     string `json:"steerId,omitempty"`
	// ClientTurnID is a steering message's clientTurnId (one the service gave it when the
	// request had none).
	ClientTurnID string `json:"clientTurnId,omitempty"`
}

// RollbackResult is the result of a rollback (spec F5.4).
type RollbackResult struct {
	SessionID                      string                     `json:"sessionId"`
	Head                           CheckpointSummary          `json:"head"`
	InvalidatedStructuredStreamIDs []string                   `json:"invalidatedStructuredStreamIds"`
	InvalidatedInterruptTokens     []string                   `json:"invalidatedInterruptTokens"`
	ActivePendingRequests          []contracts.PendingRequest `json:"activePendingRequests"`
	// RunID is the run that asks the head's open question again, if it had one.
	RunID string `json:"runId,omitempty"`
}

// ForkRequest copies a checkpoint into a new session.
type ForkRequest struct {
	CheckpointID string `json:"checkpointId"`
	NewSessionID string `json:"newSessionId,omitempty"`
}

// ForkResult is the result of a fork (spec F5.5).
type ForkResult struct {
	SessionID       string     `json:"sessionId"`
	ParentSessionID string     `json:"parentSessionId"`
	ForkedFrom      string     `json:"forkedFrom"`
	Checkpoint      Checkpoint `json:"checkpoint"`
	// RunID is the run of the new session that asks the checkpoint's open question, if any.
	RunID string `json:"runId,omitempty"`
	// Reissued maps each open question of the source checkpoint to the new token and request
	// id it has in the fork, in the checkpoint's order.
	Reissued []ReissuedRequest `json:"reissued,omitempty"`
}

// ReissuedRequest is an open question that a fork asks again under new ids.
type ReissuedRequest struct {
	FromToken     string `json:"fromToken"`
	FromRequestID string `json:"fromRequestId"`
	Token         string `json:"token"`
	RequestID     string `json:"requestId"`
}

// ActiveTurn is the turn a session is running.
type ActiveTurn struct {
	RunID        string    `json:"runId"`
	TurnIndex    int       `json:"turnIndex"`
	ClientTurnID string    `json:"clientTurnId,omitempty"`
	Kind         string    `json:"kind"` // "prompt" or "interrupt-response"
	Since        time.Time `json:"since"`
	// Token is the answered question's resume token (answer turns).
	Token string `json:"token,omitempty"`
	// Committed is set when the turn ended with a checkpoint (completed or interrupted).
	Committed bool `json:"committed,omitempty"`
	// Digest is the request's digest ([TurnRequest].Digest, or the answer request's; ""
	// for turns whose request had none).
	Digest string `json:"digest,omitempty"`
	// Begin and Delivered: see [TurnStarted] (answer turns).
	Begin     int64 `json:"begin,omitempty"`
	Delivered bool  `json:"delivered,omitempty"`
}

// SessionView is the session query's answer.
type SessionView struct {
	SessionID   string                     `json:"sessionId"`
	Head        string                     `json:"head,omitempty"`
	Checkpoints []CheckpointSummary        `json:"checkpoints"`
	Active      *ActiveTurn                `json:"active,omitempty"`
	Pending     []contracts.PendingRequest `json:"pending,omitempty"`
	// Schemas are the response schemas of the open questions that have one, by request id:
	// what an answer must match (a custom question's schema; a wire that asks the human
	// through its own protocol shows it there).
	Schemas         map[string]json.RawMessage `json:"schemas,omitempty"`
	ParentSessionID string                     `json:"parentSessionId,omitempty"`
	ForkedFrom      string                     `json:"forkedFrom,omitempty"`
	// Owner is the session's owner ("" when it has none), see [TurnRequest].Owner.
	Owner string `json:"owner,omitempty"`
	// Budget is the session's budget across its turns and what its runs reported spent
	// (docs/budgets.md; nil: none).
	Budget *contracts.Spend `json:"budget,omitempty"`
	// Queued are the messages waiting to become turns, in the order they start (policy
	// "enqueue", and steering messages their turn did not take in); Steering the messages sent
	// to the running turn that it has not taken in yet.
	Queued   []WaitingMessage `json:"queued,omitempty"`
	Steering []WaitingMessage `json:"steering,omitempty"`
}

// WaitingMessage is a message of a session that is not a turn yet (queued) or not taken in
// by its turn yet (steering).
type WaitingMessage struct {
	ID           string    `json:"id"`
	ClientTurnID string    `json:"clientTurnId,omitempty"`
	Kind         string    `json:"kind"` // the policy it came with: "enqueue" or "steer"
	Since        time.Time `json:"since"`
	// RunID is the run a steering message was sent to.
	RunID string `json:"runId,omitempty"`
}
