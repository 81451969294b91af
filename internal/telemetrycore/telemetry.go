// Package telemetrycore is the OpenTelemetry configuration of a process without the exporters:
// the type that package telemetry names [Telemetry] and the packages of the programs (app)
// take. Package telemetry adds FromEnv, which links the OTLP, console and Prometheus exporters,
// so that a program that never exports (the starter) does not compile them.
package telemetrycore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
)

// ScopeName is the instrumentation scope of the tracer and meter Kortyx creates its own spans
// and metrics with (the Temporal SDK's are under "temporal-sdk-go", otelhttp's under its own).
const ScopeName = "github.com/kortyx-go/kortyx"

// Options configure [New]. The zero value disables everything.
type Options struct {
	// TracerProvider creates the spans (HTTP, Temporal, model and tool). Nil: no tracing.
	TracerProvider trace.TracerProvider
	// MeterProvider records the metrics (Temporal SDK, HTTP, Kortyx). Nil: no metrics.
	MeterProvider metric.MeterProvider
	// Propagator carries trace context across HTTP and Temporal headers. Nil: W3C trace
	// context and baggage.
	Propagator propagation.TextMapPropagator
	// Metrics is what [Telemetry.Metrics] returns (a Prometheus scrape handler, see
	// [NewPrometheus]); nil when the metrics are exported otherwise.
	Metrics http.Handler
	// Shutdown, when set, is called by [Telemetry.Shutdown] (flush and stop your providers).
	Shutdown func(context.Context) error
	// WaitingRunsInterval is how often [Telemetry.ObserveWaitingRuns] counts the waiting runs
	// (0: 15 s).
	WaitingRunsInterval time.Duration
}

// Telemetry is the OpenTelemetry configuration of a process: build it with telemetry.FromEnv or [New]
// and hand its pieces to the Temporal client, the worker, the HTTP server and the activities.
// Every method of a Telemetry with nothing enabled (and of a nil *Telemetry) does nothing.
type Telemetry struct {
	tp           trace.TracerProvider // nil: tracing disabled
	mp           metric.MeterProvider // nil: metrics disabled
	prop         propagation.TextMapPropagator
	metrics      http.Handler
	shutdown     []func(context.Context) error
	tracing      interceptor.Interceptor
	waitingEvery time.Duration
}

// New returns the telemetry of the given providers (for tests, and programs that build their
// own). It fails only when the Temporal tracing interceptor cannot be built.
func New(o Options) (*Telemetry, error) {
	t := &Telemetry{tp: o.TracerProvider, mp: o.MeterProvider, prop: o.Propagator, metrics: o.Metrics, waitingEvery: o.WaitingRunsInterval}
	if t.waitingEvery <= 0 {
		t.waitingEvery = DefaultWaitingRunsInterval
	}
	if t.prop == nil {
		t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if o.Shutdown != nil {
		t.shutdown = append(t.shutdown, o.Shutdown)
	}
	if t.tp != nil {
		in, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
			Tracer:            t.tp.Tracer("temporal-sdk-go"),
			TextMapPropagator: t.prop,
		})
		if err != nil {
			return nil, fmt.Errorf("kortyx telemetry: the Temporal tracing interceptor: %w", err)
		}
		t.tracing = in
	}
	return t, nil
}

// Enabled reports whether traces or metrics are recorded.
func (t *Telemetry) Enabled() bool { return t != nil && (t.tp != nil || t.mp != nil) }

// TracerProvider is the tracer provider of the spans (a no-op one when tracing is disabled).
// Give it to the activities (activities.Config.TracerProvider).
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return tracenoop.NewTracerProvider()
	}
	return t.tp
}

// MeterProvider is the meter provider of the metrics (a no-op one when metrics are disabled).
// Give it to the activities (activities.Config.MeterProvider).
func (t *Telemetry) MeterProvider() metric.MeterProvider {
	if t == nil || t.mp == nil {
		return metricnoop.NewMeterProvider()
	}
	return t.mp
}

// clientOnly is the tracing interceptor's client side alone: the worker side is added by
// [Telemetry.WorkerOptions], so a worker built from the client does not trace twice.
type clientOnly struct{ interceptor.ClientInterceptor }

// ClientOptions adds the Temporal SDK tracing interceptor (client calls: start, update-with-
// start, signal, query, update) and the SDK metrics handler over the meter to o. A worker built
// from this client gets the metrics handler too (workflow-side metrics go through it), but not
// the tracing of workflows and activities: that is [Telemetry.WorkerOptions].
func (t *Telemetry) ClientOptions(o *client.Options) {
	if t == nil || o == nil {
		return
	}
	if t.tracing != nil {
		o.Interceptors = append(o.Interceptors, clientOnly{t.tracing})
	}
	if t.mp != nil {
		o.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
			Meter:                t.mp.Meter("temporal-sdk-go"),
			UseMonotonicCounters: true,
			// A meter error must not take the worker down (the default panics).
			OnError: func(error) {},
		})
	}
}

// WorkerOptions adds the worker side of the tracing interceptor to o: spans for workflow runs,
// update and signal handlers, activity and child-workflow starts and activity executions,
// continuing the trace carried in the Temporal headers.
func (t *Telemetry) WorkerOptions(o *worker.Options) {
	if t == nil || o == nil || t.tracing == nil {
		return
	}
	o.Interceptors = append(o.Interceptors, t.tracing)
}

// HTTP wraps h in otelhttp: one server span per request (named "<method> <mux pattern>", or the
// method alone when no pattern matched), continuing a
// W3C traceparent of the request, whose context the handler's Temporal calls carry on; plus
// otelhttp's request metrics. With nothing enabled it returns h itself.
func (t *Telemetry) HTTP(h http.Handler) http.Handler {
	if !t.Enabled() {
		return h
	}
	return otelhttp.NewHandler(h, "http.server",
		otelhttp.WithTracerProvider(t.TracerProvider()),
		otelhttp.WithMeterProvider(t.MeterProvider()),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			switch {
			case r.Pattern == "":
				return r.Method
			case strings.Contains(r.Pattern, " "):
				return r.Pattern // "POST /api/chat"
			default:
				return r.Method + " " + r.Pattern
			}
		}))
}

// Metrics is the Prometheus scrape handler (mount it at /metrics), or nil when metrics are not
// exported to Prometheus.
func (t *Telemetry) Metrics() http.Handler {
	if t == nil {
		return nil
	}
	return t.metrics
}

// Shutdown flushes and stops what telemetry.FromEnv started (and calls Options.Shutdown).
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		errs = append(errs, t.shutdown[i](ctx))
	}
	return errors.Join(errs...)
}
