package protocol

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
)

// Control tool name prefixes (spec F3.7, F3.8): tools with these prefixes are Kortyx's, never
// a worker tool's.
const (
	PrefixEmit         = "kortyx_emit__"
	PrefixReturn       = "kortyx_return__"
	PrefixStreamEmit   = "kortyx_stream_emit__"
	PrefixStreamReturn = "kortyx_stream_return__"
	PrefixRequestInput = "kortyx_request_input__"
)

// ReservedToolPrefixes returns the control tool prefixes, the one list of them: a tool name that
// starts with one is Kortyx's, never a worker tool's.
func ReservedToolPrefixes() []string {
	return []string{PrefixRequestInput, PrefixEmit, PrefixReturn, PrefixStreamEmit, PrefixStreamReturn}
}

// ReservedToolPrefix returns the control tool prefix that name starts with, or "" if none.
func ReservedToolPrefix(name string) string {
	for _, p := range ReservedToolPrefixes() {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}

// MaxToolNameLength bounds tool names, control tools included.
const MaxToolNameLength = 64

var contractName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// CheckContractName checks a contract name and the length of the control tool it becomes.
func CheckContractName(name, prefix string) error {
	if !contractName.MatchString(name) {
		return contracts.Errorf(contracts.CodeInvalidDefinition, "contract name %q must match %s", name, contractName)
	}
	if n := len(prefix) + len(name); n > MaxToolNameLength {
		return contracts.Errorf(contracts.CodeInvalidDefinition, "contract name %q is too long: its tool %s%s has %d characters, at most %d are allowed",
			name, prefix, name, n, MaxToolNameLength)
	}
	return nil
}

// Limits on child workflow calls (spec F3.13).
const (
	// MaxWorkflowCallsPerActivation bounds the child calls of one node activation.
	MaxWorkflowCallsPerActivation = 64
	// MaxWorkflowDepth bounds the nesting of child calls (the root run is depth 0).
	MaxWorkflowDepth = 16
)

// DefaultChoiceQuestion is shown for a choice interrupt asked without a question.
const DefaultChoiceQuestion = "Please choose an option."

// CheckResponse matches an answer against a pending request: token first, then request id.
// It does not look at the answer itself; see [NormalizeAnswer].
func CheckResponse(p *contracts.PendingRequest, r contracts.Response) error {
	if p == nil {
		return contracts.Errorf(contracts.CodeInvalidResume, "No waiting request in this run: the run is not waiting for an answer.")
	}
	if strings.TrimSpace(r.Token) == "" || r.Token != p.Token {
		return contracts.Errorf(contracts.CodeInvalidResume, "Resume token does not match the waiting request; it is expired, already consumed, or wrong.")
	}
	if r.RequestID != p.RequestID {
		return &contracts.Error{Code: contracts.CodeResumeMismatch,
			Message: fmt.Sprintf("Answer names request %q but the run is waiting for %q.", r.RequestID, p.RequestID),
			Details: map[string]any{"requestId": p.RequestID}}
	}
	return nil
}

// Special node ids of a graph.
const (
	StartNode = "__start__"
	EndNode   = "__end__"
)

// RawJSON marshals v, for the raw JSON fields of [Chunk] and journal entries. It is for values
// that are known to encode (decoded JSON, this module's own types): one that cannot be
// marshalled is a bug, and RawJSON panics rather than record nothing (in workflow code the
// panic fails the workflow task, which Temporal retries once the code is fixed). Marshal
// anything else yourself and handle the error.
func RawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if r, ok := v.(json.RawMessage); ok {
		return r
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kortyx: a %T that cannot be encoded as JSON reached RawJSON: %v", v, err))
	}
	return b
}

// InterruptChunk is the interrupt chunk that asks req: the one the run publishes, and the one a reader
// rebuilds for a question whose stream is gone.
func InterruptChunk(req contracts.PendingRequest) contracts.Chunk {
	return contracts.Chunk{
		Type:          contracts.ChunkInterrupt,
		RequestID:     req.RequestID,
		ResumeToken:   req.Token,
		Workflow:      req.Workflow,
		Node:          req.Node,
		ID:            req.HookID,
		SchemaID:      req.Input.SchemaID,
		SchemaVersion: req.Input.SchemaVersion,
		Meta:          req.Input.Meta,
		Input:         RawJSON(req.Input),
	}
}
