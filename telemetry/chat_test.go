package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kortyx-go/kortyx/sessions"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/chat"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/telemetry"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const (
	agentID   = "otel-agent"
	modelName = "test-model"
	toolName  = "lookup"
	boomID    = "otel-boom"  // fails
	askerID   = "otel-asker" // waits for an answer
)

// The fake's two passes: one tool call, then text; their usage is what the metrics must sum.
var (
	callUsage = providers.Usage{Input: 11, Output: 2, Total: 13}
	textUsage = providers.Usage{Input: 20, Output: 5, Total: 25}
)

type stack struct {
	spans   *tracetest.InMemoryExporter
	reader  *sdkmetric.ManualReader
	tel     *telemetry.Telemetry
	c       client.Client
	url     string
	metrics *httptest.Server
	tq      string
}

// startStack runs a worker and the chat route, both with the telemetry of an in-memory span
// exporter, a manual metric reader and a Prometheus exporter.
func startStack(t *testing.T) *stack {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	prom, scrape, err := telemetry.NewPrometheus()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithReader(prom))
	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Metrics: scrape, WaitingRunsInterval: 100 * time.Millisecond,
		Shutdown: func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })

	co := client.Options{HostPort: srv.Address(), Logger: quietLogger()}
	tel.ClientOptions(&co)
	c, err := client.Dial(co)
	require.NoError(t, err)
	t.Cleanup(c.Close)

	lookup, err := tools.Func(toolName, "Looks a word up.", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`,
		func(ctx context.Context, call tools.Call, in struct{ Q string }) (map[string]string, error) {
			return map[string]string{"found": in.Q}, nil
		})
	require.NoError(t, err)
	set, err := tools.NewSet(lookup)
	require.NoError(t, err)
	model := fake.New(
		fake.Turn{ToolCalls: []providers.ToolCall{{ID: "call-1", Name: toolName, Arguments: json.RawMessage(`{"q":"otel"}`)}}, Usage: callUsage},
		fake.Turn{Text: "Found it.", Deltas: []string{"Found ", "it."}, Usage: textUsage})
	broker := stream.NewMemory(stream.MemoryOptions{})
	acts, err := activities.New(activities.Config{Stream: broker, Providers: providers.NewSet(model), Tools: set,
		TracerProvider: tel.TracerProvider(), MeterProvider: tel.MeterProvider()})
	require.NoError(t, err)

	reg := workflows.NewRegistry()
	require.NoError(t, reg.Add(&workflows.Definition{ID: agentID, Version: "1",
		Nodes: map[string]workflows.Node{"agent": {Run: func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			res, err := hooks.Reason(ctx, hooks.ReasonOptions{ID: "agent", Model: providers.Model(fake.ID + ":" + modelName), Input: in.Text(),
				Tools: []string{toolName}, Timeout: 10 * time.Second})
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
		}}},
		Edges: []workflows.Edge{{From: workflows.Start, To: "agent"}}}))
	one := func(id string, fn workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{ID: id, Version: "1", Nodes: map[string]workflows.Node{"n": {Run: fn}},
			Edges: []workflows.Edge{{From: workflows.Start, To: "n"}}}
	}
	require.NoError(t, reg.Add(
		one(boomID, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			return workflows.NodeResult{}, contracts.Errorf(contracts.CodeDomainError, "boom")
		}),
		one(askerID, func(ctx workflow.Context, in workflows.NodeInput) (workflows.NodeResult, error) {
			_, err := hooks.Interrupt(ctx, hooks.InterruptOptions{ID: "q", Question: "Why?"})
			return workflows.NodeResult{}, err
		})))

	tq := fmt.Sprintf("otel-%d", time.Now().UnixNano())
	wo := worker.Options{}
	tel.WorkerOptions(&wo)
	w := worker.New(c, tq, wo)
	workflows.NewRunner(reg).Register(w)
	acts.Register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	svc, err := sessions.New(sessions.Options{Client: c, Broker: broker, TaskQueue: tq})
	require.NoError(t, err)
	h, err := chat.NewHandler(svc, chat.Options{DefaultWorkflow: agentID, AllowUnauthenticated: true})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	api := httptest.NewServer(tel.HTTP(mux))
	t.Cleanup(api.Close)
	ms := httptest.NewServer(tel.Metrics())
	t.Cleanup(ms.Close)
	require.NoError(t, tel.ObserveWaitingRuns(c))
	return &stack{spans: spans, reader: reader, tel: tel, c: c, url: api.URL, metrics: ms, tq: tq}
}

// chatTurn posts one prompt and reads the SSE response to its end.
func (s *stack) chatTurn(t *testing.T, session string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"sessionId": session, "messages": []map[string]any{{"role": "user", "content": "look otel up"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/api/chat", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
	return string(b)
}

// waitSpans polls the exporter until the spans named have ended (or fails after 20 s).
func (s *stack) waitSpans(t *testing.T, names ...string) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := s.spans.GetSpans()
		missing := []string{}
		for _, n := range names {
			if len(byName(got, n)) == 0 {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans %v never ended; have %v", missing, spanNames(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func byName(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanNames(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	sort.Strings(out)
	return out
}

func attrs(s tracetest.SpanStub) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// ancestry is the names of s's ancestors, nearest first, up to the root.
func ancestry(t *testing.T, spans tracetest.SpanStubs, s tracetest.SpanStub) []string {
	t.Helper()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, x := range spans {
		byID[x.SpanContext.SpanID()] = x
	}
	var out []string
	for s.Parent.IsValid() {
		p, ok := byID[s.Parent.SpanID()]
		require.True(t, ok, "the parent of %q is not among the exported spans", s.Name)
		out = append(out, p.Name)
		s = p
	}
	return out
}

// Scenario: one chat turn (a tool call, then text) is one trace rooted at the HTTP request,
// and its metrics count one run, one tool call and the fake's tokens.
func TestChatTurnIsOneTrace(t *testing.T) {
	s := startStack(t)
	session := fmt.Sprintf("otel-session-%d", time.Now().UnixNano())
	out := s.chatTurn(t, session)
	require.Contains(t, out, `"delta":"Found "`)
	require.Contains(t, out, "[DONE]")

	// The session lives on after the turn: cancel it so that its workflow span ends.
	require.NoError(t, s.c.CancelWorkflow(context.Background(), protocol.SessionWorkflowID(session), ""))
	spans := s.waitSpans(t, "POST /api/chat", "RunWorkflow:"+protocol.SessionWorkflowName, "RunWorkflow:"+contracts.RunWorkflowName,
		"chat "+modelName, "execute_tool "+toolName)
	t.Logf("spans: %v", spanNames(spans))

	// One trace, one root: the HTTP server span.
	var roots []string
	for _, sp := range spans {
		require.Equal(t, spans[0].SpanContext.TraceID(), sp.SpanContext.TraceID(), "span %q is in another trace", sp.Name)
		if !sp.Parent.IsValid() {
			roots = append(roots, sp.Name)
		}
	}
	require.Equal(t, []string{"POST /api/chat"}, roots)
	root := byName(spans, "POST /api/chat")[0]
	require.Equal(t, trace.SpanKindServer, root.SpanKind)

	// Kortyx's trace chunk, right after the session chunk (Kortyx framing: data lines only):
	// the turn's trace and root span, and the run.
	events := strings.Split(strings.TrimSpace(out), "\n\n")
	require.GreaterOrEqual(t, len(events), 3, out)
	var tc map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(events[1], "data: ")), &tc), out)
	require.Equal(t, map[string]any{"type": "trace", "traceId": root.SpanContext.TraceID().String(), "spanId": root.SpanContext.SpanID().String(),
		"runId": tc["runId"]}, tc)
	require.Equal(t, attrs(byName(spans, "RunWorkflow:"+contracts.RunWorkflowName)[0])["temporalWorkflowID"], tc["runId"])

	// The workflows and activities under it.
	update := "UpdateWithStartWorkflow:" + protocol.SessionStartTurnByCallerUpdate
	require.Equal(t, []string{update, "POST /api/chat"}, ancestry(t, spans, byName(spans, "RunWorkflow:"+protocol.SessionWorkflowName)[0]))
	runs := byName(spans, "RunWorkflow:"+contracts.RunWorkflowName)
	require.Len(t, runs, 1)
	runUp := ancestry(t, spans, runs[0])
	// The session service starts the prompt's run itself, under the same request.
	require.Equal(t, []string{"StartWorkflow:" + contracts.RunWorkflowName, "POST /api/chat"}, runUp)

	passes := byName(spans, "chat "+modelName)
	require.Len(t, passes, 2)
	for i, p := range passes {
		require.Equal(t, append([]string{"RunActivity:" + protocol.ModelActivityName, "StartActivity:" + protocol.ModelActivityName, runs[0].Name}, runUp...),
			ancestry(t, spans, p), "pass %d", i)
		require.Equal(t, trace.SpanKindClient, p.SpanKind)
	}
	a0, a1 := attrs(passes[0]), attrs(passes[1])
	require.Equal(t, "chat", a0["gen_ai.operation.name"])
	require.Equal(t, fake.ID, a0["gen_ai.provider.name"])
	require.Equal(t, modelName, a0["gen_ai.request.model"])
	require.Equal(t, int64(callUsage.Input), a0["gen_ai.usage.input_tokens"])
	require.Equal(t, int64(callUsage.Output), a0["gen_ai.usage.output_tokens"])
	require.Equal(t, []string{"tool-calls"}, a0["gen_ai.response.finish_reasons"])
	require.Equal(t, int64(textUsage.Input), a1["gen_ai.usage.input_tokens"])
	require.Equal(t, int64(textUsage.Output), a1["gen_ai.usage.output_tokens"])
	require.Equal(t, []string{"stop"}, a1["gen_ai.response.finish_reasons"])
	require.Greater(t, a1["gen_ai.response.time_to_first_chunk"], 0.0)
	require.NotContains(t, a0, "gen_ai.response.time_to_first_chunk", "the tool-call pass streamed no text")

	toolSpans := byName(spans, "execute_tool "+toolName)
	require.Len(t, toolSpans, 1)
	tup := ancestry(t, spans, toolSpans[0])
	require.Equal(t, append([]string{"RunActivity:" + protocol.ToolActivityName, "StartActivity:" + protocol.ToolActivityName, runs[0].Name}, runUp...), tup)
	ta := attrs(toolSpans[0])
	require.Equal(t, toolName, ta["gen_ai.tool.name"])
	require.Equal(t, "call-1", ta["gen_ai.tool.call.id"])
	require.Equal(t, false, ta["kortyx.tool.is_error"])
	require.True(t, strings.HasSuffix(ta["kortyx.tool.idempotency_key"].(string), ":call-1"), "key %v", ta["kortyx.tool.idempotency_key"])

	// The metrics.
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	wf := attribute.String("kortyx_workflow", agentID)
	require.Equal(t, int64(1), sum(t, rm, "kortyx.runs.started", wf))
	require.Equal(t, int64(1), sum(t, rm, "kortyx.runs.completed", wf))
	require.Equal(t, int64(1), sum(t, rm, "kortyx.tool.calls", attribute.String("gen_ai.tool.name", toolName)))
	require.Nil(t, find(rm, "kortyx.tool.errors"))
	require.Nil(t, find(rm, "kortyx.runs.failed"))
	require.Equal(t, int64(0), gauge(t, rm, "kortyx.runs.waiting"))
	require.Equal(t, int64(callUsage.Input+textUsage.Input), histSum(t, rm, "gen_ai.client.token.usage", attribute.String("gen_ai.token.type", "input")))
	require.Equal(t, int64(callUsage.Output+textUsage.Output), histSum(t, rm, "gen_ai.client.token.usage", attribute.String("gen_ai.token.type", "output")))
	require.Equal(t, uint64(2), histCount(t, rm, "gen_ai.client.operation.duration"))
	require.Equal(t, uint64(1), histCount(t, rm, "gen_ai.client.operation.time_to_first_chunk"))
	require.NotZero(t, histCount(t, rm, "kortyx.stream.publish.lag"))

	// The same through /metrics.
	resp, err := http.Get(s.metrics.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	requireSample(t, string(text), "kortyx_runs_completed_total", `kortyx_workflow="otel-agent"`, "1")
	requireSample(t, string(text), "kortyx_runs_started_total", `kortyx_workflow="otel-agent"`, "1")
	requireSample(t, string(text), "kortyx_tool_calls_total", `gen_ai_tool_name="lookup"`, "1")
	requireSample(t, string(text), "gen_ai_client_token_usage_sum", `gen_ai_token_type="input"`, "31")
	requireSample(t, string(text), "gen_ai_client_token_usage_sum", `gen_ai_token_type="output"`, "7")
	for _, name := range []string{"gen_ai_client_token_usage", "gen_ai_client_operation_duration_seconds", "gen_ai_client_operation_time_to_first_chunk_seconds",
		"kortyx_stream_publish_lag_seconds", "kortyx_runs_started_total", "temporal_workflow_completed_total"} {
		require.Contains(t, string(text), "\n# TYPE "+name, "no %s in\n%s", name, text)
	}
}

func find(rm metricdata.ResourceMetrics, name string) *metricdata.Metrics {
	for _, sm := range rm.ScopeMetrics {
		for i, m := range sm.Metrics {
			if m.Name == name {
				return &sm.Metrics[i]
			}
		}
	}
	return nil
}

func has(set attribute.Set, kv attribute.KeyValue) bool {
	v, ok := set.Value(kv.Key)
	return ok && v == kv.Value
}

func sum(t *testing.T, rm metricdata.ResourceMetrics, name string, kv attribute.KeyValue) int64 {
	t.Helper()
	m := find(rm, name)
	require.NotNil(t, m, "no metric %s", name)
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	var n int64
	for _, dp := range s.DataPoints {
		if has(dp.Attributes, kv) {
			n += dp.Value
		}
	}
	return n
}

func histSum(t *testing.T, rm metricdata.ResourceMetrics, name string, kv attribute.KeyValue) int64 {
	t.Helper()
	m := find(rm, name)
	require.NotNil(t, m, "no metric %s", name)
	h, ok := m.Data.(metricdata.Histogram[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	var n int64
	for _, dp := range h.DataPoints {
		if has(dp.Attributes, kv) {
			n += dp.Sum
		}
	}
	return n
}

func histCount(t *testing.T, rm metricdata.ResourceMetrics, name string) uint64 {
	t.Helper()
	m := find(rm, name)
	require.NotNil(t, m, "no metric %s", name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	var n uint64
	for _, dp := range h.DataPoints {
		n += dp.Count
	}
	return n
}

// requireSample finds the sample of name whose labels include label and checks its value.
func requireSample(t *testing.T, text, name, label, value string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, label) {
			require.True(t, strings.HasSuffix(l, "} "+value), "sample %s", l)
			return
		}
	}
	t.Fatalf("no sample %s{%s} in the scrape", name, label)
}

func gauge(t *testing.T, rm metricdata.ResourceMetrics, name string) int64 {
	t.Helper()
	m := find(rm, name)
	require.NotNil(t, m, "no metric %s", name)
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	require.Len(t, g.DataPoints, 1)
	return g.DataPoints[0].Value
}

func (s *stack) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	return rm
}

// Scenario: a failing run counts as failed; a run waiting for an answer is counted by the
// waiting gauge (from visibility) until it is cancelled, and then counts as cancelled.
func TestRunCountersAndWaitingGauge(t *testing.T) {
	s := startStack(t)
	ctx := context.Background()
	boom, err := kortyx.StartRun(ctx, s.c, contracts.RunInput{Workflow: boomID, Input: json.RawMessage(`"x"`)}, kortyx.StartOptions{TaskQueue: s.tq})
	require.NoError(t, err)
	require.Equal(t, contracts.CodeDomainError, contracts.CodeOf(boom.Get(ctx, nil)))
	asker, err := kortyx.StartRun(ctx, s.c, contracts.RunInput{Workflow: askerID, Input: json.RawMessage(`"x"`)}, kortyx.StartOptions{TaskQueue: s.tq})
	require.NoError(t, err)
	waitFor(t, "the waiting gauge to count the asking run", func() bool { return gauge(t, s.collect(t), "kortyx.runs.waiting") == 1 })

	require.NoError(t, s.c.CancelWorkflow(ctx, asker.GetID(), ""))
	require.Error(t, asker.Get(ctx, nil))
	waitFor(t, "the waiting gauge to drop the cancelled run", func() bool { return gauge(t, s.collect(t), "kortyx.runs.waiting") == 0 })

	rm := s.collect(t)
	require.Equal(t, int64(1), sum(t, rm, "kortyx.runs.started", attribute.String("kortyx_workflow", boomID)))
	require.Equal(t, int64(1), sum(t, rm, "kortyx.runs.failed", attribute.String("kortyx_workflow", boomID)))
	require.Equal(t, int64(1), sum(t, rm, "kortyx.runs.started", attribute.String("kortyx_workflow", askerID)))
	require.Equal(t, int64(1), sum(t, rm, "kortyx.runs.cancelled", attribute.String("kortyx_workflow", askerID)))
	require.Nil(t, find(rm, "kortyx.runs.completed"))
	require.Equal(t, int64(0), sum(t, rm, "kortyx.runs.failed", attribute.String("kortyx_workflow", askerID)))
}

// waitFor polls cond every 50 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
