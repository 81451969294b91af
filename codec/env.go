package codec

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
)

// FromEnv builds the codec the environment asks for, or returns nil (and no error) when it asks
// for none, so that payloads stay byte for byte what they are without a codec:
//
//   - KORTYX_CODEC_KEYS: id:base64key,... (keys of 16, 24 or 32 bytes) decrypt payloads;
//   - KORTYX_CODEC_KEY_ID: the key new payloads are encrypted with (may be omitted when there is
//     exactly one key);
//   - KORTYX_CODEC_COMPRESS: true or false; unset, compression is on whenever another codec
//     variable is set;
//   - KORTYX_PAYLOAD_STORE: the claim-check store: "on" (Redis at KORTYX_REDIS_URL when set,
//     else the directory devDir), "redis" (KORTYX_REDIS_URL, which must be set), a redis:// or
//     rediss:// URL, or a directory path;
//   - KORTYX_PAYLOAD_THRESHOLD: bytes from which payloads go to the store (default
//     [DefaultThreshold]);
//   - KORTYX_PAYLOAD_TTL: a Go duration after which Redis expires a stored payload (default:
//     never).
//
// Every process of a deployment (workers, API, starter, replayer) must read the same values.
func FromEnv(ctx context.Context, devDir string) (*Codec, error) {
	var o Options
	set := false
	if v := strings.TrimSpace(os.Getenv("KORTYX_CODEC_KEYS")); v != "" {
		set = true
		o.Keys = map[string][]byte{}
		for _, item := range strings.Split(v, ",") {
			id, b64, ok := strings.Cut(strings.TrimSpace(item), ":")
			if !ok {
				return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_CODEC_KEYS: an entry is not id:base64key (entries are separated by commas)")
			}
			k, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_CODEC_KEYS: the key of id %q is not standard base64 (openssl rand -base64 32 makes one)", id)
			}
			if _, dup := o.Keys[id]; dup {
				return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_CODEC_KEYS: key id %q is listed twice", id)
			}
			o.Keys[id] = k
		}
		o.KeyID = os.Getenv("KORTYX_CODEC_KEY_ID")
		if o.KeyID == "" {
			if len(o.Keys) != 1 {
				return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_CODEC_KEYS has %d keys; set KORTYX_CODEC_KEY_ID to the one new payloads are encrypted with", len(o.Keys))
			}
			for id := range o.Keys {
				o.KeyID = id
			}
		}
	} else if os.Getenv("KORTYX_CODEC_KEY_ID") != "" {
		return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_CODEC_KEY_ID is set without KORTYX_CODEC_KEYS")
	}
	if v := os.Getenv("KORTYX_PAYLOAD_THRESHOLD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_PAYLOAD_THRESHOLD=%q is not a positive number of bytes", v)
		}
		o.Threshold = n
	}
	var ttl time.Duration
	if v := os.Getenv("KORTYX_PAYLOAD_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_PAYLOAD_TTL=%q is not a duration such as 720h", v)
		}
		ttl = d
	}
	store := strings.TrimSpace(os.Getenv("KORTYX_PAYLOAD_STORE"))
	if store != "" {
		set = true
	}
	compress := set
	if v := os.Getenv("KORTYX_CODEC_COMPRESS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_CODEC_COMPRESS=%q: use true or false", v)
		}
		compress = b
		set = set || b
	}
	if !set {
		return nil, nil
	}
	o.Compress = compress
	if store != "" {
		s, err := openStore(ctx, store, devDir, ttl)
		if err != nil {
			return nil, err
		}
		o.Store = s
	}
	c, err := New(o)
	if err != nil {
		_ = c.closeStore(o.Store)
		return nil, err
	}
	return c, nil
}

func openStore(ctx context.Context, v, devDir string, ttl time.Duration) (Store, error) {
	redisURL := os.Getenv("KORTYX_REDIS_URL")
	switch {
	case v == "on" && redisURL == "":
		if devDir == "" {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_PAYLOAD_STORE=on without KORTYX_REDIS_URL needs a directory; set KORTYX_PAYLOAD_STORE to a directory path")
		}
		return NewDirStore(devDir)
	case v == "on" || v == "redis":
		if redisURL == "" {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration, "kortyx codec: KORTYX_PAYLOAD_STORE=redis needs KORTYX_REDIS_URL")
		}
		return NewRedisStore(ctx, RedisOptions{URL: redisURL, TTL: ttl})
	case strings.HasPrefix(v, "redis://") || strings.HasPrefix(v, "rediss://"):
		return NewRedisStore(ctx, RedisOptions{URL: v, TTL: ttl})
	}
	return NewDirStore(v)
}

// Close closes the codec's store when it is an [io.Closer] (a Redis store of [NewRedisStore] or
// [FromEnv]).
func (c *Codec) Close() error { return c.closeStore(c.store) }

func (*Codec) closeStore(s Store) error {
	if cl, ok := s.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}
