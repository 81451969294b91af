package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Call is one tool call as the tool sees it.
type Call struct {
	// ID is the model's tool call id.
	ID string
	// Input is the arguments, already valid against the tool's input schema.
	Input json.RawMessage
	// IdempotencyKey is "<workflowID>:<opId>:<toolCallID>": the same for every retry of this
	// call, also after a crash. A tool with side effects passes it on (e.g. as an
	// Idempotency-Key header) so that the effect happens once.
	IdempotencyKey string
	// RunID is the run (workflow ID) the call belongs to.
	RunID string
}

// Result is what a tool returns to the model.
type Result struct {
	// Content is the text the model reads; default: the JSON of Structured.
	Content string
	// Structured is a JSON-encodable result (validated against the output schema, if any).
	Structured any
	// IsError reports a failure the model should see and may correct.
	IsError bool
}

// Tool is a tool the model can call.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema validates the arguments before Execute runs (required).
	InputSchema *contracts.Schema
	// OutputSchema, when set, validates Result.Structured.
	OutputSchema *contracts.Schema
	// Execute runs the call. An error becomes an isError result the model can correct, unless
	// it is wrapped with [Retryable] (the activity is retried) or is a cancellation. The model
	// reads the error's text; clients (tool-call-error chunks) see a *contracts.Error's message,
	// and "An unexpected error occurred." for any other error.
	Execute func(ctx context.Context, call Call) (Result, error)
	// Local runs the tool's calls as Temporal local activities: in the worker that runs the
	// workflow task, recorded in the workflow history as a marker when the task completes, with
	// no activity task of their own (no ActivityTaskScheduled, no round trip through the
	// server's task queue). Set it only for tools that are
	//   - fast: a local call runs inside the workflow task, which the worker keeps alive while it
	//     runs; keep every attempt well under the workflow task timeout (10 s by default), and
	//     its Timeout (ToolExecution.Timeout) bounds it as for a regular call;
	//   - idempotent: a local activity is at least once, like a regular one, but its result is
	//     only recorded when the workflow task completes, so a worker crash or a failed workflow
	//     task runs a call whose result was not recorded yet again. Call.IdempotencyKey is
	//     passed and is the same for every attempt.
	// Errors, retries ([Retryable]), approvals and chunks are the same as for a regular call.
	// The worker's workflow side must know its local tools: pass [Set.LocalNames] to
	// workflows.Registry.SetLocalTools (app.Run does). Tools of MCP servers always run as
	// regular activities. See [Local].
	Local bool
}

// Local returns t marked to run as a Temporal local activity (t.Local = true): for fast,
// idempotent tools (see [Tool.Local]).
func Local(t Tool) Tool {
	t.Local = true
	return t
}

// Func builds a tool from a typed function: the arguments are decoded into In, the returned Out
// becomes the structured result.
func Func[In, Out any](name, description, inputSchema string, fn func(ctx context.Context, call Call, in In) (Out, error)) (Tool, error) {
	schema, err := contracts.CompileSchema([]byte(inputSchema))
	if err != nil {
		return Tool{}, fmt.Errorf("kortyx: tool %q: input schema: %w", name, err)
	}
	return Tool{Name: name, Description: description, InputSchema: schema,
		Execute: func(ctx context.Context, call Call) (Result, error) {
			var in In
			if err := json.Unmarshal(call.Input, &in); err != nil {
				return Result{}, fmt.Errorf("arguments do not decode: %w", err)
			}
			out, err := fn(ctx, call, in)
			if err != nil {
				return Result{}, err
			}
			return Result{Structured: out}, nil
		}}, nil
}

type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// Retryable marks a tool error as transient: the tool activity fails and Temporal retries it
// (with the same idempotency key) instead of reporting the error to the model.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err}
}

// Set is the tools of a worker, by name; read-only after [NewSet].
type Set struct {
	byName map[string]Tool
}

// NewSet validates and indexes tools: names must match ^[A-Za-z0-9_-]{1,64}$, be unique and
// not start with a reserved prefix; InputSchema and Execute are required.
func NewSet(ts ...Tool) (*Set, error) {
	s := &Set{byName: map[string]Tool{}}
	var errs []error
	for i, t := range ts {
		switch {
		case !namePattern.MatchString(t.Name):
			errs = append(errs, fmt.Errorf("tool %d: name %q must match %s", i, t.Name, namePattern))
			continue
		case protocol.ReservedToolPrefix(t.Name) != "":
			errs = append(errs, fmt.Errorf("tool %q: names starting with %s are reserved for Kortyx", t.Name, strings.Join(protocol.ReservedToolPrefixes(), ", ")))
			continue
		case t.InputSchema == nil:
			errs = append(errs, fmt.Errorf("tool %q: InputSchema is required", t.Name))
			continue
		case t.Execute == nil:
			errs = append(errs, fmt.Errorf("tool %q: Execute is required", t.Name))
			continue
		}
		if _, dup := s.byName[t.Name]; dup {
			errs = append(errs, fmt.Errorf("tool %q: registered twice", t.Name))
			continue
		}
		s.byName[t.Name] = t
	}
	if len(errs) > 0 {
		return nil, &contracts.Error{Code: contracts.CodeInvalidDefinition, Message: "kortyx: invalid tools: " + errors.Join(errs...).Error()}
	}
	return s, nil
}

// Get returns the tool with the given name.
func (s *Set) Get(name string) (Tool, bool) {
	if s == nil {
		return Tool{}, false
	}
	t, ok := s.byName[name]
	return t, ok
}

// Names returns the registered names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LocalNames returns the names of the tools that run as local activities ([Tool.Local]),
// sorted: what workflows.Registry.SetLocalTools needs.
func (s *Set) LocalNames() []string {
	var out []string
	for _, n := range s.Names() {
		if s.byName[n].Local {
			out = append(out, n)
		}
	}
	return out
}

// Definitions returns what the model is told about the named tools, in order; an unknown name
// is an UNKNOWN_TOOL error listing the registered ones.
func (s *Set) Definitions(names []string) ([]providers.ToolDefinition, error) {
	out := make([]providers.ToolDefinition, 0, len(names))
	for _, n := range names {
		t, ok := s.Get(n)
		if !ok {
			return nil, contracts.Errorf(contracts.CodeUnknownTool,
				"tool %q is not registered on this worker (registered: %s)", n, strings.Join(s.Names(), ", "))
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out = append(out, providers.ToolDefinition{Name: t.Name, Description: desc, InputSchema: t.InputSchema.Raw()})
	}
	return out, nil
}

// Run executes one call: it validates the arguments (invalid ones become an isError result the
// model can correct), runs the tool and normalizes its result. The error is non-nil only for a
// [Retryable] tool error, a cancellation or an unknown tool.
func (s *Set) Run(ctx context.Context, in protocol.ToolCallInput) (providers.ToolResult, error) {
	t, ok := s.Get(in.Tool)
	if !ok {
		return providers.ToolResult{}, contracts.Errorf(contracts.CodeUnknownTool, "tool %q is not registered on this worker", in.Tool)
	}
	res := providers.ToolResult{ToolCallID: in.ToolCallID, Name: in.Tool}
	args := in.Input
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if issues := t.InputSchema.ValidateJSON(args); len(issues) > 0 {
		e := &contracts.Error{Code: contracts.CodeSchemaValidation, Message: fmt.Sprintf("Invalid arguments for tool %q", in.Tool), Issues: issues}
		return failed(res, e), nil
	}
	out, err := t.Execute(ctx, Call{ID: in.ToolCallID, Input: args, IdempotencyKey: in.IdempotencyKey, RunID: in.RunID})
	if err != nil {
		var r retryable
		if errors.As(err, &r) || ctx.Err() != nil {
			return providers.ToolResult{}, err
		}
		var ke *contracts.Error
		if !errors.As(err, &ke) {
			// A plain error: the model reads its text (to correct itself); its descriptor, which
			// clients see in tool-call-error chunks, is the safe EXECUTION_FAILED.
			f := contracts.FailureOf(err)
			res.IsError, res.Content, res.Failure = true, err.Error(), &f
			return res, nil
		}
		return failed(res, ke), nil
	}
	if out.Structured != nil {
		b, err := json.Marshal(out.Structured)
		if err != nil {
			return failed(res, contracts.Errorf(contracts.CodeInvalidOutput, "tool %q returned a result that is not JSON: %v", in.Tool, err)), nil
		}
		if t.OutputSchema != nil {
			if issues := t.OutputSchema.ValidateJSON(b); len(issues) > 0 {
				return failed(res, &contracts.Error{Code: contracts.CodeInvalidOutput,
					Message: fmt.Sprintf("tool %q returned a result that does not match its output schema", in.Tool), Issues: issues}), nil
			}
		}
		res.StructuredContent = b
		res.Content = string(b)
	}
	if out.Content != "" {
		res.Content = out.Content
	}
	res.IsError = out.IsError
	return res, nil
}

// failed is the isError result for a failure the model should see.
func failed(res providers.ToolResult, e *contracts.Error) providers.ToolResult {
	f := contracts.FailureOf(e)
	res.IsError = true
	res.Content = e.Error()
	res.Failure = &f
	return res
}
