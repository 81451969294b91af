package chat

import (
	"context"
	"errors"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// RunState returns the [stream.RunFunc] of runs on Temporal (for stream.Server.Run and the chat
// route): it describes the run's workflow execution (no worker needed). A running execution
// whose KortyxStatus search attribute is "waiting" is [stream.RunWaiting]; any closed status
// (completed, failed, cancelled, terminated, timed out) is [stream.RunClosed]; an unknown
// workflow ID is [stream.RunMissing]. Other errors are returned (the reader asks again later).
func RunState(c client.Client) stream.RunFunc {
	return func(ctx context.Context, runID string) (stream.RunState, error) {
		desc, err := c.DescribeWorkflow(ctx, runID, "")
		if err != nil {
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				return stream.RunState{Phase: stream.RunMissing}, nil
			}
			return stream.RunState{}, err
		}
		info := desc.RawResponse.GetWorkflowExecutionInfo()
		switch info.GetStatus() {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: // a later execution of the chain runs
			return stream.RunState{Phase: stream.RunRunning}, nil
		default:
			return stream.RunState{Phase: stream.RunClosed}, nil
		}
		var status string
		if p := info.GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeStatus]; p != nil {
			_ = converter.GetDefaultDataConverter().FromPayload(p, &status)
		}
		if status == string(contracts.StatusWaiting) {
			return stream.RunState{Phase: stream.RunWaiting}, nil
		}
		return stream.RunState{Phase: stream.RunRunning}, nil
	}
}

// turnFollow returns what following the response of t from offset from needs so that it never
// hangs on a stream that is gone and never hands a reader a chunk of another turn: the run
// check of stream.FollowRun, which also asks the session (an active turn other than t's: t's
// response will not come), and a wrapper of the reader's function. When the stream had nothing
// after from when following began, the wrapper checks the first entry that arrives against the
// session (another turn active, or a checkpoint of a later turn: the entries are another turn's,
// t's are gone); a checkpoint chunk of another turn index ends following too. Both end with
// STREAM_GONE.
func (h *Handler) turnFollow(ctx context.Context, sessionID string, t *turn, from int64) (stream.RunFunc, func(func(stream.Entry) error) func(stream.Entry) error) {
	runID := t.ts.RunID
	const movedReason = "the session has moved on to another turn; the chunks of this turn are not kept (the in-memory broker was restarted or evicted the run, or the run published them in another process's memory); with several processes, or to survive restarts, set KORTYX_REDIS_URL"
	// moved reports whether the session has gone past t: another turn is active, or a later
	// turn committed a checkpoint. (A session that cannot be asked has not.)
	moved := func(ctx context.Context) bool {
		v, err := kortyx.Session(ctx, h.o.Client, sessionID)
		if err != nil {
			return false
		}
		if a := v.Active; a != nil && (a.RunID != runID || a.TurnIndex != t.ts.TurnIndex) {
			return true
		}
		for _, c := range v.Checkpoints {
			if c.TurnIndex > t.ts.TurnIndex {
				return true
			}
		}
		return false
	}
	run := func(ctx context.Context, id string) (stream.RunState, error) {
		if moved(ctx) {
			return stream.RunState{Phase: stream.RunClosed, Reason: movedReason}, nil
		}
		return h.runState(ctx, id)
	}
	last, err := h.o.Broker.Last(ctx, runID)
	empty := err == nil && last <= from
	checked := false
	wrap := func(fn func(stream.Entry) error) func(stream.Entry) error {
		return func(e stream.Entry) error {
			if empty && !checked {
				checked = true
				if moved(ctx) {
					return stream.GoneError(runID, movedReason)
				}
			}
			if c := e.Chunk; c.Type == contracts.ChunkCheckpoint && c.TurnIndex != nil && *c.TurnIndex != t.ts.TurnIndex {
				return stream.GoneError(runID, movedReason)
			}
			return fn(e)
		}
	}
	return run, wrap
}

// rebuild returns the response of t rebuilt from its session, for a turn whose stream is gone,
// when that is faithful: the turn ended with a question that is still open. The response is
// then the question's interrupt chunk (every open question of the turn's checkpoint, in order),
// the turn's checkpoint chunk and done: the chunks the run published to end that response, built
// from the checkpoint's pending requests as the run builds them. What came before them in the
// response (text, messages, structured data, tool calls) is not kept anywhere and is not
// rebuilt. Anything else (the turn still running, completed, failed, its question answered): nil.
func (h *Handler) rebuild(ctx context.Context, sessionID string, t *turn) []contracts.Chunk {
	var out []contracts.Chunk
	_ = temporalCall(ctx, h.o.Client, func(ctx context.Context) error {
		v, err := kortyx.Session(ctx, h.o.Client, sessionID)
		if err != nil {
			return err
		}
		open := map[string]bool{}
		for _, p := range v.Pending {
			open[p.Token] = true
		}
		for _, s := range v.Checkpoints {
			if s.TurnIndex != t.ts.TurnIndex {
				continue
			}
			cp, err := kortyx.GetCheckpoint(ctx, h.o.Client, sessionID, s.ID)
			if err != nil || cp.RunID != t.ts.RunID {
				return err
			}
			for _, p := range cp.ActivePendingRequests {
				if open[p.Token] {
					out = append(out, p.Chunk())
				}
			}
			if len(out) == 0 {
				return nil
			}
			turn := cp.TurnIndex
			out = append(out, contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: cp.ID, SessionID: cp.SessionID, TurnIndex: &turn},
				contracts.Chunk{Type: contracts.ChunkDone})
			return nil
		}
		return nil
	})
	return out
}

// isGone reports whether err says the stream is gone.
func isGone(err error) bool { return contracts.CodeOf(err) == stream.GoneError("", "").Code }
