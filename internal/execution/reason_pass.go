package execution

import (
	"encoding/json"
	"strconv"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// passInput is the model pass input of the loop's current state.
func (l *loop) passInput() protocol.ModelPassInput {
	in := protocol.ModelPassInput{
		RunID: l.s.run.stream, Node: l.s.node, HookID: l.spec.ID, OpID: l.res.OpID,
		Model: l.spec.Model, Messages: l.msgs, Tools: l.spec.Tools, Options: l.spec.Options,
		Stream: l.spec.Stream, Emit: l.spec.Emit && l.spec.OutputSchema == nil, MCP: l.spec.MCP,
		MaxFailures: l.spec.ModelFailures,
	}
	for _, t := range l.spec.mcpTools {
		in.MCPTools = append(in.MCPTools, t.Name)
	}
	return in
}

// pass runs one model pass (journaled under its index) and merges its usage.
func (l *loop) pass(ctx workflow.Context, kind string, in protocol.ModelPassInput) (protocol.ModelPassResult, error) {
	n := l.passes
	l.passes++
	in.SegmentID = "step-" + strconv.Itoa(n)
	resp, err := l.s.modelPass(ctx, l.key, n, l.byReference(in), in, l.spec.ModelOptions, l.spec.FastPath || l.s.run.FastPath)
	if err != nil {
		return resp, err
	}
	l.learnStored(in.Messages, resp.StoredPrefix)
	merge(&l.res, resp)
	return resp, nil
}

// sameMessage reports whether a is b as the loop keeps it (a pass's messages are l.msgs
// followed by messages of the pass; content strings share their bytes, so this is cheap).
func sameMessage(a, b providers.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || a.Name != b.Name ||
		a.IsError != b.IsError || string(a.StructuredContent) != string(b.StructuredContent) ||
		string(a.Continuation) != string(b.Continuation) || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i, c := range a.ToolCalls {
		d := b.ToolCalls[i]
		if c.ID != d.ID || c.Name != d.Name || string(c.Arguments) != string(d.Arguments) {
			return false
		}
	}
	return true
}

// storedPrefix is a prefix the worker stored and the messages it holds (as the loop sent them).
type storedPrefix struct {
	ref  protocol.MessagePrefix
	msgs []providers.Message
}

// keptPrefixes bounds how many stored prefixes a loop remembers (the newest ones): a pass
// almost always extends the newest.
const keptPrefixes = 4

// byReference is in with the longest stored prefix of its messages (learned from recorded
// results only) sent by one reference and only the messages after it inline. Without a stored
// prefix (a worker without a message store, a history recorded before) it is in, unchanged.
func (l *loop) byReference(in protocol.ModelPassInput) protocol.ModelPassInput {
	best := -1
	for i, sp := range l.prefixes {
		if sp.ref.Count > len(in.Messages) || (best >= 0 && sp.ref.Count <= l.prefixes[best].ref.Count) {
			continue
		}
		same := true
		for j := 0; j < sp.ref.Count && same; j++ {
			same = sameMessage(in.Messages[j], sp.msgs[j])
		}
		if same {
			best = i
		}
	}
	if best < 0 {
		return in
	}
	ref := l.prefixes[best].ref
	in.Messages = append([]providers.Message{}, in.Messages[ref.Count:]...)
	in.Prefix = &ref
	return in
}

// learnStored records the prefix a pass's result (recorded, so replays and node retries learn
// the same) reports as stored by the worker: the first Count messages the pass sent.
func (l *loop) learnStored(sent []providers.Message, p *protocol.MessagePrefix) {
	if p == nil || p.Hash == "" || p.Count <= 0 || p.Count > len(sent) {
		return
	}
	l.prefixes = append(l.prefixes, storedPrefix{ref: *p, msgs: append([]providers.Message(nil), sent[:p.Count]...)})
	if len(l.prefixes) > keptPrefixes {
		l.prefixes = append([]storedPrefix(nil), l.prefixes[len(l.prefixes)-keptPrefixes:]...)
	}
}

// modelSummary is the summary of a model pass activity (its ActivityOptions.Summary, shown by
// the Temporal UI and CLI): "model <provider>:<model>", "model <provider>" (the provider's
// default model), "model <model> (default provider)" or "model (the worker's default)".
// It is metadata of the scheduled activity and plays no part in replay.
func modelSummary(ref providers.ModelRef) string {
	switch {
	case ref.Provider != "" && ref.Model != "":
		return "model " + ref.Provider + ":" + ref.Model
	case ref.Provider != "":
		return "model " + ref.Provider
	case ref.Model != "":
		return "model " + ref.Model + " (default provider)"
	}
	return "model (the worker's default)"
}

// passKey is the journal key of pass n of the Reason call key.
func passKey(key string, n int) string { return key + keyPass + strconv.Itoa(n) }

// modelPass runs the model activity for pass n of the call key (journaled) with in, whose
// messages may start with a stored prefix; when the worker cannot read it (PAYLOAD_MISSING,
// PAYLOAD_CODEC_FAILED, or its store failing: PERSISTENCE_ERROR; a recorded failure) the pass
// runs once more with every message inline (the same pass: no second reservation). With fast,
// the pass is a local activity ([ReasonOptions.FastPath]).
func (s *Scope) modelPass(ctx workflow.Context, key string, n int, in, inline protocol.ModelPassInput, opts workflow.ActivityOptions, fast bool) (protocol.ModelPassResult, error) {
	pkey := passKey(key, n)
	var resp protocol.ModelPassResult
	if s.recorded(pkey, &resp) {
		return resp, nil
	}
	if err := checkPassSize(in); err != nil {
		return resp, err
	}
	if err := s.run.Reserve(ctx, protocol.LimitModelPasses); err != nil {
		return resp, err
	}
	hold, output, err := s.run.ReservePass(ctx, inline)
	if err != nil {
		return resp, err
	}
	if output > 0 { // the budget has less left than the pass's maximum output
		in.Options.MaxOutputTokens, inline.Options.MaxOutputTokens = output, output
	}
	in.Ledger, inline.Ledger = hold.asks, hold.asks
	// The chunks queued before the pass go with it (the pass publishes them first): one
	// activity instead of a publish local activity and the pass. Runs recorded before flush
	// them on their own; the version is asked only when there are chunks, so a pass with none
	// records nothing.
	var carried []protocol.KeyedChunk
	if len(s.run.outbox) > 0 && s.run.Version(ctx, versionChunksWithPass) {
		carried = s.run.takeOutbox(ctx)
		in.Chunks, inline.Chunks = carried, carried
		if checkPassSize(in) != nil || checkPassSize(inline) != nil {
			in.Chunks, inline.Chunks = nil, nil
			s.run.requeue(carried)
			carried = nil
		}
	}
	s.run.Flush(ctx)
	opts.Summary = modelSummary(in.Model) // what the Temporal UI shows for the activity
	s.run.SettleStatus(ctx)
	execute := func(in protocol.ModelPassInput) error {
		if fast {
			// The same activity, run by this worker inside the workflow task, with the regular
			// pass's timeout and retry policy (no heartbeats: the SDK heartbeats the workflow
			// task instead). Its failure reads as the regular pass's would.
			lctx := workflow.WithLocalActivityOptions(ctx, localToolOptions(opts))
			return localActivityError(workflow.ExecuteLocalActivity(lctx, protocol.ModelActivityName, in).Get(lctx, &resp), protocol.ModelActivityName)
		}
		opts.ActivityID = s.run.activityID(s.node, "model") // an id of its own for each attempt
		actx := workflow.WithActivityOptions(ctx, opts)
		return workflow.ExecuteActivity(actx, protocol.ModelActivityName, in).Get(actx, &resp)
	}
	err = execute(in)
	for err == nil && resp.LedgerShort != "" {
		// A shared budget's ledger left too little: the pass did not call the model. The run
		// asks (or fails), and a Continue makes the pass again with a grant past the budget.
		if err = s.run.ledgerShort(ctx, resp.LedgerShort, resp, hold.ledger, hold.input, hold.price); err != nil {
			hold.ledger = nil // released
			s.run.SettlePass(hold, providers.Usage{})
			return protocol.ModelPassResult{}, err
		}
		hold.ledger, hold.asks = s.run.reserveLedgers(ctx, hold.input, hold.output, hold.price)
		in.Ledger, inline.Ledger = hold.asks, hold.asks
		resp = protocol.ModelPassResult{}
		err = execute(in)
	}
	if err == nil {
		s.run.takeGrants(resp.Ledger)
	}
	if code := contracts.CodeOf(err); in.Prefix != nil && (code == contracts.CodePayloadMissing || code == contracts.CodePersistenceError || code == contracts.CodePayloadCodec) {
		if serr := checkPassSize(inline); serr != nil {
			s.run.SettlePass(hold, FailedPassUsage(err))
			return resp, serr
		}
		resp = protocol.ModelPassResult{}
		err = execute(inline)
	}
	if err != nil {
		s.run.SettlePass(hold, FailedPassUsage(err))
		// The carried chunks were perhaps never published (the pass failed before, or its
		// publish did): the next flush, or the run's final one, publishes them, deduplicated by
		// their keys. Runs recorded before the version dropped them unless cancelled.
		if ctx.Err() != nil || (len(carried) > 0 && s.run.Version(ctx, versionRequeueFailedPass)) {
			s.run.requeue(carried)
		}
		return resp, err
	}
	s.run.AddUsage(resp.Usage)
	s.run.SettlePass(hold, resp.Usage)
	s.record(pkey, protocol.JournalEntry{Kind: entryModelPass, Value: protocol.RawJSON(resp), At: workflow.Now(ctx)})
	return resp, nil
}

// checkPassSize fails a model pass input over the payload limit early, with its code, instead
// of failing the workflow task.
func checkPassSize(in protocol.ModelPassInput) error {
	b, err := json.Marshal(in)
	if err != nil {
		return contracts.Errorf(contracts.CodeInvalidRequest, "hooks.Reason: the model call cannot be encoded: %v", err)
	}
	return protocol.CheckPayloadSize("the model call of hooks.Reason", len(b), "shorten the history or bound tool results (ToolExecution.MaxResultChars)")
}
