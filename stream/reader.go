package stream

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrIdle is returned by [Reader.Next] when nothing arrived for the reader's idle interval
// ([ReaderOptions].Idle): the caller may write a keep-alive, then call Next again.
var ErrIdle = errors.New("stream: nothing arrived within the idle interval")

// ReaderOptions configure [NewReader]; the zero value follows until [UntilRun] without asking
// about the run and without idle returns.
type ReaderOptions struct {
	// Until says when the reader stops ([io.EOF] after the chunk that meets it).
	Until Until
	// Run, when set, is asked about the run while nothing arrives (see [Reader]): a reader of
	// a stream that is gone fails with STREAM_GONE instead of waiting. It reports the state of
	// a run (for Temporal: sessions.Service.RunState); an error means "cannot tell now": the
	// reader keeps waiting and asks again.
	Run func(ctx context.Context, runID string) (RunState, error)
	// Idle, when > 0, makes Next return [ErrIdle] after Idle without an entry.
	Idle time.Duration
}

// Reader reads a run's stream from an offset, one entry at a time: the loop of a wire reads
// with [Reader.Next] and writes what it gets, with no callback between the broker and the wire.
//
// With [ReaderOptions].Run set, a reader never waits for a stream that is gone. Before waiting
// it checks the broker, and every [goneInterval] while nothing arrives the broker and the run; it returns
// a STREAM_GONE *contracts.Error when:
//
//   - after is past the last offset the broker has for the run (the broker lost the chunks
//     after, or never had them);
//   - the broker reports (Bounds) that the chunks right after after were trimmed;
//   - the broker has nothing for the run and run (when not nil) says the run is closed, or
//     waiting for an answer on two checks in a row (its response was published but is not
//     here);
//   - the reader has read everything, run says the run is closed, and until is not
//     [UntilCancel] (nothing will follow).
//
// and a NOT_FOUND *contracts.Error when the broker has nothing and run reports no such run. A
// running run is waited for. Errors from run mean "cannot tell": it is asked again later.
type Reader struct {
	b     Broker
	runID string
	o     ReaderOptions
	after int64
	t     tracker
	g     *goneCheck
	buf   []Entry
	err   error // terminal: returned by every later Next
	begun bool
	// checks is set for the rules of Reader (the gone check at the start and while idle);
	// Follow does without.
	checks bool
	// lastAlive and lastCheck are when Next last returned an entry or ErrIdle, and when the
	// gone check last ran.
	lastAlive, lastCheck time.Time
}

// NewReader returns a reader of runID's entries with Offset > after.
func NewReader(b Broker, runID string, after int64, o ReaderOptions) *Reader {
	return &Reader{b: b, runID: runID, o: o, after: after, t: tracker{until: o.Until}, checks: true,
		g: &goneCheck{b: b, runID: runID, after: after, until: o.Until, run: o.Run}}
}

// Next returns the next entry, waiting for it as needed. After the entry that meets Until it
// returns [io.EOF]; [ErrIdle] when Idle passed without one (call Next again); otherwise the
// broker's error, a STREAM_GONE or NOT_FOUND *contracts.Error (see [Reader]), or ctx.Err().
// An error other than ErrIdle is returned again by every later call.
func (r *Reader) Next(ctx context.Context) (Entry, error) {
	if r.err != nil {
		return Entry{}, r.err
	}
	if !r.begun {
		if err := r.begin(ctx); err != nil {
			return Entry{}, r.fail(err)
		}
	}
	for {
		if len(r.buf) > 0 {
			e := r.buf[0]
			r.buf = r.buf[1:]
			r.after, r.g.after = e.Offset, e.Offset
			now := time.Now()
			r.lastAlive, r.lastCheck = now, now
			if r.t.observe(e.Chunk) {
				r.err = io.EOF
			}
			return e, nil
		}
		entries, err := r.b.Read(ctx, r.runID, r.after, followBatch)
		if err != nil {
			return Entry{}, r.fail(err)
		}
		if len(entries) > 0 {
			if r.after > 0 && entries[0].Offset > r.after+1 {
				first, last, err := r.b.Bounds(ctx, r.runID)
				if err != nil {
					return Entry{}, r.fail(err)
				}
				return Entry{}, r.fail(gone(r.runID, r.after, first, last))
			}
			r.buf = entries
			continue
		}
		if err := r.wait(ctx); err != nil {
			if errors.Is(err, ErrIdle) {
				return Entry{}, err
			}
			return Entry{}, r.fail(err)
		}
	}
}

func (r *Reader) fail(err error) error {
	r.err = err
	return err
}

// begin checks where the reader starts: exactly after its offset, or STREAM_GONE.
func (r *Reader) begin(ctx context.Context) error {
	r.begun = true
	now := time.Now()
	r.lastAlive, r.lastCheck = now, now
	if r.checks {
		// At once only the broker: a reader that resumes past the end fails now, while a run
		// just started is not asked about before it had goneInterval to publish.
		if err := r.g.check(ctx, false); err != nil {
			return err
		}
	}
	if r.after > 0 {
		first, last, err := r.b.Bounds(ctx, r.runID)
		if err != nil {
			return err
		}
		if last < r.after || first > r.after+1 {
			return gone(r.runID, r.after, first, last)
		}
	}
	if r.o.Until == UntilRun && r.after > 0 {
		ended, err := prime(ctx, r.b, r.runID, r.after, &r.t)
		if err != nil {
			return err
		}
		if ended {
			return io.EOF
		}
	}
	return nil
}

// wait waits for an entry after the reader's offset: nil when one is there, ErrIdle when Idle
// passed, the gone check's error, or the broker's.
func (r *Reader) wait(ctx context.Context) error {
	if !r.checks && r.o.Idle <= 0 {
		return r.b.Wait(ctx, r.runID, r.after)
	}
	tick := goneInterval
	if r.o.Idle > 0 && (!r.checks || r.o.Idle < tick) {
		tick = r.o.Idle
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, tick)
		err := r.b.Wait(wctx, r.runID, r.after)
		timedOut := wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !timedOut || !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		now := time.Now()
		if r.checks && now.Sub(r.lastCheck) >= goneInterval-tick/10 {
			r.lastCheck = now
			if err := r.g.check(ctx, true); err != nil {
				return err
			}
		}
		if r.o.Idle > 0 && now.Sub(r.lastAlive) >= r.o.Idle-tick/10 {
			r.lastAlive = now
			return ErrIdle
		}
	}
}
