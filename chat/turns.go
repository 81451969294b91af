package chat

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// The handler keeps, in memory, the turns its requests read: how many readers each has, whether
// a request of this handler started it, and whether its response was finalized. That is what
// lets several readers share one turn (a second tab, an overlapping reconnect) without one of
// them cancelling it for the others, and what runs the lifecycle callbacks once per run attempt
// rather than once per request.

// DefaultRememberedTurns is how many ended turns a [Handler] remembers by clientTurnId
// unless [Options.RememberedTurns] says otherwise.
const DefaultRememberedTurns = 4096

// ask is what a request with a clientTurnId asks for, matched as the session matches it: the
// same session, clientTurnId, kind and (answers) token reattach to the same turn.
type ask struct {
	session, clientTurn, kind, token string
}

// turnKey is one run attempt of a turn: its run and turn index (an answer turn continues the
// run of the question, so the run alone is not enough).
type turnKey struct {
	run  string
	turn int
}

// turn is a run attempt some request of this handler reads.
type turn struct {
	key   turnKey
	ts    contracts.TurnStarted
	begin int64 // where the response begins in the run's stream
	// owned is set when a request of this handler started the attempt; only then does the last
	// reader's departure cancel it (DisconnectCancel).
	owned bool
	// ended is closed once the response was finalized (the channel given to OnExecution).
	ended chan struct{}

	// Guarded by turns.mu.
	readers int
	over    bool // a reader or the finalizer saw the response's end
	// settled is set when the finalizer has the whole response (before the callback runs), with
	// checkpoint: the id of the checkpoint the response committed, if any.
	settled    bool
	checkpoint string
	finalized  bool        // ended is closed
	idle       *time.Timer // FinalizeTimeout after the last reader left
	stop       context.CancelFunc
}

// slot serializes the requests of one ask (a retry racing its original): each holds it while it
// decides whether to run OnTurnAccepted and starts or reattaches to its turn.
type slot struct {
	lock chan struct{}
	// Guarded by turns.mu.
	last  *turn // the last attempt of this ask in this handler
	users int   // requests holding or waiting for the slot
}

type turns struct {
	mu    sync.Mutex
	asks  map[ask]*slot
	ended []ask // asks whose last attempt ended, oldest first (evicted beyond max)
	max   int   // how many ended asks are remembered (0: DefaultRememberedTurns)
}

// slot returns the slot of a, created on first use; give it back with put.
func (ts *turns) slot(a ask) *slot {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.asks == nil {
		ts.asks = map[ask]*slot{}
	}
	s := ts.asks[a]
	if s == nil {
		s = &slot{lock: make(chan struct{}, 1)}
		ts.asks[a] = s
	}
	s.users++
	return s
}

// put gives back a slot taken with slot; when no other request uses it, it is forgotten if it
// never got a turn, or if its turn ended and was evicted from the remembered ones while the slot
// was in use (done could not forget it then).
func (ts *turns) put(a ask, s *slot) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s.users--
	if s.users == 0 && (s.last == nil || (s.last.finalized && !ts.endedLater(a))) {
		delete(ts.asks, a)
	}
}

// acquire takes the slot, or fails when ctx ends first.
func (s *slot) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slot) release() { <-s.lock }

// expectReattach reports whether a request of the slot's ask will get the turn this handler
// already knows rather than a new run attempt — as the session decides: the live attempt; an
// ended one that committed a checkpoint (returned: the session keeps the turn as long as it keeps
// that checkpoint, unless more than contracts.MaxRecentTurns turns came after it); an ended one
// that did not, for a reconnecting reader.
func (ts *turns) expectReattach(s *slot, reconnect bool) (reattach bool, checkpoint string) {
	if s == nil {
		return false, ""
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := s.last
	switch {
	case t == nil:
		return false, ""
	case !t.settled:
		return true, ""
	case t.checkpoint != "":
		return true, t.checkpoint
	}
	return reconnect, ""
}

// attach registers a reader of the attempt ts: the one the slot knows, or a new one (then
// fresh is true and the caller starts its finalizer).
func (ts *turns) attach(s *slot, started contracts.TurnStarted, begin int64) (t *turn, fresh bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	key := turnKey{run: started.RunID, turn: started.TurnIndex}
	if s != nil && s.last != nil && s.last.key == key {
		t = s.last
		t.readers++
		if t.idle != nil {
			t.idle.Stop()
			t.idle = nil
		}
		return t, false
	}
	t = &turn{key: key, ts: started, begin: begin, owned: !started.Reattached, ended: make(chan struct{}), readers: 1}
	if s != nil {
		s.last = t
	}
	return t, true
}

// responseOver records that the response of t has ended (no cancellation applies any more).
func (ts *turns) responseOver(t *turn) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.over = true
}

// leave unregisters a reader; early is set when it left before the response's end. It reports
// whether the run must be cancelled: the last reader left early, a request of this handler
// started the attempt, and the response is still going. When no reader is left, the finalizer
// is given idleFor to see the response's end.
func (ts *turns) leave(t *turn, early bool, cancelMode bool, idleFor time.Duration) (cancel bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.readers--
	if t.readers > 0 || t.finalized {
		return false
	}
	if t.stop != nil && t.idle == nil {
		t.idle = time.AfterFunc(idleFor, t.stop)
	}
	return early && cancelMode && t.owned && !t.over
}

// settle records that the finalizer has t's whole response, and the checkpoint it committed
// ("" if none).
func (ts *turns) settle(t *turn, checkpoint string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.settled, t.checkpoint, t.over = true, checkpoint, true
}

// done records the finalization of t and remembers its ask among the ended ones.
func (ts *turns) done(t *turn, a *ask) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.finalized = true
	if t.idle != nil {
		t.idle.Stop()
		t.idle = nil
	}
	if a == nil {
		return
	}
	ts.ended = append(ts.ended, *a)
	limit := ts.max
	if limit <= 0 {
		limit = DefaultRememberedTurns
	}
	for len(ts.ended) > limit {
		old := ts.ended[0]
		ts.ended = ts.ended[1:]
		// Forget the ask unless a newer attempt of it is live (or remembered later in the list).
		if s := ts.asks[old]; s != nil && s.users == 0 && s.last != nil && s.last.finalized && !ts.endedLater(old) {
			delete(ts.asks, old)
		}
	}
}

func (ts *turns) endedLater(a ask) bool {
	for _, e := range ts.ended {
		if e == a {
			return true
		}
	}
	return false
}

// followContext is the context of t's finalizer: it outlives the requests, and ends when the
// last reader has been gone for FinalizeTimeout.
func (ts *turns) followContext(t *turn, r *http.Request) context.Context {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.stop = cancel
	return ctx
}
