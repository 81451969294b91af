package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Dev mode allows the loopback origins by CORS; KORTYX_CORS_ORIGINS adds origins in any mode,
// and an entry that is not an origin stops the program at start.
func TestConfigCORSOrigins(t *testing.T) {
	isolate(t)
	t.Setenv("KORTYX_CORS_ORIGINS", "")
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"}, cfg.CORSOrigins)

	t.Setenv("KORTYX_CORS_ORIGINS", " https://example.com, http://10.0.0.5:* ,")
	cfg = ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*", "https://example.com", "http://10.0.0.5:*"}, cfg.CORSOrigins)

	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	cfg = ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, []string{"https://example.com", "http://10.0.0.5:*"}, cfg.CORSOrigins, "outside dev mode only the listed ones")
	t.Setenv("KORTYX_CORS_ORIGINS", "")
	require.Empty(t, ConfigFromEnv().CORSOrigins, "outside dev mode none by default")

	for _, bad := range []string{"example.com", "https://example.com/chat", "ftp://x", "http://*.example.com", "https://a:*:*"} {
		t.Setenv("KORTYX_CORS_ORIGINS", bad)
		require.ErrorContains(t, ConfigFromEnv().Err(), "KORTYX_CORS_ORIGINS: \""+bad+"\" is not an origin", bad)
	}
	t.Setenv("KORTYX_CORS_ORIGINS", "*")
	require.Equal(t, []string{"*"}, ConfigFromEnv().CORSOrigins)
}
