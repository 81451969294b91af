package integration_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/internal/testagents"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays histories recorded from real runs (regenerate them with
// `make record-histories`) against today's workflow code: a change that breaks determinism for
// runs already in flight fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replay", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 5, "recorded histories are missing from testdata/replay")
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			var rec recorded
			require.NoError(t, json.Unmarshal(b, &rec))
			h, err := client.HistoryFromJSON(bytes.NewReader(rec.History), client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, h.Events)
			replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{})
			require.NoError(t, err)
			workflows.NewRunner(reg).Register(replayer)
			require.NoError(t, replayer.ReplayWorkflowHistoryWithOptions(quietLogger(), h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: rec.WorkflowID, RunID: "replay"},
			}))
		})
	}
}
