package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/providers"
)

// ID is the provider id of a fake model unless [Model.WithID] changes it.
const ID = "fake"

// Turn is one scripted model pass.
type Turn struct {
	// Text is the answer.
	Text string
	// Deltas, when set, are the streamed pieces of Text (default: Text split after spaces).
	Deltas []string
	// ToolCalls are requested tool calls; an empty ID becomes "call-<name>-<n>" unless KeepIDs.
	ToolCalls []providers.ToolCall
	// KeepIDs sends tool call ids exactly as scripted, empty ones included.
	KeepIDs bool
	// Usage is reported as is; zero means {Input: 10, Output: number of deltas, Total: sum}.
	Usage providers.Usage
	// NoUsage reports no usage at all (a provider or stream that sends none). Providers then
	// return zero usage and [providers.NoUsageWarning], never silence.
	NoUsage bool
	// FinishReason defaults to "tool-calls" with tool calls, else "stop".
	FinishReason string
	Warnings     []providers.Warning
	// Err fails the pass. A *contracts.Error keeps its code and Retryable flag.
	Err error
	// FailAfter, with Err, streams this many deltas before failing (a mid-stream failure).
	FailAfter int
	// Delay waits before answering (cut short by cancellation).
	Delay time.Duration
	// Hang, when set, streams Hang.After deltas and then waits until the request is cancelled
	// (the caller's context ends, or the client goes away); then it calls Hang.Cancelled. A fake
	// server of a wire honours it with the HTTP request's context, which is how the conformance
	// suite sees that a cancelled pass reached the server.
	Hang *Hang
}

// Hang makes a turn stop mid-stream until the request is cancelled (see [Turn.Hang]).
type Hang struct {
	// After is the number of deltas sent before waiting.
	After int
	// Cancelled, when set, is called once the request's cancellation was seen.
	Cancelled func()
}

// Wait blocks until done is closed and then calls Cancelled (a nil Hang returns at once).
func (h *Hang) Wait(done <-chan struct{}) {
	if h == nil {
		return
	}
	<-done
	if h.Cancelled != nil {
		h.Cancelled()
	}
}

// Normalize returns the turn as a model would send it: tool calls without an id get
// "call-<name>-<n>" (n from *counter, incremented; unless KeepIDs) and empty arguments become
// {}. The caller guards counter.
func (t Turn) Normalize(counter *int) Turn {
	calls := make([]providers.ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" && !t.KeepIDs {
			*counter++
			c.ID = fmt.Sprintf("call-%s-%d", c.Name, *counter)
		}
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage(`{}`)
		}
		calls[i] = c
	}
	t.ToolCalls = calls
	return t
}

// Text is a turn answering s.
func Text(s string) Turn { return Turn{Text: s} }

// Call is a turn requesting one tool call with JSON arguments; its id is "call-<name>-<n>",
// n counting the calls of the model so far.
func Call(name, args string) Turn {
	return Turn{ToolCalls: []providers.ToolCall{{Name: name, Arguments: json.RawMessage(args)}}}
}

// Calls is a turn requesting several tool calls in one pass.
func Calls(calls ...providers.ToolCall) Turn { return Turn{ToolCalls: calls} }

// Fail is a turn that fails with a provider error of the given code.
func Fail(code contracts.Code, retryable bool, message string) Turn {
	return Turn{Err: &contracts.Error{Code: code, Retryable: retryable, Message: message}}
}

// Responder chooses the turn for a request; it must be safe for concurrent use.
type Responder func(req providers.Request) Turn

// Model is the fake provider.
type Model struct {
	id      string
	mu      sync.Mutex
	script  []Turn
	respond Responder
	calls   int
	toolN   int
	reqs    []providers.Request
}

// New returns a model that plays the turns in order, one per model pass; a pass after the last
// turn fails with PROVIDER_INVALID_RESPONSE ("script exhausted").
func New(turns ...Turn) *Model { return &Model{id: ID, script: turns} }

// NewResponder returns a model that asks fn for every pass.
func NewResponder(fn Responder) *Model { return &Model{id: ID, respond: fn} }

// WithID changes the provider id (to register several fakes).
func (m *Model) WithID(id string) *Model { m.id = id; return m }

// ID implements [providers.Provider].
func (m *Model) ID() string { return m.id }

// Calls returns the number of model passes so far (failed ones included).
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Requests returns copies of the requests received so far.
func (m *Model) Requests() []providers.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]providers.Request(nil), m.reqs...)
}

// Generate implements [providers.Provider].
func (m *Model) Generate(ctx context.Context, req providers.Request, onDelta func(string) error) (providers.Response, error) {
	m.mu.Lock()
	n := m.calls
	m.calls++
	m.reqs = append(m.reqs, req)
	var t Turn
	switch {
	case m.respond != nil:
		m.mu.Unlock()
		t = m.respond(req)
		m.mu.Lock()
	case n < len(m.script):
		t = m.script[n]
	default:
		m.mu.Unlock()
		return providers.Response{}, contracts.Errorf(contracts.CodeProviderInvalidResponse,
			"fake model script exhausted: pass %d requested, %d scripted", n+1, len(m.script))
	}
	calls := t.Normalize(&m.toolN).ToolCalls
	m.mu.Unlock()

	// The fake has no options of its own: every key under its id is reported.
	_, optWarnings, err := providers.DecodeOptions[struct{}](req.Options.ProviderOptions, m.id)
	if err != nil {
		return providers.Response{}, err
	}

	if t.Delay > 0 {
		select {
		case <-time.After(t.Delay):
		case <-ctx.Done():
			return providers.Response{}, ctx.Err()
		}
	}
	deltas := t.Deltas
	if deltas == nil && t.Text != "" {
		deltas = strings.SplitAfter(t.Text, " ")
	}
	if t.Err != nil && t.FailAfter == 0 {
		return providers.Response{}, t.Err
	}
	if onDelta != nil {
		for i, d := range deltas {
			if t.Err != nil && i == t.FailAfter {
				return providers.Response{}, t.Err
			}
			if t.Hang != nil && i == t.Hang.After {
				t.Hang.Wait(ctx.Done())
				return providers.Response{}, ctx.Err()
			}
			if err := onDelta(d); err != nil {
				return providers.Response{}, err
			}
		}
	}
	if t.Err != nil {
		return providers.Response{}, t.Err
	}
	if t.Hang != nil {
		t.Hang.Wait(ctx.Done())
		return providers.Response{}, ctx.Err()
	}
	text := t.Text
	if text == "" {
		text = strings.Join(deltas, "")
	}
	usage := t.Usage
	warnings := append(optWarnings, t.Warnings...)
	if t.NoUsage {
		usage = providers.Usage{}
		warnings = append(warnings, providers.NoUsageWarning(m.id))
	} else if usage == (providers.Usage{}) {
		usage = providers.Usage{Input: 10, Output: len(deltas)}
		usage.Total = usage.Input + usage.Output
	}
	finish := t.FinishReason
	if finish == "" {
		finish = providers.FinishStop
		if len(calls) > 0 {
			finish = providers.FinishToolCalls
		}
	}
	return providers.Response{
		Text:         text,
		ToolCalls:    calls,
		Usage:        usage,
		FinishReason: providers.FinishReason{Unified: finish, Raw: finish},
		Warnings:     warnings,
	}, nil
}
