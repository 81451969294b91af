package redisstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timing of the waiter hub.
const (
	// hubBlock bounds one blocking XREAD of the hub; it loops after it.
	hubBlock = 5 * time.Second
	// wakeTTL is the expiry of the hub's wake stream, renewed at every wake, so the key of a
	// process that died goes away.
	wakeTTL = time.Hour
	// closeWait bounds how long Close waits for the hub's XREAD to return.
	closeWait = 2 * time.Second
)

// hub serves every Wait of a broker with one goroutine blocked on one XREAD (one pool
// connection) over all the streams waited on, from the smallest offset waited after in each,
// plus the hub's own wake stream. A Wait on a stream that the XREAD in flight does not cover
// (or covers only from a larger offset) adds an entry to the wake stream, so that the XREAD
// returns and the hub starts a new one that covers it.
type hub struct {
	b       *broker
	wakeKey string
	ctx     context.Context // ended by close
	cancel  context.CancelFunc

	mu       sync.Mutex
	waiters  map[string]map[*waiter]struct{} // stream key → its waiters
	inflight map[string]int64                // stream key → after of the XREAD in flight (nil: none)
	wakeID   string                          // ID of the last wake entry seen
	running  bool                            // the hub goroutine runs
	closed   bool
	done     chan struct{} // closed when the goroutine started last returns
}

type waiter struct {
	after int64
	ch    chan error // receives once: nil (an entry after after) or the failure
}

func newHub(b *broker) *hub {
	var id [8]byte
	_, _ = rand.Read(id[:])
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{
		b: b, wakeKey: b.prefix + "wake:" + hex.EncodeToString(id[:]),
		ctx: ctx, cancel: cancel,
		waiters: make(map[string]map[*waiter]struct{}), wakeID: "0-0",
	}
}

// wait blocks until the stream at key has an entry with offset > after, ctx ends, or the
// hub's XREAD fails.
func (h *hub) wait(ctx context.Context, key string, after int64) error {
	w := &waiter{after: after, ch: make(chan error, 1)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return h.b.unavailable("wait", errors.New("broker closed"))
	}
	ws := h.waiters[key]
	if ws == nil {
		ws = make(map[*waiter]struct{})
		h.waiters[key] = ws
	}
	ws[w] = struct{}{}
	wake := false
	if !h.running {
		h.running = true
		h.done = make(chan struct{})
		go h.loop(h.done)
	} else if h.inflight != nil {
		from, covered := h.inflight[key]
		wake = !covered || from > after
	}
	h.mu.Unlock()

	if wake {
		if err := h.wake(ctx); err != nil {
			h.remove(key, w)
			return h.b.fail(ctx, "wait", err)
		}
	}
	select {
	case err := <-w.ch:
		return err
	case <-ctx.Done():
		h.remove(key, w)
		return ctx.Err()
	}
}

// wake makes the XREAD in flight return.
func (h *hub) wake(ctx context.Context) error {
	_, err := h.b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: h.wakeKey, MaxLen: 1, Values: []string{"w", "1"}})
		p.PExpire(ctx, h.wakeKey, wakeTTL)
		return nil
	})
	return err
}

func (h *hub) remove(key string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ws := h.waiters[key]; ws != nil {
		delete(ws, w)
		if len(ws) == 0 {
			delete(h.waiters, key)
		}
	}
}

// loop runs XREADs while there are waiters.
func (h *hub) loop(done chan struct{}) {
	defer close(done)
	for {
		h.mu.Lock()
		if h.closed || len(h.waiters) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		streams := make([]string, 1, 2*len(h.waiters)+2)
		streams[0] = h.wakeKey
		ids := []string{h.wakeID}
		h.inflight = make(map[string]int64, len(h.waiters))
		for key, ws := range h.waiters {
			from := int64(-1)
			for w := range ws {
				if from < 0 || w.after < from {
					from = w.after
				}
			}
			h.inflight[key] = from
			streams = append(streams, key)
			ids = append(ids, formatID(from))
		}
		h.mu.Unlock()

		res, err := h.b.client.XRead(h.ctx, &redis.XReadArgs{
			Streams: append(streams, ids...), Count: 1, Block: hubBlock,
		}).Result()

		h.mu.Lock()
		h.inflight = nil
		switch {
		case errors.Is(err, redis.Nil): // timed out
		case err != nil:
			// Every current waiter fails (their Follow returns the error); new waits start a
			// new goroutine.
			fail := h.b.unavailable("wait", err)
			for key, ws := range h.waiters {
				for w := range ws {
					w.ch <- fail
				}
				delete(h.waiters, key)
			}
		default:
			for _, s := range res {
				if len(s.Messages) == 0 {
					continue
				}
				id := s.Messages[len(s.Messages)-1].ID
				if s.Stream == h.wakeKey {
					h.wakeID = id
					continue
				}
				off, err := offset(id)
				if err != nil {
					continue
				}
				ws := h.waiters[s.Stream]
				for w := range ws {
					if off > w.after {
						w.ch <- nil
						delete(ws, w)
					}
				}
				if len(ws) == 0 {
					delete(h.waiters, s.Stream)
				}
			}
		}
		h.mu.Unlock()
	}
}

// formatID is the stream entry ID of offset off.
func formatID(off int64) string {
	if off < 0 {
		off = 0
	}
	return strconv.FormatInt(off, 10) + "-0"
}

// close fails the waiters, makes the XREAD in flight return and waits (boundedly) for the hub
// goroutine.
func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	fail := h.b.unavailable("wait", errors.New("broker closed"))
	for key, ws := range h.waiters {
		for w := range ws {
			w.ch <- fail
		}
		delete(h.waiters, key)
	}
	running, done := h.running, h.done
	h.mu.Unlock()
	h.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if running {
		_ = h.wake(ctx)
	}
	_ = h.b.client.Del(ctx, h.wakeKey).Err()
	if !running {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}
