package sessions

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/stream"
)

// Turns is the registry of the turns a wire's requests read in one process, which any
// streaming wire shares: how many readers each run attempt has, whether a reader of this
// registry started it, and whether its response was finalized. That is what lets several
// readers share one turn (a second tab, an overlapping reconnect) without one of them
// cancelling it for the others, what serializes the retries of one ask (a client's turn id) and
// reattaches them, and what finalizes a response ([Finalize]) once per run attempt rather than
// once per request: the readers feed the finalization what they read, and when none is left
// before the response's end, a follower of its own reads the rest.
//
// A wire calls, around reading one turn: [Turns.Take] (the ask's slot), then
// [TurnReader.ExpectReattach] if it runs a callback for new turns only, its own
// [Service.Start] or [Service.Answer], [TurnReader.Attach] with the turn started and the
// finalization's callback, [TurnReader.Follow] and a loop over [TurnReader.Next], and
// [TurnReader.Finish] at the response's end or [TurnReader.Leave] when its client left:
//
//	tr, err := turns.Take(ctx, sessions.TurnAsk{SessionID: id, ClientTurnID: clientTurnID})
//	if err != nil {
//		return // the client left while a retry of the same ask held the slot
//	}
//	defer tr.Release()
//	ts, err := svc.Start(ctx, id, turnRequest)
//	if err != nil {
//		return
//	}
//	tr.Attach(ctx, ts, 0, 0, func(ctx context.Context, f sessions.Finalized) { save(f.Message) })
//	err = tr.Follow(ctx, sessions.FollowOptions{Started: !ts.Reattached})
//	for err == nil {
//		var e stream.Entry
//		if e, err = tr.Next(ctx); err == nil {
//			err = write(e.Chunk)
//		}
//	}
//	if errors.Is(err, io.EOF) {
//		err = nil
//	}
//	if ctx.Err() != nil {
//		tr.Leave(ctx) // the last reader leaving early cancels the run it started
//		return
//	}
//	tr.Finish(ctx, err) // waits until the response was finalized
//
// What it keeps of a run attempt is small: the ids of its ask and the response read for its
// finalization while it runs, and, once it ended, for the readers that reattach to it, a copy
// of its ids and flags. Safe for concurrent use.
type Turns struct {
	svc *Service
	o   TurnsOptions

	mu    sync.Mutex
	asks  map[turnAsk]*slot
	ended []turnAsk // asks whose last attempt ended, oldest first (evicted beyond o.Remembered)
}

// TurnsOptions configure [NewTurns]; the zero value works.
type TurnsOptions struct {
	// Continue keeps a run going when its readers leave before the response's end; it is then
	// followed and finalized on its own. By default the last reader leaving early cancels a
	// run attempt that a reader of this registry started (not one it reattached to).
	Continue bool
	// FinalizeTimeout bounds how long a run attempt is followed after its last reader left; its
	// response is then finalized as it stands (default 10 min).
	FinalizeTimeout time.Duration
	// Remembered bounds how many ended run attempts are remembered by their ask, oldest
	// forgotten first (default 4096). A request repeating a forgotten one is still answered:
	// the session tells a retry from a new turn; what is lost is only that readers of one turn
	// in this process share one finalization.
	Remembered int
	// OnAttempt receives, for each new run attempt, a channel closed once its response was
	// finalized (a host that must outlive the run waits for it).
	OnAttempt func(ended <-chan struct{})
	// OnChunk receives each chunk that the registry's own follower reads for a finalization
	// (a wire sees what its readers read itself).
	OnChunk func(contracts.Chunk)
	// Logger (default: the service's).
	Logger *slog.Logger
}

// Defaults of [TurnsOptions].
const (
	defaultFinalizeTimeout = 10 * time.Minute
	defaultRememberedTurns = 4096
)

// NewTurns returns an empty registry of the turns read through svc. A wire makes one and
// keeps it for its lifetime: readers of one turn share it only within one registry.
func NewTurns(svc *Service, o TurnsOptions) (*Turns, error) {
	if svc == nil {
		return nil, errors.New("kortyx sessions: NewTurns needs the session service")
	}
	if o.FinalizeTimeout <= 0 {
		o.FinalizeTimeout = defaultFinalizeTimeout
	}
	if o.Remembered <= 0 {
		o.Remembered = defaultRememberedTurns
	}
	if o.Logger == nil {
		o.Logger = svc.logger()
	}
	return &Turns{svc: svc, o: o}, nil
}

// TurnAsk is what a request asks for, matched as the session matches it: requests with the same
// session, ClientTurnID, kind and (answers) token reattach to the same turn. Without a
// ClientTurnID a request shares nothing with others.
type TurnAsk struct {
	SessionID    string
	ClientTurnID string
	// Answer is set for an answer to a question, with Token its resume token (trimmed).
	Answer bool
	Token  string
}

// Finalized is a run attempt's finalized response, given once to the callback of the reader
// that started (or first read) it ([TurnReader.Attach]).
type Finalized struct {
	SessionID    string
	ClientTurnID string
	RunID        string
	Status       Status
	// Message is the response's normalized assistant message; its CheckpointID is set when a
	// session checkpoint was committed for the response.
	Message FinalizedMessage
}

// TurnReader is one request's reading of a turn, from [Turns.Take] to [TurnReader.Finish] or
// [TurnReader.Leave]. Not for concurrent use.
type TurnReader struct {
	ts     *Turns
	ask    TurnAsk
	key    *turnAsk // nil without a ClientTurnID
	sl     *slot    // held until Attach or Release
	t      *attempt
	feeder bool  // it feeds t's finalization
	pos    int64 // its offset in the run's stream (-1: it read a rebuilt response)
	rd     *Reader
}

// turnAsk is the key of a [TurnAsk].
type turnAsk struct {
	session, clientTurn string
	answer              bool
	token               string
}

// turnKey is one run attempt of a turn: its run and turn index (an answer turn continues the
// run of the question, so the run alone is not enough).
type turnKey struct {
	run  string
	turn int
}

// attempt is a run attempt some reader of the registry reads.
type attempt struct {
	key   turnKey
	ts    TurnStarted
	begin int64 // where the response begins in the run's stream
	// owned is set when a reader of this registry started the attempt; only then does the last
	// reader's departure cancel it.
	owned bool
	// ended is closed once the response was finalized (the channel given to OnAttempt).
	ended chan struct{}

	// Guarded by Turns.mu.
	readers int
	over    bool // a reader or the finalizer saw the response's end
	// settled is set when the finalizer has the whole response (before the callback runs), with
	// checkpoint: the id of the checkpoint the response committed, if any.
	settled    bool
	checkpoint string
	finalized  bool        // ended is closed
	idle       *time.Timer // FinalizeTimeout after the last reader left
	stop       context.CancelFunc

	// The finalization: the ids of the reader that started the attempt (session, clientTurn,
	// and a, its ask), its context without its cancellation (base: the callback's), the
	// callback (onFinalized), the context of its follower (bg, cancelled by stop), and the
	// response read so far (chunks, up to offset at; -1 when it was rebuilt from the session),
	// which the readers that read on from at feed (feeders of them are reading). A follower of
	// its own reads the rest when no feeder is left (following); finishing is set once a reader
	// or the follower finalizes it. A slot keeps none of these once t ended (attempt.remembered).
	session     string
	clientTurn  string
	token       string // the answered question's resume token (answer turns)
	a           *turnAsk
	base        context.Context
	onFinalized func(context.Context, Finalized)
	bg          context.Context
	chunks      []contracts.Chunk
	at          int64
	feeders     int
	following   bool
	finishing   bool
}

// slot serializes the requests of one ask (a retry racing its original): each holds it while it
// decides whether its turn is new and starts or reattaches to it.
type slot struct {
	lock chan struct{}
	// Guarded by Turns.mu.
	last  *attempt // the last attempt of this ask in this registry
	users int      // requests holding or waiting for the slot
}

// Take returns the reader of a request asking for a: with a ClientTurnID, once it holds the
// ask's slot (the requests of one ask take turns: each decides, knowing what the one before it
// started, whether its turn is a new run attempt or a reattach). It fails only when ctx ends
// first. The slot is held until [TurnReader.Attach] or [TurnReader.Release].
func (ts *Turns) Take(ctx context.Context, a TurnAsk) (*TurnReader, error) {
	r := &TurnReader{ts: ts, ask: a}
	if a.ClientTurnID == "" {
		return r, nil
	}
	k := turnAsk{session: a.SessionID, clientTurn: a.ClientTurnID, answer: a.Answer, token: a.Token}
	sl := ts.slot(k)
	if err := sl.acquire(ctx); err != nil {
		ts.put(k, sl)
		return nil, err
	}
	r.key, r.sl = &k, sl
	return r, nil
}

// Release gives the ask's slot back if the reader still holds it (call it deferred; Attach
// releases it too).
func (r *TurnReader) Release() {
	if r.sl != nil {
		r.sl.release()
		r.ts.put(*r.key, r.sl)
		r.sl = nil
	}
}

// ExpectReattach reports whether the request will get the run attempt this registry knows for
// its ask rather than a new one — as the session decides: the live attempt; an ended one that
// committed a checkpoint, while the session still has that checkpoint (a rollback discards the
// turns after its target, which then run again; if the session cannot say, it is expected);
// an ended one that did not, for a reconnecting reader (reconnect).
func (r *TurnReader) ExpectReattach(ctx context.Context, reconnect bool) bool {
	reattach, checkpoint := r.ts.expectReattach(r.sl, reconnect)
	if !reattach || checkpoint == "" {
		return reattach
	}
	view, err := r.ts.svc.View(ctx, r.ask.SessionID)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(view.Checkpoints, func(c CheckpointSummary) bool { return c.ID == checkpoint })
}

// Attach registers the reader of the run attempt started (the result of [Service.Start] or
// [Service.Answer]) whose response begins at offset begin of the run's stream, reading from
// offset from, and releases the ask's slot. When the attempt is new to the registry, this
// reader started (or first read) it: OnAttempt gets its channel, and onFinalized (may be nil)
// is called once with its finalized response, with ctx's values but not its cancellation.
func (r *TurnReader) Attach(ctx context.Context, started TurnStarted, begin, from int64, onFinalized func(context.Context, Finalized)) {
	ts := r.ts
	t, fresh := ts.attach(r.sl, started, begin)
	r.t, r.pos = t, from
	if fresh {
		if ts.o.OnAttempt != nil {
			ts.o.OnAttempt(t.ended)
		}
		ts.origin(t, ctx, r.ask, r.key, onFinalized)
		// The finalization follows the response on its own when this reader cannot feed it (it
		// reads from after the response's beginning).
		if none := false; from > t.begin && ts.unjoin(t, &none) {
			ts.follow(t)
		}
	}
	r.Release()
	r.feeder = ts.join(t, from)
}

// Follow starts reading the attempt's response ([Service.Follow] from the reader's offset; the
// answered token is the attempt's).
func (r *TurnReader) Follow(ctx context.Context, o FollowOptions) error {
	o.Answered = r.t.token
	rd, err := r.ts.svc.Follow(ctx, r.ask.SessionID, r.t.ts, r.pos, o)
	r.rd = rd
	return err
}

// Next returns the next entry of the response, as [Reader.Next] does, and feeds it to the
// attempt's finalization.
func (r *TurnReader) Next(ctx context.Context) (stream.Entry, error) {
	if r.rd == nil {
		return stream.Entry{}, errors.New("kortyx sessions: TurnReader.Next before a successful Follow")
	}
	e, err := r.rd.Next(ctx)
	if err == nil {
		r.pos = r.ts.feed(r.t, r.pos, e)
	}
	return e, err
}

// Finish ends a reading that reached the response's end (err nil) or failed with err (which
// the finalization records as the response's error): the reader that read along with the
// finalization finalizes the response; when the response ended, it waits, until ctx ends,
// for its finalization (a client that reads it to its end then finds the callback's work
// done). Then it leaves.
func (r *TurnReader) Finish(ctx context.Context, err error) {
	ts, t := r.ts, r.t
	if err == nil {
		ts.responseOver(t)
	}
	if ts.claim(t, r.pos, false) {
		ts.finish(t, err)
	} else if ts.unjoin(t, &r.feeder) {
		ts.follow(t)
	}
	if err == nil {
		select {
		case <-t.ended:
		case <-ctx.Done():
		}
	}
	r.quit(ctx, false)
}

// Leave ends a reading before the response's end (its client left): the finalization reads on
// with a follower of its own, and, unless Continue, the last reader leaving cancels a run
// attempt that a reader of this registry started ([Service.Stop], with ctx's values).
func (r *TurnReader) Leave(ctx context.Context) {
	r.quit(ctx, true)
}

func (r *TurnReader) quit(ctx context.Context, early bool) {
	ts, t := r.ts, r.t
	if ts.unjoin(t, &r.feeder) {
		ts.follow(t)
	}
	if !ts.leave(t, early, !ts.o.Continue, ts.o.FinalizeTimeout) {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ts.o.FinalizeTimeout)
	defer cancel()
	if _, err := ts.svc.Stop(sctx, r.ask.SessionID, t.ts.RunID); err != nil {
		ts.o.Logger.Warn("kortyx sessions: cancelling the run of a disconnected reader failed", "run", t.ts.RunID, "error", err)
	}
}

// follow reads the rest of t's response for its finalization, apart from its readers, from
// where the finalization is, and finalizes it; it ends with the response, or when the last
// reader has been gone for FinalizeTimeout (the response is then finalized as it stands).
func (ts *Turns) follow(t *attempt) {
	ctx := t.bg
	go func() {
		pos := ts.position(t)
		var err error
		if pos >= 0 {
			var rd *Reader
			rd, err = ts.svc.Follow(ctx, t.session, t.ts, pos, FollowOptions{Answered: t.token})
			for err == nil {
				var e stream.Entry
				if e, err = rd.Next(ctx); err == nil {
					if ts.o.OnChunk != nil {
						ts.o.OnChunk(e.Chunk)
					}
					pos = ts.feed(t, pos, e)
				}
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		if ctx.Err() != nil {
			err = nil // given up (FinalizeTimeout): finalized as it stands
		}
		if ts.claim(t, pos, ctx.Err() != nil) {
			ts.finish(t, err)
		} else {
			ts.followed(t)
		}
	}()
}

// finish finalizes t's response once (the attempt's callback), with err the error that ended it
// (nil: its done), then closes the attempt's channel.
func (ts *Turns) finish(t *attempt, err error) {
	defer close(t.ended)
	chunks := append([]contracts.Chunk{{Type: contracts.ChunkSession, SessionID: t.session}}, ts.response(t)...)
	if err != nil {
		f := httpwire.Public(httpwire.StreamFailure(err))
		chunks = append(chunks, contracts.Chunk{Type: contracts.ChunkError, Message: f.Message, Failure: &f}, contracts.Chunk{Type: contracts.ChunkDone})
	}
	msg, status := Finalize(t.clientTurn, chunks)
	ts.settle(t, msg.CheckpointID)
	if t.onFinalized != nil {
		t.onFinalized(t.base, Finalized{SessionID: t.session, ClientTurnID: t.clientTurn, RunID: t.ts.RunID, Status: status, Message: msg})
	}
	ts.done(t, t.a)
	if t.stop != nil {
		t.stop()
	}
}

// slot returns the slot of a, created on first use; give it back with put.
func (ts *Turns) slot(a turnAsk) *slot {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.asks == nil {
		ts.asks = map[turnAsk]*slot{}
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
func (ts *Turns) put(a turnAsk, s *slot) {
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

// expectReattach reports whether a request of the slot's ask will get the turn this registry
// already knows rather than a new run attempt — as the session decides: the live attempt; an
// ended one that committed a checkpoint (returned: the session keeps the turn as long as it
// keeps that checkpoint, unless more than 32 turns came after it); an ended one that did not,
// for a reconnecting reader.
func (ts *Turns) expectReattach(s *slot, reconnect bool) (reattach bool, checkpoint string) {
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

// attach registers a reader of the attempt started: the one the slot knows, or a new one (then
// fresh is true and the caller records its origin).
func (ts *Turns) attach(s *slot, started TurnStarted, begin int64) (t *attempt, fresh bool) {
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
	t = &attempt{key: key, ts: started, begin: begin, owned: !started.Reattached, ended: make(chan struct{}), readers: 1, at: begin}
	if s != nil {
		s.last = t
	}
	return t, true
}

// responseOver records that the response of t has ended (no cancellation applies any more).
func (ts *Turns) responseOver(t *attempt) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.over = true
}

// leave unregisters a reader; early is set when it left before the response's end. It reports
// whether the run must be cancelled: the last reader left early, a reader of this registry
// started the attempt, and the response is still going. When no reader is left, the finalizer
// is given idleFor to see the response's end.
func (ts *Turns) leave(t *attempt, early bool, cancelMode bool, idleFor time.Duration) (cancel bool) {
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
func (ts *Turns) settle(t *attempt, checkpoint string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.settled, t.checkpoint, t.over = true, checkpoint, true
}

// done records the finalization of t and remembers its ask among the ended ones, by t's
// remembered copy.
func (ts *Turns) done(t *attempt, a *turnAsk) {
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
	limit := ts.o.Remembered
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

// remembered is what a slot keeps of the finalized attempt t (called with Turns.mu held): its
// ids and flags, finalized, without the ids and context of the reader that started it, its
// callback, its follower's context or the response read for its finalization. A reader that
// reattaches to it reads the response from the run's stream as it would from t; ended is t's
// (closed once the finalization is over).
func (t *attempt) remembered() *attempt {
	return &attempt{key: t.key, ts: t.ts, begin: t.begin, owned: t.owned, ended: t.ended, over: true,
		settled: t.settled, checkpoint: t.checkpoint, finalized: true, finishing: true, token: t.token, at: t.at}
}

func (ts *Turns) endedLater(a turnAsk) bool {
	return slices.Contains(ts.ended, a)
}

// origin records the reader that started (or first read) the attempt t — its ids, its
// context's values and the finalization's callback — and makes the context of its follower: it
// outlives the readers, and ends when the last reader has been gone for FinalizeTimeout.
func (ts *Turns) origin(t *attempt, ctx context.Context, a TurnAsk, key *turnAsk, onFinalized func(context.Context, Finalized)) {
	base := context.WithoutCancel(ctx)
	bg, cancel := context.WithCancel(base)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.session, t.clientTurn, t.a, t.base, t.onFinalized, t.bg, t.stop = a.SessionID, a.ClientTurnID, key, base, onFinalized, bg, cancel
	if a.Answer {
		t.token = a.Token
	}
}

// join registers a reader of t from offset from; it reports whether the reader feeds the
// finalization (it starts where the finalization is, or before).
func (ts *Turns) join(t *attempt, from int64) bool {
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
func (ts *Turns) feed(t *attempt, pos int64, e stream.Entry) int64 {
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
func (ts *Turns) claim(t *attempt, pos int64, force bool) bool {
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
func (ts *Turns) unjoin(t *attempt, feeder *bool) bool {
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
func (ts *Turns) followed(t *attempt) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.following = false
}

// position is where t's finalization is in the run's stream (-1: it has a rebuilt response).
func (ts *Turns) position(t *attempt) int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return t.at
}

// response is what t's finalization has read of the response.
func (ts *Turns) response(t *attempt) []contracts.Chunk {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]contracts.Chunk(nil), t.chunks...)
}
