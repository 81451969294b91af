package sessions

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/stream"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
)

// movedReason is why the chunks of a turn the session has moved past cannot be read.
const movedReason = "the session has moved on to another turn; the chunks of this turn are not kept (the in-memory broker was restarted or evicted the run, or the run published them in another process's memory); with several processes, or to survive restarts, set KORTYX_REDIS_URL"

// movedError is the STREAM_GONE error of a turn the session has moved past, worded as the
// stream reader words its own (package stream).
func movedError(runID string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeStreamGone, Message: "The stream of run " + strconv.Quote(runID) + " is gone: " + movedReason + ".",
		Details: map[string]any{"runId": runID}}
}

// FollowOptions are the options of [Service.Follow]; the zero value works.
type FollowOptions struct {
	// Idle, when > 0, makes [Reader.Next] return [stream.ErrIdle] after Idle without a chunk
	// (for keep-alives).
	Idle time.Duration
	// Answered is the resume token of the question an answer turn answers. The response that
	// asked it, when it is published again at the start of the answer's (a run restored by a
	// rollback or fork asks it again at its start; a worker that takes over the workflow task
	// of a killed one publishes that task's chunks again, into an in-memory broker that lost
	// them), is not part of the answer's response: from its first chunk to its done.
	Answered string
	// Started says the caller started or answered the turn itself, in this request (not a
	// reattach). Over a shared broker (Redis: one that can be pinged), the chunks of such a
	// turn all reach the broker before any later turn's, so the reader does not ask the
	// session (a query, a billed Temporal action) whether it has moved past the turn — only
	// the run whether it is gone. Over an in-memory broker it still does: there, chunks can be
	// lost (a run published into another process's memory) while a later turn's arrive.
	Started bool
}

// Reader reads one turn's response from its run's stream (see [Service.Follow]).
type Reader struct {
	s         *Service
	sessionID string
	ts        TurnStarted
	rd        *stream.Reader
	// empty is set when the stream had nothing after the reader's start: the first entry that
	// arrives is checked against the session (it may be another turn's).
	empty, checked bool
	n              int    // entries returned
	skip           string // the answered question's token (see FollowOptions.Answered)
	skipping       bool   // inside the question asked again
	idle           time.Duration
	started        bool              // FollowOptions.Started
	rebuilt        []contracts.Chunk // the response rebuilt from the session, still to return
	pre            []stream.Entry    // entries found before the reader started (FollowSteer), still to return
	done           bool              // the rebuilt response was returned: io.EOF
}

// Follow returns a reader of the response of turn ts from offset from (ts.Begin, or a
// reconnecting reader's Last-Event-ID), until the response's done. It never hangs on a stream
// that is gone and never hands out a chunk of another turn: it asks the run (its Temporal
// execution) and the session while nothing arrives, and ends with STREAM_GONE when the turn's
// chunks cannot come — unless the turn ended with a question still open, whose response it
// then rebuilds from the session (the question, the checkpoint and done; what came before them
// is not kept anywhere).
func (s *Service) Follow(ctx context.Context, sessionID string, ts TurnStarted, from int64, o FollowOptions) (*Reader, error) {
	if s.o.Broker == nil {
		return nil, errors.New("kortyx sessions: Follow needs Options.Broker (the stream broker the workers publish to)")
	}
	_, shared := s.o.Broker.(interface{ Ping(context.Context) error })
	r := &Reader{s: s, sessionID: sessionID, ts: ts, skip: o.Answered, idle: o.Idle, started: o.Started && shared}
	r.rd = stream.NewReader(s.o.Broker, ts.RunID, from, stream.ReaderOptions{Until: stream.UntilResponse, Run: r.runState, Idle: o.Idle})
	if !r.started {
		last, err := s.o.Broker.Last(ctx, ts.RunID)
		r.empty = err == nil && last <= from
	}
	return r, nil
}

// Next returns the response's next entry: [io.EOF] after its done, [stream.ErrIdle] when idle
// passed, or the error that ended reading (STREAM_GONE, the broker's, ctx.Err()). Entries of a
// response rebuilt from the session have offset 0.
func (r *Reader) Next(ctx context.Context) (stream.Entry, error) {
	if len(r.pre) > 0 {
		e := r.pre[0]
		r.pre = r.pre[1:]
		r.n++
		return e, nil
	}
	if len(r.rebuilt) > 0 {
		c := r.rebuilt[0]
		r.rebuilt = r.rebuilt[1:]
		r.done = len(r.rebuilt) == 0
		return stream.Entry{Chunk: c}, nil
	}
	if r.done {
		return stream.Entry{}, io.EOF
	}
	e, err := r.rd.Next(ctx)
	for err == nil && r.n == 0 && r.skip != "" && (r.skipping || r.asksAgain(ctx, e)) {
		// The response that asked the answered question, published again before the answer
		// reached the run: by a run restored by a rollback or fork, or by a worker that took
		// over the workflow task that had asked it (its predecessor was killed after publishing,
		// before the task completed) into a broker that no longer had it (in memory).
		r.skipping = e.Chunk.Type != contracts.ChunkDone
		if !r.skipping {
			r.skip = ""
			r.rd = stream.NewReader(r.s.o.Broker, r.ts.RunID, e.Offset, stream.ReaderOptions{Until: stream.UntilResponse, Run: r.runState, Idle: r.idle})
		}
		e, err = r.rd.Next(ctx)
	}
	if err == nil {
		err = r.check(ctx, e)
	}
	if err != nil {
		if isGone(err) && r.n == 0 && ctx.Err() == nil {
			if r.rebuilt = r.s.rebuild(ctx, r.sessionID, r.ts); len(r.rebuilt) > 0 {
				r.s.logger().Warn("kortyx sessions: the run's stream is gone; its open question was rebuilt from the session", "run", r.ts.RunID)
				return r.Next(ctx)
			}
		}
		return stream.Entry{}, err
	}
	r.n++
	return e, nil
}

// asksAgain reports whether e, the first entry of an answer turn's response, begins the
// response that asked the answered question again: e is that question's interrupt chunk, or the
// entries published with e (one batch, all present when e is) hold that interrupt before any
// done.
func (r *Reader) asksAgain(ctx context.Context, e stream.Entry) bool {
	asked := func(c contracts.Chunk) bool { return c.Type == contracts.ChunkInterrupt && c.ResumeToken == r.skip }
	if asked(e.Chunk) {
		return true
	}
	if e.Chunk.Type == contracts.ChunkDone {
		return false
	}
	entries, err := r.s.o.Broker.Read(ctx, r.ts.RunID, e.Offset, 0)
	if err != nil {
		return false
	}
	for _, n := range entries {
		switch {
		case asked(n.Chunk):
			return true
		case n.Chunk.Type == contracts.ChunkDone:
			return false
		}
	}
	return false
}

// check refuses an entry of another turn: the first one that arrives after the stream had
// nothing, when the session has moved past the turn, and a checkpoint of another turn index.
func (r *Reader) check(ctx context.Context, e stream.Entry) error {
	if r.empty && !r.checked {
		r.checked = true
		// An entry of ts's run is another turn's only if the session moved on to a later turn
		// of that run: while another run's turn is active, ts's run has no other turn to publish.
		if r.s.movedPast(ctx, r.sessionID, r.ts, true) {
			return movedError(r.ts.RunID)
		}
	}
	if c := e.Chunk; c.Type == contracts.ChunkCheckpoint && c.TurnIndex != nil && *c.TurnIndex != r.ts.TurnIndex {
		return movedError(r.ts.RunID)
	}
	return nil
}

// runState is what the stream reader asks while nothing arrives: the run is closed for this
// turn when the session has moved past it.
func (r *Reader) runState(ctx context.Context, runID string) (stream.RunState, error) {
	if !r.started && r.s.moved(ctx, r.sessionID, r.ts) {
		return stream.RunState{Phase: stream.PhaseClosed, Reason: movedReason}, nil
	}
	return r.s.RunState(ctx, runID)
}

// moved reports whether the session has gone past turn ts: another turn is active, or a later
// turn committed a checkpoint. (A session that cannot be asked has not.) With sameRun, a turn
// of another run counts only once ts's run no longer runs: a message that interrupted ts's turn
// (docs/steering.md) starts its own while ts's run still ends ts's (its cancellation, its done).
func (s *Service) moved(ctx context.Context, sessionID string, ts TurnStarted) bool {
	return s.movedPast(ctx, sessionID, ts, false)
}

func (s *Service) movedPast(ctx context.Context, sessionID string, ts TurnStarted, sameRun bool) bool {
	v, err := s.View(ctx, sessionID)
	if err != nil {
		return false
	}
	if a := v.Active; a != nil && (a.RunID != ts.RunID || a.TurnIndex != ts.TurnIndex) {
		if a.RunID != ts.RunID && sameRun {
			return false
		}
		if a.RunID != ts.RunID {
			if st, err := s.RunState(ctx, ts.RunID); err == nil && st.Phase == stream.PhaseRunning {
				return false
			}
		}
		return true
	}
	for _, c := range v.Checkpoints {
		if c.TurnIndex > ts.TurnIndex {
			return true
		}
	}
	return false
}

// rebuild returns the response of turn ts rebuilt from its session, for a turn whose stream is
// gone, when that is faithful: the turn ended with a question that is still open. The response
// is then the question's interrupt chunk (every open question of the turn's checkpoint, in
// order), the turn's checkpoint chunk and done: the chunks the run published to end that
// response, built from the checkpoint's pending requests as the run builds them. Anything else
// (the turn still running, completed, failed, its question answered): nil.
func (s *Service) rebuild(ctx context.Context, sessionID string, ts TurnStarted) []contracts.Chunk {
	v, err := s.View(ctx, sessionID)
	if err != nil {
		return nil
	}
	open := map[string]bool{}
	for _, p := range v.Pending {
		open[p.Token] = true
	}
	for _, sum := range v.Checkpoints {
		if sum.TurnIndex != ts.TurnIndex {
			continue
		}
		cp, err := s.Checkpoint(ctx, sessionID, sum.ID)
		if err != nil || cp.RunID != ts.RunID {
			return nil
		}
		var out []contracts.Chunk
		for _, p := range cp.ActivePendingRequests {
			if open[p.Token] {
				out = append(out, protocol.InterruptChunk(p))
			}
		}
		if len(out) == 0 {
			return nil
		}
		turn := cp.TurnIndex
		return append(out, contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: cp.ID, SessionID: cp.SessionID, TurnIndex: &turn},
			contracts.Chunk{Type: contracts.ChunkDone})
	}
	return nil
}

// isGone reports whether err says the stream is gone.
func isGone(err error) bool { return contracts.CodeOf(err) == contracts.CodeStreamGone }

// RunState is the [stream.ReaderOptions].Run of runs on Temporal (for the run stream route and the
// chat route): it describes the run's workflow execution (no worker needed). A running
// execution whose KortyxStatus search attribute is "waiting" and that has no workflow task
// pending is "waiting" (a pending task means the run has something to act on, such as an
// answer it has not taken yet); any closed
// status (completed, failed, cancelled, terminated, timed out) is "closed"; an
// unknown workflow ID is "missing". Other errors are returned (the reader asks again
// later).
func (s *Service) RunState(ctx context.Context, runID string) (stream.RunState, error) {
	desc, err := s.o.Client.DescribeWorkflow(ctx, runID, "")
	if err != nil {
		if isNotFound(err) {
			return stream.RunState{Phase: stream.PhaseMissing}, nil
		}
		return stream.RunState{}, err
	}
	info := desc.RawResponse.GetWorkflowExecutionInfo()
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: // a later execution of the chain runs
		return stream.RunState{Phase: stream.PhaseRunning}, nil
	default:
		return stream.RunState{Phase: stream.PhaseClosed}, nil
	}
	if desc.RawResponse.GetPendingWorkflowTask() != nil {
		// A workflow task is due: the run has something to act on (an answer it has not taken
		// yet, for one) and may publish, whatever its status attribute still says. A run whose
		// worker was killed keeps it pending until a worker polls again (after the dead
		// worker's sticky queue times out).
		return stream.RunState{Phase: stream.PhaseRunning}, nil
	}
	var status string
	if p := info.GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeStatus]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &status)
	}
	if status == string(contracts.StatusWaiting) {
		return stream.RunState{Phase: stream.PhaseWaiting}, nil
	}
	return stream.RunState{Phase: stream.PhaseRunning}, nil
}
