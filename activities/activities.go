package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kortyx-go/kortyx/codec"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/jsonstream"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/tools/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// Activities holds what the activity side of a run needs. Register it on every worker that
// runs the run workflow. Build it with [New], which checks the configuration at start; a
// literal skips the checks (tests that need only a broker use one).
type Activities struct {
	// Stream receives every chunk of every run (required).
	Stream stream.Broker
	// Providers are the model providers, by id (required for hooks.Reason).
	Providers *providers.Set
	// DefaultProvider and DefaultModel are used for model references without a provider or a
	// model id (a declarative agent that names no model runs on the worker's default).
	DefaultProvider string
	DefaultModel    string
	// Tools are the tools models may call, by name.
	Tools *tools.Set
	// MCP reaches the MCP servers that runs name (hooks.ReasonOptions.MCP); nil rejects them.
	MCP *mcp.Pool
	// MCPHeaders are the headers (e.g. Authorization) sent to each MCP server, by URL. They are
	// worker configuration, never part of workflow history.
	MCPHeaders map[string]map[string]string
	// TracerProvider and MeterProvider record the spans and metrics of the model, tool and
	// publish activities (telemetry.Telemetry provides both); nil uses the global OpenTelemetry
	// providers (otel.GetTracerProvider, otel.GetMeterProvider), no-ops unless a program sets
	// them.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Messages, when set, keeps the conversation of each model pass in its payload store, as a
	// chain of nodes (each holding the messages added since the one before it), sealed as its
	// payloads are (compressed, encrypted with its key); the run then sends the stored prefix
	// to the next pass by one reference, so a pass's input in history holds only the messages
	// added since the last pass, however long the conversation. It needs a store
	// ([codec.Codec.HasStore]); nil: every message goes inline. Every worker of a task queue
	// needs the same store.
	Messages *codec.Codec
}

// Config is what [New] checks: the fields of [Activities].
type Config = Activities

// New returns the activities of cfg after checking what they need, so that a worker with a
// missing dependency fails at start instead of in the middle of a run: a stream broker; model
// providers (at least one); a DefaultProvider, when set, that is one of them; no DefaultModel
// without a DefaultProvider (it would never be used); and no MCPHeaders without an MCP pool
// (they would never be sent). Tools and MCP are optional.
func New(cfg Config) (*Activities, error) {
	switch {
	case cfg.Stream == nil:
		return nil, errors.New("kortyx activities: Config.Stream is required: the stream broker the runs publish to (stream.NewMemory(stream.MemoryOptions{}))")
	case cfg.Providers == nil || len(cfg.Providers.IDs()) == 0:
		return nil, contracts.Errorf(contracts.CodeProviderConfiguration,
			"kortyx activities: Config.Providers is required: the model providers of hooks.Reason (providers.NewSet(openai.New(...)))")
	case cfg.DefaultModel != "" && cfg.DefaultProvider == "":
		return nil, contracts.Errorf(contracts.CodeProviderConfiguration,
			"kortyx activities: Config.DefaultModel %q needs a Config.DefaultProvider (one of: %s)", cfg.DefaultModel, strings.Join(cfg.Providers.IDs(), ", "))
	case cfg.MCP == nil && len(cfg.MCPHeaders) > 0:
		return nil, errors.New("kortyx activities: Config.MCPHeaders are set but Config.MCP is nil: give the activities an MCP pool (&mcp.Pool{})")
	case cfg.Messages != nil && !cfg.Messages.HasStore():
		return nil, contracts.Errorf(contracts.CodeProviderConfiguration,
			"kortyx activities: Config.Messages is a codec without a payload store; give it one (codec.Options.Store, KORTYX_PAYLOAD_STORE) or leave Messages nil")
	}
	if cfg.DefaultProvider != "" {
		if _, err := cfg.Providers.Get(cfg.DefaultProvider); err != nil {
			return nil, contracts.Errorf(contracts.CodeProviderConfiguration,
				"kortyx activities: Config.DefaultProvider %q is not one of Config.Providers (%s)", cfg.DefaultProvider, strings.Join(cfg.Providers.IDs(), ", "))
		}
	}
	a := cfg
	return &a, nil
}

// Register registers the activities under their wire names.
func (a *Activities) Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(a.PublishReported, activity.RegisterOptions{Name: protocol.PublishActivityName})
	w.RegisterActivityWithOptions(a.Model, activity.RegisterOptions{Name: protocol.ModelActivityName})
	w.RegisterActivityWithOptions(a.Tool, activity.RegisterOptions{Name: protocol.ToolActivityName})
	w.RegisterActivityWithOptions(a.ListTools, activity.RegisterOptions{Name: protocol.ListToolsActivityName})
}

func (a *Activities) server(s protocol.MCPServer) mcp.Server {
	return mcp.Server{URL: s.URL, Include: s.Include, Exclude: s.Exclude, Prefix: s.Prefix, Headers: a.MCPHeaders[s.URL]}
}

func (a *Activities) servers(in []protocol.MCPServer) []mcp.Server {
	out := make([]mcp.Server, len(in))
	for i, s := range in {
		out[i] = a.server(s)
	}
	return out
}

func (a *Activities) mcpPool() (*mcp.Pool, error) {
	if a.MCP == nil {
		return nil, contracts.ToTemporal(contracts.Errorf(contracts.CodeUnknownTool,
			"this worker has no MCP pool (Activities.MCP is nil): it cannot reach MCP servers"))
	}
	return a.MCP, nil
}

// ListTools lists the tools of MCP servers; the run records the list so that every pass,
// replay and retry of a Reason call sees the same tools.
func (a *Activities) ListTools(ctx context.Context, in protocol.ListToolsInput) ([]protocol.OfferedTool, error) {
	pool, err := a.mcpPool()
	if err != nil {
		return nil, err
	}
	defs, index, err := pool.Definitions(ctx, a.servers(in.Servers))
	if err != nil {
		return nil, mcpError(ctx, err)
	}
	out := make([]protocol.OfferedTool, len(defs))
	for i, d := range defs {
		out[i] = protocol.OfferedTool{Name: d.Name, Server: index[d.Name]}
	}
	return out, nil
}

func mcpError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ke *contracts.Error
	if errors.As(err, &ke) {
		return contracts.ToTemporal(err)
	}
	return err // transient (or unclassified): the activity retry policy decides
}

// PublishReported is the publish local activity ([protocol.PublishActivityName]): it signals the
// run's checkpoint report to its session first when the input carries one
// ([protocol.PublishReport]), publishes as [Activities.Publish], and returns the report (its
// local activity marker keeps it in the run's history, where the Studio's trace reads it).
func (a *Activities) PublishReported(ctx context.Context, in protocol.PublishInput) (*protocol.PublishResult, error) {
	if a.Stream == nil {
		return nil, errors.New("kortyx: Activities.Stream is nil; give the activities a stream broker (stream.NewMemory(stream.MemoryOptions{}))")
	}
	var res *protocol.PublishResult
	if in.Report != nil {
		if err := signalReport(ctx, *in.Report); err != nil {
			return nil, err
		}
		res = &protocol.PublishResult{Report: &in.Report.Report}
	}
	chunks := make([]stream.Keyed, len(in.Chunks))
	for i, c := range in.Chunks {
		chunks[i] = stream.Keyed{Key: c.Key, Chunk: c.Chunk}
	}
	if err := a.Stream.Publish(ctx, in.RunID, chunks...); err != nil {
		return nil, contracts.ToTemporal(err) // typed (STREAM_UNAVAILABLE: the run publishes again)
	}
	a.recordPublishLag(ctx)
	return res, nil
}

// Publish appends workflow-side chunks to the run's stream. Their keys are deterministic, so a
// retried or replayed publish never duplicates a chunk. A report in the input is signalled to
// its session first ([Activities.PublishReported], which also returns it).
func (a *Activities) Publish(ctx context.Context, in protocol.PublishInput) error {
	_, err := a.PublishReported(ctx, in)
	return err
}

// SegmentID is "<segment>~<attempt>", the text segment a retried model pass publishes under
// when an earlier attempt published text (attempt 1, or a retry after attempts that published
// nothing, keeps the segment it was given).
func SegmentID(segment string, attempt int32) string {
	if attempt <= 1 {
		return segment
	}
	return fmt.Sprintf("%s~%d", segment, attempt)
}

// passProgress is what the heartbeats of a model pass carry, so that a retried attempt knows
// what the earlier ones published.
type passProgress struct {
	// Segment is the text segment whose chunks were published and not invalidated yet.
	Segment string `json:"segment,omitempty"`
	// Used: some attempt published text, so later attempts publish under new segment names
	// (the broker ignores keys it already has).
	Used bool `json:"used,omitempty"`
	// Fields: structured fields were published and not invalidated yet.
	Fields bool `json:"fields,omitempty"`
	// Failures counts the provider errors of the earlier attempts (failures.go).
	Failures int `json:"failures,omitempty"`
}

// progress is the passProgress of the running attempt, shared with its keep-alive heartbeats.
type progress struct {
	mu sync.Mutex
	v  passProgress
}

func (p *progress) set(f func(*passProgress)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.v)
}

func (p *progress) get() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v
}

// Model runs one model pass. When the pass streams and emits, it publishes text-start,
// text-delta and text-end chunks as the provider produces text (keys
// "m:<opId>:<segment>:<n>"). A retried pass whose earlier attempts published text first
// publishes text-invalidated for that segment, so no client shows the text twice, and streams
// under [SegmentID]; a retry after attempts that published nothing (a 429 before the first
// token) publishes no invalidation and keeps the segment.
func (a *Activities) Model(ctx context.Context, in protocol.ModelPassInput) (resp protocol.ModelPassResult, err error) {
	if len(in.Chunks) > 0 {
		// The run's chunks queued before the pass, first (their keys make a retry a no-op).
		if err := a.Publish(ctx, protocol.PublishInput{RunID: in.RunID, Chunks: in.Chunks}); err != nil {
			return protocol.ModelPassResult{}, err
		}
	}
	grants, output, short, err := reserveLedgers(ctx, in)
	if err != nil {
		return protocol.ModelPassResult{}, err
	}
	if short != "" { // a shared budget left too little: the run asks or fails, the model is not called
		return protocol.ModelPassResult{Ledger: grants, LedgerShort: short}, nil
	}
	if output > 0 {
		in.Options.MaxOutputTokens = output
	}
	if len(grants) > 0 {
		defer func() {
			if err == nil {
				resp.Ledger = grants
			}
		}()
	}
	prog := &progress{}
	attempt := activity.GetInfo(ctx).Attempt
	var earlier []string // text segments of earlier attempts to invalidate
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity {
		// A fast-path pass: no heartbeat details. What earlier executions published (retries
		// in this worker, and a run of a worker that died before its workflow task completed)
		// is read from the stream; see localProgress.
		if attempt, prog.v, err = a.localProgress(ctx, in); err != nil {
			return protocol.ModelPassResult{}, err
		}
	} else if attempt > 1 {
		if activity.HasHeartbeatDetails(ctx) {
			if err := activity.GetHeartbeatDetails(ctx, &prog.v); err != nil {
				// Details of an older worker (a count of deltas): assume the previous attempt
				// published under its segment (and fields), as that worker would have.
				prog.v = passProgress{Segment: SegmentID(in.SegmentID, attempt-1), Used: true, Fields: in.Structured != nil}
			}
		}
		// Heartbeats are throttled: the details may predate an earlier attempt's first text.
		// The stream has it: the segments it started are invalidated (again: the broker keeps
		// one invalidation per segment) and this attempt streams under a name of its own.
		if in.Emit {
			keys, err := a.passKeys(ctx, in)
			if err != nil {
				return protocol.ModelPassResult{}, err
			}
			for g := int32(1); g < attempt; g++ {
				if seg := SegmentID(in.SegmentID, g); keys[textStartKey(in, seg)] && !keys[textInvalidKey(in, seg)] {
					earlier = append(earlier, seg)
					prog.v.Used = true
				}
			}
		}
	}
	defer keepAliveWith(ctx, prog.get)()
	msgs, depth, err := a.resolveMessages(ctx, in)
	if err != nil {
		return protocol.ModelPassResult{}, err
	}
	ref := in.Model
	if ref.Provider == "" {
		ref.Provider = a.DefaultProvider
		if ref.Model == "" {
			ref.Model = a.DefaultModel
		}
	}
	ctx, pass := a.startModelPass(ctx, ref)
	defer func() { pass.end(ctx, resp, err) }()
	p, err := a.Providers.Get(ref.Provider)
	if err != nil {
		return protocol.ModelPassResult{}, contracts.ToTemporal(err)
	}
	var defs []providers.ToolDefinition
	if len(in.Tools) > 0 {
		if defs, err = a.Tools.Definitions(in.Tools); err != nil {
			return protocol.ModelPassResult{}, contracts.ToTemporal(err)
		}
	}
	if len(in.MCPTools) > 0 {
		pool, err := a.mcpPool()
		if err != nil {
			return protocol.ModelPassResult{}, err
		}
		all, _, err := pool.Definitions(ctx, a.servers(in.MCP))
		if err != nil {
			return protocol.ModelPassResult{}, mcpError(ctx, err)
		}
		for _, d := range all { // only the tools recorded when the call started
			for _, name := range in.MCPTools {
				if d.Name == name {
					defs = append(defs, d)
				}
			}
		}
	}
	defs = append(defs, in.ControlTools...)
	seg := in.SegmentID
	if prog.v.Used {
		seg = SegmentID(in.SegmentID, attempt)
	}
	pub := &textPublisher{a: a, in: in, seg: seg, prog: prog}
	if prev := prog.v.Segment; prev != "" {
		earlier = append([]string{prev}, earlier...)
	}
	for i, prev := range earlier {
		if i > 0 && prev == earlier[0] {
			continue
		}
		if err := pub.invalidate(ctx, prev); err != nil {
			return protocol.ModelPassResult{}, err
		}
	}
	if len(earlier) > 0 {
		prog.set(func(p *passProgress) { p.Segment = "" })
		activity.RecordHeartbeat(ctx, prog.get())
	}
	var onDelta func(string) error
	var fields *fieldPublisher
	if in.Structured != nil && in.Stream {
		if fields, err = newFieldPublisher(ctx, a, in, attempt, prog); err != nil {
			return protocol.ModelPassResult{}, err
		}
		onDelta = func(d string) error {
			if err := fields.write(ctx, d); err != nil {
				return err
			}
			activity.RecordHeartbeat(ctx, prog.get())
			return nil
		}
	} else if in.Stream {
		onDelta = func(d string) error {
			if in.Emit && d != "" {
				if err := pub.delta(ctx, d); err != nil {
					return err
				}
			}
			// No heartbeat per delta: the keep-alive heartbeats carry cancellation and the
			// progress (a retry also reads the segments earlier attempts started from the
			// stream, which heartbeat throttling cannot delay).
			return nil
		}
	}
	if onDelta != nil {
		deliver := onDelta
		onDelta = func(d string) error { pass.delta(); return deliver(d) }
	}
	resp.Response, err = p.Generate(ctx, providers.Request{Model: ref.Model, ModelOptions: ref.Options, Messages: msgs, Tools: defs, Options: in.Options}, onDelta)
	if err != nil {
		if ctx.Err() != nil {
			return protocol.ModelPassResult{}, ctx.Err()
		}
		what := "model " + ref.Provider
		if ref.Model != "" {
			what += ":" + ref.Model
		}
		fc := failureCap{max: in.MaxFailures, prior: prog.v.Failures, what: what,
			runID: in.RunID, key: "r:" + in.OpID + ":" + in.SegmentID, chunk: contracts.Chunk{Node: in.Node, ID: in.HookID, OpID: in.OpID},
			record: func(n int) {
				prog.set(func(p *passProgress) { p.Failures = n })
				activity.RecordHeartbeat(ctx, prog.get())
			}}
		return protocol.ModelPassResult{}, fc.apply(ctx, a, providerError(err))
	}
	if fields != nil {
		if err := fields.close(ctx); err != nil {
			return protocol.ModelPassResult{}, err
		}
		resp.FieldsPublished = prog.get().(passProgress).Fields
	}
	if in.Emit {
		if !in.Stream && resp.Text != "" {
			if err := pub.delta(ctx, resp.Text); err != nil {
				return protocol.ModelPassResult{}, err
			}
		}
		if err := pub.end(ctx); err != nil {
			return protocol.ModelPassResult{}, err
		}
	}
	if resp.Usage.Total == 0 {
		resp.Usage.Total = resp.Usage.Input + resp.Usage.Output
	}
	if resp.StoredPrefix, err = a.storePrefix(ctx, in, msgs, depth); err != nil {
		return protocol.ModelPassResult{}, err
	}
	// A result over the payload limit could not be recorded: refused here, with its code.
	if err := protocol.CheckPayload("the model's answer", resp, "ask the model for a shorter answer (a lower max tokens option, a narrower instruction) or split the work over several calls"); err != nil {
		return protocol.ModelPassResult{}, contracts.ToTemporal(err)
	}
	return resp, nil
}

// providerError converts a provider error for Temporal, honouring a requested retry delay.
func providerError(err error) error {
	var ke *contracts.Error
	if !errors.As(err, &ke) {
		// An unclassified provider error: retried; its text stays in the cause (history, logs),
		// clients see the safe message.
		return contracts.ToTemporal(&contracts.Error{Code: contracts.CodeProviderRequestFailed,
			Message: "The model provider request failed.", Retryable: true, Err: err})
	}
	opts := temporal.ApplicationErrorOptions{NonRetryable: !ke.Retryable, Cause: ke.Err, Details: []any{contracts.FailureOf(ke)}}
	if ms, ok := ke.Details["retryAfterMs"].(int); ok && ms > 0 && ke.Retryable {
		opts.NextRetryDelay = time.Duration(ms) * time.Millisecond
	}
	return temporal.NewApplicationErrorWithOptions(ke.Error(), string(ke.Code), opts)
}

// textPublisher publishes the text chunks of one model pass.
type textPublisher struct {
	a       *Activities
	in      protocol.ModelPassInput
	seg     string
	prog    *progress
	n       int
	started bool
}

func (p *textPublisher) publish(ctx context.Context, seg, suffix string, c contracts.Chunk) error {
	c.Node, c.ID, c.OpID, c.SegmentID = p.in.Node, p.in.HookID, p.in.OpID, seg
	return p.a.Stream.Publish(ctx, p.in.RunID, stream.Keyed{Key: fmt.Sprintf("m:%s:%s:%s", p.in.OpID, seg, suffix), Chunk: c})
}

// invalidate voids the text an earlier attempt published under seg (keyed by that segment, so
// an attempt that repeats it adds nothing).
func (p *textPublisher) invalidate(ctx context.Context, seg string) error {
	return p.publish(ctx, seg, "inv", contracts.Chunk{Type: contracts.ChunkTextInvalidated})
}

func (p *textPublisher) delta(ctx context.Context, d string) error {
	if !p.started {
		p.started = true
		// Recorded before the first chunk: a failure after it must invalidate the segment.
		p.prog.set(func(pp *passProgress) { pp.Segment, pp.Used = p.seg, true })
		if err := p.publish(ctx, p.seg, "start", contracts.Chunk{Type: contracts.ChunkTextStart}); err != nil {
			return err
		}
	}
	p.n++
	return p.publish(ctx, p.seg, fmt.Sprint(p.n), contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: d})
}

func (p *textPublisher) end(ctx context.Context) error {
	if !p.started {
		return nil
	}
	return p.publish(ctx, p.seg, "end", contracts.Chunk{Type: contracts.ChunkTextEnd})
}

// KeepAliveInterval is how often the model and tool activities heartbeat while they run. The
// SDK sends at most one heartbeat per throttle interval ([HeartbeatThrottle] on a worker set up
// with [WorkerOptions]) and keeps the latest details of the calls in between.
const KeepAliveInterval = 200 * time.Millisecond

// HeartbeatThrottle is the longest pause between two heartbeats that a worker set up with
// [WorkerOptions] sends for a running activity. The SDK delivers a cancellation to an activity
// only in the answer to a heartbeat, and by default sends one per 80% of the heartbeat timeout
// (8 s for a model pass or a tool call): a stopped or cancelled run's model request would keep
// running (and billing) that long.
const HeartbeatThrottle = 500 * time.Millisecond

// WorkerOptions sets what the activities need of the worker that runs them: when
// o.MaxHeartbeatThrottleInterval is unset, [HeartbeatThrottle], so that a model pass or a tool
// call of a stopped or cancelled run is cancelled (its provider request aborted) within about
// half a second. Cost: at most two heartbeat calls a second per running model pass or tool call.
// app.Run (every program on it) calls it; call it on the options of a worker of your own:
//
//	wo := worker.Options{}
//	activities.WorkerOptions(&wo)
//	w := worker.New(c, contracts.DefaultTaskQueue, wo)
func WorkerOptions(o *worker.Options) {
	if o.MaxHeartbeatThrottleInterval == 0 {
		o.MaxHeartbeatThrottleInterval = HeartbeatThrottle
	}
}

// localProgress is what a fast-path pass (a local activity, which has no heartbeat details)
// knows of the executions of the same pass before it: the ones that published text (or
// structured fields, for a streamed contract pass) left their start chunk in the run's stream.
// Generation g publishes under [SegmentID](segment, g) (fields under attempt g); the first
// generation with nothing in the stream is this one's, and the one before it (if it published)
// is invalidated. That covers the retries in this worker and a run of a worker that died
// before its workflow task completed (its local activity starts at attempt 1 again). The
// failure cap counts the earlier attempts of this worker (attempt - 1): a local attempt fails
// only by an error or a timeout. A pass that publishes nothing reads nothing.
func (a *Activities) localProgress(ctx context.Context, in protocol.ModelPassInput) (int32, passProgress, error) {
	attempt := activity.GetInfo(ctx).Attempt
	prog := passProgress{Failures: int(attempt) - 1}
	fields := in.Structured != nil && in.Stream
	if !in.Emit && !fields {
		return attempt, prog, nil
	}
	keys, err := a.passKeys(ctx, in)
	if err != nil {
		return 0, prog, err
	}
	var field string
	if fields {
		field = "s:" + in.Structured.StreamID + ":"
	}
	gen := int32(1)
	for {
		t := keys[textStartKey(in, SegmentID(in.SegmentID, gen))]
		f := field != "" && keys[fmt.Sprintf("%s%d:1", field, gen)]
		if !t && !f {
			break
		}
		prog.Used, prog.Fields, prog.Segment = true, f, ""
		if t {
			prog.Segment = SegmentID(in.SegmentID, gen)
		}
		gen++
	}
	return gen, prog, nil
}

// passKeys are the keys in the run's stream of the text segments of the pass's operation and of
// its structured stream: what earlier executions of the pass published.
func (a *Activities) passKeys(ctx context.Context, in protocol.ModelPassInput) (map[string]bool, error) {
	entries, err := a.Stream.Read(ctx, in.RunID, 0, 0)
	if err != nil {
		var ke *contracts.Error
		if errors.As(err, &ke) {
			return nil, contracts.ToTemporal(err)
		}
		return nil, err
	}
	keys := make(map[string]bool)
	text := "m:" + in.OpID + ":" + in.SegmentID
	var field string
	if in.Structured != nil {
		field = "s:" + in.Structured.StreamID + ":"
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Key, text) || (field != "" && strings.HasPrefix(e.Key, field)) {
			keys[e.Key] = true
		}
	}
	return keys, nil
}

// textStartKey and textInvalidKey are the stream keys of a text segment's start and
// invalidation (textPublisher).
func textStartKey(in protocol.ModelPassInput, seg string) string {
	return "m:" + in.OpID + ":" + seg + ":start"
}

func textInvalidKey(in protocol.ModelPassInput, seg string) string {
	return "m:" + in.OpID + ":" + seg + ":inv"
}

// keepAliveWith heartbeats every KeepAliveInterval until the returned stop is called, whatever
// the provider or the tool is doing: the activity learns of a cancellation within the worker's
// heartbeat throttle ([WorkerOptions]), and Temporal of a dead worker within the heartbeat
// timeout. Its heartbeats carry details() (a heartbeat replaces the details of the previous
// one; nil: none). Outside an activity it does nothing.
func keepAliveWith(ctx context.Context, details func() any) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity { // a local activity has no heartbeats
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(KeepAliveInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if details != nil {
					activity.RecordHeartbeat(ctx, details())
				} else {
					activity.RecordHeartbeat(ctx)
				}
			}
		}
	}()
	return func() { close(done) }
}

// localTimeout reports the error of a local tool call that ran out of time as the timeout it is.
// A regular activity's timeout is decided by the server whatever the attempt returns; a local
// activity that returns as soon as its context expires (as a tool should) would instead fail
// with its own "context deadline exceeded", a plain error. ScheduleToClose when the call's
// retry window is over, else StartToClose (what the SDK reports when it notices first).
func localTimeout(ctx context.Context, err error) error {
	if !activity.IsActivity(ctx) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	info := activity.GetInfo(ctx)
	if !info.IsLocalActivity {
		return err
	}
	kind := enumspb.TIMEOUT_TYPE_START_TO_CLOSE
	if info.ScheduleToCloseTimeout > 0 && !time.Now().Before(info.ScheduledTime.Add(info.ScheduleToCloseTimeout)) {
		kind = enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE
	}
	return temporal.NewTimeoutError(kind, err)
}

// toolRetryType is the ApplicationError type of a retryable tool error. It is deliberately not
// a declared code ([contracts.Code.Declared]): the error's text may hold anything the tool saw
// (addresses, credentials in a DSN…).
const toolRetryType = "TOOL_RETRY"

// Tool runs one tool call (see [tools.Set.Run]): invalid arguments and tool errors come back as
// isError results for the model; only retryable tool errors and cancellation fail the activity.
func (a *Activities) Tool(ctx context.Context, in protocol.ToolCallInput) (res providers.ToolResult, err error) {
	if len(in.Chunks) > 0 {
		// The run's chunks queued before the call, first (their keys make a retry a no-op).
		runID := in.Stream
		if runID == "" {
			runID = in.RunID
		}
		if err := a.Publish(ctx, protocol.PublishInput{RunID: runID, Chunks: in.Chunks}); err != nil {
			return providers.ToolResult{}, err
		}
	}
	ctx, span := a.startTool(ctx, in)
	defer func() { a.endTool(ctx, span, in, res, err) }()
	var fails atomic.Int64
	fails.Store(int64(priorToolFailures(ctx)))
	prior := int(fails.Load())
	defer keepAliveWith(ctx, func() any { return callProgress{Failures: int(fails.Load())} })()
	res, err = a.tool(ctx, in)
	if err != nil {
		err = localTimeout(ctx, err)
		if in.MaxFailures <= 0 {
			return res, err
		}
		runID := in.Stream
		if runID == "" {
			runID = in.RunID
		}
		fc := failureCap{max: in.MaxFailures, prior: prior, what: in.Tool,
			runID: runID, key: "r:" + in.IdempotencyKey, chunk: contracts.Chunk{Node: in.Node, Tool: in.Tool, ToolCallID: in.ToolCallID},
			record: func(n int) {
				fails.Store(int64(n))
				activity.RecordHeartbeat(ctx, callProgress{Failures: n})
			}}
		return res, fc.apply(ctx, a, toolFailure(ctx, err))
	}
	// A result over the payload limit could not be recorded: refused here, with its code.
	if err := protocol.CheckPayload(fmt.Sprintf("the result of tool %q", in.Tool), res, "return less from the tool: a summary, a page of the data, or a reference to where the full result is kept"); err != nil {
		return providers.ToolResult{}, contracts.ToTemporal(err)
	}
	return res, nil
}

// toolFailure is err as an ApplicationError when it is a plain error (an MCP server that cannot
// be reached), as Temporal would report it, so that it counts as one of the call's failures:
// retryable, of type [toolRetryType] (its text may hold anything). Cancellations, timeouts and
// ApplicationErrors come back unchanged.
func toolFailure(ctx context.Context, err error) error {
	var ae *temporal.ApplicationError
	var te *temporal.TimeoutError
	if ctx.Err() != nil || errors.As(err, &ae) || errors.As(err, &te) || temporal.IsCanceledError(err) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), toolRetryType, temporal.ApplicationErrorOptions{Cause: err})
}

func (a *Activities) tool(ctx context.Context, in protocol.ToolCallInput) (providers.ToolResult, error) {
	if in.MCP != nil {
		pool, err := a.mcpPool()
		if err != nil {
			return providers.ToolResult{}, err
		}
		res, err := pool.Call(ctx, a.server(*in.MCP), in)
		if err != nil {
			return res, mcpError(ctx, err)
		}
		return res, nil
	}
	if a.Tools == nil {
		return providers.ToolResult{}, contracts.ToTemporal(contracts.Errorf(contracts.CodeUnknownTool,
			"tool %q is not registered: this worker has no tools (Activities.Tools is nil)", in.Tool))
	}
	res, err := a.Tools.Run(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		var ke *contracts.Error
		if errors.As(err, &ke) {
			return res, contracts.ToTemporal(err)
		}
		// Not a Kortyx code: once retries are exhausted the run's failure is EXECUTION_FAILED
		// with the safe message; the tool's text stays in history and the logs.
		return res, temporal.NewApplicationErrorWithOptions(err.Error(), toolRetryType, temporal.ApplicationErrorOptions{Cause: err})
	}
	return res, nil
}

// fieldPublisher publishes the structured-data chunks of a streamed output pass: the declared
// fields as the model writes them (set, append, text-delta), extracted incrementally.
type fieldPublisher struct {
	a      *Activities
	in     protocol.ModelPassInput
	ex     *jsonstream.Extractor
	prog   *progress
	prefix string
	n      int
	broken bool // the output stopped being JSON: stop extracting (the run validates the value)
}

func newFieldPublisher(ctx context.Context, a *Activities, in protocol.ModelPassInput, attempt int32, prog *progress) (*fieldPublisher, error) {
	modes := make(map[string]jsonstream.Mode, len(in.Structured.Fields))
	for path, mode := range in.Structured.Fields {
		modes[path] = jsonstream.Mode(mode)
	}
	ex, err := jsonstream.New(modes)
	if err != nil {
		return nil, contracts.ToTemporal(contracts.Errorf(contracts.CodeInvalidDefinition, "stream fields: %v", err))
	}
	p := &fieldPublisher{a: a, in: in, ex: ex, prog: prog, prefix: fmt.Sprintf("s:%s:%d", in.Structured.StreamID, attempt)}
	if prog.v.Fields {
		// The provisional fields of the failed attempts are void.
		if err := p.publish(ctx, contracts.Chunk{Type: contracts.ChunkStructuredInvalidated, StreamID: in.Structured.StreamID}); err != nil {
			return nil, err
		}
		prog.set(func(pp *passProgress) { pp.Fields = false })
		activity.RecordHeartbeat(ctx, prog.get())
	}
	return p, nil
}

func (p *fieldPublisher) write(ctx context.Context, d string) error {
	if p.broken {
		return nil
	}
	evs, err := p.ex.Write(d)
	if err != nil {
		p.broken = true
	}
	return p.events(ctx, evs)
}

func (p *fieldPublisher) close(ctx context.Context) error {
	if p.broken {
		return nil
	}
	evs, err := p.ex.Close()
	if err != nil {
		return nil
	}
	return p.events(ctx, evs)
}

func (p *fieldPublisher) events(ctx context.Context, evs []jsonstream.Event) error {
	for _, ev := range evs {
		c := contracts.Chunk{Type: contracts.ChunkStructuredData, Kind: contracts.StructuredKind(ev.Kind), Path: ev.Path}
		switch ev.Kind {
		case jsonstream.Set:
			c.Value = ev.Value
		case jsonstream.Append:
			c.Items = protocol.RawJSON(ev.Items)
		case jsonstream.TextDelta:
			c.Delta = ev.Delta
		}
		p.prog.set(func(pp *passProgress) { pp.Fields = true })
		if err := p.publish(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (p *fieldPublisher) publish(ctx context.Context, c contracts.Chunk) error {
	s := p.in.Structured
	c.StreamID, c.Node, c.ID = s.StreamID, p.in.Node, p.in.HookID
	if c.Type == contracts.ChunkStructuredData {
		c.DataType, c.SchemaID, c.SchemaVersion = s.DataType, s.SchemaID, s.SchemaVersion
	}
	p.n++
	return p.a.Stream.Publish(ctx, p.in.RunID, stream.Keyed{Key: fmt.Sprintf("%s:%d", p.prefix, p.n), Chunk: c})
}
