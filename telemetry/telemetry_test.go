package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/telemetry"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}

// clearEnv unsets the OTEL_* variables for the test.
func clearEnv(t *testing.T) {
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
}

// requireNoop checks that every method leaves its argument alone.
func requireNoop(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	require.False(t, tel.Enabled())
	var co client.Options
	tel.ClientOptions(&co)
	require.Equal(t, client.Options{}, co)
	var wo worker.Options
	tel.WorkerOptions(&wo)
	require.Equal(t, worker.Options{}, wo)
	h := http.NewServeMux()
	require.Same(t, h, tel.HTTP(h)) // the handler itself, unwrapped
	require.Nil(t, tel.Metrics())
	require.NoError(t, tel.ObserveWaitingRuns(nil))
	require.NoError(t, tel.Shutdown(context.Background()))
}

func TestFromEnvUnsetEnablesNothing(t *testing.T) {
	clearEnv(t)
	tel, err := telemetry.FromEnv(context.Background())
	require.NoError(t, err)
	requireNoop(t, tel)
}

func TestSDKDisabledWins(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_SDK_DISABLED", "true")
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	tel, err := telemetry.FromEnv(context.Background())
	require.NoError(t, err)
	requireNoop(t, tel)
}

func TestNilAndZeroTelemetryAreNoops(t *testing.T) {
	requireNoop(t, nil)
	tel, err := telemetry.New(telemetry.Options{})
	require.NoError(t, err)
	requireNoop(t, tel)
}

func TestFromEnvRejectsUnknownExporters(t *testing.T) {
	for _, tc := range []struct{ name, key, value, want string }{
		{"traces", "OTEL_TRACES_EXPORTER", "zipkin", `OTEL_TRACES_EXPORTER="zipkin" is not supported`},
		{"metrics", "OTEL_METRICS_EXPORTER", "statsd", `OTEL_METRICS_EXPORTER="statsd" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(tc.key, tc.value)
			_, err := telemetry.FromEnv(context.Background())
			require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))
			require.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("protocol", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
		_, err := telemetry.FromEnv(context.Background())
		require.Equal(t, contracts.CodeInvalidInput, contracts.CodeOf(err))
		require.ErrorContains(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json" is not supported`)
	})
}

// OTEL_METRICS_EXPORTER=prometheus: Metrics serves the meter's instruments in the text format,
// with the resource of OTEL_SERVICE_NAME; no tracing is set up.
func TestFromEnvPrometheus(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_SERVICE_NAME", "kortyx-test")
	tel, err := telemetry.FromEnv(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	require.True(t, tel.Enabled())
	var wo worker.Options
	tel.WorkerOptions(&wo)
	require.Empty(t, wo.Interceptors, "no tracing without a trace exporter")
	var co client.Options
	tel.ClientOptions(&co)
	require.Empty(t, co.Interceptors)
	require.NotNil(t, co.MetricsHandler)
	co.MetricsHandler.WithTags(map[string]string{"kortyx_workflow": "w"}).Counter("kortyx.runs.completed").Inc(2)
	c, err := tel.MeterProvider().Meter("t").Int64Counter("kortyx.tool.calls", metric.WithUnit("{call}"))
	require.NoError(t, err)
	c.Add(context.Background(), 3)

	srv := httptest.NewServer(tel.Metrics())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	text := string(b)
	requireSample(t, text, "kortyx_runs_completed_total", `kortyx_workflow="w"`, "2")
	requireSample(t, text, "kortyx_tool_calls_total", `otel_scope_name="t"`, "3")
	requireSample(t, text, "target_info", `service_name="kortyx-test"`, "1")
}

// OTEL_TRACES_EXPORTER=console: tracing on (client and worker interceptors), metrics off.
func TestFromEnvConsoleTraces(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	tel, err := telemetry.FromEnv(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	var co client.Options
	tel.ClientOptions(&co)
	require.Len(t, co.Interceptors, 1)
	require.Nil(t, co.MetricsHandler)
	var wo worker.Options
	tel.WorkerOptions(&wo)
	require.Len(t, wo.Interceptors, 1)
	require.Nil(t, tel.Metrics())
}
