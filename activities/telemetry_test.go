package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/testsuite"
)

const secret = "sk-secret-in-provider-text"

type recorded struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	env    *testsuite.TestActivityEnvironment
}

func newRecorded(t *testing.T, model *fake.Model, set *tools.Set) *recorded {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	a, err := activities.New(activities.Config{Stream: stream.NewMemory(stream.MemoryOptions{}), Providers: providers.NewSet(model), DefaultProvider: fake.ID,
		Tools: set, TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a.Register(env)
	return &recorded{spans: spans, reader: reader, env: env}
}

func (r *recorded) metric(t *testing.T, name string) metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// A failed model pass: its span has status Error described by the code alone, error.type, no
// event (the provider's text is not recorded), and its duration carries error.type.
func TestModelPassFailureSpan(t *testing.T) {
	r := newRecorded(t, fake.New(fake.Fail(contracts.CodeProviderHTTPError, false, "upstream said "+secret)), nil)
	_, err := r.env.ExecuteActivity(protocol.ModelActivityName, protocol.ModelPassInput{RunID: "run-1", OpID: "op", SegmentID: "s",
		Model: providers.ModelRef{Provider: fake.ID, Model: "m1"}, Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}})
	require.Equal(t, contracts.CodeProviderHTTPError, contracts.CodeOf(err))
	spans := r.spans.GetSpans()
	require.Len(t, spans, 1)
	sp := spans[0]
	require.Equal(t, "chat m1", sp.Name)
	require.Equal(t, codes.Error, sp.Status.Code)
	require.Equal(t, string(contracts.CodeProviderHTTPError), sp.Status.Description)
	require.Empty(t, sp.Events)
	a := attrMap(sp.Attributes)
	require.Equal(t, string(contracts.CodeProviderHTTPError), a["error.type"])
	require.NotContains(t, a, "gen_ai.usage.input_tokens")
	for _, kv := range sp.Attributes {
		require.NotContains(t, kv.Value.String(), secret)
	}
	h := r.metric(t, activities.MetricOperationDuration).(metricdata.Histogram[float64])
	require.Len(t, h.DataPoints, 1)
	v, ok := h.DataPoints[0].Attributes.Value("error.type")
	require.True(t, ok)
	require.Equal(t, string(contracts.CodeProviderHTTPError), v.AsString())
	require.Nil(t, r.metric(t, activities.MetricTokenUsage), "no tokens for a failed pass")
}

// A tool whose error goes back to the model: is_error true, status Error, kortyx.tool.errors 1
// next to kortyx.tool.calls 1; a successful call adds a call and no error.
func TestToolErrorSpanAndCounters(t *testing.T) {
	fails, err := tools.Func("fails", "Fails.", `{"type":"object"}`, func(ctx context.Context, call tools.Call, in map[string]any) (string, error) {
		if in["ok"] == true {
			return "fine", nil
		}
		return "", errors.New("the database at " + secret + " refused")
	})
	require.NoError(t, err)
	set, err := tools.NewSet(fails)
	require.NoError(t, err)
	r := newRecorded(t, fake.New(), set)
	v, err := r.env.ExecuteActivity(protocol.ToolActivityName, protocol.ToolCallInput{RunID: "run-1", Tool: "fails", ToolCallID: "c1",
		Input: json.RawMessage(`{}`), IdempotencyKey: "run-1:op:c1"})
	require.NoError(t, err)
	var res providers.ToolResult
	require.NoError(t, v.Get(&res))
	require.True(t, res.IsError)
	_, err = r.env.ExecuteActivity(protocol.ToolActivityName, protocol.ToolCallInput{RunID: "run-1", Tool: "fails", ToolCallID: "c2",
		Input: json.RawMessage(`{"ok":true}`), IdempotencyKey: "run-1:op:c2"})
	require.NoError(t, err)

	spans := r.spans.GetSpans()
	require.Len(t, spans, 2)
	bad, good := attrMap(spans[0].Attributes), attrMap(spans[1].Attributes)
	require.Equal(t, "execute_tool fails", spans[0].Name)
	require.Equal(t, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fails", "gen_ai.tool.call.id": "c1",
		"kortyx.tool.idempotency_key": "run-1:op:c1", "kortyx.tool.is_error": true, "error.type": string(contracts.CodeExecutionFailed)}, bad)
	require.Equal(t, codes.Error, spans[0].Status.Code)
	require.False(t, strings.Contains(spans[0].Status.Description, secret))
	require.Equal(t, false, good["kortyx.tool.is_error"])
	require.Equal(t, codes.Unset, spans[1].Status.Code)

	calls := r.metric(t, activities.MetricToolCalls).(metricdata.Sum[int64])
	require.Len(t, calls.DataPoints, 1)
	require.Equal(t, int64(2), calls.DataPoints[0].Value)
	errs := r.metric(t, activities.MetricToolErrors).(metricdata.Sum[int64])
	require.Len(t, errs.DataPoints, 1)
	require.Equal(t, int64(1), errs.DataPoints[0].Value)
}
