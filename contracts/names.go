package contracts

// The wire names a plain Temporal client needs to start, answer and read runs (the names only
// Kortyx's own workflows use are internal). They are part of the protocol between starters,
// workers and running workflows (and persisted in their histories): renaming one breaks runs
// that are already waiting, so they never change. names_test.go pins every value.
const (
	// RunWorkflowName is the Temporal workflow type of a run (one execution per run).
	RunWorkflowName = "kortyx.Run"
	// RespondName is the signal and the update that answer a pending interrupt with a [Response].
	RespondName = "kortyx.Respond"
	// StateQueryName is the query that returns a [RunView].
	StateQueryName = "kortyx.State"
	// DefaultTaskQueue is the task queue workers poll and starters use when none is configured.
	DefaultTaskQueue = "kortyx"
)

// Search attribute names registered on the server. They hold no user content and no tokens.
const (
	SearchAttributeSession  = "KortyxSession"
	SearchAttributeWorkflow = "KortyxWorkflow"
	SearchAttributeStatus   = "KortyxStatus"
)
