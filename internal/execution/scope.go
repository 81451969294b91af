package execution

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// Scope is the hook scope of one node attempt. Hooks find it in the node's workflow.Context.
type Scope struct {
	run      *Run
	node     string
	workflow string
	counts   map[string]int
	used     map[string]bool
	slot     int
	closed   bool
	calls    int  // workflow calls made by this attempt
	joining  bool // a workflow call or parallel group is being awaited
}

type scopeKey struct{}

// errOutside is returned by hooks called with a context that carries no open node scope.
func errOutside(hook string) error {
	return contracts.Errorf(contracts.CodeHookOutsideNode,
		"kortyx: hooks.%s called outside a node; call hooks only from a node function, with the ctx it receives", hook)
}

// From returns the open scope carried by ctx; hook names the calling hook for the error.
func From(ctx workflow.Context, hook string) (*Scope, error) {
	if ctx == nil {
		return nil, errOutside(hook)
	}
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	if s == nil {
		return nil, errOutside(hook)
	}
	if s.closed {
		return nil, errClosed(hook, s.node)
	}
	return s, nil
}

func errClosed(hook, node string) error {
	return contracts.Errorf(contracts.CodeHookOutsideNode,
		"kortyx: hooks.%s called after node %q returned; hooks work only while their node runs", hook, node)
}

// BeginNode starts a node activation: node state and the journal are kept only when the same
// node runs again right after itself (retry, self-loop); A→B→A starts A fresh (spec F3.0).
func (r *Run) BeginNode(node string) {
	r.Node = node
	if r.session != nil {
		r.session.Touched(node)
	}
	r.Snap.Activations++
	h := &r.Snap.Hooks
	if h.NodeID != node {
		h.NodeID = node
		h.NodeSlots = nil
		h.Journal = nil
	}
}

// EndNode closes a successful node activation: its journal is no longer needed (a later
// activation of the same node asks anew) while its node state stays for self-loops.
func (r *Run) EndNode() {
	r.Snap.Hooks.Journal = nil
	r.Node = ""
}

// Enter opens a scope for one attempt of node (of workflow wf) and returns the context to pass
// to the node function. Close the scope when the function returns.
func (r *Run) Enter(ctx workflow.Context, node, wf string) (workflow.Context, *Scope) {
	s := &Scope{run: r, node: node, workflow: wf, counts: map[string]int{}, used: map[string]bool{}}
	return workflow.WithValue(ctx, scopeKey{}, s), s
}

// Close ends the scope: hooks called later with its context fail.
func (s *Scope) Close() { s.closed = true }

// Node returns the node id of the scope.
func (s *Scope) Node() string { return s.node }

// Workflow returns the workflow id of the scope.
func (s *Scope) Workflow() string { return s.workflow }

// Run returns the run the scope belongs to.
func (s *Scope) Run() *Run { return s.run }

// key returns the journal key of a hook call: "<kind>:<id>" for an explicit id, else
// "<kind>#<n>" by call position within the attempt. An explicit id used twice is an error.
func (s *Scope) key(kind, id string) (string, error) {
	if id != "" {
		k := kind + keyID + id
		if s.used[k] {
			return "", contracts.Errorf(contracts.CodeInvalidRequest,
				"kortyx: hook id %q is used twice by %s in node %q; give each call its own id", id, kind, s.node)
		}
		s.used[k] = true
		return k, nil
	}
	n := s.counts[kind]
	s.counts[kind] = n + 1
	return kind + keyNth + strconv.Itoa(n), nil
}

func (s *Scope) journal(key string) (protocol.JournalEntry, bool) {
	e, ok := s.run.Snap.Hooks.Journal[key]
	return e, ok
}

func (s *Scope) record(key string, e protocol.JournalEntry) {
	h := &s.run.Snap.Hooks
	if h.Journal == nil {
		h.Journal = map[string]protocol.JournalEntry{}
	}
	h.Journal[key] = e
}

// NodeSlot returns the index and current value of the next positional node-state slot,
// storing initial on first use.
func (s *Scope) NodeSlot(initial json.RawMessage) (int, json.RawMessage) {
	i := s.slot
	s.slot++
	h := &s.run.Snap.Hooks
	if i < len(h.NodeSlots) && len(h.NodeSlots[i]) > 0 {
		return i, h.NodeSlots[i]
	}
	for len(h.NodeSlots) <= i {
		h.NodeSlots = append(h.NodeSlots, nil)
	}
	h.NodeSlots[i] = initial
	return i, initial
}

// SetNodeSlot stores a node-state slot.
func (s *Scope) SetNodeSlot(i int, v json.RawMessage) error {
	if s.closed {
		return errClosed("State.Set", s.node)
	}
	s.run.Snap.Hooks.NodeSlots[i] = v
	return nil
}

// WorkflowValue returns the workflow-state value under key, storing initial on first use
// (when initial is not nil).
func (s *Scope) WorkflowValue(key string, initial json.RawMessage) (json.RawMessage, bool) {
	ws := s.run.Snap.Hooks.WorkflowState
	if v, ok := ws[key]; ok {
		return v, true
	}
	if initial != nil {
		ws[key] = initial
	}
	return initial, false
}

// SetWorkflowValue stores a workflow-state value.
func (s *Scope) SetWorkflowValue(key string, v json.RawMessage) error {
	if s.closed {
		return errClosed("State.Set", s.node)
	}
	s.run.Snap.Hooks.WorkflowState[key] = v
	return nil
}

// RuntimeContext returns the run's request context ({} when none).
func (s *Scope) RuntimeContext() map[string]any {
	if c := s.run.Snap.State.Config.Context; c != nil {
		return protocol.Clone(c)
	}
	return map[string]any{}
}

// NewStreamID returns "<runId>:structured:<n>", n being the sequence number the next chunk
// will get (unique within the run).
func (r *Run) NewStreamID() string {
	return fmt.Sprintf("%s:structured:%d", r.ID, r.Snap.Seq+1)
}

// Structured publishes a structured-data chunk and returns its stream id (a new one when c has
// none). A chunk already published at the same call position by an earlier attempt of this node
// activation is not published again, and keeps its stream id.
func (s *Scope) Structured(ctx workflow.Context, c contracts.Chunk) (string, error) {
	key, err := s.key(entryStructured, "")
	if err != nil {
		return "", err
	}
	c.Node = s.node
	prev, seen := s.journal(key)
	if seen && c.StreamID == "" {
		var old contracts.Chunk
		if json.Unmarshal(prev.Value, &old) == nil {
			c.StreamID = old.StreamID
		}
	}
	if c.StreamID == "" {
		c.StreamID = s.run.NewStreamID()
	}
	body := protocol.RawJSON(c)
	if seen && bytes.Equal(prev.Value, body) {
		return c.StreamID, nil
	}
	s.run.Emit(c)
	s.record(key, protocol.JournalEntry{Kind: entryStructured, Value: body, At: workflow.Now(ctx)})
	return c.StreamID, nil
}

// Interrupt asks a question and waits for its answer; an answer recorded by an earlier attempt
// of this node activation is returned without asking again.
func (s *Scope) Interrupt(ctx workflow.Context, hookID string, in contracts.InterruptInput, responseSchema *contracts.Schema) (contracts.Answer, error) {
	key, err := s.key(entryInterrupt, hookID)
	if err != nil {
		return contracts.Answer{}, err
	}
	return s.interruptKeyed(ctx, key, hookID, in, responseSchema)
}

// interruptKeyed is Interrupt under an explicit journal key.
func (s *Scope) interruptKeyed(ctx workflow.Context, key, hookID string, in contracts.InterruptInput, responseSchema *contracts.Schema) (contracts.Answer, error) {
	e, ok := s.journal(key)
	if ok && e.Answer != nil {
		return *e.Answer, nil
	}
	var req contracts.PendingRequest
	if ok && e.Kind == entryPending && json.Unmarshal(e.Value, &req) == nil && req.Token != "" {
		// A run restored from a checkpoint asks the same question again, with the token and
		// request id the checkpoint holds (rollback keeps them, fork replaces them).
		req.Input, req.Node, req.Workflow, req.HookID = in, s.node, s.workflow, hookID
	} else {
		token, requestID := s.run.requestIDs(ctx)
		req = contracts.PendingRequest{
			RequestID: requestID,
			Token:     token,
			Workflow:  s.workflow,
			Node:      s.node,
			HookID:    hookID,
			Input:     in,
			CreatedAt: workflow.Now(ctx),
		}
		// Recorded before waiting, so that a checkpoint taken while waiting lets a restored run
		// ask this question again under the same token.
		s.record(key, protocol.JournalEntry{Kind: entryPending, Value: protocol.RawJSON(req), At: req.CreatedAt})
	}
	ans, err := s.run.Ask(ctx, req, responseSchema)
	if err != nil {
		return contracts.Answer{}, err
	}
	s.record(key, protocol.JournalEntry{Kind: entryInterrupt, Answer: &ans, At: workflow.Now(ctx)})
	return ans, nil
}
