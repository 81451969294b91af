package app

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"github.com/kortyx-go/kortyx/contracts"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/web"
	"github.com/stretchr/testify/require"
)

// isolate clears every variable the configuration reads and points TEMPORAL_CONFIG_FILE at a
// file that does not exist, so that the developer's own ~/.config/temporalio is not read.
func isolate(t *testing.T) string {
	t.Helper()
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE",
		"TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
		"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA", "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
		"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "TEMPORAL_CLIENT_AUTHORITY", "TEMPORAL_CODEC_ENDPOINT", "TEMPORAL_CODEC_AUTH",
		"KORTYX_HTTP_ADDR", "KORTYX_REDIS_URL", "KORTYX_STREAM_RETENTION", "KORTYX_STICKY_CACHE", "KORTYX_STREAM_MAX_RUNS", "KORTYX_LOG_FORMAT", "KORTYX_LOG_LEVEL", "KORTYX_STREAM_URL",
		"KORTYX_WEB_PAGE", "KORTYX_DEV_DB", "KORTYX_FAKE_MODELS", "KORTYX_PRICES", "KORTYX_MCP_STATE_KEY", "KORTYX_MCP_STATELESS",
		"KORTYX_CURRENCY", "KORTYX_ACTION_PRICE", "KORTYX_MAX_TOKENS", "KORTYX_MAX_COST", "KORTYX_BUDGET_WARN_AT", "KORTYX_ON_BUDGET_EXHAUSTED",
		"KORTYX_SESSION_MAX_TOKENS", "KORTYX_SESSION_MAX_COST", "KORTYX_BUSY", "KORTYX_AGENT_MAX_TOKENS", "KORTYX_AGENT_MAX_COST",
		"KORTYX_AGENT_BUDGET_PERIOD", "KORTYX_TENANT_MAX_TOKENS", "KORTYX_TENANT_MAX_COST", "KORTYX_TENANT_BUDGET_PERIOD", "KORTYX_TENANT_HEADER",
		"KORTYX_GRPC_COMPRESSION"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	dir := t.TempDir()
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(dir, "none.toml"))
	return dir
}

func TestConfigDevModeWithoutAnAddress(t *testing.T) {
	isolate(t)
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.True(t, cfg.devMode())
	require.Equal(t, "default", cfg.Namespace)
	require.Equal(t, "127.0.0.1:7233", cfg.address())
	require.True(t, cfg.servesHTTP(), "dev mode serves the HTTP API")
	require.Equal(t, "127.0.0.1:8080", cfg.listenAddr())
	require.True(t, cfg.WebPage, "dev mode serves the chat page")
	require.Equal(t, "temporal.db", cfg.DevDB)
	o, err := cfg.clientOptions()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7233", o.HostPort)
	require.Nil(t, o.ConnectionOptions.TLS)
	require.Nil(t, o.Credentials)
}

func TestConfigRoles(t *testing.T) {
	isolate(t)
	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	cfg := ConfigFromEnv()
	require.False(t, cfg.devMode())
	require.False(t, cfg.servesHTTP(), "a deployed worker serves no API unless KORTYX_HTTP_ADDR is set")
	require.Equal(t, defaultHTTPAddr, cfg.listenAddr(), "--api-only listens here")
	t.Setenv("KORTYX_HTTP_ADDR", ":9090")
	cfg = ConfigFromEnv()
	require.True(t, cfg.servesHTTP())
	require.Equal(t, ":9090", cfg.listenAddr())
	require.False(t, cfg.WebPage, "with a Temporal address the chat page is served only when asked for")
	t.Setenv("KORTYX_WEB_PAGE", "true")
	require.True(t, ConfigFromEnv().WebPage)
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("KORTYX_WEB_PAGE", "false")
	require.False(t, ConfigFromEnv().WebPage, "dev mode too can leave it out")
	t.Setenv("KORTYX_WEB_PAGE", "maybe")
	require.EqualError(t, ConfigFromEnv().Err(), `kortyx: KORTYX_WEB_PAGE="maybe": use true or false`)
}

// TEMPORAL_* variables become the client options: address, namespace, API key (which turns TLS
// on), mTLS client certificate and key, server CA and server name.
func TestConfigTemporalFromEnvironment(t *testing.T) {
	dir := isolate(t)
	ca, cert, key := writeCerts(t, dir)
	t.Setenv("TEMPORAL_ADDRESS", "ns.acct.tmprl.cloud:7233")
	t.Setenv("TEMPORAL_NAMESPACE", "ns.acct")
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", cert)
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", key)
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", ca)
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "temporal.internal")
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.False(t, cfg.devMode())
	o, err := cfg.clientOptions()
	require.NoError(t, err)
	require.Equal(t, "ns.acct.tmprl.cloud:7233", o.HostPort)
	require.Equal(t, "ns.acct", o.Namespace)
	tc := o.ConnectionOptions.TLS
	require.NotNil(t, tc)
	require.Equal(t, "temporal.internal", tc.ServerName)
	require.Len(t, tc.Certificates, 1)
	leaf, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0])
	require.NoError(t, err)
	require.Equal(t, "kortyx-worker", leaf.Subject.CommonName)
	require.NotNil(t, tc.RootCAs)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: tc.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "the CA of TEMPORAL_TLS_SERVER_CA_CERT_PATH is the pool")
	require.Nil(t, o.Credentials)
	require.NotNil(t, o.Logger)

	// A key that is not there: the error names the variables to fix.
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", filepath.Join(dir, "missing.key"))
	_, err = ConfigFromEnv().clientOptions()
	require.ErrorContains(t, err, "TEMPORAL_TLS_*")
	require.ErrorContains(t, err, "missing.key")
}

func TestConfigAPIKeyTurnsOnTLS(t *testing.T) {
	isolate(t)
	t.Setenv("TEMPORAL_ADDRESS", "ns.acct.tmprl.cloud:7233")
	t.Setenv("TEMPORAL_NAMESPACE", "ns.acct")
	t.Setenv("TEMPORAL_API_KEY", "secret-key")
	o, err := ConfigFromEnv().clientOptions()
	require.NoError(t, err)
	require.NotNil(t, o.ConnectionOptions.TLS, "an API key implies TLS")
	require.NotNil(t, o.Credentials)

	// TEMPORAL_TLS=false turns it off explicitly (a local proxy).
	t.Setenv("TEMPORAL_TLS", "false")
	o, err = ConfigFromEnv().clientOptions()
	require.NoError(t, err)
	require.True(t, o.ConnectionOptions.TLSDisabled)
}

// A profile of the standard config file: its address ends dev mode; TEMPORAL_* variables win
// over it; an unknown TEMPORAL_PROFILE is an error that says where it looked.
func TestConfigProfileFile(t *testing.T) {
	dir := isolate(t)
	file := filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(file, []byte(`
[profile.default]
address = "localhost:7233"

[profile.prod]
address = "prod.example:7233"
namespace = "agents"
api_key = "from-file"
`), 0o600))
	t.Setenv("TEMPORAL_CONFIG_FILE", file)
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, "localhost:7233", cfg.TemporalAddress)
	require.False(t, cfg.devMode())

	t.Setenv("TEMPORAL_PROFILE", "prod")
	cfg = ConfigFromEnv()
	require.Equal(t, "prod.example:7233", cfg.address())
	require.Equal(t, "agents", cfg.Namespace)
	require.Equal(t, "from-file", cfg.Temporal.APIKey)
	t.Setenv("TEMPORAL_NAMESPACE", "override")
	require.Equal(t, "override", ConfigFromEnv().Namespace)

	t.Setenv("TEMPORAL_PROFILE", "staging")
	cfg = ConfigFromEnv()
	require.ErrorContains(t, cfg.Err(), "unable to find profile staging")
	_, err := cfg.clientOptions()
	require.Equal(t, cfg.Err(), err)
	_, err = connect(context.Background(), &cfg, os.Stdout)
	require.Equal(t, cfg.Err(), err, "Connect refuses it before starting anything")
}

func TestConfigKortyxVariables(t *testing.T) {
	isolate(t)
	t.Setenv("KORTYX_REDIS_URL", "redis://redis:6379/0")
	t.Setenv("KORTYX_STREAM_RETENTION", "36h")
	t.Setenv("KORTYX_STREAM_MAX_RUNS", "12")
	t.Setenv("KORTYX_LOG_FORMAT", "json")
	t.Setenv("KORTYX_LOG_LEVEL", "debug")
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, "redis://redis:6379/0", cfg.RedisURL)
	require.Equal(t, 36*time.Hour, cfg.StreamRetention)
	require.Equal(t, 12, cfg.StreamMaxRuns)
	require.Equal(t, "json", cfg.LogFormat)
	require.Equal(t, slog.LevelDebug, cfg.LogLevel)
	require.False(t, cfg.FakeModels)
	t.Setenv("KORTYX_FAKE_MODELS", "1")
	require.True(t, ConfigFromEnv().FakeModels)

	for _, tc := range []struct{ key, value, want string }{
		{"KORTYX_STREAM_RETENTION", "1 day", `KORTYX_STREAM_RETENTION="1 day" is not a duration`},
		{"KORTYX_STREAM_RETENTION", "-1h", `KORTYX_STREAM_RETENTION="-1h" is not a duration`},
		{"KORTYX_STREAM_MAX_RUNS", "-3", `KORTYX_STREAM_MAX_RUNS="-3" is not a positive number of runs`},
		{"KORTYX_STICKY_CACHE", "0", `KORTYX_STICKY_CACHE="0" is not a positive number of workflow executions`},
		{"KORTYX_STICKY_CACHE", "lots", `KORTYX_STICKY_CACHE="lots" is not a positive number of workflow executions`},
		{"KORTYX_LOG_FORMAT", "xml", `KORTYX_LOG_FORMAT="xml": use text or json`},
		{"KORTYX_GRPC_COMPRESSION", "zstd", `KORTYX_GRPC_COMPRESSION="zstd": use none (the default) or gzip`},
		{"KORTYX_LOG_LEVEL", "verbose", `KORTYX_LOG_LEVEL="verbose": use debug, info, warn or error`},
		{"KORTYX_LOG_LEVEL", "info+2", `KORTYX_LOG_LEVEL="info+2": use debug, info, warn or error`},
		{"KORTYX_FAKE_MODELS", "yes", `KORTYX_FAKE_MODELS="yes": use 1 (the in-process scripted fake model) or 0`},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			isolate(t)
			t.Setenv(tc.key, tc.value)
			require.ErrorContains(t, ConfigFromEnv().Err(), tc.want)
		})
	}
}

// testCA is a certificate authority of a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kortyx-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, der: der}
}

// issue returns a certificate for cn (a client certificate, or a server certificate for the
// DNS name cn) signed by the CA, and its key, as PEM.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.DNSNames = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []string{cn}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// writeCerts writes a CA and a client certificate and key signed by it; it returns their paths.
func writeCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	c := newCA(t)
	certPEM, keyPEM := c.issue(t, "kortyx-worker", false)
	return writeFile(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})),
		writeFile(t, dir, "client.pem", certPEM), writeFile(t, dir, "client.key", keyPEM)
}

// The sticky workflow cache: KORTYX_STICKY_CACHE when set; else defaultDevStickyCacheSize in dev
// mode and the SDK's default (left alone: 0) with a Temporal address.
func TestConfigStickyCache(t *testing.T) {
	isolate(t)
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Zero(t, cfg.StickyCacheSize)
	require.Equal(t, defaultDevStickyCacheSize, cfg.stickyCache())
	require.Equal(t, 200, defaultDevStickyCacheSize)

	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	cfg = ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Zero(t, cfg.stickyCache(), "outside dev mode the SDK's default stays")

	t.Setenv("KORTYX_STICKY_CACHE", "64")
	cfg = ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Equal(t, 64, cfg.StickyCacheSize)
	require.Equal(t, 64, cfg.stickyCache())
}

// The worker's default budget from the environment; each bad variable is named.
func TestConfigBudget(t *testing.T) {
	isolate(t)
	t.Setenv("KORTYX_MAX_TOKENS", "200000")
	t.Setenv("KORTYX_MAX_COST", "2.5")
	t.Setenv("KORTYX_BUDGET_WARN_AT", "0.9")
	t.Setenv("KORTYX_ON_BUDGET_EXHAUSTED", "fail")
	c := ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, contracts.Limits{MaxTokens: 200000, MaxCost: 2.5, BudgetWarnAt: 0.9, OnBudgetExhausted: "fail"}, c.Budget)
	require.Zero(t, c.SessionBudget)
	t.Setenv("KORTYX_SESSION_MAX_TOKENS", "1000000")
	t.Setenv("KORTYX_SESSION_MAX_COST", "10")
	c = ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, contracts.Limits{MaxTokens: 1000000, MaxCost: 10, OnBudgetExhausted: "fail"}, c.SessionBudget)
	for k, v := range map[string]string{"KORTYX_MAX_TOKENS": "lots", "KORTYX_MAX_COST": "-1", "KORTYX_BUDGET_WARN_AT": "NaN", "KORTYX_ON_BUDGET_EXHAUSTED": "later",
		"KORTYX_SESSION_MAX_TOKENS": "-5", "KORTYX_SESSION_MAX_COST": "ten"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			require.ErrorContains(t, ConfigFromEnv().Err(), "kortyx: "+k+"=")
		})
	}
}

// The agents' and tenants' shared budgets from the environment (docs/budgets.md), with the
// run budget's OnBudgetExhausted and warning share; each bad variable is named.
func TestConfigSharedBudgets(t *testing.T) {
	isolate(t)
	c := ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Zero(t, c.AgentBudget)
	require.Zero(t, c.TenantBudget)
	require.Empty(t, c.TenantHeader)
	t.Setenv("KORTYX_AGENT_MAX_TOKENS", "1000000")
	t.Setenv("KORTYX_AGENT_BUDGET_PERIOD", "day")
	t.Setenv("KORTYX_TENANT_MAX_COST", "50")
	t.Setenv("KORTYX_TENANT_BUDGET_PERIOD", "month")
	t.Setenv("KORTYX_TENANT_HEADER", "X-Tenant")
	t.Setenv("KORTYX_ON_BUDGET_EXHAUSTED", "fail")
	c = ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, contracts.ScopeBudget{MaxTokens: 1000000, Period: "day", OnBudgetExhausted: "fail"}, c.AgentBudget)
	require.Equal(t, contracts.ScopeBudget{MaxCost: 50, Period: "month", OnBudgetExhausted: "fail"}, c.TenantBudget)
	require.Equal(t, "X-Tenant", c.TenantHeader)
	for k, v := range map[string]string{"KORTYX_AGENT_MAX_TOKENS": "-1", "KORTYX_AGENT_MAX_COST": "much", "KORTYX_AGENT_BUDGET_PERIOD": "week",
		"KORTYX_TENANT_MAX_TOKENS": "1e6", "KORTYX_TENANT_MAX_COST": "-3", "KORTYX_TENANT_BUDGET_PERIOD": "year"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			require.ErrorContains(t, ConfigFromEnv().Err(), "kortyx: "+k+"=")
		})
	}
}

// KORTYX_BUSY is every wire's default busy policy (docs/steering.md); another word stops the
// program at start.
func TestConfigBusy(t *testing.T) {
	isolate(t)
	require.Empty(t, ConfigFromEnv().Busy)
	t.Setenv("KORTYX_BUSY", "steer")
	c := ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, "steer", c.Busy)
	t.Setenv("KORTYX_BUSY", "later")
	require.ErrorContains(t, ConfigFromEnv().Err(), `kortyx: KORTYX_BUSY="later": use reject, enqueue, interrupt or steer`)
}

func TestConfigPrices(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"openai:gpt-4.1-mini": {"input": 0.4, "output": 1.6}}`), 0o644))
	t.Setenv("KORTYX_PRICES", path)
	c := ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, map[string]web.Price{"openai:gpt-4.1-mini": {Input: 0.4, Output: 1.6}}, c.Prices)
	t.Setenv("KORTYX_PRICES", filepath.Join(dir, "none.json"))
	require.ErrorContains(t, ConfigFromEnv().Err(), "kortyx: the price table (KORTYX_PRICES): open ")
}

// KORTYX_MCP_STATE_KEY: base64 (any of the four alphabets and paddings) of at least 32 bytes;
// anything else stops the program at start with what to give.
func TestConfigMCPStateKey(t *testing.T) {
	isolate(t)
	cfg := ConfigFromEnv()
	require.NoError(t, cfg.Err())
	require.Nil(t, cfg.MCPStateKey, "unset: a random key per process")
	require.True(t, cfg.MCPStateless, "on in dev mode")
	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	require.False(t, ConfigFromEnv().MCPStateless, "off with a Temporal address")
	t.Setenv("KORTYX_MCP_STATELESS", "true")
	require.True(t, ConfigFromEnv().MCPStateless)
	t.Setenv("KORTYX_MCP_STATELESS", "maybe")
	require.EqualError(t, ConfigFromEnv().Err(), `kortyx: KORTYX_MCP_STATELESS="maybe": use true or false`)
	t.Setenv("KORTYX_MCP_STATELESS", "")

	key := bytes.Repeat([]byte{0xfb, 0xff, 0x01}, 11) // 33 bytes, with + and / in standard base64
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		t.Setenv("KORTYX_MCP_STATE_KEY", " "+enc.EncodeToString(key)+"\n")
		cfg = ConfigFromEnv()
		require.NoError(t, cfg.Err())
		require.Equal(t, key, cfg.MCPStateKey)
	}
	t.Setenv("KORTYX_MCP_STATE_KEY", base64.StdEncoding.EncodeToString(key[:16]))
	require.EqualError(t, ConfigFromEnv().Err(), "kortyx: KORTYX_MCP_STATE_KEY has 16 bytes: give at least 32 random bytes, base64 (openssl rand -base64 32)")
	t.Setenv("KORTYX_MCP_STATE_KEY", "not base64!")
	require.EqualError(t, ConfigFromEnv().Err(), "kortyx: KORTYX_MCP_STATE_KEY is not base64: give at least 32 random bytes, base64 (openssl rand -base64 32)")
}

// KORTYX_CURRENCY and KORTYX_ACTION_PRICE reach the studio's options; unset, the studio's
// defaults apply (nil price); a price that is not a non-negative number stops the program.
func TestConfigActionPrice(t *testing.T) {
	isolate(t)
	c := ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, "", c.Currency)
	require.Nil(t, c.ActionPrice)
	t.Setenv("KORTYX_CURRENCY", "EUR")
	t.Setenv("KORTYX_ACTION_PRICE", "0")
	c = ConfigFromEnv()
	require.NoError(t, c.Err())
	require.Equal(t, "EUR", c.Currency)
	require.NotNil(t, c.ActionPrice)
	require.Equal(t, 0.0, *c.ActionPrice)
	t.Setenv("KORTYX_ACTION_PRICE", "-1")
	require.ErrorContains(t, ConfigFromEnv().Err(), `kortyx: KORTYX_ACTION_PRICE="-1" is not a price per million Temporal actions, such as 25 (0 for a server that bills none)`)
}
