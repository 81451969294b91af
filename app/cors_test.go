package app_test

import (
	"testing"

	"github.com/kortyx-go/kortyx/app"
	"github.com/stretchr/testify/require"
)

// Dev mode allows the loopback origins by CORS; KORTYX_CORS_ORIGINS adds origins in any mode,
// and an entry that is not an origin stops the program at start.
func TestConfigCORSOrigins(t *testing.T) {
	isolate(t)
	t.Setenv("KORTYX_CORS_ORIGINS", "")
	cfg := app.ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"}, cfg.CORSOrigins)

	t.Setenv("KORTYX_CORS_ORIGINS", " https://app.example.com, http://10.0.0.5:* ,")
	cfg = app.ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*", "https://app.example.com", "http://10.0.0.5:*"}, cfg.CORSOrigins)

	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	cfg = app.ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, []string{"https://app.example.com", "http://10.0.0.5:*"}, cfg.CORSOrigins, "outside dev mode only the listed ones")
	t.Setenv("KORTYX_CORS_ORIGINS", "")
	require.Empty(t, app.ConfigFromEnv().CORSOrigins, "outside dev mode none by default")

	for _, bad := range []string{"app.example.com", "https://app.example.com/chat", "ftp://x", "http://*.example.com", "https://a:*:*"} {
		t.Setenv("KORTYX_CORS_ORIGINS", bad)
		require.ErrorContains(t, app.ConfigFromEnv().Err(), "KORTYX_CORS_ORIGINS: \""+bad+"\" is not an origin", bad)
	}
	t.Setenv("KORTYX_CORS_ORIGINS", "*")
	require.Equal(t, []string{"*"}, app.ConfigFromEnv().CORSOrigins)
}
