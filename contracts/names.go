package contracts

import "go.temporal.io/sdk/temporal"

// Wire names. They are part of the protocol between starters, workers and running workflows:
// renaming one breaks runs that are already waiting, so they never change.
const (
	// RunWorkflowName is the Temporal workflow type of a run (one execution per run).
	RunWorkflowName = "kortyx.Run"
	// RespondName is the signal and the update that answer a pending interrupt with a [Response].
	RespondName = "kortyx.Respond"
	// StateQueryName is the query that returns a [RunView].
	StateQueryName = "kortyx.State"
	// PublishActivityName is the local activity that publishes workflow-side chunks.
	PublishActivityName = "kortyx.Publish"
	// ModelActivityName is the activity of one model pass ([ModelPassInput] → [ModelResponse]).
	ModelActivityName = "kortyx.Model"
	// ToolActivityName is the activity of one tool call ([ToolCallInput] → [ToolResult]).
	ToolActivityName = "kortyx.Tool"
	// ListToolsActivityName lists the tools of MCP servers ([ListToolsInput] → []OfferedTool).
	ListToolsActivityName = "kortyx.ListTools"
	// DefaultTaskQueue is the task queue workers poll and starters use when none is configured.
	DefaultTaskQueue = "kortyx"
)

// Search attribute names registered on the server. They hold no user content and no tokens.
const (
	SearchAttributeSession  = "KortyxSession"
	SearchAttributeWorkflow = "KortyxWorkflow"
	SearchAttributeStatus   = "KortyxStatus"
)

// Typed keys of the search attributes.
var (
	SessionKey  = temporal.NewSearchAttributeKeyKeyword(SearchAttributeSession)
	WorkflowKey = temporal.NewSearchAttributeKeyKeyword(SearchAttributeWorkflow)
	StatusKey   = temporal.NewSearchAttributeKeyKeyword(SearchAttributeStatus)
)

// SearchAttributes lists every search attribute a namespace needs, all of type Keyword.
var SearchAttributes = []string{SearchAttributeSession, SearchAttributeWorkflow, SearchAttributeStatus}
