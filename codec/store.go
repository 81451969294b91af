package codec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/redis/go-redis/v9"
)

// Store keeps the payloads the codec takes out of history, by content hash.
type Store interface {
	// Put stores data under hash; storing a hash it already has keeps its data and renews its
	// modification time (so that [Collect] sees it as fresh).
	Put(ctx context.Context, hash string, data []byte) error
	// Get returns the data stored under hash, and a *contracts.Error with
	// [contracts.CodePayloadMissing] naming the hash when there is none.
	Get(ctx context.Context, hash string) ([]byte, error)
	// List calls fn for every stored object (in no particular order) until fn returns an error.
	List(ctx context.Context, fn func(Object) error) error
	// Delete removes hash unless it was modified after notAfter; it reports whether it removed
	// it (false also when there was nothing to remove).
	Delete(ctx context.Context, hash string, notAfter time.Time) (bool, error)
}

// Object is a stored payload as [Store.List] reports it.
type Object struct {
	Hash string `json:"hash"`
	// Size is the stored size in bytes.
	Size int64 `json:"size"`
	// ModTime is when it was last stored (a Put of an object the store had renews it).
	ModTime time.Time `json:"modTime"`
}

// hashPattern is what a reference may name: the codec's own hashes and nothing else, so a
// reference sent to the /codec endpoint cannot address another file or key.
var hashPattern = regexp.MustCompile(`^` + hashExpr + `$`)

// hashExpr is the form of the codec's hashes: `sha256:<hex>`, or `hmac-sha256:<key id>:<hex>`.
const hashExpr = `(?:sha256|hmac-sha256:[A-Za-z0-9._-]{1,64}):[0-9a-f]{64}`

// keyIDPattern is what a key id may be.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func checkHash(hash string) error {
	if !hashPattern.MatchString(hash) {
		return contracts.Errorf(contracts.CodePayloadCodec, "kortyx codec: %q is not a payload reference of this codec (sha256:<hex> or hmac-sha256:<key id>:<hex>)", hash)
	}
	return nil
}

// missingError is the error of a reference whose hash the store does not have.
func missingError(hash string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodePayloadMissing,
		Message: fmt.Sprintf("kortyx codec: payload %s is not in the payload store; the store was cleared or this process uses another one (check KORTYX_PAYLOAD_STORE and KORTYX_REDIS_URL)", hash),
		Details: map[string]any{"hash": hash}}
}

// dirStore is a [Store] in a local directory (see [NewDirStore]).
type dirStore struct{ dir string }

// OpenDirStore returns the store of [NewDirStore] in dir without touching the disk: the
// directory is created by the first Put (an unwritable directory then fails that Put). The
// development default uses it, so that a program that stores nothing leaves no directory
// behind.
func OpenDirStore(dir string) Store { return &dirStore{dir: dir} }

// NewDirStore returns a [Store] in the local directory dir (development: one machine),
// creating the directory. One file per hash, written to a temporary name and renamed, so a
// reader never sees half a payload.
func NewDirStore(dir string) (Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kortyx codec: the payload store directory %s: %w", dir, err)
	}
	return &dirStore{dir: dir}, nil
}

func (s *dirStore) path(hash string) string {
	hex := hash[len(hash)-64:]
	return filepath.Join(s.dir, hex[:2], strings.ReplaceAll(hash, ":", "_"))
}

// Put implements [Store].
func (s *dirStore) Put(_ context.Context, hash string, data []byte) error {
	if err := checkHash(hash); err != nil {
		return err
	}
	p := s.path(hash)
	if _, err := os.Stat(p); err == nil {
		now := time.Now()
		if err := os.Chtimes(p, now, now); err != nil && !errors.Is(err, os.ErrNotExist) {
			return storeError(hash, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return storeError(hash, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return storeError(hash, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return storeError(hash, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		_ = os.Remove(f.Name())
		return storeError(hash, err)
	}
	return nil
}

// Get implements [Store].
func (s *dirStore) Get(_ context.Context, hash string) ([]byte, error) {
	if err := checkHash(hash); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(s.path(hash))
	if errors.Is(err, os.ErrNotExist) {
		return nil, missingError(hash)
	}
	if err != nil {
		return nil, storeError(hash, err)
	}
	return b, nil
}

// List implements [Store].
func (s *dirStore) List(ctx context.Context, fn func(Object) error) error {
	return filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return &contracts.Error{Code: contracts.CodePersistenceError, Message: "kortyx codec: listing the payload store directory " + s.dir + " failed", Err: err}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			return nil
		}
		hash := strings.ReplaceAll(d.Name(), "_", ":")
		if !hashPattern.MatchString(hash) {
			return nil // a temporary file, or not ours
		}
		info, err := d.Info()
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return storeError(hash, err)
		}
		return fn(Object{Hash: hash, Size: info.Size(), ModTime: info.ModTime()})
	})
}

// Delete implements [Store]. The check of the modification time and the removal are two
// steps: a Put between them is lost (a payload stored again that moment must be stored again).
func (s *dirStore) Delete(_ context.Context, hash string, notAfter time.Time) (bool, error) {
	if err := checkHash(hash); err != nil {
		return false, err
	}
	p := s.path(hash)
	info, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, storeError(hash, err)
	}
	if info.ModTime().After(notAfter) {
		return false, nil
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, storeError(hash, err)
	}
	return true, nil
}

func storeError(hash string, err error) error {
	return &contracts.Error{Code: contracts.CodePersistenceError, Message: "kortyx codec: the payload store failed for " + hash + "; check that it is reachable and writable", Err: err}
}

// redisStore is a [Store] in Redis (see [NewRedisStore]).
type redisStore struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
	own    bool
}

// RedisOptions configure [NewRedisStore].
type RedisOptions struct {
	// URL is the Redis URL (redis:// or rediss://), used when Client is nil.
	URL string
	// Client is a client of your own (the store never closes it).
	Client redis.UniversalClient
	// Prefix starts every key ("" : "kortyx:payload:").
	Prefix string
	// TTL, when > 0, expires a stored payload that long after it was first stored; 0 keeps it.
	TTL time.Duration
}

// NewRedisStore returns a [Store] in Redis, connected, once Redis answers: one string key per
// hash (prefix + hash), written with SET NX, and a sorted set (prefix + "mtime") of the hashes
// by the time they were last stored, which [Collect] reads. A hash whose time is missing
// (stored before the set existed) counts as old. The store is an [io.Closer]: closing it (or
// the [Codec] it is given to, [Codec.Close]) closes the connection it opened, not a
// [RedisOptions.Client] of your own.
func NewRedisStore(ctx context.Context, o RedisOptions) (Store, error) {
	s := &redisStore{client: o.Client, prefix: o.Prefix, ttl: o.TTL}
	if s.prefix == "" {
		s.prefix = "kortyx:payload:"
	}
	own := false
	if s.client == nil {
		opt, err := redis.ParseURL(o.URL)
		if err != nil {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: the payload store's Redis URL is not a redis:// URL: %v", err)
		}
		s.client, own = redis.NewClient(opt), true
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		if own {
			_ = s.client.Close()
		}
		return nil, &contracts.Error{Code: contracts.CodePersistenceError, Message: "kortyx codec: the payload store's Redis does not answer", Err: err}
	}
	s.own = own
	return s, nil
}

// Close closes the connection the store opened (not a client of your own).
func (s *redisStore) Close() error {
	if !s.own {
		return nil
	}
	return s.client.Close()
}

// Put implements [Store].
func (s *redisStore) Put(ctx context.Context, hash string, data []byte) error {
	if err := checkHash(hash); err != nil {
		return err
	}
	err := s.client.SetNX(ctx, s.prefix+hash, data, max(s.ttl, 0)).Err()
	if err != nil {
		return storeError(hash, err)
	}
	if err := s.client.ZAdd(ctx, s.index(), redis.Z{Score: float64(time.Now().UnixMilli()), Member: hash}).Err(); err != nil {
		return storeError(hash, err)
	}
	return nil
}

func (s *redisStore) index() string { return s.prefix + "mtime" }

// List implements [Store]: SCAN over the prefix. With a TTL, it also drops the times of hashes
// that expired.
func (s *redisStore) List(ctx context.Context, fn func(Object) error) error {
	if s.ttl > 0 {
		old := strconv.FormatInt(time.Now().Add(-s.ttl).UnixMilli(), 10)
		if err := s.client.ZRemRangeByScore(ctx, s.index(), "-inf", "("+old).Err(); err != nil {
			return &contracts.Error{Code: contracts.CodePersistenceError, Message: "kortyx codec: listing the payload store failed", Err: err}
		}
	}
	var cursor uint64
	for {
		keys, next, err := s.client.Scan(ctx, cursor, s.prefix+"*", 500).Result()
		if err != nil {
			return &contracts.Error{Code: contracts.CodePersistenceError, Message: "kortyx codec: listing the payload store failed", Err: err}
		}
		var hashes []string
		for _, k := range keys {
			if h := strings.TrimPrefix(k, s.prefix); hashPattern.MatchString(h) {
				hashes = append(hashes, h)
			}
		}
		if len(hashes) > 0 {
			pipe := s.client.Pipeline()
			sizes := make([]*redis.IntCmd, len(hashes))
			for i, h := range hashes {
				sizes[i] = pipe.StrLen(ctx, s.prefix+h)
			}
			times := pipe.ZMScore(ctx, s.index(), hashes...)
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return &contracts.Error{Code: contracts.CodePersistenceError, Message: "kortyx codec: listing the payload store failed", Err: err}
			}
			ms := times.Val()
			for i, h := range hashes {
				o := Object{Hash: h, Size: sizes[i].Val()}
				if i < len(ms) && ms[i] > 0 {
					o.ModTime = time.UnixMilli(int64(ms[i]))
				}
				if o.Size == 0 {
					continue // expired between SCAN and STRLEN
				}
				if err := fn(o); err != nil {
					return err
				}
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Delete implements [Store]. The check of the time and the removal are two steps (the key and
// the set may live on different cluster nodes): a Put between them is lost.
func (s *redisStore) Delete(ctx context.Context, hash string, notAfter time.Time) (bool, error) {
	if err := checkHash(hash); err != nil {
		return false, err
	}
	score, err := s.client.ZScore(ctx, s.index(), hash).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, storeError(hash, err)
	}
	if err == nil && time.UnixMilli(int64(score)).After(notAfter) {
		return false, nil
	}
	n, err := s.client.Del(ctx, s.prefix+hash).Result()
	if err != nil {
		return false, storeError(hash, err)
	}
	if err := s.client.ZRem(ctx, s.index(), hash).Err(); err != nil {
		return false, storeError(hash, err)
	}
	return n > 0, nil
}

// Get implements [Store].
func (s *redisStore) Get(ctx context.Context, hash string) ([]byte, error) {
	if err := checkHash(hash); err != nil {
		return nil, err
	}
	b, err := s.client.Get(ctx, s.prefix+hash).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, missingError(hash)
	}
	if err != nil {
		return nil, storeError(hash, err)
	}
	return b, nil
}
