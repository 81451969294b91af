package execution

import (
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The options of a Reason call are defined here, once; package hooks exposes them under the
// same names as aliases (hooks.ReasonOptions, hooks.Outputs, hooks.Interrupts,
// hooks.ToolExecution, hooks.Switch), and the kortyx.reason node kind builds the same type.

// ReasonOptions is a model call (spec F3.5, F3.6), exposed as hooks.ReasonOptions. The zero
// value of every field works.
type ReasonOptions struct {
	// ID is a stable id for this call within its node (recommended); it is copied into the
	// text and tool chunks. Without it the call is identified by its position.
	ID string
	// Model names the model as data, e.g. providers.Model("openai:gpt-4.1-mini"); an empty
	// Provider uses the worker's default provider.
	Model providers.ModelRef
	// System is the system prompt.
	System string
	// Messages is the conversation so far (before Input).
	Messages []providers.Message
	// Input is appended as the last user message when not empty.
	Input string
	// Options are the generation options (temperature, max output tokens, stop sequences,
	// reasoning, response format, provider options).
	Options providers.CallOptions
	// Silent publishes no text chunks (Kortyx emit: false).
	Silent bool
	// Buffered calls the model without streaming (Kortyx stream: false). Without it the call
	// streams unless the model's options say {"streaming": false}.
	Buffered bool
	// Tools names worker tools the model may call.
	Tools []string
	// MCP adds the tools of MCP servers; their list is read once per call and recorded, so
	// replays and retries see the same tools.
	MCP []protocol.MCPServer
	// ToolExecution configures the tool loop.
	ToolExecution ToolExecution
	// Outputs lets the model publish typed values while it works (emit) and finish with one
	// typed result (return) (spec F3.7).
	Outputs *Outputs
	// Interrupts lets the model ask a human typed questions (spec F3.8).
	Interrupts *Interrupts
	// OutputSchema asks for a JSON final answer valid against the schema; the validated value
	// is in the result's Output (text chunks are not published).
	OutputSchema *contracts.Schema
	// SchemaCorrections is the number of output-only repair passes for an invalid output value
	// (an emit or return payload, or an OutputSchema answer): nil means 1, a pointer to 0
	// disables repair (the validation failure is returned), at most 10. See hooks.Corrections.
	SchemaCorrections *int
	// Timeout bounds one attempt of a model pass (default 5 minutes); Retry is its retry policy
	// (default: no attempt limit, backoff from 1 s to 1 min, for at most max(6 × Timeout,
	// 10 min); non-retryable provider errors stop at once). Your own policy is used as it is:
	// its MaximumAttempts also counts attempts lost to dead workers.
	Timeout time.Duration
	Retry   *temporal.RetryPolicy
	// MaxFailures caps the retryable provider errors of one model pass (5xx, 429, a broken
	// stream…), counted apart from attempts lost to dead workers or timeouts, which only the
	// time bound limits: the failure that reaches the cap fails the pass with the provider's
	// code. 0: 5 with the default Retry, no cap with your own; -1: no cap.
	MaxFailures int
	// FastPath runs the call's model passes as Temporal local activities, in the worker that
	// runs the workflow task, instead of activity tasks through the server: a tool loop whose
	// tools are local too advances in a few workflow tasks. An agent turns it on for all its
	// Reason calls with Definition.FastPath (YAML fastPath: true). What changes (a crash
	// re-runs the passes since the last completed workflow task; cancellation arrives with the
	// next workflow task heartbeat) is in docs/reason.md#fast-path.
	FastPath bool
}

// Outputs are the output contracts of a Reason call, by name (names match
// ^[A-Za-z][A-Za-z0-9_-]*$).
type Outputs struct {
	// Emit contracts publish a value and let the loop continue.
	Emit map[string]*contracts.OutputContract
	// Return contracts finish the call with one value.
	Return map[string]*contracts.OutputContract
	// MaxEmissions bounds the emitted values (default 16).
	MaxEmissions int
}

// Interrupts are the interrupt contracts of a Reason call.
type Interrupts struct {
	Contracts map[string]*contracts.InterruptContract
	// Mode is "optional" (default) or "required": the model must ask at least once.
	Mode string
	// MaxRequests bounds the questions asked (default 1).
	MaxRequests int
}

// ToolExecution configures the tool loop of hooks.Reason.
type ToolExecution struct {
	// MaxSteps bounds the model passes of the call (default 3, minimum 1).
	MaxSteps int
	// Emit publishes tool-call-start / tool-call-result / tool-call-error chunks.
	Emit Switch
	// Approval asks a human "Approve <tool>?" before each call (interrupt id "tool:<callId>").
	Approval Switch
	// MaxResultChars bounds the text of a tool result sent back to the model (default 32,000;
	// -1: unbounded); the full result stays in the [ReasonResult].
	MaxResultChars int
	// MissingReturnCorrections is the number of extra passes that ask the model to finish with
	// a return contract when it answered without one (default 0).
	MissingReturnCorrections int
	// Timeout bounds one attempt of a tool call (default 2 minutes); Retry is its retry policy
	// (default: no attempt limit, backoff from 1 s to 30 s, for at most max(6 × Timeout,
	// 10 min); only retryable tool errors and lost attempts are retried). Your own policy is
	// used as it is: its MaximumAttempts also counts attempts lost to dead workers.
	Timeout time.Duration
	Retry   *temporal.RetryPolicy
	// MaxFailures caps the retryable errors of one tool call (a worker tool's Retryable error,
	// an MCP server that cannot be reached), counted apart from attempts lost to dead workers
	// or timeouts, which only the time bound limits: the error that reaches the cap fails the
	// call with the tool's code. 0: 3 with the default Retry, no cap with your own; -1: no cap.
	MaxFailures int
}

// Switch is "a bool, or per tool": On applies to every tool except those listed in Tools.
type Switch struct {
	On    bool
	Tools map[string]bool
}

// For reports the setting for a tool.
func (s Switch) For(tool string) bool {
	if v, ok := s.Tools[tool]; ok {
		return v
	}
	return s.On
}

// heartbeatTimeout is the heartbeat timeout of model and tool activities.
const heartbeatTimeout = 10 * time.Second

// Default caps of a call's own retryable failures (ReasonOptions.MaxFailures,
// ToolExecution.MaxFailures).
const (
	defaultModelFailures = 5
	defaultToolFailures  = 3
)

// failureCap is the cap of a call's own failures: n when set (-1: none), else def with the
// default retry policy and none with the caller's.
func failureCap(n, def int, retry *temporal.RetryPolicy) (int, error) {
	switch {
	case n < -1:
		return 0, fmt.Errorf("must be -1 (no cap), 0 (the default) or a count of failures, not %d", n)
	case n == -1:
		return 0, nil
	case n > 0:
		return n, nil
	case retry == nil:
		return def, nil
	}
	return 0, nil
}

// minRetryWindow is the shortest time a model pass or a tool call is retried for by default.
const minRetryWindow = 10 * time.Minute

// activityOptions are the options of a model or tool activity. The default retry policy has no
// attempt limit: an attempt lost to a dead worker (a heartbeat or start-to-close timeout) is
// not the call's fault, and a small attempt budget would fail runs in a crash loop. Instead
// the call is bounded in time: retried with backoff (1 s doubling up to maxInterval) for at
// most max(6 × timeout, 10 min). Failures that cannot succeed on retry are non-retryable
// where they are classified (provider errors, unknown tools) and stop at once. A policy of
// the caller is used as it is, without that bound: its MaximumAttempts counts every attempt,
// lost ones included.
func activityOptions(timeout time.Duration, retry *temporal.RetryPolicy, maxInterval time.Duration) workflow.ActivityOptions {
	o := workflow.ActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: retry, HeartbeatTimeout: heartbeatTimeout}
	if retry == nil {
		o.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: maxInterval}
		o.ScheduleToCloseTimeout = max(6*timeout, minRetryWindow)
	}
	return o
}

// spec checks opts and fills in the defaults.
func (opts ReasonOptions) spec() (reasonSpec, error) {
	bad := func(format string, args ...any) (reasonSpec, error) {
		return reasonSpec{}, contracts.Errorf(contracts.CodeInvalidRequest, "hooks.Reason: "+format, args...)
	}
	var msgs []providers.Message
	if opts.System != "" {
		msgs = append(msgs, providers.Message{Role: providers.RoleSystem, Content: opts.System})
	}
	msgs = append(msgs, opts.Messages...)
	if strings.TrimSpace(opts.Input) != "" {
		msgs = append(msgs, providers.Message{Role: providers.RoleUser, Content: opts.Input})
	}
	if len(msgs) == 0 {
		return bad("nothing to send: give Input, Messages or System")
	}
	if r := opts.Options.Reasoning; r != nil && r.IncludeThoughts && opts.Options.ResponseFormat != nil && opts.Options.ResponseFormat.Type != "text" {
		return bad("Reasoning.IncludeThoughts cannot be combined with a JSON response format")
	}
	te := opts.ToolExecution
	if te.MaxSteps < 0 {
		return bad("ToolExecution.MaxSteps must be at least 1, not %d", te.MaxSteps)
	}
	if te.MaxSteps == 0 {
		te.MaxSteps = 3
	}
	seen := map[string]bool{}
	for _, t := range opts.Tools {
		if t == "" || seen[t] {
			return bad("tool names must be non-empty and listed once (got %q)", t)
		}
		seen[t] = true
	}
	maxChars := te.MaxResultChars
	switch {
	case maxChars == 0:
		maxChars = 32_000
	case maxChars < 0:
		maxChars = 0
	}
	stream := !opts.Buffered
	if v, ok := opts.Model.Options["streaming"].(bool); ok && !v {
		stream = false
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	toolTimeout := te.Timeout
	if toolTimeout <= 0 {
		toolTimeout = 2 * time.Minute
	}
	// The activities heartbeat every 200 ms (activities.KeepAliveInterval); a worker sends one
	// per half second (activities.WorkerOptions; the SDK's default is 80% of the heartbeat
	// timeout, 8 s), so a cancellation reaches a running model pass or tool within about that.
	mo := activityOptions(timeout, opts.Retry, time.Minute)
	to := activityOptions(toolTimeout, te.Retry, 30*time.Second)
	modelFailures, err := failureCap(opts.MaxFailures, defaultModelFailures, opts.Retry)
	if err != nil {
		return bad("MaxFailures %v", err)
	}
	toolFailures, err := failureCap(te.MaxFailures, defaultToolFailures, te.Retry)
	if err != nil {
		return bad("ToolExecution.MaxFailures %v", err)
	}
	corrections := 1
	if opts.SchemaCorrections != nil {
		corrections = *opts.SchemaCorrections
		if corrections < 0 || corrections > 10 {
			return bad("SchemaCorrections must be 0 (no repair) to 10, not %d", corrections)
		}
	}
	if te.MissingReturnCorrections < 0 {
		return bad("ToolExecution.MissingReturnCorrections must not be negative")
	}
	spec := reasonSpec{
		ID: opts.ID, Model: opts.Model, Messages: msgs, Options: opts.Options,
		Stream: stream, Emit: !opts.Silent, Tools: opts.Tools, MCP: opts.MCP, MaxSteps: te.MaxSteps,
		EmitTool: te.Emit.For, Approve: te.Approval.For, MaxResultChars: maxChars,
		ModelOptions:  mo,
		ToolOptions:   to,
		FastPath:      opts.FastPath,
		ModelFailures: modelFailures, ToolFailures: toolFailures,
		SchemaCorrections: corrections, MissingReturnCorrections: te.MissingReturnCorrections,
		OutputSchema: opts.OutputSchema, InterruptMode: ModeOptional,
	}
	if o := opts.Outputs; o != nil {
		if len(o.Emit)+len(o.Return) == 0 {
			return bad("Outputs needs at least one Emit or Return contract")
		}
		if opts.OutputSchema != nil {
			return bad("Outputs cannot be combined with OutputSchema")
		}
		if o.MaxEmissions < 0 {
			return bad("Outputs.MaxEmissions must be at least 1")
		}
		spec.MaxEmissions = o.MaxEmissions
		if spec.MaxEmissions == 0 {
			spec.MaxEmissions = 16
		}
		for _, set := range []struct {
			m              map[string]*contracts.OutputContract
			prefix, stream string
		}{{o.Emit, protocol.PrefixEmit, protocol.PrefixStreamEmit}, {o.Return, protocol.PrefixReturn, protocol.PrefixStreamReturn}} {
			for _, name := range workflow.DeterministicKeys(set.m) {
				c := set.m[name]
				prefix := set.prefix
				if c != nil && len(c.StreamFields) > 0 {
					prefix = set.stream
				}
				if err := protocol.CheckContractName(name, prefix); err != nil {
					return reasonSpec{}, err
				}
				if c == nil || c.Schema == nil {
					return bad("output contract %q is nil or has no schema; build it with contracts.NewOutputContract", name)
				}
			}
		}
		spec.EmitContracts, spec.ReturnContracts = o.Emit, o.Return
	}
	if in := opts.Interrupts; in != nil {
		if len(in.Contracts) == 0 {
			return bad("Interrupts needs at least one contract")
		}
		for _, name := range workflow.DeterministicKeys(in.Contracts) {
			if err := protocol.CheckContractName(name, protocol.PrefixRequestInput); err != nil {
				return reasonSpec{}, err
			}
			if c := in.Contracts[name]; c == nil || c.RequestSchema == nil || c.ResponseSchema == nil {
				return bad("interrupt contract %q is nil or lacks a schema; build it with contracts.NewInterruptContract", name)
			}
		}
		switch in.Mode {
		case "", ModeOptional:
		case ModeRequired:
			spec.InterruptMode = ModeRequired
		default:
			return bad("Interrupts.Mode must be %q or %q, not %q", ModeOptional, ModeRequired, in.Mode)
		}
		if in.MaxRequests < 0 {
			return bad("Interrupts.MaxRequests must be at least 1")
		}
		spec.MaxRequests = in.MaxRequests
		if spec.MaxRequests == 0 {
			spec.MaxRequests = 1
		}
		spec.Interrupts = in.Contracts
	}
	for _, t := range opts.Tools {
		if p := protocol.ReservedToolPrefix(t); p != "" {
			return bad("tool %q uses the reserved prefix %s", t, p)
		}
	}
	return spec, nil
}
