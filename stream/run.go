package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// Phase is what a reader needs to know about a run whose stream has nothing to read
// ([RunState].Phase).
type Phase string

// The phases of a run.
const (
	// PhaseRunning: the run executes and may still publish (also "").
	PhaseRunning Phase = "running"
	// PhaseWaiting: the run waits for an answer to a question; the response that asked it was
	// already published.
	PhaseWaiting Phase = "waiting"
	// PhaseClosed: the run has ended (completed, failed, cancelled, terminated, timed out); it
	// publishes nothing more.
	PhaseClosed Phase = "closed"
	// PhaseMissing: there is no such run.
	PhaseMissing Phase = "missing"
)

// RunState is the state of a run as [ReaderOptions].Run reports it.
type RunState struct {
	// Phase is what a reader needs to know about a run whose stream has nothing to read.
	Phase Phase
	// Reason, for a closed run, replaces the reason given in the STREAM_GONE error (for
	// callers that know more, such as a session that moved on to another turn).
	Reason string
}

// goneInterval is how often a reader that has nothing to read checks again whether the stream
// is gone (see [Reader]).
const goneInterval = 2 * time.Second

// goneHint is the end of the message of the STREAM_GONE errors of the in-memory case.
const goneHint = "the run's chunks are no longer kept (the in-memory broker was restarted or evicted the run, or the run published them in another process's memory); with several processes, or to survive restarts, set KORTYX_REDIS_URL"

// goneError returns the STREAM_GONE error of runID with the reason given.
func goneError(runID, reason string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeStreamGone, Message: "The stream of run " + strconv.Quote(runID) + " is gone: " + reason + ".",
		Details: map[string]any{"runId": runID}}
}

// goneCheck decides whether the stream after offset after can still come.
type goneCheck struct {
	b       Broker
	runID   string
	after   int64
	until   Until
	run     func(ctx context.Context, runID string) (RunState, error)
	waiting int // consecutive checks that found the run waiting and nothing in the broker
}

// check checks the broker, and asks the run when askRun is set and nothing is there to read.
func (g *goneCheck) check(ctx context.Context, askRun bool) error {
	first, last, err := g.b.Bounds(ctx, g.runID)
	if err != nil {
		return nil // the broker's own errors surface from reading it
	}
	switch {
	case last > g.after && first > g.after+1:
		return goneError(g.runID, fmt.Sprintf("the chunks after offset %d are no longer kept (the oldest kept is %d)", g.after, first))
	case last > g.after:
		g.waiting = 0
		return nil
	case last < g.after:
		if last == 0 {
			return goneError(g.runID, fmt.Sprintf("offset %d is past the end of the stream, which is empty: %s", g.after, goneHint))
		}
		return goneError(g.runID, fmt.Sprintf("offset %d is past the end of the stream (offset %d): %s", g.after, last, goneHint))
	}
	if !askRun || g.run == nil || (last > 0 && g.until == UntilCancel) {
		return nil
	}
	st, err := g.run(ctx, g.runID)
	if err != nil {
		return nil
	}
	// The run may have published (and ended) while it was asked: what it published counts.
	if _, again, err := g.b.Bounds(ctx, g.runID); err != nil || again != last {
		return nil
	}
	switch st.Phase {
	case PhaseMissing:
		if last == 0 {
			return &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("There is no run %q.", g.runID),
				Details: map[string]any{"runId": g.runID}}
		}
	case PhaseClosed:
		if st.Reason != "" {
			return goneError(g.runID, st.Reason)
		}
		if last == 0 {
			return goneError(g.runID, "the run has ended and "+goneHint)
		}
		return goneError(g.runID, fmt.Sprintf("the run has ended: nothing follows offset %d", g.after))
	case PhaseWaiting:
		if last == 0 {
			if g.waiting++; g.waiting >= 2 {
				return goneError(g.runID, "the run waits for an answer and "+goneHint)
			}
		}
	default:
		g.waiting = 0
	}
	return nil
}
