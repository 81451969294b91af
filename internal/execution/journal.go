package execution

import "github.com/kortyx-go/kortyx/internal/protocol"

// Journal entry kinds and key formats. Journals are persisted in run snapshots — session
// checkpoints, continue-as-new inputs, workflow histories — and read back by node retries,
// rollback and fork: a changed value silently breaks those. Add new ones; never change one.
//
// A key is "<family>:<hook id>" for a hook call with an id, "<family>#<n>" for the n-th call
// without one in the node, and a Reason call's parts extend its key: "<key>/op",
// "<key>/tools", "<key>/pass/<n>", "<key>/call/<tool call id>", "<key>/steer/<n>".
const (
	// Families of positional keys and kinds of their entries.
	entryInterrupt  = "interrupt"              // an answered question (Answer)
	entryPending    = protocol.JournalPending  // a question asked and not answered yet (Value: the request)
	entryStructured = "structured"             // a published structured-data chunk (Value: the chunk)
	entryReason     = "reason"                 // a finished Reason call (Value: its result)
	entryWorkflow   = protocol.JournalWorkflow // a child workflow call (Value: its state)
	entryParallel   = "parallel"               // a parallel group (Value: its members)

	// Kinds of the parts of a Reason call.
	entryReasonOp   = "reason-op"   // the call's op id
	entryTools      = "tools"       // the MCP tool lists recorded for the call
	entryModelPass  = "model-pass"  // one model pass (Value: the response)
	entryReasonCall = "reason-call" // one processed tool or control call (Value: its outcome)
	entrySteer      = "steer"       // steering messages taken in before a pass (Value: them)

	keyID    = ":"       // <family>:<hook id>
	keyNth   = "#"       // <family>#<n>
	keyOp    = "/op"     // <reason key>/op
	keyList  = "/tools"  // <reason key>/tools
	keyPass  = "/pass/"  // <reason key>/pass/<n>
	keyCall  = "/call/"  // <reason key>/call/<tool call id>
	keySteer = "/steer/" // <reason key>/steer/<n>: taken in before pass n
)
