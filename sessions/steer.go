package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/sessionapi"
	"github.com/kortyx-go/kortyx/stream"
)

// The policies of a message sent to a session while a turn runs ([TurnRequest].Busy;
// docs/steering.md).
const (
	BusyReject    = sessionapi.BusyReject
	BusyEnqueue   = sessionapi.BusyEnqueue
	BusyInterrupt = sessionapi.BusyInterrupt
	BusySteer     = sessionapi.BusySteer
)

// CheckBusy checks a busy policy named by a wire's options or a request ("" is the default,
// [BusyReject]): INVALID_INPUT for any other word.
func CheckBusy(p string) error { return sessionapi.CheckBusy(p) }

// A steering message's response: how long FollowSteer waits between looks at the run's stream.
const (
	steerPollMin = 50 * time.Millisecond
	steerPollMax = time.Second
)

// FollowSteer returns a reader of the response to a steering message (ts is what [Service.Start]
// returned for req with Kind [BusySteer]): the running turn's response from the status chunk
// that shows where its run took the message in (Chunk.Steer.ID is ts.SteerID) to the response's
// done. A message the turn did not take in became the session's next turn: the reader then
// follows that turn's response from its start (Start with the message's ClientTurnID, which
// Start gives a steering message that has none, finds it). Until the run has taken the message
// in, the reader looks at the run's stream (every 50 ms to 1 s) and asks the run's state (its
// Temporal description, not billed); it asks the session (a query) only once the turn is over
// without the message.
func (s *Service) FollowSteer(ctx context.Context, sessionID string, ts TurnStarted, req TurnRequest, o FollowOptions) (*Reader, error) {
	if s.o.Broker == nil {
		return nil, errors.New("kortyx sessions: FollowSteer needs Options.Broker (the stream broker the workers publish to)")
	}
	since, err := s.o.Broker.Last(ctx, ts.RunID) // a done after it ends the steered turn
	if err != nil {
		return nil, err
	}
	var after int64
	wait := steerPollMin
	for {
		at, e, found, ended, err := s.findSteer(ctx, ts, after, since)
		if err != nil {
			return nil, err
		}
		if found {
			return s.followFrom(ctx, sessionID, ts, e, o)
		}
		after = at
		if !ended {
			st, err := s.RunState(ctx, ts.RunID)
			ended = err == nil && st.Phase != stream.PhaseRunning
		}
		if ended {
			// The turn is over without the message (its chunk would be in the stream: the run
			// publishes it before it reports the turn's end): the session queues it.
			v, err := s.View(ctx, sessionID)
			if err != nil {
				return nil, err
			}
			if !steering(v, ts.SteerID) {
				if _, e, found, _, err := s.findSteer(ctx, ts, after, since); err != nil || found {
					if err != nil {
						return nil, err
					}
					return s.followFrom(ctx, sessionID, ts, e, o)
				}
				req.Reconnect = true
				if req.ClientTurnID == "" {
					req.ClientTurnID = ts.ClientTurnID
				}
				next, err := s.Start(ctx, sessionID, req)
				if err != nil {
					return nil, err
				}
				if next.Kind != BusySteer || next.SteerID != ts.SteerID {
					return s.Follow(ctx, sessionID, next, next.Begin, o)
				}
			}
			// The session has not applied the turn's end yet.
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if wait *= 2; wait > steerPollMax {
			wait = steerPollMax
		}
	}
}

// followFrom is the reader of ts's response from entry e on (e included).
func (s *Service) followFrom(ctx context.Context, sessionID string, ts TurnStarted, e stream.Entry, o FollowOptions) (*Reader, error) {
	r, err := s.Follow(ctx, sessionID, ts, e.Offset, o)
	if err != nil {
		return nil, err
	}
	r.pre = []stream.Entry{e}
	return r, nil
}

// findSteer looks in the run's stream after offset after for the status chunk of steering
// message ts.SteerID; it returns the offset it read to, and whether a done after offset since
// (the steered turn's) was read.
func (s *Service) findSteer(ctx context.Context, ts TurnStarted, after, since int64) (int64, stream.Entry, bool, bool, error) {
	ended := false
	for {
		entries, err := s.o.Broker.Read(ctx, ts.RunID, after, 0)
		if err != nil {
			return after, stream.Entry{}, false, ended, err
		}
		if len(entries) == 0 {
			return after, stream.Entry{}, false, ended, nil
		}
		for _, e := range entries {
			if c := e.Chunk; c.Type == contracts.ChunkStatus && c.Steer != nil && c.Steer.ID == ts.SteerID {
				return e.Offset, e, true, ended, nil
			}
			if e.Chunk.Type == contracts.ChunkDone && e.Offset > since {
				ended = true
			}
			after = e.Offset
		}
	}
}

// steering reports whether the session still lists steering message id as not taken in.
func steering(v SessionView, id string) bool {
	for _, m := range v.Steering {
		if m.ID == id {
			return true
		}
	}
	return false
}
