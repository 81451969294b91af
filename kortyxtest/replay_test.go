package kortyxtest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/examples/triage"
	"github.com/kortyx-go/kortyx/kortyxtest"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

// triageRevise is a history the integration tests recorded from a real triage run (revise,
// then open), kept with the workflow ID it ran under.
func triageRevise(t *testing.T) (string, *historypb.History) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "test", "integration", "testdata", "replay", "triage-revise.json"))
	require.NoError(t, err)
	var rec struct {
		WorkflowID string          `json:"workflowId"`
		History    json.RawMessage `json:"history"`
	}
	require.NoError(t, json.Unmarshal(b, &rec))
	h, err := kortyxtest.ReadHistory(bytes.NewReader(rec.History))
	require.NoError(t, err)
	return rec.WorkflowID, h
}

func TestReplayRecordedHistory(t *testing.T) {
	id, h := triageRevise(t)
	reg := workflows.NewRegistry()
	require.NoError(t, triage.Register(reg))
	// The workflow ID comes from the history's start event...
	require.Equal(t, id, h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId())
	require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{}))
	// ...or from the options.
	require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{WorkflowID: id}))
}

// The replayer writes the run's search attribute upserts into the start event it reads; Replay
// gives it a copy, so replaying one history twice replays the same thing.
func TestReplayLeavesTheHistoryAsItWas(t *testing.T) {
	_, h := triageRevise(t)
	before := proto.Clone(h)
	reg := workflows.NewRegistry()
	require.NoError(t, triage.Register(reg))
	require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{}))
	require.True(t, proto.Equal(before, h), "the history was modified")
	require.NoError(t, kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{}))
}

// A triage whose first node now waits on a timer makes a decision the recorded run did not:
// the replay reports the non-determinism.
func TestReplayReportsNondeterminism(t *testing.T) {
	_, h := triageRevise(t)
	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{
		ID: triage.WorkflowID, Version: "2",
		Nodes: map[string]workflows.Node{"classify": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, workflow.Sleep(ctx, time.Minute)
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "classify"}},
	}))
	err := kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "[TMPRL1100] nondeterministic workflow")
	require.True(t, strings.HasPrefix(err.Error(), "kortyxtest.Replay: replaying run-1fc94611-0dda-4268-9069-6c1babda52a9: "), err.Error())
}

func TestReplayRefusesBadHistories(t *testing.T) {
	reg := workflows.NewRegistry()
	err := kortyxtest.Replay(reg, &historypb.History{}, kortyxtest.ReplayOptions{})
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))

	_, h := triageRevise(t)
	h.Events[0].GetWorkflowExecutionStartedEventAttributes().WorkflowId = ""
	err = kortyxtest.Replay(reg, h, kortyxtest.ReplayOptions{})
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))
	require.EqualError(t, err, "kortyxtest.Replay: the history does not record its workflow ID; set ReplayOptions.WorkflowID to the recorded run's ID")

	_, err = kortyxtest.ReadHistory(strings.NewReader(`{"events": 3}`))
	require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))

	err = kortyxtest.ReplayFile(reg, filepath.Join(t.TempDir(), "missing.json"), kortyxtest.ReplayOptions{})
	require.ErrorIs(t, err, os.ErrNotExist)
}
