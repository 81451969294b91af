package contracts

import (
	"encoding/json"
	"time"
)

// RunStatus is where a run is in its life; it is also the KortyxStatus search attribute.
type RunStatus string

// Run statuses.
const (
	StatusRunning   RunStatus = "running"
	StatusWaiting   RunStatus = "waiting"
	StatusCompleted RunStatus = "completed"
	StatusFailed    RunStatus = "failed"
	StatusCancelled RunStatus = "cancelled"
)

// Special node ids of a graph.
const (
	StartNode = "__start__"
	EndNode   = "__end__"
)

// RunInput starts a run of a registered workflow definition.
type RunInput struct {
	// Workflow is the id of the definition to run.
	Workflow string `json:"workflow"`
	// Input is the run input: a JSON string (a user message) or an object.
	Input json.RawMessage `json:"input,omitempty"`
	// SessionID groups runs; it is a search attribute, so it must not hold user content.
	SessionID string `json:"sessionId,omitempty"`
	// Context is request context readable with hooks.RuntimeContext (never authorization proof).
	Context json.RawMessage `json:"context,omitempty"`
	// Messages is the prior conversation (all messages before the current input).
	Messages []Message `json:"messages,omitempty"`
	// Snapshot, when set, starts the run from a saved state instead of from the start node
	// (continue-as-new, and later fork and rollback).
	Snapshot *RunSnapshot `json:"snapshot,omitempty"`
	// ContinueAsNewAfterNodes, when > 0, continues the run as new after that many node
	// executions even if Temporal does not suggest it yet (for tests and very long loops).
	ContinueAsNewAfterNodes int `json:"continueAsNewAfterNodes,omitempty"`
	// Session ties the run to a session: it reports a checkpoint at the end of each response.
	Session *SessionBinding `json:"session,omitempty"`
	// Prior, for a new turn of a session, is the head's state the turn continues from (data,
	// conversation, usage, workflow state); Input is the new message.
	Prior *RunSnapshot `json:"prior,omitempty"`
	// Child makes the run a child workflow call of another run (hooks.Workflow).
	Child *ChildBinding `json:"child,omitempty"`
	// Limits override the worker's default execution limits for this run and its children.
	Limits *Limits `json:"limits,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role     string          `json:"role"`
	Content  string          `json:"content"`
	ID       string          `json:"id,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// RunResult is what a completed run returns.
type RunResult struct {
	Status RunStatus  `json:"status"`
	State  GraphState `json:"state"`
}

// RunView is what the state query returns: the run's state, its pending question (with the
// resume token: queries are for trusted callers) and recent rejected answers.
type RunView struct {
	RunID      string          `json:"runId"`
	Workflow   string          `json:"workflow"`
	SessionID  string          `json:"sessionId,omitempty"`
	Status     RunStatus       `json:"status"`
	Node       string          `json:"node,omitempty"`
	State      GraphState      `json:"state"`
	Pending    *PendingRequest `json:"pending,omitempty"`
	Rejections []Rejection     `json:"rejections,omitempty"`
}

// GraphState is the state a run carries from node to node (spec F1.5).
type GraphState struct {
	Input               any            `json:"input"`
	LastNode            string         `json:"lastNode"`
	CurrentWorkflow     string         `json:"currentWorkflow"`
	Config              RunConfig      `json:"config"`
	Runtime             Runtime        `json:"runtime"`
	AwaitingHumanInput  bool           `json:"awaitingHumanInput"`
	Data                map[string]any `json:"data"`
	UI                  *UIState       `json:"ui,omitempty"`
	ConversationHistory []HistoryEntry `json:"conversationHistory"`
	LastCondition       string         `json:"lastCondition,omitempty"`
	LastIntent          string         `json:"lastIntent,omitempty"`
	LastError           *ErrorInfo     `json:"lastError,omitempty"`
}

// RunConfig is run configuration that is not user data.
type RunConfig struct {
	Context   map[string]any `json:"context,omitempty"`
	SessionID string         `json:"sessionId,omitempty"`
}

// Runtime holds runtime bookkeeping of a run.
type Runtime struct {
	TokenUsage    *TokenUsage `json:"tokenUsage,omitempty"`
	PriorMessages []Message   `json:"priorMessages,omitempty"`
}

// TokenUsage is accumulated model usage.
type TokenUsage struct {
	Input  int `json:"input"`
	Output int `json:"output"`
	Total  int `json:"total"`
}

// UIState is the last UI message and the merged structured UI data of a run.
type UIState struct {
	Message    string         `json:"message,omitempty"`
	Structured map[string]any `json:"structured,omitempty"`
}

// HistoryEntry is one UI message a node returned.
type HistoryEntry struct {
	Node      string `json:"node"`
	Message   string `json:"message"`
	Timestamp string `json:"timestamp"`
}

// ErrorInfo describes the error that ended a run.
type ErrorInfo struct {
	Message string `json:"message"`
	Code    Code   `json:"code,omitempty"`
}

// RunSnapshot is everything needed to continue a run in a new execution: the graph state, the
// hook state (node state, workflow state, journal) and where to go next.
type RunSnapshot struct {
	State GraphState `json:"state"`
	Hooks HookState  `json:"hooks"`
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
	Rejections []Rejection `json:"rejections,omitempty"`
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
	Kind   string          `json:"kind"`
	Answer *Answer         `json:"answer,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	At     time.Time       `json:"at"`
}

// KeyedChunk is a chunk with its deterministic de-duplication key (see the stream package).
type KeyedChunk struct {
	Key   string `json:"key"`
	Chunk Chunk  `json:"chunk"`
}

// PublishInput is the input of the publish activity: workflow-side chunks of one run, in order.
type PublishInput struct {
	RunID  string       `json:"runId"`
	Chunks []KeyedChunk `json:"chunks"`
}
