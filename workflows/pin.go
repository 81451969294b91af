package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// Pinning (docs/versioning.md): a run records the definition it starts with — once, as a side
// effect at its first workflow task — and carries it in its snapshots. From then on it runs
// that definition: when the worker's definition of the same id has another hash, the recorded
// one is rebound against the worker's node functions and node kinds (a YAML/JSON agent keeps
// its graph and params), or, when it cannot be (nodes whose Go function is set in a definition
// built in Go, a missing node function, a digest-only record), the workflow task fails with an
// error naming the nodes that changed: the run stops, and continues once a worker with a
// compatible definition picks it up.

// pinChangeID is the workflow.GetVersion change id behind which runs record their definition
// and give the activities of hooks node-named ids (version 1), and are lean (version 2,
// execution.LeanVersion). Runs whose history has no marker of it (started before) replay as
// they were recorded, and so do runs that recorded version 1.
const pinChangeID = "kortyx.pinned-definition"

// pinLimit bounds the JSON of a recorded definition. A larger definition records only its
// hashes (PinnedDefinition.Digest): a change is still detected, but cannot be rebound.
const pinLimit = 256 << 10

// pinOf returns what a run records of d, a valid definition as added (RunName still set).
func pinOf(d *Definition) *protocol.PinnedDefinition {
	p := &protocol.PinnedDefinition{ID: d.ID, Version: d.Version, Nodes: make(map[string]protocol.PinnedNode, len(d.Nodes)), FastPath: d.FastPath}
	for id, n := range d.Nodes {
		pn := protocol.PinnedNode{Run: n.RunName, Code: n.RunName == "", Version: n.Version, Params: n.Params}
		if n.Retry != nil {
			pn.Retry = &protocol.PinnedRetry{MaxAttempts: n.Retry.MaxAttempts, DelayMs: n.Retry.DelayMs}
		}
		pn.Hash = hashJSON(struct {
			ID   string              `json:"id"`
			Node protocol.PinnedNode `json:"node"`
		}{id, pn})
		p.Nodes[id] = pn
	}
	for _, e := range d.Edges {
		p.Edges = append(p.Edges, protocol.PinnedEdge{From: e.From, To: e.To, When: e.When})
	}
	if d.InputSchema != nil {
		p.InputSchema = d.InputSchema.Raw()
	}
	if d.OutputSchema != nil {
		p.OutputSchema = d.OutputSchema.Raw()
	}
	p.Hash = hashJSON(p)
	if b, err := json.Marshal(p); err != nil || len(b) > pinLimit {
		p.Digest, p.InputSchema, p.OutputSchema = true, nil, nil
		for id, n := range p.Nodes {
			n.Params = nil
			p.Nodes[id] = n
		}
	}
	return p
}

// hashJSON is the hex SHA-256 of v's JSON (encoding/json sorts map keys: canonical enough for
// values that round-trip through JSON, which params and schemas do).
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // params were checked encodable when the definition was added
		b = []byte(fmt.Sprintf("%#v", v))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Fingerprint returns the hash a run records of the registered definition id ("" when none
// is registered): the hex SHA-256 of its nodes (id, node function, params, retry, declared
// version), edges and schemas.
func (r *Registry) Fingerprint(id string) string {
	if d, ok := r.Lookup(id); ok && d.pin != nil {
		return d.pin.Hash
	}
	return ""
}

// NodeRuns returns what each node of the registered definition id runs, by node id: the
// registered node function or node kind (the "run" of a file, e.g. [ReasonNode]), or "" for a
// Go function set in the definition. Nil when id is not registered.
func (r *Registry) NodeRuns(id string) map[string]string {
	d, ok := r.Lookup(id)
	if !ok || d.pin == nil {
		return nil
	}
	out := make(map[string]string, len(d.pin.Nodes))
	for n, p := range d.pin.Nodes {
		out[n] = p.Run
	}
	return out
}

// pinned returns the definition a run that recorded rec runs: cur (the worker's definition of
// rec.ID, nil when none) when its hash is the recorded one, else rec rebound against this
// registry. It fails with INVALID_DEFINITION naming the changed nodes when rec cannot be rebound.
func (r *Registry) pinned(cur *Definition, rec *protocol.PinnedDefinition) (*Definition, error) {
	if cur != nil && cur.pin != nil && cur.pin.Hash == rec.Hash {
		return cur, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.rebound[rec.Hash]; ok {
		return d, nil
	}
	if why := unbindable(rec); why != "" {
		return nil, changedError(cur, rec, why)
	}
	d := &Definition{ID: rec.ID, Version: rec.Version, Nodes: make(map[string]Node, len(rec.Nodes)), FastPath: rec.FastPath}
	for id, n := range rec.Nodes {
		node := Node{RunName: n.Run, Params: n.Params, Version: n.Version}
		if n.Retry != nil {
			node.Retry = &Retry{MaxAttempts: n.Retry.MaxAttempts, DelayMs: n.Retry.DelayMs}
		}
		d.Nodes[id] = node
	}
	for _, e := range rec.Edges {
		d.Edges = append(d.Edges, Edge{From: e.From, To: e.To, When: e.When})
	}
	var err error
	if len(rec.InputSchema) > 0 {
		if d.InputSchema, err = contracts.CompileSchema(rec.InputSchema); err != nil {
			return nil, changedError(cur, rec, "its recorded input schema does not compile: "+err.Error())
		}
	}
	if len(rec.OutputSchema) > 0 {
		if d.OutputSchema, err = contracts.CompileSchema(rec.OutputSchema); err != nil {
			return nil, changedError(cur, rec, "its recorded output schema does not compile: "+err.Error())
		}
	}
	issues := d.issues(checkOptions{})
	more, bound := r.checkNodes(d)
	issues = append(issues, more...)
	if len(issues) > 0 {
		sortIssues(issues)
		msgs := make([]string, 0, len(issues))
		for _, is := range issues {
			msgs = append(msgs, is.Message)
		}
		return nil, changedError(cur, rec, "this worker cannot run the recorded definition: "+strings.Join(msgs, "; "))
	}
	out := r.resolve(d, bound)
	out.pin = rec
	if r.rebound == nil {
		r.rebound = map[string]*Definition{}
	}
	r.rebound[rec.Hash] = out
	return out, nil
}

// unbindable says why rec cannot be rebound ("" when it can).
func unbindable(rec *protocol.PinnedDefinition) string {
	if rec.Digest {
		return fmt.Sprintf("it was recorded as hashes only (its JSON is over %d bytes)", pinLimit)
	}
	var code []string
	for _, id := range sortedMapKeys(rec.Nodes) {
		if rec.Nodes[id].Code {
			code = append(code, fmt.Sprintf("%q", id))
		}
	}
	if len(code) > 0 {
		return "its nodes " + strings.Join(code, ", ") + " are Go functions set in a definition built in Go, which a worker cannot rebuild from the record"
	}
	return ""
}

// changedError is the error of a run whose recorded definition the worker cannot run: it names
// the nodes (and edges) that differ between the record and the worker's definition.
func changedError(cur *Definition, rec *protocol.PinnedDefinition, why string) error {
	var now *protocol.PinnedDefinition
	if cur != nil {
		now = cur.pin
	}
	changed := changedNodes(rec, now)
	what := "nodes " + strings.Join(quoteAll(changed), ", ")
	switch {
	case now == nil:
		what = "the workflow is no longer registered on this worker"
	case len(changed) == 0 && now.Version != rec.Version:
		what = fmt.Sprintf("its version, recorded %q, is %q now", rec.Version, now.Version)
	case len(changed) == 0:
		what = "edges or schemas"
	case len(changed) == 1:
		what = "node " + quoteAll(changed)[0]
	}
	return &contracts.Error{Code: contracts.CodeInvalidDefinition,
		Message: fmt.Sprintf("[kortyx] nondeterministic change: workflow %q changed since this run started (%s; recorded definition %s…): %s. "+
			"The run waits: deploy a worker with the definition the run started with, or make the change compatible (workflow.GetVersion in the node's code), see docs/versioning.md",
			rec.ID, what, short(rec.Hash), why),
		Details: map[string]any{"workflow": rec.ID, "nodes": changed, "recorded": rec.Hash}}
}

// changedNodes lists, sorted, the nodes added, removed or changed between rec and now.
func changedNodes(rec, now *protocol.PinnedDefinition) []string {
	if now == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for id, n := range rec.Nodes {
		if m, ok := now.Nodes[id]; !ok || m.Hash != n.Hash {
			seen[id] = true
		}
	}
	for id := range now.Nodes {
		if _, ok := rec.Nodes[id]; !ok {
			seen[id] = true
		}
	}
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func quoteAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%q", id)
	}
	return out
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// pinStart records def's pin as a side effect (its recorded value on replay) and returns the
// definition the run runs from then on (def, or the recorded one rebound). lookupErr is the
// error of looking def up: it stands when nothing was recorded. A recorded definition that
// this worker cannot run panics, which fails the workflow task (retried, the run waits)
// instead of the run.
//
// A run whose starter recorded its start (start: not nil) takes the definition from there.
func (r *Runner) pinStart(ctx workflow.Context, run *execution.Run, def *Definition, lookupErr error, start *protocol.StartRecord) (*Definition, error) {
	var rec *protocol.PinnedDefinition
	if start != nil {
		rec = start.Pinned
	} else {
		enc := workflow.SideEffect(ctx, func(workflow.Context) any {
			if def == nil {
				return nil
			}
			return def.pin
		})
		if err := enc.Get(&rec); err != nil {
			panic(fmt.Sprintf("kortyx: reading the recorded definition: %v", err))
		}
	}
	if rec == nil {
		if lookupErr == nil {
			lookupErr = contracts.Errorf(contracts.CodeUnknownWorkflow, "the workflow of this run was not registered on the worker that started it")
		}
		return nil, lookupErr
	}
	return r.pinAt(run, rec), nil
}

// pinAt makes the run run rec; see pinStart for a record the worker cannot run.
func (r *Runner) pinAt(run *execution.Run, rec *protocol.PinnedDefinition) *Definition {
	cur, _ := r.reg.Lookup(rec.ID)
	d, err := r.reg.pinned(cur, rec)
	if err != nil {
		panic(err)
	}
	run.Snap.Pinned = rec
	return d
}
