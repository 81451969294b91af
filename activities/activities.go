package activities

import (
	"context"
	"errors"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// Activities holds what the activity side of a run needs. Register it on every worker that
// runs the run workflow.
type Activities struct {
	// Stream receives every chunk of every run (required).
	Stream stream.Broker
}

// Register registers the activities under their wire names.
func (a *Activities) Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(a.Publish, activity.RegisterOptions{Name: contracts.PublishActivityName})
}

// Publish appends workflow-side chunks to the run's stream. Their keys are deterministic, so a
// retried or replayed publish never duplicates a chunk.
func (a *Activities) Publish(ctx context.Context, in contracts.PublishInput) error {
	if a.Stream == nil {
		return errors.New("kortyx: Activities.Stream is nil; give the activities a stream broker (stream.NewMemory())")
	}
	chunks := make([]stream.Keyed, len(in.Chunks))
	for i, c := range in.Chunks {
		chunks[i] = stream.Keyed{Key: c.Key, Chunk: c.Chunk}
	}
	return a.Stream.Publish(ctx, in.RunID, chunks...)
}
