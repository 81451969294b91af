package chat

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/sessions"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
)

// The handler keeps, in memory, the turns its requests read: how many readers each has, whether
// a request of this handler started it, and whether its response was finalized. That is what
// lets several readers share one turn (a second tab, an overlapping reconnect) without one of
// them cancelling it for the others, and what runs the lifecycle callbacks once per run attempt
// rather than once per request.
//
// What it keeps of a turn is small: the finalization keeps the ids of the request that started
// it (not its messages, which can be as large as the body limit), and an ended turn is
// remembered, for the requests that reattach to it, by a copy of its ids and flags (see
// turn.remembered) rather than by the turn itself, which held that request and the response
// read for the finalization.

// defaultRememberedTurns is how many ended turns a [Handler] remembers by clientTurnId
// unless [Options.RememberedTurns] says otherwise.
const defaultRememberedTurns = 4096

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
	ts    sessions.TurnStarted
	begin int64 // where the response begins in the run's stream
	// owned is set when a request of this handler started the attempt; only then does the last
	// reader's departure cancel it (disconnectCancel).
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

	// The finalization: the request that started the attempt (r, a, and req, which holds only
	// its sessionId and clientTurnId), the context of its follower (bg, cancelled by stop), and
	// the response read so far (chunks, up to offset at; -1 when it was rebuilt from the
	// session), which the readers that read on from at feed (feeders of them are reading). A
	// follower of its own reads the rest when no feeder is left (following); finishing is set
	// once a reader or the follower finalizes it. A slot keeps none of these once t ended
	// (turn.remembered).
	r         *http.Request
	req       *Request
	token     string // the answered question's resume token (answer turns)
	a         *ask
	bg        context.Context
	chunks    []contracts.Chunk
	at        int64
	feeders   int
	following bool
	finishing bool
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
	max   int   // how many ended asks are remembered (0: defaultRememberedTurns)
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
// that checkpoint, unless more than 32 turns came after it); an ended one
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
func (ts *turns) attach(s *slot, started sessions.TurnStarted, begin int64) (t *turn, fresh bool) {
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
	t = &turn{key: key, ts: started, begin: begin, owned: !started.Reattached, ended: make(chan struct{}), readers: 1, at: begin}
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

// done records the finalization of t and remembers its ask among the ended ones, by t's
// remembered copy.
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
	if s := ts.asks[*a]; s != nil && s.last == t {
		s.last = t.remembered()
	}
	ts.ended = append(ts.ended, *a)
	limit := ts.max
	if limit <= 0 {
		limit = defaultRememberedTurns
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

// remembered is what a slot keeps of the finalized attempt t (called with turns.mu held): its
// ids and flags, finalized, without the request that started it, its follower's context or the
// response read for its finalization. A request that reattaches to it reads the response from
// the run's stream as it would from t; ended is t's (closed once the finalization is over).
func (t *turn) remembered() *turn {
	return &turn{key: t.key, ts: t.ts, begin: t.begin, owned: t.owned, ended: t.ended, over: true,
		settled: t.settled, checkpoint: t.checkpoint, finalized: true, finishing: true, token: t.token, at: t.at}
}

func (ts *turns) endedLater(a ask) bool {
	for _, e := range ts.ended {
		if e == a {
			return true
		}
	}
	return false
}

// origin records the request that started (or first read) the attempt t — of its body, only
// the ids the finalization needs — and makes the context of its follower: it outlives the
// requests, and ends when the last reader has been gone for FinalizeTimeout.
func (ts *turns) origin(t *turn, r *http.Request, req *Request, a *ask) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ids := &Request{SessionID: req.SessionID, ClientTurnID: req.ClientTurnID}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.r, t.req, t.a, t.bg, t.stop = r, ids, a, ctx, cancel
	if res := req.ResumeOf(); res != nil {
		t.token = strings.TrimSpace(res.Token)
	}
}

// join registers a reader of t from offset from; it reports whether the reader feeds the
// finalization (it starts where the finalization is, or before).
func (ts *turns) join(t *turn, from int64) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.finishing || t.at < 0 || from > t.at {
		return false
	}
	t.feeders++
	return true
}

// feed hands the finalization of t the entry e that a reader at offset pos read next, and
// returns the reader's new offset: the finalization takes it when it is where the reader was.
// The entries of a response rebuilt from the session (offset 0) are taken from the first reader
// that rebuilt it before anything else was taken.
func (ts *turns) feed(t *turn, pos int64, e stream.Entry) int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if e.Offset == 0 {
		if pos != t.at || t.finishing || (pos >= 0 && len(t.chunks) > 0) {
			return pos
		}
		t.chunks = append(t.chunks, e.Chunk)
		t.at = -1
		return -1
	}
	if pos == t.at && e.Offset > t.at && !t.finishing {
		t.chunks = append(t.chunks, e.Chunk)
		t.at = e.Offset
	}
	return e.Offset
}

// claim reports whether the reader at offset pos (at the response's end) finalizes t: it has the
// whole response (force: the follower gave up and finalizes what there is). Only one does.
func (ts *turns) claim(t *turn, pos int64, force bool) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.finishing || t.bg == nil || (!force && pos != t.at) {
		return false
	}
	t.finishing = true
	return true
}

// unjoin unregisters a feeder (once: *feeder is cleared), and reports whether a follower must
// now read the rest of the response for its finalization: no feeder is left, none runs, and
// nobody finalizes it yet.
func (ts *turns) unjoin(t *turn, feeder *bool) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if *feeder {
		t.feeders--
		*feeder = false
	}
	if t.finishing || t.feeders > 0 || t.following || t.bg == nil {
		return false
	}
	t.following = true
	return true
}

// followed records that t's follower ended without finalizing it (a feeder does).
func (ts *turns) followed(t *turn) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.following = false
}

// position is where t's finalization is in the run's stream (-1: it has a rebuilt response).
func (ts *turns) position(t *turn) int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return t.at
}

// response is what t's finalization has read of the response.
func (ts *turns) response(t *turn) []contracts.Chunk {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]contracts.Chunk(nil), t.chunks...)
}
