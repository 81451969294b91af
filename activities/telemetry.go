package activities

import (
	"context"
	"errors"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// The instrumentation scope of the activities' spans and metrics.
const scopeName = "github.com/kortyx-go/kortyx"

// The metrics of the activities. The gen_ai.* ones follow the OpenTelemetry GenAI semantic
// conventions; kortyx.* are ours.
const (
	// metricOperationDuration is the duration of a model pass (histogram, s).
	metricOperationDuration = "gen_ai.client.operation.duration"
	// metricTokenUsage is the tokens of a model pass by gen_ai.token.type (histogram, {token}).
	metricTokenUsage = "gen_ai.client.token.usage"
	// metricTimeToFirstChunk is the time from the request to the first streamed delta
	// (histogram, s; streamed passes only).
	metricTimeToFirstChunk = "gen_ai.client.operation.time_to_first_chunk"
	// metricToolCalls counts tool calls by gen_ai.tool.name ({call}).
	metricToolCalls = "kortyx.tool.calls"
	// metricToolErrors counts tool calls that failed or returned isError, by gen_ai.tool.name
	// and error.type ({call}).
	metricToolErrors = "kortyx.tool.errors"
	// metricPublishLag is the time from the publish activity's scheduling (when the workflow
	// flushed its chunks) to their append to the stream (histogram, s).
	metricPublishLag = "kortyx.stream.publish.lag"
)

// tokenBuckets are the boundaries the conventions give for gen_ai.client.token.usage.
var tokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}

// durationBuckets are the boundaries the conventions give for gen_ai.client.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}

func (a *Activities) tracer() trace.Tracer {
	if a.TracerProvider != nil {
		return a.TracerProvider.Tracer(scopeName)
	}
	return otel.GetTracerProvider().Tracer(scopeName)
}

func (a *Activities) meter() metric.Meter {
	if a.MeterProvider != nil {
		return a.MeterProvider.Meter(scopeName)
	}
	return otel.GetMeterProvider().Meter(scopeName)
}

// errorType is the error.type of err: its Kortyx code, the ApplicationError type, or a
// cancellation/timeout, never the error's text (provider text may carry anything).
func errorType(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return string(contracts.CodeExecutionCancelled)
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() != "" {
		return ae.Type()
	}
	if c := contracts.CodeOf(err); c != "" {
		return string(c)
	}
	return "_OTHER"
}

// endWithError records err on span as its status (the code only) and ends it.
func endWithError(ctx context.Context, span trace.Span, err error) string {
	typ := errorType(ctx, err)
	span.SetAttributes(attribute.String("error.type", typ))
	span.SetStatus(codes.Error, typ)
	span.End()
	return typ
}

// modelPass is the span and the metrics of one model pass.
type modelPass struct {
	a     *Activities
	span  trace.Span
	attrs []attribute.KeyValue
	start time.Time
	first time.Duration // time to the first delta; 0 before it
}

func (a *Activities) startModelPass(ctx context.Context, ref providers.ModelRef) (context.Context, *modelPass) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", ref.Provider),
		attribute.String("gen_ai.request.model", ref.Model),
	}
	ctx, span := a.tracer().Start(ctx, "chat "+ref.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, &modelPass{a: a, span: span, attrs: attrs, start: time.Now()}
}

// delta notes a streamed delta (the first one sets the time to first chunk).
func (p *modelPass) delta() {
	if p.first == 0 {
		p.first = max(time.Since(p.start), time.Nanosecond)
	}
}

func (p *modelPass) end(ctx context.Context, resp protocol.ModelPassResult, err error) {
	m := p.a.meter()
	dur, _ := m.Float64Histogram(metricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a model pass."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	attrs := p.attrs
	if err != nil {
		typ := endWithError(ctx, p.span, err)
		dur.Record(ctx, time.Since(p.start).Seconds(), metric.WithAttributes(append(attrs, attribute.String("error.type", typ))...))
		return
	}
	if model, ok := resp.ProviderMetadata["model"].(string); ok && model != "" {
		p.span.SetAttributes(attribute.String("gen_ai.response.model", model))
	}
	p.span.SetAttributes(
		attribute.Int("gen_ai.usage.input_tokens", resp.Usage.Input),
		attribute.Int("gen_ai.usage.output_tokens", resp.Usage.Output),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason.Unified}))
	ttft, _ := m.Float64Histogram(metricTimeToFirstChunk, metric.WithUnit("s"),
		metric.WithDescription("Time from a model request to its first streamed chunk."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	if p.first > 0 {
		p.span.SetAttributes(attribute.Float64("gen_ai.response.time_to_first_chunk", p.first.Seconds()))
		ttft.Record(ctx, p.first.Seconds(), metric.WithAttributes(attrs...))
	}
	p.span.End()
	dur.Record(ctx, time.Since(p.start).Seconds(), metric.WithAttributes(attrs...))
	tokens, _ := m.Int64Histogram(metricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of a model pass, by gen_ai.token.type."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	tokens.Record(ctx, int64(resp.Usage.Input), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
	tokens.Record(ctx, int64(resp.Usage.Output), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
}

// startTool starts the span of one tool call.
func (a *Activities) startTool(ctx context.Context, in protocol.ToolCallInput) (context.Context, trace.Span) {
	return a.tracer().Start(ctx, "execute_tool "+in.Tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", in.Tool),
		attribute.String("gen_ai.tool.call.id", in.ToolCallID),
		attribute.String("kortyx.tool.idempotency_key", in.IdempotencyKey)))
}

func (a *Activities) endTool(ctx context.Context, span trace.Span, in protocol.ToolCallInput, res providers.ToolResult, err error) {
	m := a.meter()
	calls, _ := m.Int64Counter(metricToolCalls, metric.WithUnit("{call}"), metric.WithDescription("Tool calls, by tool."))
	errs, _ := m.Int64Counter(metricToolErrors, metric.WithUnit("{call}"), metric.WithDescription("Tool calls that failed or returned an error result, by tool."))
	name := attribute.String("gen_ai.tool.name", in.Tool)
	calls.Add(ctx, 1, metric.WithAttributes(name))
	span.SetAttributes(attribute.Bool("kortyx.tool.is_error", err != nil || res.IsError))
	switch {
	case err != nil:
		typ := endWithError(ctx, span, err)
		errs.Add(ctx, 1, metric.WithAttributes(name, attribute.String("error.type", typ)))
	case res.IsError:
		typ := "tool_error"
		if res.Failure != nil && res.Failure.Code != "" {
			typ = string(res.Failure.Code)
		}
		span.SetAttributes(attribute.String("error.type", typ))
		span.SetStatus(codes.Error, typ)
		span.End()
		errs.Add(ctx, 1, metric.WithAttributes(name, attribute.String("error.type", typ)))
	default:
		span.End()
	}
}

// recordPublishLag records the time from the publish activity's scheduling to now.
func (a *Activities) recordPublishLag(ctx context.Context) {
	if !activity.IsActivity(ctx) {
		return
	}
	scheduled := activity.GetInfo(ctx).ScheduledTime
	if scheduled.IsZero() {
		return
	}
	lag, _ := a.meter().Float64Histogram(metricPublishLag, metric.WithUnit("s"),
		metric.WithDescription("Time from a chunk publication's scheduling by the workflow to its append to the stream."))
	lag.Record(ctx, time.Since(scheduled).Seconds())
}
