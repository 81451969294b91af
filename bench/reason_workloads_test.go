package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/kortyx-go/kortyx/activities"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/hooks"
	"github.com/kortyx-go/kortyx/providers"
	"github.com/kortyx-go/kortyx/providers/fake"
	"github.com/kortyx-go/kortyx/stream"
	"github.com/kortyx-go/kortyx/tools"
	"github.com/kortyx-go/kortyx/workflows"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// loopCalls is the number of tool calls per run of the tool-loop workloads: the model asks for
// the tool loopCalls times, one call per pass, then answers; loopCalls+1 model passes in all.
const loopCalls = 10

// Kortyx workflow ids of the hooks.Reason workloads.
const (
	kortyxToolLoop     = "bench-toolloop"
	kortyxToolLoopEmit = "bench-toolloop-emit"
	kortyxFirstToken   = "bench-first-token"
)

// Names of the plain workflows and activity of the hooks.Reason workloads, and of what both
// variants share: providers, tool, node, hook id and prompt.
const (
	plainToolLoop      = "bench.PlainToolLoop"
	plainFirstToken    = "bench.PlainFirstToken"
	firstTokenActivity = "bench.FirstTokenModel" // the plain first-token workflow's model activity

	loopProvider       = "bench-loop"        // fake.Responder driving the tool loop
	firstTokenProvider = "bench-first-token" // firstTokenModel
	loopTool           = "bench_echo"
	reasonNode         = "reason"
	loopHookID         = "loop"
	firstTokenHookID   = "answer"
	loopPrompt         = "Call bench_echo ten times, then answer."
	loopAnswer         = "Done after ten calls."
)

// Providers of the hooks.Reason workloads and the tool's execution counter, shared by the
// worker (registerReason) and the checks.
var (
	loopModel  = fake.NewResponder(loopTurn).WithID(loopProvider)
	firstModel = &firstTokenModel{first: map[string]time.Time{}}
	toolRuns   = &runCounter{n: map[string]int{}}
)

// loopTurn is the tool-loop model: stateless, it asks for the tool until the request holds
// loopCalls tool results, then answers with a short text.
func loopTurn(req providers.Request) fake.Turn {
	results := 0
	for _, m := range req.Messages {
		if m.Role == providers.RoleTool {
			results++
		}
	}
	if results >= loopCalls {
		return fake.Text(loopAnswer)
	}
	return fake.Call(loopTool, fmt.Sprintf(`{"i":%d}`, results+1))
}

// runCounter counts tool executions by run.
type runCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *runCounter) add(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[runID]++
}

func (c *runCounter) get(runID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[runID]
}

// firstTokenDeltas is what firstTokenModel streams.
var firstTokenDeltas = []string{"Hello", " from", " the", " model."}

// firstTokenModel streams firstTokenDeltas and records, per run, the wall-clock time just
// before it calls onDelta with the first delta. The run is named by the content of the last
// message (both variants send the run's workflow ID as the prompt).
type firstTokenModel struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func (m *firstTokenModel) ID() string { return firstTokenProvider }

func (m *firstTokenModel) Generate(_ context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	key := ""
	if n := len(req.Messages); n > 0 {
		key = req.Messages[n-1].Content
	}
	if onDelta != nil {
		for i, d := range firstTokenDeltas {
			t := time.Now()
			err := onDelta(d)
			if i == 0 { // stored after the call, so that storing costs nothing inside the interval
				m.mu.Lock()
				m.first[key] = t
				m.mu.Unlock()
			}
			if err != nil {
				return providers.Response{}, err
			}
		}
	}
	out := len(firstTokenDeltas)
	return providers.Response{
		Text:         strings.Join(firstTokenDeltas, ""),
		Usage:        providers.Usage{Input: 10, Output: out, Total: 10 + out},
		FinishReason: providers.FinishReason{Unified: providers.FinishStop, Raw: providers.FinishStop},
	}, nil
}

// take returns (and forgets) the first-delta time of a run.
func (m *firstTokenModel) take(key string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.first[key]
	delete(m.first, key)
	return t, ok
}

// registerReason gives the Kortyx activities the providers and the tools of the hooks.Reason
// workloads (reasonActivities), adds their Kortyx workflows to reg and registers their plain
// workflows and activity on w. Call it before acts.Register and before the worker starts.
func registerReason(reg *workflows.Registry, acts *activities.Activities, w worker.Registry) error {
	if err := reasonActivities(acts); err != nil {
		return err
	}
	if err := reg.Add(reasonDefinitions()...); err != nil {
		return err
	}
	if err := reg.Add(historyDefinition()); err != nil {
		return err
	}
	a := &firstTokenActivities{broker: acts.Stream}
	w.RegisterActivityWithOptions(a.FirstTokenModel, activity.RegisterOptions{Name: firstTokenActivity})
	w.RegisterWorkflowWithOptions(PlainToolLoopWorkflow, workflow.RegisterOptions{Name: plainToolLoop})
	w.RegisterWorkflowWithOptions(PlainFirstTokenWorkflow, workflow.RegisterOptions{Name: plainFirstToken})
	return nil
}

// reasonActivities sets the providers and tools of the hooks.Reason workloads on acts: the
// tool-loop and first-token models, the history model; the echo and blob tools.
func reasonActivities(acts *activities.Activities) error {
	echo, err := tools.Func(loopTool, "Echo a number.",
		`{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}`,
		func(_ context.Context, call tools.Call, in struct {
			I int `json:"i"`
		}) (map[string]int, error) {
			toolRuns.add(call.RunID)
			return map[string]int{"i": in.I}, nil
		})
	if err != nil {
		return err
	}
	blob, err := blobTool()
	if err != nil {
		return err
	}
	set, err := tools.NewSet(echo, blob)
	if err != nil {
		return err
	}
	acts.Providers = providers.NewSet(loopModel, firstModel, historyModel)
	acts.DefaultProvider = loopProvider
	acts.Tools = set
	return nil
}

// reasonDefinitions returns the Kortyx workflows of the hooks.Reason workloads: one node each.
func reasonDefinitions() []*workflows.Definition {
	loop := func(emit bool) workflows.NodeFunc {
		return func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
			opts := hooks.ReasonOptions{
				ID:            loopHookID,
				Model:         providers.ModelRef{Provider: loopProvider},
				Input:         loopPrompt,
				Tools:         []string{loopTool},
				Silent:        !emit,
				ToolExecution: hooks.ToolExecution{MaxSteps: loopCalls + 1},
			}
			if emit {
				opts.ToolExecution.Emit = hooks.Switch{On: true}
			}
			res, err := hooks.Reason(ctx, opts)
			if err != nil {
				return workflows.NodeResult{}, err
			}
			return workflows.NodeResult{Data: map[string]any{"answer": res.Text}}, nil
		}
	}
	first := func(ctx workflow.Context, _ workflows.NodeInput) (workflows.NodeResult, error) {
		_, err := hooks.Reason(ctx, hooks.ReasonOptions{
			ID:    firstTokenHookID,
			Model: providers.ModelRef{Provider: firstTokenProvider},
			Input: workflow.GetInfo(ctx).WorkflowExecution.ID,
		})
		return workflows.NodeResult{}, err
	}
	single := func(id string, run workflows.NodeFunc) *workflows.Definition {
		return &workflows.Definition{
			ID: id, Version: "1",
			Nodes: map[string]workflows.Node{reasonNode: {Run: run}},
			Edges: []workflows.Edge{{From: workflows.Start, To: reasonNode}, {From: reasonNode, To: workflows.End}},
		}
	}
	return []*workflows.Definition{
		single(kortyxToolLoop, loop(false)),
		single(kortyxToolLoopEmit, loop(true)),
		single(kortyxFirstToken, first),
	}
}

// modelOptions and toolOptions are hooks.Reason's default activity options for a streaming
// model pass and for a tool call.
func modelOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	}
}

func toolOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 3},
	}
}

// toolLoopInput and toolLoopResult are the input and result of the plain tool-loop workflow.
type toolLoopInput struct {
	Emit bool `json:"emit"` // text chunks from the model activity, tool chunks by local activity
	// The loop to run; zero values: the loop of BenchmarkToolLoopStep (loopProvider, loopTool,
	// loopPrompt, loopCalls tool calls).
	Provider string `json:"provider,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Calls    int    `json:"calls,omitempty"`
}

// withDefaults fills the zero fields with the loop of BenchmarkToolLoopStep.
func (in toolLoopInput) withDefaults() toolLoopInput {
	if in.Provider == "" {
		in.Provider = loopProvider
	}
	if in.Tool == "" {
		in.Tool = loopTool
	}
	if in.Prompt == "" {
		in.Prompt = loopPrompt
	}
	if in.Calls == 0 {
		in.Calls = loopCalls
	}
	return in
}

type toolLoopResult struct {
	Text      string          `json:"text"`
	Passes    int             `json:"passes"`
	ToolCalls int             `json:"toolCalls"`
	Usage     providers.Usage `json:"usage"`
}

// PlainToolLoopWorkflow is the tool loop of hooks.Reason written by hand: it executes the
// kortyx.Model and kortyx.Tool activities by name, with hooks.Reason's default options, and
// builds the same message list (user prompt; then per step the assistant message with its tool
// call and the tool message with the result). With Emit, the model activity publishes its text
// and a local activity publishes a tool-call-start chunk before each call and a
// tool-call-result chunk after it, as hooks.Reason with ToolExecution.Emit does.
func PlainToolLoopWorkflow(ctx workflow.Context, in toolLoopInput) (toolLoopResult, error) {
	in = in.withDefaults()
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	const opID = "op" // hooks.Reason draws a UUID (SideEffect); one id per run is enough here
	mctx := workflow.WithActivityOptions(ctx, modelOptions())
	tctx := workflow.WithActivityOptions(ctx, toolOptions())
	msgs := []providers.Message{{Role: providers.RoleUser, Content: in.Prompt}}
	var out toolLoopResult
	seq := 0
	emit := func(call providers.ToolCall, c contracts.Chunk) error {
		seq++
		c.Node, c.ID, c.OpID, c.Tool, c.ToolCallID = reasonNode, loopHookID, opID, call.Name, call.ID
		return publish(ctx, seq, c)
	}
	for step := 0; ; step++ {
		if step > in.Calls {
			return out, fmt.Errorf("no answer after %d model passes", step)
		}
		pass := protocol.ModelPassInput{
			RunID: runID, Node: reasonNode, HookID: loopHookID, OpID: opID, SegmentID: "step-" + strconv.Itoa(step),
			Model: providers.ModelRef{Provider: in.Provider}, Messages: msgs, Tools: []string{in.Tool},
			Stream: true, Emit: in.Emit,
		}
		var resp providers.Response
		if err := workflow.ExecuteActivity(mctx, protocol.ModelActivityName, pass).Get(mctx, &resp); err != nil {
			return out, err
		}
		out.Passes++
		out.Usage = protocol.AddUsage(out.Usage, resp.Usage)
		if len(resp.ToolCalls) == 0 {
			out.Text = resp.Text
			return out, nil
		}
		msgs = append(msgs, providers.Message{Role: providers.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Continuation: resp.Continuation})
		for _, call := range resp.ToolCalls {
			if in.Emit {
				if err := emit(call, contracts.Chunk{Type: contracts.ChunkToolCallStart, Input: call.Arguments}); err != nil {
					return out, err
				}
			}
			tin := protocol.ToolCallInput{RunID: runID, Tool: call.Name, ToolCallID: call.ID, Input: call.Arguments,
				IdempotencyKey: runID + ":" + opID + ":" + call.ID}
			var res providers.ToolResult
			if err := workflow.ExecuteActivity(tctx, protocol.ToolActivityName, tin).Get(tctx, &res); err != nil {
				return out, err
			}
			out.ToolCalls++
			if in.Emit {
				err := emit(call, contracts.Chunk{Type: contracts.ChunkToolCallResult, Content: res.Content,
					StructuredContent: res.StructuredContent, IsError: res.IsError})
				if err != nil {
					return out, err
				}
			}
			msgs = append(msgs, providers.Message{Role: providers.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError})
		}
	}
}

// firstTokenInput is the input of the plain first-token activity.
type firstTokenInput struct {
	RunID string `json:"runId"`
	// Heartbeat records a heartbeat before publishing each delta, as kortyx.Model does.
	Heartbeat bool `json:"heartbeat"`
}

// PlainFirstTokenWorkflow executes the plain first-token model activity once, with the options
// hooks.Reason gives a streaming model pass.
func PlainFirstTokenWorkflow(ctx workflow.Context, heartbeat bool) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, modelOptions())
	in := firstTokenInput{RunID: workflow.GetInfo(ctx).WorkflowExecution.ID, Heartbeat: heartbeat}
	var text string
	err := workflow.ExecuteActivity(ctx, firstTokenActivity, in).Get(ctx, &text)
	return text, err
}

type firstTokenActivities struct {
	broker stream.Broker
}

// FirstTokenModel streams firstTokenModel's answer to the broker like kortyx.Model does, but
// without its provider lookup and its input handling, and heartbeating only when asked.
func (a *firstTokenActivities) FirstTokenModel(ctx context.Context, in firstTokenInput) (string, error) {
	pub := &deltaPublisher{broker: a.broker, runID: in.RunID}
	onDelta := func(d string) error {
		if in.Heartbeat {
			activity.RecordHeartbeat(ctx, pub.n)
		}
		return pub.delta(ctx, d)
	}
	return generateFirstToken(ctx, pub, onDelta)
}

// generateFirstToken is one streamed pass of firstTokenModel with the run's workflow ID as the
// prompt; it ends the text segment after the last delta.
func generateFirstToken(ctx context.Context, pub *deltaPublisher, onDelta func(string) error) (string, error) {
	req := providers.Request{Messages: []providers.Message{{Role: providers.RoleUser, Content: pub.runID}}}
	resp, err := firstModel.Generate(ctx, req, onDelta)
	if err != nil {
		return "", err
	}
	return resp.Text, pub.end(ctx)
}

// deltaPublisher publishes the text chunks of one streamed pass the way kortyx.Model does:
// text-start before the first delta, one text-delta per delta, text-end; keys
// "m:<opId>:<segment>:<n>".
type deltaPublisher struct {
	broker  stream.Broker
	runID   string
	n       int
	started bool
}

func (p *deltaPublisher) publish(ctx context.Context, suffix string, c contracts.Chunk) error {
	c.Node, c.ID, c.OpID, c.SegmentID = reasonNode, firstTokenHookID, "op", "step-0"
	return p.broker.Publish(ctx, p.runID, stream.Keyed{Key: "m:op:step-0:" + suffix, Chunk: c})
}

func (p *deltaPublisher) delta(ctx context.Context, d string) error {
	if !p.started {
		p.started = true
		if err := p.publish(ctx, "start", contracts.Chunk{Type: contracts.ChunkTextStart}); err != nil {
			return err
		}
	}
	p.n++
	return p.publish(ctx, strconv.Itoa(p.n), contracts.Chunk{Type: contracts.ChunkTextDelta, Delta: d})
}

func (p *deltaPublisher) end(ctx context.Context) error {
	if !p.started {
		return nil
	}
	return p.publish(ctx, "end", contracts.Chunk{Type: contracts.ChunkTextEnd})
}
