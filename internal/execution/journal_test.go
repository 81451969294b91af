package execution

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The journal's kinds and key formats are persisted in snapshots: their values never change.
func TestJournalNamesNeverChange(t *testing.T) {
	for want, got := range map[string]string{
		"interrupt": entryInterrupt, "pending": entryPending, "structured": entryStructured,
		"reason": entryReason, "workflow": entryWorkflow, "parallel": entryParallel,
		"reason-op": entryReasonOp, "tools": entryTools, "model-pass": entryModelPass, "reason-call": entryReasonCall,
		":": keyID, "#": keyNth, "/op": keyOp, "/tools": keyList, "/pass/": keyPass, "/call/": keyCall,
	} {
		require.Equal(t, want, got)
	}
	require.Equal(t, "reason/pass/2", passKey("reason", 2))
}
