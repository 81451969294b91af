package contracts

import (
	"encoding/json"
	"time"
)

// Codes of the chat and checkpoint routes.
const (
	// CodeSessionBusy: a turn is already active in the session (HTTP 409).
	CodeSessionBusy Code = "SESSION_BUSY"
	// CodeUnauthorized: the request carries no valid credentials (HTTP 401).
	CodeUnauthorized Code = "UNAUTHORIZED"
	// CodeForbidden: the caller may not act on this session (HTTP 403).
	CodeForbidden Code = "FORBIDDEN"
	// CodeClientTurnConflict: a clientTurnId the session remembers came again with other
	// content (another answer, another message): it is not a retry (HTTP 409).
	CodeClientTurnConflict Code = "CLIENT_TURN_CONFLICT"
)

// DefaultMaxCheckpoints is how many checkpoints a session keeps by default (oldest pruned).
const DefaultMaxCheckpoints = 50

// SessionWorkflowID is the workflow ID of a session.
func SessionWorkflowID(sessionID string) string { return "kortyx-session:" + sessionID }

// CheckpointEffects are what a turn published that a rollback invalidates.
type CheckpointEffects struct {
	StructuredStreamIDs []string `json:"structuredStreamIds"`
	InterruptTokens     []string `json:"interruptTokens"`
}

// Checkpoint is a session checkpoint (spec F5.3): the state after a turn, from which the next
// turn starts and to which a session can be rolled back or forked. The session keeps it
// together with the run state to continue from, which never leaves the server.
type Checkpoint struct {
	ID                    string            `json:"id"`
	SessionID             string            `json:"sessionId"`
	RunID                 string            `json:"runId,omitempty"`
	TurnIndex             int               `json:"turnIndex"`
	CreatedAt             time.Time         `json:"createdAt"`
	Workflow              string            `json:"workflow"`
	Nodes                 []string          `json:"nodes"`
	Effects               CheckpointEffects `json:"effects"`
	ActivePendingRequests []PendingRequest  `json:"activePendingRequests"`
	ParentCheckpointID    string            `json:"parentCheckpointId,omitempty"`
	Label                 string            `json:"label,omitempty"`
	ParentSessionID       string            `json:"parentSessionId,omitempty"`
	ForkedFrom            string            `json:"forkedFrom,omitempty"`
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

// Summary returns the checkpoint's summary.
func (c Checkpoint) Summary() CheckpointSummary {
	return CheckpointSummary{ID: c.ID, SessionID: c.SessionID, TurnIndex: c.TurnIndex, CreatedAt: c.CreatedAt, Workflow: c.Workflow,
		Nodes: c.Nodes, ParentCheckpointID: c.ParentCheckpointID, Label: c.Label, ParentSessionID: c.ParentSessionID, ForkedFrom: c.ForkedFrom}
}

// TurnRequest starts a prompt turn.
type TurnRequest struct {
	ClientTurnID string          `json:"clientTurnId,omitempty"`
	Workflow     string          `json:"workflow,omitempty"` // default: the head's workflow
	Input        json.RawMessage `json:"input"`
	Messages     []Message       `json:"messages,omitempty"`
	Context      json.RawMessage `json:"context,omitempty"`
	// Reconnect marks a reader coming back for its turn (an SSE Last-Event-ID): it reattaches
	// also to a turn that failed or was stopped, which a plain retry runs again.
	Reconnect bool `json:"reconnect,omitempty"`
	// Limits override the worker's execution limits for this turn's run.
	Limits *Limits `json:"limits,omitempty"`
	// Owner is the application's id of the caller. The first accepted turn of a session makes
	// it the session's owner; a later turn with another owner is refused with FORBIDDEN. Empty
	// means no owner (development): such a session refuses turns that name one.
	Owner string `json:"owner,omitempty"`
	// Digest identifies the turn's content (its input); kortyx.StartTurn sets it. The same
	// ClientTurnID with another digest is refused with CLIENT_TURN_CONFLICT.
	Digest string `json:"digest,omitempty"`
}

// ResumeTurnRequest claims a turn that answers a pending question of the session.
type ResumeTurnRequest struct {
	Token        string `json:"token"`
	RequestID    string `json:"requestId"`
	ClientTurnID string `json:"clientTurnId,omitempty"`
	// Reconnect: see [TurnRequest].
	Reconnect bool `json:"reconnect,omitempty"`
	// Digest identifies the answer's content; kortyx.AnswerTurn sets it. The same
	// ClientTurnID with another digest is refused with CLIENT_TURN_CONFLICT.
	Digest string `json:"digest,omitempty"`
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
}

// RollbackResult is the result of a rollback (spec F5.4).
type RollbackResult struct {
	SessionID                      string            `json:"sessionId"`
	Head                           CheckpointSummary `json:"head"`
	InvalidatedStructuredStreamIDs []string          `json:"invalidatedStructuredStreamIds"`
	InvalidatedInterruptTokens     []string          `json:"invalidatedInterruptTokens"`
	ActivePendingRequests          []PendingRequest  `json:"activePendingRequests"`
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
	// Digest is the request's digest ([TurnRequest].Digest, [ResumeTurnRequest].Digest; ""
	// for turns whose request had none).
	Digest string `json:"digest,omitempty"`
}

// SessionView is the session query's answer.
type SessionView struct {
	SessionID       string              `json:"sessionId"`
	Head            string              `json:"head,omitempty"`
	Checkpoints     []CheckpointSummary `json:"checkpoints"`
	Active          *ActiveTurn         `json:"active,omitempty"`
	Pending         []PendingRequest    `json:"pending,omitempty"`
	ParentSessionID string              `json:"parentSessionId,omitempty"`
	ForkedFrom      string              `json:"forkedFrom,omitempty"`
	// Owner is the session's owner ("" when it has none), see [TurnRequest].Owner.
	Owner string `json:"owner,omitempty"`
}

// SessionInput starts a session workflow: what a client sets. The session workflow's parameter
// embeds it and adds what only the session sets (a fork's origin, what continue-as-new
// carries).
type SessionInput struct {
	SessionID      string `json:"sessionId"`
	MaxCheckpoints int    `json:"maxCheckpoints,omitempty"`
	// RunTaskQueue is where runs are started (default: the session's own task queue).
	RunTaskQueue string `json:"runTaskQueue,omitempty"`
}

// MaxRecentTurns is how many ended turns a session remembers by clientTurnId.
const MaxRecentTurns = 32
