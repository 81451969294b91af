package stream

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// Default bounds of the in-memory broker: at most about 256 × 20,000 entries (a few hundred
// bytes each plus their content) stay in memory, and a finished run's stream is dropped 10
// minutes after its final done.
const (
	defaultMaxRuns          = 256
	defaultMaxEntriesPerRun = 20_000
	defaultMemoryRetention  = 10 * time.Minute
)

// MemoryOptions configures [NewMemory]. The zero value is the defaults.
type MemoryOptions struct {
	// MaxRuns bounds the number of runs kept (default 256). When a publish to a new run exceeds
	// it, the least recently published run is evicted (its stream is dropped). <= 0: the default.
	MaxRuns int
	// Retention is how long a run's stream stays after its final done — a done that ends a
	// response without interrupt, as the Redis broker counts it — before the broker drops it
	// (default 10 minutes; < 0: never; 0: the default). A later publish to the run starts the
	// period again. A reader of a dropped run whose workflow has closed gets STREAM_GONE (see
	// [Reader]).
	Retention time.Duration
	// MaxEntriesPerRun bounds the entries kept per run (default 20,000). When a publish exceeds
	// it, the oldest entries are dropped, together with their keys (a chunk republished with the
	// key of a dropped entry is appended again). Offsets keep increasing: a Read after a dropped
	// offset returns entries from the oldest kept one, so a reader that fell that far behind sees
	// a gap in offsets. <= 0: the default.
	MaxEntriesPerRun int
}

// memory is the in-process [Broker] of [NewMemory]: a bounded log per run, kept in memory only
// (it does not survive a restart and is not shared between processes). Waiters are woken on
// append, without polling. It is safe for concurrent use.
//
// Each retained entry costs about 700 bytes plus its payload and key, so the worst case of the
// defaults (256 runs of 20,000 entries) is far above what most processes can hold: size the
// bounds for the expected load. A finished run is dropped after the retention
// ([MemoryOptions].Retention).
// Evicted, expired and forgotten runs are lost, keys and offsets included.
type memory struct {
	maxRuns    int
	maxEntries int
	retention  time.Duration    // < 0: never drop a finished run
	now        func() time.Time // the clock of retention (tests replace it)

	mu    sync.Mutex
	runs  map[string]*memRun
	lru   *list.List  // runIDs of published runs, most recently published first
	exp   *list.List  // runIDs of finished runs, the one that expires first at the front
	sweep *time.Timer // drops the runs of exp when the first one expires
}

// memRun is one run's log. A run that is only waited on (never published) has elem == nil and
// lives only while it has waiters.
type memRun struct {
	ring    []Entry          // ring buffer of the retained entries, offsets contiguous
	head    int              // index in ring of the oldest retained entry
	n       int              // number of retained entries
	last    int64            // offset of the last appended entry
	keys    map[string]int64 // key -> offset of the retained keyed entries
	notify  chan struct{}    // closed (and replaced) on append, eviction and forget
	waiters int
	elem    *list.Element

	interrupted bool          // the last response so far ended with an interrupt
	ended       bool          // a done ended a response without interrupt: the run is finished
	expires     time.Time     // when ended: the end of its retention
	expElem     *list.Element // in memory.exp, when ended and retention applies
}

var _ Broker = (*memory)(nil)

// NewMemory returns an empty in-process broker: a bounded log per run, kept in memory only (it
// does not survive a restart and is not shared between processes); it is safe for concurrent
// use. Each retained entry costs about 700 bytes plus its payload and key, so the worst case of
// the defaults (256 runs of 20,000 entries) is far above what most processes can hold: size the
// bounds for the expected load. Evicted and expired runs are lost, keys and offsets included.
func NewMemory(o MemoryOptions) Broker {
	m := &memory{
		maxRuns:    defaultMaxRuns,
		maxEntries: defaultMaxEntriesPerRun,
		retention:  defaultMemoryRetention,
		now:        time.Now,
		runs:       make(map[string]*memRun),
		lru:        list.New(),
		exp:        list.New(),
	}
	if o.MaxRuns > 0 {
		m.maxRuns = o.MaxRuns
	}
	if o.MaxEntriesPerRun > 0 {
		m.maxEntries = o.MaxEntriesPerRun
	}
	if o.Retention != 0 {
		m.retention = o.Retention
	}
	return m
}

func invalidRunID() error {
	return contracts.Errorf(contracts.CodeInvalidRequest, "stream: empty run ID")
}

// Publish implements [Broker]. It fails only for an empty runID or an ended ctx.
func (m *memory) Publish(ctx context.Context, runID string, chunks ...Keyed) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if runID == "" {
		return invalidRunID()
	}
	if len(chunks) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked()
	r := m.runs[runID]
	if r == nil {
		r = &memRun{notify: make(chan struct{})}
		m.runs[runID] = r
	}
	if r.elem == nil {
		r.elem = m.lru.PushFront(runID)
		for m.lru.Len() > m.maxRuns {
			m.forgetLocked(m.lru.Back().Value.(string))
		}
	} else {
		m.lru.MoveToFront(r.elem)
	}
	appended := false
	for _, k := range chunks {
		if k.Key != "" {
			if _, dup := r.keys[k.Key]; dup {
				continue
			}
			if r.keys == nil {
				r.keys = make(map[string]int64)
			}
		}
		r.last++
		if k.Key != "" {
			r.keys[k.Key] = r.last
		}
		r.push(Entry{Offset: r.last, Key: k.Key, Chunk: k.Chunk}, m.maxEntries)
		appended = true
		switch k.Chunk.Type {
		case contracts.ChunkInterrupt:
			r.interrupted = true
		case contracts.ChunkDone:
			r.ended = r.ended || !r.interrupted
			r.interrupted = false
		}
	}
	if !appended {
		return nil
	}
	if r.ended && m.retention > 0 {
		r.expires = m.now().Add(m.retention)
		if r.expElem == nil {
			r.expElem = m.exp.PushBack(runID)
		} else {
			m.exp.MoveToBack(r.expElem) // the latest expiry
		}
		m.scheduleLocked()
	}
	close(r.notify)
	r.notify = make(chan struct{})
	return nil
}

// Read implements [Broker]. Entries dropped by [MemoryOptions].MaxEntriesPerRun are skipped: the result
// then starts at the oldest retained entry. An unknown run has no entries.
func (m *memory) Read(ctx context.Context, runID string, after int64, limit int) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked()
	r := m.runs[runID]
	if r == nil || r.n == 0 || after >= r.last {
		return nil, nil
	}
	i := 0
	if first := r.at(0).Offset; after >= first {
		i = int(after - first + 1)
	}
	count := r.n - i
	if limit > 0 && count > limit {
		count = limit
	}
	out := make([]Entry, count)
	// The retained entries from i are at most two runs of the ring.
	start := (r.head + i) % len(r.ring)
	c := copy(out, r.ring[start:])
	copy(out[c:], r.ring)
	return out, nil
}

// at returns the i-th retained entry.
func (r *memRun) at(i int) *Entry {
	return &r.ring[(r.head+i)%len(r.ring)]
}

// push appends e, dropping the oldest entry (and its key) when limit entries are retained.
func (r *memRun) push(e Entry, limit int) {
	if r.n == len(r.ring) && r.n < limit { // grow, unwrapping the ring
		size := min(max(2*len(r.ring), 8), limit) // an entry is ~700 bytes: start small
		ring := make([]Entry, size)
		c := copy(ring, r.ring[r.head:])
		copy(ring[c:], r.ring[:r.head])
		r.ring, r.head = ring, 0
	}
	if r.n < len(r.ring) {
		*r.at(r.n) = e
		r.n++
		return
	}
	if old := r.at(0); old.Key != "" {
		delete(r.keys, old.Key)
	}
	*r.at(0) = e // the slot of the oldest entry becomes that of the newest
	r.head = (r.head + 1) % len(r.ring)
}

// Wait implements [Broker]. It may be called before the run's first publish. A run evicted or
// forgotten while waited on starts over from offset 0: the waiter keeps waiting for an entry
// with Offset > after.
func (m *memory) Wait(ctx context.Context, runID string, after int64) error {
	for {
		m.mu.Lock()
		m.expireLocked()
		r := m.runs[runID]
		if r != nil && r.last > after {
			m.mu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			m.mu.Unlock()
			return err
		}
		if r == nil {
			r = &memRun{notify: make(chan struct{})}
			m.runs[runID] = r
		}
		r.waiters++
		ch := r.notify
		m.mu.Unlock()

		select {
		case <-ch:
		case <-ctx.Done():
		}

		m.mu.Lock()
		r.waiters--
		if r.waiters == 0 && r.elem == nil && m.runs[runID] == r {
			delete(m.runs, runID) // a run that was only waited on
		}
		m.mu.Unlock()
	}
}

// Last implements [Broker].
func (m *memory) Last(ctx context.Context, runID string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked()
	if r := m.runs[runID]; r != nil {
		return r.last, nil
	}
	return 0, nil
}

// Bounds implements [Broker].
func (m *memory) Bounds(ctx context.Context, runID string) (first, last int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked()
	if r := m.runs[runID]; r != nil && r.n > 0 {
		return r.at(0).Offset, r.last, nil
	}
	return 0, 0, nil
}

// forget drops everything stored for runID: its entries, keys and offset counter. Readers
// waiting on it are woken and keep waiting; a later publish starts again at offset 1.
func (m *memory) forget(runID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(runID)
}

func (m *memory) forgetLocked(runID string) {
	r := m.runs[runID]
	if r == nil {
		return
	}
	delete(m.runs, runID)
	if r.elem != nil {
		m.lru.Remove(r.elem)
		r.elem = nil
	}
	if r.expElem != nil {
		m.exp.Remove(r.expElem)
		r.expElem = nil
	}
	close(r.notify)
	r.notify = make(chan struct{})
}

// expireLocked drops the finished runs whose retention has passed.
func (m *memory) expireLocked() {
	if m.exp.Len() == 0 {
		return
	}
	now := m.now()
	for e := m.exp.Front(); e != nil; e = m.exp.Front() {
		id := e.Value.(string)
		if r := m.runs[id]; r != nil && r.expires.After(now) {
			return
		}
		m.forgetLocked(id)
		m.exp.Remove(e) // a no-op when forgetLocked removed it
	}
}

// scheduleLocked arranges for expireLocked to run when the first finished run expires, so that
// an idle broker gives its memory back too.
func (m *memory) scheduleLocked() {
	e := m.exp.Front()
	if e == nil || m.sweep != nil {
		return
	}
	d := m.runs[e.Value.(string)].expires.Sub(m.now())
	m.sweep = time.AfterFunc(max(d, time.Millisecond), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.sweep = nil
		m.expireLocked()
		m.scheduleLocked()
	})
}
