package stream

import (
	"context"
	"time"
)

// SetClock replaces the clock of the retention of m, a [NewMemory] broker (tests move time
// without waiting).
func SetClock(m Broker, now func() time.Time) {
	mm := m.(*memory)
	mm.mu.Lock()
	defer mm.mu.Unlock()
	mm.now = now
}

// Runs is the number of runs m, a [NewMemory] broker, keeps.
func Runs(m Broker) int {
	mm := m.(*memory)
	mm.mu.Lock()
	defer mm.mu.Unlock()
	return len(mm.runs)
}

// Forget drops everything m, a [NewMemory] broker, stores for runID.
func Forget(m Broker, runID string) { m.(*memory).forget(runID) }

// FollowRun calls fn with each entry of a [Reader] with Until until and Run run.
func FollowRun(ctx context.Context, b Broker, runID string, after int64, until Until, run func(context.Context, string) (RunState, error), fn func(Entry) error) error {
	return drain(ctx, NewReader(b, runID, after, ReaderOptions{Until: until, Run: run}), fn, nil)
}
