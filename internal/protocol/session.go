package protocol

import (
	"encoding/json"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/temporal"
)

// Checkpoint is a session checkpoint as the session keeps it: the public checkpoint and the
// run state to continue from, which stays server-side ([Checkpoint.Public] drops it).
type Checkpoint struct {
	sessionapi.Checkpoint
	// Snapshot is the run state to continue from.
	Snapshot *RunSnapshot `json:"snapshot,omitempty"`
	// Schemas are the response schemas of ActivePendingRequests, in their order (null: the
	// question has none), so that the session checks an answer as the run does. Absent in
	// checkpoints taken before it existed: the session then leaves the check to the run.
	Schemas []json.RawMessage `json:"schemas,omitempty"`
}

// SessionQuestionQuery is the session's query that returns the run asking its open question of a
// resume token ("" when no open question has it): the session service reads where an answer's
// response will begin from that run's stream before it sends the answer.
const SessionQuestionQuery = "kortyx.Session.Question"

// Pending is the open question i of the checkpoint, asked by run.
func (c Checkpoint) Pending(i int, run string) PendingTurn {
	p := PendingTurn{Request: c.ActivePendingRequests[i], RunID: run, CheckpointID: c.ID}
	if len(c.Schemas) == len(c.ActivePendingRequests) {
		p.Checked = true
		if s := c.Schemas[i]; len(s) > 0 && string(s) != "null" {
			p.Schema = s
		}
	}
	return p
}

// Public returns the checkpoint without its snapshot (what the checkpoint API returns).
func (c Checkpoint) Public() sessionapi.Checkpoint { return c.Checkpoint }

// DefaultMaxCheckpoints is how many checkpoints a session keeps by default (oldest pruned).
const DefaultMaxCheckpoints = 50

// MaxRecentTurns is how many ended turns a session remembers by clientTurnId.
const MaxRecentTurns = 32

// SessionWorkflowID is the workflow ID of a session.
func SessionWorkflowID(sessionID string) string { return "kortyx-session:" + sessionID }

// Summary returns the checkpoint's summary.
func (c Checkpoint) Summary() sessionapi.CheckpointSummary {
	return sessionapi.CheckpointSummary{ID: c.ID, SessionID: c.SessionID, TurnIndex: c.TurnIndex, CreatedAt: c.CreatedAt, Workflow: c.Workflow,
		Nodes: c.Nodes, ParentCheckpointID: c.ParentCheckpointID, Label: c.Label, ParentSessionID: c.ParentSessionID, ForkedFrom: c.ForkedFrom}
}

// ResumeTurnRequest claims a turn that answers a pending question of the session.
type ResumeTurnRequest struct {
	Token        string `json:"token"`
	RequestID    string `json:"requestId"`
	ClientTurnID string `json:"clientTurnId,omitempty"`
	// Reconnect: see [sessionapi.TurnRequest].
	Reconnect bool `json:"reconnect,omitempty"`
	// Digest identifies the answer's content; the session service sets it. The same
	// ClientTurnID with another digest is refused with CLIENT_TURN_CONFLICT.
	Digest string `json:"digest,omitempty"`
	// Answer, when set, is the answer itself: the session checks it against the open question
	// and delivers it to the question's run (the kortyx.Respond signal) in the same update, so
	// that an answer is one update ([sessionapi.TurnStarted].Delivered). Without it (requests from before
	// it existed) the session only claims the turn and the caller delivers the answer.
	Answer *contracts.Response `json:"answer,omitempty"`
	// StreamRun and From are where the answer's response begins: the end offset (From) of the
	// stream of run StreamRun, read while the run waits for the answer. The session records it
	// on the turn ([sessionapi.ActiveTurn].Begin) when StreamRun is the question's run.
	StreamRun string `json:"streamRun,omitempty"`
	From      int64  `json:"from,omitempty"`
}

// SessionInput starts a session workflow: what a client sets. The session workflow's parameter
// embeds it and adds what only the session sets (a fork's origin, what continue-as-new
// carries).
type SessionInput struct {
	SessionID      string `json:"sessionId"`
	MaxCheckpoints int    `json:"maxCheckpoints,omitempty"`
	// RunTaskQueue is where runs are started (default: the session's own task queue).
	RunTaskQueue string `json:"runTaskQueue,omitempty"`
	// Seed, set by the client that starts the session (random), is what the session derives
	// its run and checkpoint ids from (SessionState.IDs), instead of recording each one (a
	// marker, and a billed action for the workflow task that records it). Sessions started
	// without one record their ids.
	Seed []byte `json:"seed,omitempty"`
}

// SessionBinding ties a run to its session.
type SessionBinding struct {
	// WorkflowID is the session workflow to report checkpoints to.
	WorkflowID string `json:"workflowId"`
	SessionID  string `json:"sessionId"`
	// TurnIndex is the turn index of the run's first checkpoint.
	TurnIndex          int    `json:"turnIndex"`
	ParentCheckpointID string `json:"parentCheckpointId,omitempty"`
	// Restore marks a run started to re-expose the question open at a checkpoint (rollback,
	// fork): its first response repeats that checkpoint and records no new one.
	Restore bool `json:"restore,omitempty"`
	// Expect are the questions a restored run asks again: it accepts their answers even before
	// it has asked.
	Expect []contracts.PendingRequest `json:"expect,omitempty"`
}

// CheckpointReport is what a run tells its session at the end of a response.
type CheckpointReport struct {
	RunID string `json:"runId"`
	// Checkpoint is committed as the new head (nil: the response ended without one).
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// TurnEnded frees the session for the next turn.
	TurnEnded bool `json:"turnEnded"`
	// Closed says the run ended (failed or cancelled): its questions can no longer be answered.
	Closed bool `json:"closed,omitempty"`
	// Spend is what the run spent under the session's budget, for a session that has one.
	Spend *RunSpendReport `json:"spend,omitempty"`
	// Steered are the ids of the steering messages the ending turn took in (a report that ends
	// a turn): the session queues the turn's others as the next turns.
	Steered []string `json:"steered,omitempty"`
}

// SteerMessage is a steering message the session sends its running turn's run: the run takes
// it in at its next model pass if TurnIndex is still its turn.
type SteerMessage struct {
	contracts.Steer
	TurnIndex int `json:"turnIndex"`
}

// QueuedTurn is a message waiting to become a turn (policy "enqueue", or a steering message its
// turn did not take in), or, with RunID, a steering message sent to the running turn's run.
type QueuedTurn struct {
	ID   string                 `json:"id"`
	Seq  int                    `json:"seq"` // arrival order
	Kind string                 `json:"kind"`
	Req  sessionapi.TurnRequest `json:"req"`
	// Since is when the message arrived.
	Since time.Time `json:"since"`
	// RunID and TurnIndex are the run and turn a steering message was sent to.
	RunID     string `json:"runId,omitempty"`
	TurnIndex int    `json:"turnIndex,omitempty"`
}

// View is the public form of q.
func (q QueuedTurn) View() sessionapi.WaitingMessage {
	return sessionapi.WaitingMessage{ID: q.ID, ClientTurnID: q.Req.ClientTurnID, Kind: q.Kind, Since: q.Since, RunID: q.RunID}
}

// MaxWaiting bounds a session's queued and steering messages together: past it a message sent
// while a turn runs is refused with SESSION_BUSY.
const MaxWaiting = 32

// SessionStart is the parameter of the session workflow: what a client sets
// ([SessionInput], embedded) and what only the session sets — a fork's origin, and
// what continue-as-new carries. The fields are in the order of the recorded histories.
type SessionStart struct {
	SessionInput
	ParentSessionID string `json:"parentSessionId,omitempty"`
	ForkedFrom      string `json:"forkedFrom,omitempty"`
	// Initial is the first checkpoint of a forked session; InitialRunID the id of the run that
	// asks its open questions again (when it has any).
	Initial      *Checkpoint `json:"initial,omitempty"`
	InitialRunID string      `json:"initialRunId,omitempty"`
	// Owner is the owner of a forked session (the source session's).
	Owner string `json:"owner,omitempty"`
	// State carries everything across continue-as-new.
	State *SessionState `json:"state,omitempty"`
	// ContinueAsNewAfter, when > 0, continues the session as new after that many events
	// (turns, reports, rollbacks, forks) even if Temporal does not suggest it yet (for tests).
	ContinueAsNewAfter int `json:"continueAsNewAfter,omitempty"`
}

// SessionState is the durable state of a session workflow.
type SessionState struct {
	Checkpoints []Checkpoint           `json:"checkpoints"`
	Head        string                 `json:"head,omitempty"`
	Active      *sessionapi.ActiveTurn `json:"active,omitempty"`
	Pending     map[string]PendingTurn `json:"pending,omitempty"` // by token
	NextTurn    int                    `json:"nextTurn"`
	// Owner is the session's owner, set by its first accepted turn (see
	// [sessionapi.TurnRequest].Owner).
	Owner string `json:"owner,omitempty"`
	// Recent are the last turns that ended and had a clientTurnId, oldest first: the same
	// clientTurnId asking again reattaches to its turn instead of running it twice (a turn that
	// failed or was stopped only for a reconnecting reader: a retry runs it again).
	Recent []sessionapi.ActiveTurn `json:"recent,omitempty"`
	// Early are reports of runs that were not the active turn's when they arrived: a workflow
	// task can see a run's report before the start of its turn (events delivered together).
	Early []CheckpointReport `json:"early,omitempty"`
	// IDs is the session's id source (from SessionInput.Seed); nil: it records its ids.
	IDs *IDSource `json:"ids,omitempty"`
	// Budget is the session's budget across its turns and what its runs spent (nil: none).
	Budget *SessionBudgetState `json:"budget,omitempty"`
	// Queue are the messages waiting to become turns, in arrival order; Steers the steering
	// messages sent to the running turn that it has not reported taken in; Prompt the request
	// of the active prompt turn (an interrupting message starts its turn with it); NextSeq
	// numbers the arrivals.
	Queue   []QueuedTurn            `json:"queue,omitempty"`
	Steers  []QueuedTurn            `json:"steers,omitempty"`
	Prompt  *sessionapi.TurnRequest `json:"prompt,omitempty"`
	NextSeq int                     `json:"nextSeq,omitempty"`
}

// SessionBudgetState is a session's budget (the latest prompt turn's) and its spend: the last
// report of each of its newest runs (Live, by run id; Order their ids, oldest first), and what
// the older runs reported last and the allowances their questions gave (Spent, More).
type SessionBudgetState struct {
	Limits contracts.Limits          `json:"limits"`
	Spent  contracts.Spend           `json:"spent"`
	More   contracts.Spend           `json:"more,omitempty"`
	Live   map[string]RunSpendReport `json:"live,omitempty"`
	Order  []string                  `json:"order,omitempty"`
	// Warned: a run published the session budget's warning (its runs do not again).
	Warned bool `json:"warned,omitempty"`
}

// MaxLiveRuns is how many runs' last reports a session keeps apart (a later report replaces
// its run's); an older run's is added to the session's spend for good.
const MaxLiveRuns = 64

// PendingTurn is an open question of the session: the run that waits for it.
type PendingTurn struct {
	Request      contracts.PendingRequest `json:"request"`
	RunID        string                   `json:"runId"`
	CheckpointID string                   `json:"checkpointId"`
	// Checked is set when the session knows how the run checks an answer (the question's
	// response schema, Schema, or none): the session then checks and delivers answers itself.
	Checked bool            `json:"checked,omitempty"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// Checkpoint ids. A checkpoint id is "cp-<uuid>@<sessionId>": the checkpoint route finds the
// session of a request that names only a checkpoint (Kortyx's rollback, get and fork) from the
// id itself, in any API process and after a restart. A session id too long for the id rule
// ([MaxIDLength]) gives "cp-<uuid>", as every checkpoint had before; such ids are
// found by the API process's memory or sent with their sessionId.
const (
	checkpointPrefix = "cp-"
	checkpointSep    = '@'
	uuidLength       = 36
)

// MaxCheckpointSessionLength is the longest session id a checkpoint id carries.
const MaxCheckpointSessionLength = MaxIDLength - len(checkpointPrefix) - uuidLength - 1

// CheckpointID is the id of a new checkpoint of session sessionID; uuid is a new random UUID
// (36 characters).
func CheckpointID(uuid, sessionID string) string {
	if sessionID == "" || len(sessionID) > MaxCheckpointSessionLength || len(uuid) != uuidLength {
		return checkpointPrefix + uuid
	}
	return checkpointPrefix + uuid + string(checkpointSep) + sessionID
}

// CheckpointSession returns the session id that checkpoint id id carries (false for an id
// without one, such as the "cp-<uuid>" ids of older checkpoints).
func CheckpointSession(id string) (string, bool) {
	n := len(checkpointPrefix) + uuidLength
	if len(id) <= n+1 || id[:len(checkpointPrefix)] != checkpointPrefix || id[n] != checkpointSep || !isUUID(id[len(checkpointPrefix):n]) {
		return "", false
	}
	return id[n+1:], true
}

// isUUID reports whether s is a UUID in its 36-character text form.
func isUUID(s string) bool {
	if len(s) != uuidLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// StartedTurn is the result of [SessionStartTurnByCallerUpdate]: the turn, and the run its
// caller starts (nil: the session started it, or the turn has no new run).
type StartedTurn struct {
	sessionapi.TurnStarted
	Launch *RunLaunch `json:"launch,omitempty"`
}

// RunLaunch is a run the session left to its caller to start ([SessionStartTurnByCallerUpdate]):
// the run's workflow id, task queue, agent, workflow task timeout and input, started as the
// session would start it as a child (the same search attributes; a duplicate id is refused).
type RunLaunch struct {
	RunID       string        `json:"runId"`
	SessionID   string        `json:"sessionId"`
	TaskQueue   string        `json:"taskQueue"`
	Workflow    string        `json:"workflow"`
	TaskTimeout time.Duration `json:"taskTimeout,omitempty"`
	Input       RunStart      `json:"input"`
}

// RunSearchAttributes are the search attributes a session's run starts with: its session, its
// agent and the running status.
func RunSearchAttributes(l *RunLaunch) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SessionKey.ValueSet(l.SessionID), WorkflowKey.ValueSet(l.Workflow),
		StatusKey.ValueSet(string(contracts.StatusRunning)))
}
