package codec_test

import (
	"context"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
)

func listed(t *testing.T, s codec.Store) map[string]codec.Object {
	t.Helper()
	out := map[string]codec.Object{}
	require.NoError(t, s.List(context.Background(), func(o codec.Object) error { out[o.Hash] = o; return nil }))
	return out
}

func keys(m map[string]codec.Object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// StoreBytes seals the data as the codec seals payloads, stores each content once, and
// LoadBytes returns it; an unknown hash is PAYLOAD_MISSING naming it.
func TestStoreBytes(t *testing.T) {
	ctx := context.Background()
	for _, o := range []codec.Options{{}, {Compress: true}, {Compress: true, Keys: map[string][]byte{"k1": key1}, KeyID: "k1"}} {
		store := mustDir(t)
		c := mustNew(t, o).WithStore(store)
		data := []byte(strings.Repeat(`{"role":"tool","content":"zebra"}`, 100))
		h1, err := c.StoreBytes(ctx, data)
		require.NoError(t, err)
		h2, err := c.StoreBytes(ctx, data)
		require.NoError(t, err)
		require.Equal(t, h1, h2, "one hash per content")
		if o.KeyID != "" {
			require.Regexp(t, `^hmac-sha256:k1:[0-9a-f]{64}$`, h1)
		} else {
			require.Regexp(t, `^sha256:[0-9a-f]{64}$`, h1)
		}
		objs := listed(t, store)
		require.Equal(t, []string{h1}, keys(objs))
		if o.Compress {
			require.Less(t, objs[h1].Size, int64(len(data)/4), "compressed")
		}
		got, err := c.LoadBytes(ctx, h1)
		require.NoError(t, err)
		require.Equal(t, data, got)
		raw, err := store.Get(ctx, h1)
		require.NoError(t, err)
		if o.KeyID != "" || o.Compress {
			require.NotContains(t, string(raw), "zebra")
		}
		missing := "sha256:" + strings.Repeat("0", 64)
		_, err = c.LoadBytes(ctx, missing)
		require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(err))
		require.Contains(t, err.Error(), missing)
	}
	_, err := mustNew(t, codec.Options{}).StoreBytes(ctx, []byte("x"))
	require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "no store")
}

// Both stores list what they hold with its time, renew the time on a Put of a hash they have,
// and delete only what was not stored after the cutoff.
func TestStoreListDelete(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rs, err := codec.NewRedisStore(ctx, codec.RedisOptions{URL: srv.URL(), Prefix: "gc:"})
	require.NoError(t, err)
	defer func() { require.NoError(t, rs.(io.Closer).Close()) }()
	for name, s := range map[string]codec.Store{"dir": mustDir(t), "redis": rs} {
		t.Run(name, func(t *testing.T) {
			a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
			require.NoError(t, s.Put(ctx, a, []byte("aaa")))
			before := time.Now()
			time.Sleep(20 * time.Millisecond) // the stores keep times to the millisecond
			require.NoError(t, s.Put(ctx, b, []byte("bbbb")))
			objs := listed(t, s)
			require.Equal(t, []string{a, b}, keys(objs))
			require.Equal(t, int64(3), objs[a].Size)
			require.Equal(t, int64(4), objs[b].Size)
			require.False(t, objs[a].ModTime.After(before))
			require.True(t, objs[b].ModTime.After(before))

			ok, err := s.Delete(ctx, b, before)
			require.NoError(t, err)
			require.False(t, ok, "stored after the cutoff")
			ok, err = s.Delete(ctx, a, before)
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = s.Delete(ctx, a, before)
			require.NoError(t, err)
			require.False(t, ok, "nothing left to delete")
			require.Equal(t, []string{b}, keys(listed(t, s)))
			_, err = s.Get(ctx, a)
			require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(err))

			// A Put of a hash the store has keeps the data and renews the time.
			time.Sleep(20 * time.Millisecond)
			again := time.Now()
			time.Sleep(20 * time.Millisecond)
			require.NoError(t, s.Put(ctx, b, []byte("other")))
			got, err := s.Get(ctx, b)
			require.NoError(t, err)
			require.Equal(t, "bbbb", string(got))
			require.True(t, listed(t, s)[b].ModTime.After(again))
			ok, err = s.Delete(ctx, b, again)
			require.NoError(t, err)
			require.False(t, ok)
		})
	}
}
