package redisstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
)

// Defaults of [Options].
const (
	defaultPrefix           = "kortyx:"
	defaultRetention        = 24 * time.Hour
	defaultMaxEntriesPerRun = 20_000 // as the in-memory broker's
)

// Options configures [New]. The zero value of every field but URL/Client keeps its default.
type Options struct {
	// URL is a redis:// or rediss:// URL (redis://[user:password@]host:port/db). Ignored when
	// Client is set.
	URL string
	// Client is a client of the caller's; the broker does not close it. Single-node and
	// Sentinel (failover) clients are supported; a Cluster client is refused, because one
	// blocking read waits on all the streams waited on (see [Broker]).
	Client redis.UniversalClient
	// Prefix starts every key of the broker (default "kortyx:").
	Prefix string
	// Retention is how long a run's keys stay after its final done is published: a done that
	// ends a response without interrupt (default 24 hours; < 0: never expire).
	Retention time.Duration
	// MaxEntriesPerRun bounds each run's stream (default 20,000): the
	// oldest entries are dropped, together with their keys, as by stream.MemoryOptions.MaxEntriesPerRun.
	MaxEntriesPerRun int
}

// Broker is a [stream.Broker] on Redis Streams, shared by every process that uses the same
// Redis and prefix. Create it with [New]; it is safe for concurrent use.
//
// Publish appends the chunks in order with one Lua script that skips the keys already stored,
// so concurrent publishers of the same keys (in any process) store each key once; a Redis that
// does not answer is STREAM_UNAVAILABLE (retryable), and nothing of the call is stored then, or
// all of it. Waits do not hold a connection each: one blocking XREAD over all the streams
// waited on serves them (one pool connection in all, however many waiters).
type Broker interface {
	stream.Broker
	// Ping checks that Redis answers; it fails with a *contracts.Error with code
	// STREAM_UNAVAILABLE (or ctx.Err() when ctx ended).
	Ping(ctx context.Context) error
	// Close stops the broker's waits (they return STREAM_UNAVAILABLE) and closes the client if
	// New made it from a URL.
	Close() error
}

// broker is the [Broker] of [New].
type broker struct {
	client     redis.UniversalClient
	owned      bool   // client was made by New and is closed by Close
	addr       string // host:port (or a description) for error messages, never a password
	prefix     string
	retention  time.Duration
	maxEntries int
	hub        *hub

	closeOnce sync.Once
	closeErr  error
}

var _ Broker = (*broker)(nil)

// New connects to Redis (o.URL or o.Client) and checks it with PING. An invalid URL is a
// *contracts.Error with code INVALID_REQUEST; a Redis that does not answer is one with code
// STREAM_UNAVAILABLE naming the host (never the password), and the client made from the URL
// is closed again.
func New(ctx context.Context, o Options) (Broker, error) {
	b := &broker{
		prefix:     o.Prefix,
		retention:  o.Retention,
		maxEntries: o.MaxEntriesPerRun,
	}
	if b.prefix == "" {
		b.prefix = defaultPrefix
	}
	if b.retention == 0 {
		b.retention = defaultRetention
	}
	if b.maxEntries <= 0 {
		b.maxEntries = defaultMaxEntriesPerRun
	}
	switch c := o.Client.(type) {
	case nil:
		opts, err := redis.ParseURL(o.URL)
		if err != nil {
			return nil, &contracts.Error{Code: contracts.CodeInvalidRequest,
				Message: fmt.Sprintf("redisstream: invalid Redis URL (%s): want redis://[user:password@]host:port[/db] or rediss://…", safeURL(o.URL))}
		}
		b.client, b.owned, b.addr = redis.NewClient(opts), true, opts.Addr
	case *redis.ClusterClient:
		return nil, &contracts.Error{Code: contracts.CodeInvalidRequest,
			Message: "redisstream: a Redis Cluster client is not supported; give a single-node or Sentinel client (or a URL)"}
	case *redis.Client:
		b.client, b.addr = c, c.Options().Addr
	default:
		b.client, b.addr = c, "the given Redis client"
	}
	b.hub = newHub(b)
	if err := b.Ping(ctx); err != nil {
		if b.owned {
			_ = b.client.Close()
		}
		return nil, err
	}
	return b, nil
}

// safeURL is u with its user information and query removed, for error messages.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "unparsable"
	}
	if p.Scheme == "" {
		return "no scheme"
	}
	return p.Scheme + "://" + p.Host
}

// Ping checks that Redis answers; it fails with a *contracts.Error with code
// STREAM_UNAVAILABLE (or ctx.Err() when ctx ended).
func (b *broker) Ping(ctx context.Context) error {
	return b.fail(ctx, "ping", b.client.Ping(ctx).Err())
}

// Close stops the broker's waits (they return STREAM_UNAVAILABLE) and closes the client if New
// made it from a URL.
func (b *broker) Close() error {
	b.closeOnce.Do(func() {
		b.hub.close()
		if b.owned {
			b.closeErr = b.client.Close()
		}
	})
	return b.closeErr
}

// unavailable is the STREAM_UNAVAILABLE error of a failed Redis call.
func (b *broker) unavailable(op string, cause error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Err: cause,
		Source: "redis", Operation: "stream." + op,
		Message: fmt.Sprintf("stream: Redis at %s did not answer (%s); check that it runs and that the broker's URL points to it", b.addr, op)}
}

// fail maps a Redis error: nil stays nil, an ended ctx is ctx.Err(), anything else is
// STREAM_UNAVAILABLE.
func (b *broker) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return b.unavailable(op, err)
}

// Keys of a run: the stream (entry IDs "<offset>-0", fields k = key, c = chunk JSON), the
// key → offset hash of its keyed entries, and its meta hash (last = last offset, i = the
// current response contains an interrupt, e = the run ended). The run ID in braces is a hash
// tag: the three keys of a run share a slot.
func (b *broker) keys(runID string) []string {
	base := b.prefix + "run:{" + runID + "}:"
	return []string{base + "s", base + "k", base + "m"}
}

// publishScript appends the chunks of one Publish atomically. KEYS: stream, key hash, meta.
// ARGV: maxEntries, retention ms (0: none), then key, type, JSON per chunk. It skips a chunk
// whose key is in the hash, gives the others the next offsets, trims the stream to maxEntries
// (deleting the keys of the dropped entries) and, once a done ends a response without
// interrupt, sets the run's keys to expire after the retention (again at every later publish).
// It returns the number of chunks appended.
var publishScript = redis.NewScript(`
local s, k, m = KEYS[1], KEYS[2], KEYS[3]
local maxEntries = tonumber(ARGV[1])
local retention = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', m, 'last') or '0')
local interrupted = redis.call('HGET', m, 'i') == '1'
local ended = redis.call('HGET', m, 'e') == '1'
local appended = 0
for i = 3, #ARGV, 3 do
  local key, typ, chunk = ARGV[i], ARGV[i+1], ARGV[i+2]
  if key == '' or redis.call('HSETNX', k, key, last + 1) == 1 then
    last = last + 1
    redis.call('XADD', s, last .. '-0', 'k', key, 'c', chunk)
    appended = appended + 1
    if typ == 'interrupt' then
      interrupted = true
    elseif typ == 'done' then
      if not interrupted then ended = true end
      interrupted = false
    end
  end
end
if appended == 0 then return 0 end
redis.call('HSET', m, 'last', last, 'i', interrupted and '1' or '0', 'e', ended and '1' or '0')
local excess = redis.call('XLEN', s) - maxEntries
if excess > 0 then
  local old = redis.call('XRANGE', s, '-', '+', 'COUNT', excess)
  for _, e in ipairs(old) do
    local f = e[2]
    for j = 1, #f, 2 do
      if f[j] == 'k' and f[j+1] ~= '' then redis.call('HDEL', k, f[j+1]) end
    end
    redis.call('XDEL', s, e[1])
  end
end
if ended and retention > 0 then
  redis.call('PEXPIRE', s, retention)
  redis.call('PEXPIRE', k, retention)
  redis.call('PEXPIRE', m, retention)
end
return appended
`)

// boundsScript returns {first, last} of a run. KEYS: stream, meta.
var boundsScript = redis.NewScript(`
local e = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #e == 0 then return {0, 0} end
return {tonumber(string.match(e[1][1], '^(%d+)')), tonumber(redis.call('HGET', KEYS[2], 'last') or '0')}
`)

func invalidRunID() error {
	return contracts.Errorf(contracts.CodeInvalidRequest, "stream: empty run ID")
}

// Publish implements [stream.Broker]: one Lua script appends the chunks in order and skips the
// keys already stored, so concurrent publishers of the same keys (in any process) store each
// key once. A Redis that does not answer is STREAM_UNAVAILABLE (retryable); nothing of the
// call is stored then, or all of it.
func (b *broker) Publish(ctx context.Context, runID string, chunks ...stream.Keyed) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if runID == "" {
		return invalidRunID()
	}
	if len(chunks) == 0 {
		return nil
	}
	var retention int64
	if b.retention > 0 {
		retention = max(b.retention.Milliseconds(), 1)
	}
	args := make([]any, 0, 2+3*len(chunks))
	args = append(args, b.maxEntries, retention)
	for _, c := range chunks {
		data, err := json.Marshal(c.Chunk)
		if err != nil {
			return contracts.Errorf(contracts.CodeInvalidRequest, "stream: chunk of type %q cannot be encoded: %v", c.Chunk.Type, err)
		}
		args = append(args, c.Key, string(c.Chunk.Type), data)
	}
	return b.fail(ctx, "publish", publishScript.Run(ctx, b.client, b.keys(runID), args...).Err())
}

// Read implements [stream.Broker]. Entries dropped by MaxEntriesPerRun are skipped (the result
// starts at the oldest retained one); an unknown or expired run has no entries.
func (b *broker) Read(ctx context.Context, runID string, after int64, limit int) ([]stream.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := "(" + strconv.FormatInt(max(after, 0), 10) + "-0"
	if after < 0 {
		start = "-"
	}
	s := b.keys(runID)[0]
	var msgs []redis.XMessage
	var err error
	if limit > 0 {
		msgs, err = b.client.XRangeN(ctx, s, start, "+", int64(limit)).Result()
	} else {
		msgs, err = b.client.XRange(ctx, s, start, "+").Result()
	}
	if err != nil {
		return nil, b.fail(ctx, "read", err)
	}
	out := make([]stream.Entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := entry(m)
		if err != nil {
			return nil, b.unavailable("read", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// entry decodes a stream message.
func entry(m redis.XMessage) (stream.Entry, error) {
	off, err := offset(m.ID)
	if err != nil {
		return stream.Entry{}, err
	}
	e := stream.Entry{Offset: off}
	e.Key, _ = m.Values["k"].(string)
	c, _ := m.Values["c"].(string)
	if err := json.Unmarshal([]byte(c), &e.Chunk); err != nil {
		return stream.Entry{}, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	return e, nil
}

// offset is the offset of a stream entry ID "<offset>-0".
func offset(id string) (int64, error) {
	n, _, _ := strings.Cut(id, "-")
	off, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unexpected stream entry ID %q", id)
	}
	return off, nil
}

// Bounds implements [stream.Broker].
func (b *broker) Bounds(ctx context.Context, runID string) (first, last int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	k := b.keys(runID)
	v, err := boundsScript.Run(ctx, b.client, []string{k[0], k[2]}).Int64Slice()
	if err != nil {
		return 0, 0, b.fail(ctx, "bounds", err)
	}
	if len(v) != 2 {
		return 0, 0, b.unavailable("bounds", errors.New("unexpected reply of the bounds script"))
	}
	return v[0], v[1], nil
}

// Last implements [stream.Broker].
func (b *broker) Last(ctx context.Context, runID string) (int64, error) {
	_, last, err := b.Bounds(ctx, runID)
	return last, err
}

// Wait implements [stream.Broker]. Waits do not hold a connection each: the broker's waiter
// hub blocks on one XREAD over all the streams waited on (one pool connection in all, however
// many waiters), so publishers and readers keep the rest of the pool.
func (b *broker) Wait(ctx context.Context, runID string, after int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.hub.wait(ctx, b.keys(runID)[0], after)
}
