package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/telemetrycore"
	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Options configure [New]. The zero value disables everything.
type Options = telemetrycore.Options

// Telemetry is the OpenTelemetry configuration of a process: build it with [FromEnv] or [New]
// and hand its pieces to the Temporal client, the worker, the HTTP server and the activities.
// Every method of a Telemetry with nothing enabled (and of a nil *Telemetry) does nothing.
type Telemetry = telemetrycore.Telemetry

// New returns the telemetry of the given providers (for tests, and programs that build their
// own). It fails only when the Temporal tracing interceptor cannot be built.
func New(o Options) (*Telemetry, error) { return telemetrycore.New(o) }

// NewPrometheus returns a metric reader that exports to a Prometheus registry of its own and
// the handler that serves that registry in the Prometheus text format.
func NewPrometheus() (sdkmetric.Reader, http.Handler, error) {
	reg := promclient.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("kortyx telemetry: the Prometheus exporter: %w", err)
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

func configError(format string, args ...any) error {
	return contracts.Errorf(contracts.CodeInvalidInput, "kortyx telemetry: "+format, args...)
}

// FromEnv builds the telemetry from the standard OpenTelemetry variables; with none set it
// enables nothing:
//
//   - OTEL_SDK_DISABLED=true disables everything.
//   - Traces: OTEL_TRACES_EXPORTER=otlp (also implied by OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT when OTEL_TRACES_EXPORTER is unset), console (stdout) or
//     none. OTLP speaks OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL: grpc or
//     http/protobuf (the default); the exporters read their endpoint, headers and TLS
//     variables themselves.
//   - Metrics: OTEL_METRICS_EXPORTER=prometheus (served by [Telemetry.Metrics]), otlp (protocol
//     as for traces, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL first) or none.
//   - The resource: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// A value it does not know fails with INVALID_INPUT naming the variable.
func FromEnv(ctx context.Context) (*Telemetry, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return New(Options{})
	}
	traces := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if traces == "" && (os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		traces = "otlp"
	}
	metrics := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")))
	switch traces {
	case "", "none", "otlp", "console":
	default:
		return nil, configError("OTEL_TRACES_EXPORTER=%q is not supported: use otlp, console or none", traces)
	}
	switch metrics {
	case "", "none", "otlp", "prometheus":
	default:
		return nil, configError("OTEL_METRICS_EXPORTER=%q is not supported: use prometheus, otlp or none", metrics)
	}
	if (traces == "" || traces == "none") && (metrics == "" || metrics == "none") {
		return New(Options{})
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "unknown_service:"+filepath.Base(os.Args[0]))),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, configError("OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME: %v", err)
	}
	var o Options
	var stops []func(context.Context) error
	fail := func(err error) (*Telemetry, error) {
		for _, s := range stops {
			_ = s(ctx)
		}
		return nil, err
	}
	switch traces {
	case "otlp", "console":
		var exp sdktrace.SpanExporter
		if traces == "console" {
			exp, err = stdouttrace.New()
		} else {
			switch p := protocol("TRACES"); p {
			case "grpc":
				exp, err = otlptracegrpc.New(ctx)
			case "http/protobuf":
				exp, err = otlptracehttp.New(ctx)
			default:
				err = configError("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: use grpc or http/protobuf", p)
			}
		}
		if err != nil {
			return fail(fmt.Errorf("kortyx telemetry: the %s trace exporter: %w", traces, err))
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		stops = append(stops, tp.Shutdown)
		o.TracerProvider = tp
	}
	switch metrics {
	case "otlp", "prometheus":
		var reader sdkmetric.Reader
		if metrics == "prometheus" {
			reader, o.Metrics, err = NewPrometheus()
		} else {
			var exp sdkmetric.Exporter
			switch p := protocol("METRICS"); p {
			case "grpc":
				exp, err = otlpmetricgrpc.New(ctx)
			case "http/protobuf":
				exp, err = otlpmetrichttp.New(ctx)
			default:
				err = configError("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: use grpc or http/protobuf", p)
			}
			if err == nil {
				reader = sdkmetric.NewPeriodicReader(exp)
			}
		}
		if err != nil {
			return fail(fmt.Errorf("kortyx telemetry: the %s metric exporter: %w", metrics, err))
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		stops = append(stops, mp.Shutdown)
		o.MeterProvider = mp
	}
	o.Shutdown = func(ctx context.Context) error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i](ctx))
		}
		return errors.Join(errs...)
	}
	t, err := New(o)
	if err != nil {
		return fail(err)
	}
	return t, nil
}

// protocol is OTEL_EXPORTER_OTLP_<signal>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf (the specification's default).
func protocol(signal string) string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.ToLower(strings.TrimSpace(os.Getenv(k))); v != "" {
			return v
		}
	}
	return "http/protobuf"
}
