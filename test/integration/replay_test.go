package integration_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
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
	require.NoError(t, addFastAgents(reg)) // fastpath_test.go
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			rec, h := readRecorded(t, f)
			require.NotEmpty(t, h.Events)
			require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{WorkflowID: rec.WorkflowID, Logger: quietLogger()}))
		})
	}
}

// readRecorded reads a history kept under testdata (see recordHistory).
func readRecorded(t *testing.T, path string) (recorded, *historypb.History) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rec recorded
	require.NoError(t, json.Unmarshal(b, &rec))
	h, err := client.HistoryFromJSON(bytes.NewReader(rec.History), client.HistoryJSONOptions{})
	require.NoError(t, err)
	return rec, h
}
