package codec_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/test/redistest"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

var codecVars = []string{"KORTYX_CODEC_KEYS", "KORTYX_CODEC_KEY_ID", "KORTYX_CODEC_COMPRESS", "KORTYX_PAYLOAD_STORE",
	"KORTYX_PAYLOAD_THRESHOLD", "KORTYX_PAYLOAD_TTL", "KORTYX_REDIS_URL"}

func clearEnv(t *testing.T) {
	for _, k := range codecVars {
		t.Setenv(k, "")
	}
}

func TestFromEnvNothingConfigured(t *testing.T) {
	clearEnv(t)
	c, err := codec.FromEnv(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.Nil(t, c)
	t.Setenv("KORTYX_CODEC_COMPRESS", "false")
	c, err = codec.FromEnv(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.Nil(t, c)

	// Compression alone: no encryption, no store.
	t.Setenv("KORTYX_CODEC_COMPRESS", "true")
	c, err = codec.FromEnv(context.Background(), t.TempDir())
	require.NoError(t, err)
	enc := roundTrip(t, c, jsonPayload(t, strings.Repeat("compressible ", 200)))
	require.Equal(t, encodingGzip, encoding(enc))
}

func TestFromEnvKeys(t *testing.T) {
	clearEnv(t)
	t.Setenv("KORTYX_CODEC_KEYS", "k1:"+b64(key1))
	c, err := codec.FromEnv(context.Background(), "")
	require.NoError(t, err)
	enc, err := c.Encode([]*commonpb.Payload{jsonPayload(t, strings.Repeat("compressible ", 200))})
	require.NoError(t, err)
	require.Equal(t, encodingAESGCM, encoding(enc[0]), "one key needs no KORTYX_CODEC_KEY_ID")
	require.Equal(t, "k1", string(enc[0].Metadata[metadataKeyID]))
	// Compression is on by default: the sealed payload is far smaller than the text.
	require.Less(t, len(enc[0].Data), 400)

	t.Setenv("KORTYX_CODEC_KEYS", "k1:"+b64(key1)+", k2:"+b64(key2))
	t.Setenv("KORTYX_CODEC_KEY_ID", "k2")
	c, err = codec.FromEnv(context.Background(), "")
	require.NoError(t, err)
	dec, err := c.Decode(enc)
	require.NoError(t, err, "a key listed but not used for encryption still decodes")
	require.Equal(t, jsonPayload(t, strings.Repeat("compressible ", 200)).Data, dec[0].Data)
}

func TestFromEnvErrors(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"two keys no id":    {"KORTYX_CODEC_KEYS": "a:" + b64(key1) + ",b:" + b64(key2)},
		"no colon":          {"KORTYX_CODEC_KEYS": b64(key1)},
		"bad base64":        {"KORTYX_CODEC_KEYS": "a:???"},
		"duplicate id":      {"KORTYX_CODEC_KEYS": "a:" + b64(key1) + ",a:" + b64(key2), "KORTYX_CODEC_KEY_ID": "a"},
		"id without keys":   {"KORTYX_CODEC_KEY_ID": "a"},
		"unknown id":        {"KORTYX_CODEC_KEYS": "a:" + b64(key1), "KORTYX_CODEC_KEY_ID": "b"},
		"bad compress":      {"KORTYX_CODEC_COMPRESS": "yes please"},
		"bad threshold":     {"KORTYX_PAYLOAD_STORE": "on", "KORTYX_PAYLOAD_THRESHOLD": "-1"},
		"redis without url": {"KORTYX_PAYLOAD_STORE": "redis"},
		"bad ttl":           {"KORTYX_PAYLOAD_STORE": "on", "KORTYX_PAYLOAD_TTL": "forever"},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			c, err := codec.FromEnv(context.Background(), t.TempDir())
			require.Nil(t, c)
			require.Equal(t, contracts.CodeProviderConfiguration, contracts.CodeOf(err), "%v", err)
		})
	}
}

func TestFromEnvStores(t *testing.T) {
	clearEnv(t)
	dev := filepath.Join(t.TempDir(), "dev")
	t.Setenv("KORTYX_PAYLOAD_STORE", "on")
	t.Setenv("KORTYX_PAYLOAD_THRESHOLD", "100")
	c, err := codec.FromEnv(context.Background(), dev)
	require.NoError(t, err)
	ref := roundTrip(t, c, jsonPayload(t, randomText(2000)))
	require.Equal(t, encodingRef, encoding(ref))
	require.Len(t, storedFiles(t, dev), 1, "on without KORTYX_REDIS_URL: the dev directory")

	srv := redistest.Start(t)
	t.Setenv("KORTYX_REDIS_URL", srv.URL())
	c, err = codec.FromEnv(context.Background(), dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	ref = roundTrip(t, c, jsonPayload(t, randomText(3000)))
	require.Equal(t, encodingRef, encoding(ref))
	require.Len(t, storedFiles(t, dev), 1, "on with KORTYX_REDIS_URL: Redis, not the directory")
}

// randomText is text gzip cannot shrink below the thresholds of the tests.
func randomText(n int) string {
	var b strings.Builder
	x := uint32(2463534242)
	for b.Len() < n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte(byte('a' + x%26))
	}
	return b.String()
}
