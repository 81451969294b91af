package contracts

import (
	"encoding/json"
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

// RunInput starts a run of a registered workflow definition: what a client sets. The run
// workflow's parameter embeds it and adds what only Kortyx's workflows set (a snapshot to
// continue from, the session binding, the prior turn's state, the child binding), so a
// RunInput from any Temporal client starts a run.
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
	// ContinueAsNewAfterNodes, when > 0, continues the run as new after that many node
	// executions even if Temporal does not suggest it yet (for tests and very long loops).
	ContinueAsNewAfterNodes int `json:"continueAsNewAfterNodes,omitempty"`
	// Limits override the worker's default execution limits for this run and its children.
	Limits *Limits `json:"limits,omitempty"`
	// Tenant is whose tenant budget the run spends (docs/budgets.md; a worker without a tenant
	// budget ignores it). A session's run is its session owner's.
	Tenant string `json:"tenant,omitempty"`
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
	TokenUsage *Usage `json:"tokenUsage,omitempty"`
	// Spend is what the run's passes spent under its budget, its children's included (nil
	// without a token or money budget).
	Spend         *Spend    `json:"spend,omitempty"`
	PriorMessages []Message `json:"priorMessages,omitempty"`
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
