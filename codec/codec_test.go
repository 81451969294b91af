package codec_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

var (
	key1 = bytes.Repeat([]byte{1}, 32)
	key2 = bytes.Repeat([]byte{2}, 16)
)

func jsonPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

// The payload encodings and metadata keys the codec writes: persisted in histories, so the
// tests name their values.
const (
	encodingGzip   = "binary/kortyx-gzip"
	encodingAESGCM = "binary/kortyx-aesgcm"
	encodingRef    = "binary/kortyx-ref"
	metadataKeyID  = "kortyx-key-id"
	metadataSize   = "kortyx-size"
)

func encoding(p *commonpb.Payload) string {
	return string(p.GetMetadata()[converter.MetadataEncoding])
}

func mustNew(t *testing.T, o codec.Options) *codec.Codec {
	t.Helper()
	c, err := codec.New(o)
	require.NoError(t, err)
	return c
}

func roundTrip(t *testing.T, c *codec.Codec, p *commonpb.Payload) *commonpb.Payload {
	t.Helper()
	enc, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.Len(t, enc, 1)
	dec, err := c.Decode(enc)
	require.NoError(t, err)
	require.True(t, proto.Equal(p, dec[0]), "decoded %v, want %v", dec[0], p)
	return enc[0]
}

func TestZeroOptionsChangeNothing(t *testing.T) {
	c := mustNew(t, codec.Options{})
	p := jsonPayload(t, map[string]string{"text": strings.Repeat("hello ", 1000)})
	enc := roundTrip(t, c, p)
	require.True(t, proto.Equal(p, enc), "a codec without options must return the payload as it is")
}

func TestCompression(t *testing.T) {
	c := mustNew(t, codec.Options{Compress: true})
	big := jsonPayload(t, strings.Repeat("hello ", 1000))
	enc := roundTrip(t, c, big)
	require.Equal(t, encodingGzip, encoding(enc))
	require.Less(t, len(enc.Data), len(big.Data)/10)

	small := jsonPayload(t, "hello")
	require.True(t, proto.Equal(small, roundTrip(t, c, small)), "payloads under CompressMin stay as they are")

	// Random bytes do not compress: the payload stays as it is.
	noise := make([]byte, 4096)
	_, _ = rand.Read(noise)
	raw := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/plain")}, Data: noise}
	require.Equal(t, "binary/plain", encoding(roundTrip(t, c, raw)))
}

func TestEncryption(t *testing.T) {
	c := mustNew(t, codec.Options{Compress: true, Keys: map[string][]byte{"k1": key1}, KeyID: "k1"})
	for _, text := range []string{"secret user text", strings.Repeat("secret user text ", 500)} {
		p := jsonPayload(t, text)
		enc := roundTrip(t, c, p)
		require.Equal(t, encodingAESGCM, encoding(enc))
		require.Equal(t, "k1", string(enc.Metadata[metadataKeyID]))
		require.Len(t, enc.Metadata, 2)
		require.NotContains(t, string(enc.Data), "secret")
	}
	// Two encodings of the same payload differ (random nonces).
	p := jsonPayload(t, "same")
	a, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	b, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.NotEqual(t, a[0].Data, b[0].Data)
}

func TestKeyRotation(t *testing.T) {
	old := mustNew(t, codec.Options{Keys: map[string][]byte{"k1": key1}, KeyID: "k1"})
	enc, err := old.Encode([]*commonpb.Payload{jsonPayload(t, "before rotation")})
	require.NoError(t, err)

	rotated := mustNew(t, codec.Options{Keys: map[string][]byte{"k1": key1, "k2": key2}, KeyID: "k2"})
	dec, err := rotated.Decode(enc)
	require.NoError(t, err)
	require.True(t, proto.Equal(jsonPayload(t, "before rotation"), dec[0]))
	fresh := roundTrip(t, rotated, jsonPayload(t, "after rotation"))
	require.Equal(t, "k2", string(fresh.Metadata[metadataKeyID]))

	// A codec without k1 names the key it lacks.
	k2only := mustNew(t, codec.Options{Keys: map[string][]byte{"k2": key2}, KeyID: "k2"})
	_, err = k2only.Decode(enc)
	require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), `key id "k1"`)

	// The same id with another key fails authentication, it never returns garbage.
	wrong := mustNew(t, codec.Options{Keys: map[string][]byte{"k1": key2}, KeyID: "k1"})
	_, err = wrong.Decode(enc)
	require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "does not authenticate")
}

func TestTamperedPayloadFails(t *testing.T) {
	c := mustNew(t, codec.Options{Keys: map[string][]byte{"k1": key1}, KeyID: "k1"})
	enc, err := c.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	require.NoError(t, err)
	enc[0].Data[len(enc[0].Data)-1] ^= 1
	_, err = c.Decode(enc)
	require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "%v", err)

	enc[0].Data = enc[0].Data[:5]
	_, err = c.Decode(enc)
	require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "truncated")
}

func TestDecodePassesPlainPayloadsThrough(t *testing.T) {
	c := mustNew(t, codec.Options{Compress: true, Keys: map[string][]byte{"k1": key1}, KeyID: "k1", Store: mustDir(t)})
	nilPayload, err := converter.GetDefaultDataConverter().ToPayload(nil)
	require.NoError(t, err)
	in := []*commonpb.Payload{jsonPayload(t, map[string]int{"a": 1}), nilPayload, {Data: []byte("no metadata")}}
	out, err := c.Decode(in)
	require.NoError(t, err)
	require.Len(t, out, 3)
	for i := range in {
		require.True(t, proto.Equal(in[i], out[i]), "payload %d", i)
	}
}

func TestNewRejectsBadKeys(t *testing.T) {
	for name, o := range map[string]codec.Options{
		"short key":    {Keys: map[string][]byte{"k": []byte("short")}, KeyID: "k"},
		"unknown id":   {Keys: map[string][]byte{"k": key1}, KeyID: "other"},
		"bad id chars": {Keys: map[string][]byte{"a/b": key1}, KeyID: "a/b"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := codec.New(o)
			require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err), "%v", err)
		})
	}
}

func mustDir(t *testing.T) codec.Store {
	t.Helper()
	s, err := codec.NewDirStore(filepath.Join(t.TempDir(), "payloads"))
	require.NoError(t, err)
	return s
}

func storedFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	return files
}

func TestClaimCheckDirStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payloads")
	store, err := codec.NewDirStore(dir)
	require.NoError(t, err)
	c := mustNew(t, codec.Options{Threshold: 1000, Store: store})

	small := jsonPayload(t, strings.Repeat("a", 900))
	require.True(t, proto.Equal(small, roundTrip(t, c, small)), "under the threshold a payload stays in history")
	require.Empty(t, storedFiles(t, dir))

	big := jsonPayload(t, strings.Repeat("b", 5000))
	ref := roundTrip(t, c, big)
	require.Equal(t, encodingRef, encoding(ref))
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, string(ref.Data))
	size := string(ref.Metadata[metadataSize])
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(big)
	require.NoError(t, err)
	require.Equal(t, len(raw), atoi(t, size))

	// The same content is stored once, under the same reference.
	again := roundTrip(t, c, big)
	require.Equal(t, ref.Data, again.Data)
	require.Len(t, storedFiles(t, dir), 1)

	// A missing payload is a typed error naming the hash.
	for _, f := range storedFiles(t, dir) {
		require.NoError(t, os.Remove(f))
	}
	_, err = c.Decode([]*commonpb.Payload{ref})
	require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), string(ref.Data))
	require.Equal(t, string(ref.Data), contracts.FailureOf(err).Details["hash"])

	// A codec without a store says what to configure.
	_, err = mustNew(t, codec.Options{}).Decode([]*commonpb.Payload{ref})
	require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "KORTYX_PAYLOAD_STORE")
}

func TestClaimCheckRejectsForeignReferences(t *testing.T) {
	c := mustNew(t, codec.Options{Store: mustDir(t)})
	for _, h := range []string{"../../etc/passwd", "sha256:../x", "sha256:" + strings.Repeat("A", 64), ""} {
		ref := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingRef)}, Data: []byte(h)}
		_, err := c.Decode([]*commonpb.Payload{ref})
		require.Equal(t, contracts.CodePayloadCodec, contracts.CodeOf(err), "%q: %v", h, err)
	}
}

func TestClaimCheckEncryptedAndCompressed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payloads")
	store, err := codec.NewDirStore(dir)
	require.NoError(t, err)
	c := mustNew(t, codec.Options{Compress: true, Threshold: 200, Keys: map[string][]byte{"k1": key1}, KeyID: "k1", Store: store})
	var text strings.Builder
	for i := range 2000 {
		text.WriteString("secret line ")
		text.WriteByte(byte('a' + i%26))
	}
	p := jsonPayload(t, text.String())
	ref := roundTrip(t, c, p)
	require.Equal(t, encodingRef, encoding(ref))
	require.Regexp(t, `^hmac-sha256:k1:[0-9a-f]{64}$`, string(ref.Data))
	again := roundTrip(t, c, p)
	require.Equal(t, ref.Data, again.Data, "the same content gets the same reference although each encryption differs")
	files := storedFiles(t, dir)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NotContains(t, string(b), "secret")
	require.Contains(t, string(b), encodingAESGCM, "the store holds the encrypted payload")
}

func TestRedisStore(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	store, err := codec.NewRedisStore(ctx, codec.RedisOptions{URL: srv.URL(), Prefix: "t:"})
	require.NoError(t, err)
	c := mustNew(t, codec.Options{Threshold: 100, Store: store})
	defer func() { require.NoError(t, c.Close()) }() // closes the store's connection
	ref := roundTrip(t, c, jsonPayload(t, strings.Repeat("r", 500)))
	require.Equal(t, encodingRef, encoding(ref))

	// Put of a hash the store has keeps the first value.
	require.NoError(t, store.Put(ctx, string(ref.Data), []byte("other")))
	dec, err := c.Decode([]*commonpb.Payload{ref})
	require.NoError(t, err)
	require.True(t, proto.Equal(jsonPayload(t, strings.Repeat("r", 500)), dec[0]))

	_, err = store.Get(ctx, "sha256:"+strings.Repeat("0", 64))
	require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "sha256:"+strings.Repeat("0", 64))

	// With a TTL the key expires.
	expiring, err := codec.NewRedisStore(ctx, codec.RedisOptions{URL: srv.URL(), Prefix: "ttl:", TTL: time.Hour})
	require.NoError(t, err)
	require.NoError(t, expiring.Put(ctx, string(ref.Data), []byte("x")))
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer func() { require.NoError(t, rc.Close()) }()
	ttl, err := rc.TTL(ctx, "ttl:"+string(ref.Data)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute)
	require.LessOrEqual(t, ttl, time.Hour)
	ttl, err = rc.TTL(ctx, "t:"+string(ref.Data)).Result()
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), ttl, "without a TTL the key does not expire")

	// The store is an io.Closer: closing it ends the connection it opened.
	require.NoError(t, expiring.(io.Closer).Close())
	_, err = expiring.Get(ctx, string(ref.Data))
	require.ErrorIs(t, err, redis.ErrClosed)

	srv.Stop()
	_, err = store.Get(ctx, string(ref.Data))
	require.Equal(t, contracts.CodePersistenceError, contracts.CodeOf(err), "%v", err)
}

func TestDataConverterRoundTrip(t *testing.T) {
	c := mustNew(t, codec.Options{Compress: true, Keys: map[string][]byte{"k1": key1}, KeyID: "k1"})
	dc := codec.DataConverter(c)
	type msg struct{ Text string }
	p, err := dc.ToPayload(msg{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, encodingAESGCM, encoding(p))
	var got msg
	require.NoError(t, dc.FromPayload(p, &got))
	require.Equal(t, "hi", got.Text)
	// A payload written before the codec was switched on still decodes.
	plain, err := converter.GetDefaultDataConverter().ToPayload(msg{Text: "old"})
	require.NoError(t, err)
	require.NoError(t, dc.FromPayload(plain, &got))
	require.Equal(t, "old", got.Text)
}

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// In workflow code the converter panics on a payload it cannot decode (the SDK then fails the
// workflow task, which is retried, rather than the run); elsewhere it returns the error.
func TestDataConverterPanicsOnlyInWorkflowCode(t *testing.T) {
	dc := codec.DataConverter(mustNew(t, codec.Options{Store: mustDir(t)}))
	ref := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingRef)}, Data: []byte("sha256:" + strings.Repeat("1", 64))}
	var v any
	err := dc.FromPayload(ref, &v)
	require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(err), "%v", err)
	aware, ok := dc.(converter.ContextAware)
	require.True(t, ok)
	require.Equal(t, contracts.CodePayloadMissing, contracts.CodeOf(aware.WithContext(context.Background()).FromPayload(ref, &v)))
	require.PanicsWithError(t, "kortyx codec: payload sha256:"+strings.Repeat("1", 64)+" is not in the payload store; the store was cleared or this process uses another one (check KORTYX_PAYLOAD_STORE and KORTYX_REDIS_URL)", func() {
		_ = aware.WithWorkflowContext(nil).FromPayload(ref, &v)
	})
	// Plain payloads still decode in workflow code.
	require.NoError(t, aware.WithWorkflowContext(nil).FromPayload(jsonPayload(t, "x"), &v))
	require.Equal(t, "x", v)
	provider, ok := dc.(converter.PayloadCodecProvider)
	require.True(t, ok)
	require.NotNil(t, provider.Codec())
}
