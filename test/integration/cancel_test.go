package integration_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/examples"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/test/testagents"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// hangingModel streams one delta, then waits for its context: it records that the
// cancellation reached it.
type hangingModel struct {
	started, cancelled atomic.Bool
}

func (m *hangingModel) ID() string { return "fake" }

func (m *hangingModel) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	if err := onDelta("Thinking"); err != nil {
		return providers.Response{}, err
	}
	m.started.Store(true)
	<-ctx.Done()
	m.cancelled.Store(true)
	return providers.Response{}, ctx.Err()
}

// Cancelling a run while a model pass streams stops the pass: the provider's context is
// cancelled (the activity heartbeats and learns of the cancel); the run ends cancelled, done.
func TestCancelStopsRunningModelPass(t *testing.T) {
	broker := stream.NewMemory(stream.MemoryOptions{})
	tq := taskQueue(t)
	reg, err := examples.Registry()
	require.NoError(t, err)
	require.NoError(t, testagents.Register(reg))
	model := &hangingModel{}
	rec := &testagents.Recorder{File: t.TempDir() + "/effects.txt"}
	set, err := tools.NewSet(rec.Tool())
	require.NoError(t, err)
	w := newWorker(tc, tq, reg, &activities.Activities{Stream: broker, Providers: providers.NewSet(model), Tools: set})
	rec.Register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run := startRun(t, tc, tq, testagents.ToolAgentWorkflow, "go")
	eventually(t, 10*time.Second, "the model pass to stream", model.started.Load)
	require.NoError(t, tc.CancelWorkflow(context.Background(), run.GetID(), ""))
	_, err = result(t, run)
	require.True(t, temporal.IsCanceledError(err), "err: %v", err)
	eventually(t, 20*time.Second, "the provider to see the cancel", model.cancelled.Load)
	entries, err := broker.Read(context.Background(), run.GetID(), 0, 0)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, string(e.Chunk.Type))
	}
	require.Equal(t, []string{"cancelled", "done"}, got[len(got)-2:])
}
