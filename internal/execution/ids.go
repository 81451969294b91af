package execution

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// LeanVersion is the version of the run's first change id (the pinned-definition change,
// workflows' pinChangeID, whose version 1 pins the definition) from which a run is lean
// ([Run.Lean]): one change id for both, so a run records one version marker. A lean run:
//   - derives its ids (resume tokens, request ids, checkpoint and operation ids) from one random
//     seed recorded at its start, instead of recording each (a marker each, and a billed action
//     for every workflow task that records one);
//   - records the worker's local tools at its start, with the seed;
//   - takes every behaviour that an earlier change id gated as decided (no version marker each);
//   - hands the chunks queued before a tool call to the tool activity, which publishes them
//     first (as a model pass does), instead of a publish local activity before the call.
const LeanVersion workflow.Version = 2

// QuietStatusVersion is the version of the same change id from which a run upserts
// KortyxStatus="running" after an answer only when it goes on to wait for something
// ([Run.SettleStatus]: an activity, a child run, a timer, a node's own long work announced with
// hooks.Flush) rather than at once: a run that ends in the workflow task that takes the answer
// goes from "waiting" to its final status in one upsert (one billed action fewer), and a run
// that asks again stays "waiting".
const QuietStatusVersion workflow.Version = 3

// ReportWithPublishVersion is the version of the same change id from which a run's checkpoint
// report to its session (a question, the end of its turn) travels with the chunks it commits:
// the local activity that publishes them signals the report to the session first
// ([protocol.PublishReport]), in the run's workflow task that commits the checkpoint, instead
// of a signal the run sends and waits for before it publishes (a workflow task of its own). The
// same actions, one workflow task fewer per report. Only runs whose starter records their start
// ([protocol.RunStart].Start: a session's runs) take it; it is never asked of
// workflow.GetVersion.
const ReportWithPublishVersion workflow.Version = 4

// leanStart is what a lean run records once, at its start.
type leanStart struct {
	Seed  []byte   `json:"seed"`
	Local []string `json:"local"`
	// Budget is the worker's default budget and prices, for a root run (nil: none, or a run
	// recorded before budgets).
	Budget *protocol.BudgetStart `json:"budget,omitempty"`
}

// StartLean makes the run lean when lean is set (the run's recorded version is [LeanVersion]
// or later; older histories replay without it), and records its id seed and local tools —
// carried over from the execution it continues (ids: not nil) or new.
//
// A run whose starter recorded its start (start: not nil, [protocol.RunStart].Start) takes the
// seed, the local tools and the worker's budget from there, with no side effect.
func (r *Run) StartLean(ctx workflow.Context, lean bool, ids *protocol.IDSource, start *protocol.StartRecord) {
	if !lean {
		return
	}
	r.Lean = true
	if ids != nil && len(ids.Seed) > 0 {
		r.ids = &protocol.IDSource{Seed: ids.Seed, Seq: ids.Seq}
		r.local = map[string]bool{}
		for _, n := range ids.Local {
			r.local[n] = true
		}
		return
	}
	if start != nil && len(start.Seed) > 0 {
		r.started(leanStart{Seed: start.Seed, Local: start.Local, Budget: start.Budget})
		return
	}
	configured := append([]string{}, r.LocalTools...)
	var budget *protocol.BudgetStart
	if r.Child == nil && (protocol.HasBudget(r.WorkerBudget) || r.WorkerPricing != nil || len(r.WorkerLedgers) > 0) {
		budget = &protocol.BudgetStart{Default: protocol.BudgetOf(r.WorkerBudget), Pricing: r.WorkerPricing, Ledgers: r.WorkerLedgers}
	}
	var rec leanStart
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		seed := make([]byte, 32)
		_, _ = rand.Read(seed)
		return leanStart{Seed: seed, Local: configured, Budget: budget}
	}).Get(&rec)
	r.started(rec)
}

// started applies what the run recorded at its start.
func (r *Run) started(rec leanStart) {
	if rec.Budget != nil {
		r.startBudget = *rec.Budget
	}
	r.ids = &protocol.IDSource{Seed: rec.Seed, Local: append([]string{}, rec.Local...)}
	r.local = map[string]bool{}
	for _, n := range rec.Local {
		r.local[n] = true
	}
}

// startRecord records in in what the run of a workflow call records at its start
// ([protocol.RunStart].Start), seeded from the calling run's seed; it checks in's size first (what
// and fix: see [protocol.CheckPayload]). A run that is not lean, or without [Run.Record], leaves
// the child to record its own start.
func (r *Run) startRecord(in *protocol.RunStart, childID, what, fix string) error {
	if r.ids == nil || r.Record == nil {
		return protocol.CheckPayload(what, *in, fix)
	}
	return protocol.AddStart(in, r.Record(*in, r.ids.Derive("run:"+childID)), what, fix)
}

// IDs is what continue-as-new carries of the run's id source (nil: the run is not lean).
func (r *Run) IDs() *protocol.IDSource {
	if r.ids == nil {
		return nil
	}
	c := *r.ids
	return &c
}

// requestIDs returns a new resume token and request id ([NewRequestIDs] for a run that is not
// lean).
func (r *Run) requestIDs(ctx workflow.Context) (token, requestID string) {
	if r.ids == nil {
		return NewRequestIDs(ctx)
	}
	return base64.RawURLEncoding.EncodeToString(r.ids.Next("token")[:24]), r.ids.UUID("human-", "request")
}

// newID returns prefix followed by a new UUID ([NewID] for a run that is not lean).
func (r *Run) newID(ctx workflow.Context, prefix string) string {
	if r.ids == nil {
		return NewID(ctx, prefix)
	}
	return r.ids.UUID(prefix, "id")
}

// newCheckpointID returns a new checkpoint id of session ([NewCheckpointID] for a run that is not
// lean).
func (r *Run) newCheckpointID(ctx workflow.Context, sessionID string) string {
	if r.ids == nil {
		return NewCheckpointID(ctx, sessionID)
	}
	return protocol.CheckpointID(r.ids.UUID("", "checkpoint"), sessionID)
}

// Version reports whether the change changeID (asked with workflow.GetVersion, versions
// DefaultVersion and 1) applies: always for a lean run, which records no marker for it.
func (r *Run) Version(ctx workflow.Context, changeID string) bool {
	return r.Lean || workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1) >= 1
}
