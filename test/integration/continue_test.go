package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/devserver"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// TestContinueAsNewWhenTemporalSuggestsIt runs a long loop on a server configured to suggest
// continue-as-new early: the run continues in new executions with its state intact, and no
// step runs twice.
func TestContinueAsNewWhenTemporalSuggestsIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := devserver.Start(ctx, devserver.Options{BinaryPath: tcliPath, UIPort: -1, SearchAttributes: protocol.SearchAttributeNames(),
		ExtraArgs: []string{"--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=40"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Kill() })
	c, err := dial(s.Address())
	require.NoError(t, err)
	defer c.Close()
	e := startWorker(t, c)

	const steps = 25
	run, err := kortyx.StartRun(ctx, c, contracts.RunInput{Workflow: testagents.LoopWorkflow, Input: json.RawMessage(fmt.Sprintf(`{"steps":%d}`, steps))},
		kortyx.StartOptions{TaskQueue: e.tq})
	require.NoError(t, err)
	firstRunID := run.GetRunID() // Get below follows the chain and moves the handle to the last execution
	var res contracts.RunResult
	require.NoError(t, run.Get(ctx, &res)) // follows the chain of continued executions
	require.Equal(t, float64(steps), res.State.Data["done"])

	want := make([]string, steps)
	for i := range want {
		want[i] = fmt.Sprintf("step %d", i+1)
	}
	require.Equal(t, want, readLines(t, e.effects), "every step exactly once across executions")

	// The first execution ended by continuing as new.
	it := c.GetWorkflowHistory(ctx, run.GetID(), firstRunID, false, enums.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	require.True(t, it.HasNext())
	last, err := it.Next()
	require.NoError(t, err)
	require.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, last.GetEventType())
	require.Equal(t, "completed", statusAttribute(t, c, run.GetID()))
}
