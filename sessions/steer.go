package sessions

import (
	"context"
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

// A steering message's response: how long FollowSteer waits between looks at the session.
const (
	steerPollMin = 100 * time.Millisecond
	steerPollMax = 2 * time.Second
)

// FollowSteer returns a reader of the response to a steering message (ts is what [Service.Start]
// returned for req with Kind [BusySteer]): the running turn's response from the status chunk
// that shows where its run took the message in (Chunk.Steer.ID is ts.SteerID) to the response's
// done. A message the turn did not take in became the session's next turn: the reader then
// follows that turn's response from its start (Start with the message's ClientTurnID, which
// Start gives a steering message that has none, finds it). While the run has not taken the
// message in yet, the reader looks at the run's stream and asks the session (a query) every
// 100 ms to 2 s.
func (s *Service) FollowSteer(ctx context.Context, sessionID string, ts TurnStarted, req TurnRequest, o FollowOptions) (*Reader, error) {
	var after int64
	wait := steerPollMin
	for {
		at, e, found, err := s.findSteer(ctx, ts, after)
		if err != nil {
			return nil, err
		}
		if found {
			r, err := s.Follow(ctx, sessionID, ts, e.Offset, o)
			if err != nil {
				return nil, err
			}
			r.pre = []stream.Entry{e}
			return r, nil
		}
		after = at
		v, err := s.View(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		if !steering(v, ts.SteerID) {
			// Taken in (its chunk is in the stream now: the run published it before it reported
			// the turn's end), or queued as the next turn.
			if _, e, found, err := s.findSteer(ctx, ts, after); err != nil || found {
				if err != nil {
					return nil, err
				}
				r, err := s.Follow(ctx, sessionID, ts, e.Offset, o)
				if err != nil {
					return nil, err
				}
				r.pre = []stream.Entry{e}
				return r, nil
			}
			req.Reconnect = true
			if req.ClientTurnID == "" {
				req.ClientTurnID = ts.ClientTurnID
			}
			next, err := s.Start(ctx, sessionID, req)
			if err != nil {
				return nil, err
			}
			if next.Kind == BusySteer && next.SteerID == ts.SteerID {
				continue // the session has not applied the turn's end yet
			}
			return s.Follow(ctx, sessionID, next, next.Begin, o)
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

// findSteer looks in the run's stream after offset after for the status chunk of steering
// message ts.SteerID; it returns the offset it read to.
func (s *Service) findSteer(ctx context.Context, ts TurnStarted, after int64) (int64, stream.Entry, bool, error) {
	for {
		entries, err := s.o.Broker.Read(ctx, ts.RunID, after, 0)
		if err != nil {
			return after, stream.Entry{}, false, err
		}
		if len(entries) == 0 {
			return after, stream.Entry{}, false, nil
		}
		for _, e := range entries {
			if c := e.Chunk; c.Type == contracts.ChunkStatus && c.Steer != nil && c.Steer.ID == ts.SteerID {
				return e.Offset, e, true, nil
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
