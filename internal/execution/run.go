// Package execution is the workflow-side runtime shared by the hooks and the run workflow: the live
// state of a run, the hook scope of a node, the chunk outbox, and interrupt answering.
// Everything here runs as Temporal workflow code and must stay deterministic.
package execution

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kortyx-go/kortyx/providers"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// maxRejections bounds the rejected answers kept in state.
const maxRejections = 20

// Run is the live side of one run execution. Everything durable is in Snap; the rest is
// rebuilt by Temporal's replay.
type Run struct {
	ID        string // workflow ID: the run id and the stream id
	SessionID string
	Snap      protocol.RunSnapshot
	Status    contracts.RunStatus
	Node      string // node executing now

	pending   *pending
	answered  []*pending // recently answered requests, to recognise a repeated signal
	cancelled bool       // a human cancelled the run through an answer

	session   SessionSide // nil: the run belongs to no session
	completed bool        // CompleteResponse ended the response: no more checkpoints
	outbox    []protocol.KeyedChunk
	flushing  bool
	saStatus  contracts.RunStatus

	// Child is set when the run is a child workflow call: it publishes to the root's stream
	// (keys prefixed with its id) and asks its questions through its parent.
	Child     *protocol.ChildBinding
	stream    string
	keyPrefix string
	// Resolve finds the workflows the run's nodes call as children.
	Resolve func(id string) (ChildTarget, error)
	// children are the run's child calls in flight, by child workflow ID; questions the
	// questions they asked and the run has not presented yet.
	children  map[string]*liveChild
	questions map[string]*protocol.ChildQuestion
	// reservations are the children's reservations the root could not grant yet; grants the
	// grants a child received.
	reservations []protocol.Reservation
	grants       map[string]protocol.Grant
	// startBudget is the worker's budget the run recorded at its start; budgetStarted says
	// ApplyBudget ran.
	startBudget   protocol.BudgetStart
	budgetStarted bool
	// WorkerBudget and WorkerPricing are the worker's default budget and prices, which a new
	// root run records at its start (set before StartLean).
	WorkerBudget  contracts.Limits
	WorkerPricing *protocol.Pricing
	// WorkerLedgers are the shared budgets the worker puts a new root run under (its agent's,
	// its tenant's), recorded with its start.
	WorkerLedgers []protocol.LedgerConfig
	// expect are the questions a restored run will ask again (by token): answers to them are
	// accepted early and kept in early until the run asks.
	expect map[string]contracts.PendingRequest
	early  map[string]*pending
	// LocalTools are the worker's tools that run as local activities (set before the run
	// starts: workflows.Registry.SetLocalTools); local is the set the run recorded at its first
	// tool call, which it keeps (nil: not recorded yet).
	LocalTools []string
	local      map[string]bool
	// FastPath runs the model passes of every Reason call of the run as local activities (the
	// agent's Definition.FastPath, from the definition the run pinned).
	FastPath bool
	// Record returns what a run of the given input records at its start on this worker, with
	// the given id seed (workflows' Registry): the run records it in the input of the workflow
	// calls it starts ([protocol.RunStart].Start).
	Record func(in protocol.RunStart, seed []byte) *protocol.StartRecord

	// NodeActivityIDs makes the activities of hooks (model passes, tool calls, MCP tool lists)
	// get ids that name their node ("<node>/<kind>#<n>"), so that Temporal's non-determinism
	// error names the node whose recorded activity the code no longer schedules. Runs started
	// before it was introduced keep the SDK's numeric ids (a workflow.GetVersion gate).
	NodeActivityIDs bool
	activitySeq     int

	// Lean is set for runs started after the lean change ([LeanVersion], [Run.StartLean]);
	// ids is their id source.
	Lean bool
	// QuietStatus is set for runs started after [QuietStatusVersion]: "running" after an
	// answer is listed only by [Run.SettleStatus].
	QuietStatus bool
	// ReportWithPublish is set for runs started at [ReportWithPublishVersion] or later: a
	// checkpoint's report waits in report for the flush that publishes its chunks.
	ReportWithPublish bool
	report            *protocol.PublishReport
	ids               *protocol.IDSource
}

// activityID is the id of the next activity of a hook of node ("" for the SDK's own).
func (r *Run) activityID(node, kind string) string {
	if !r.NodeActivityIDs {
		return ""
	}
	r.activitySeq++
	return fmt.Sprintf("%s/%s#%d", node, kind, r.activitySeq)
}

type pending struct {
	req    contracts.PendingRequest
	schema *contracts.Schema
	answer *contracts.Answer
	cancel bool
}

// NewRun creates the live run around a snapshot.
func NewRun(ctx workflow.Context, sessionID string, snap protocol.RunSnapshot) *Run {
	if snap.Hooks.WorkflowState == nil {
		snap.Hooks.WorkflowState = map[string]json.RawMessage{}
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	return &Run{ID: id, SessionID: sessionID, Snap: snap, Status: contracts.StatusRunning, stream: id,
		children: map[string]*liveChild{}, questions: map[string]*protocol.ChildQuestion{}, grants: map[string]protocol.Grant{},
		expect: map[string]contracts.PendingRequest{}, early: map[string]*pending{}}
}

// BindChild makes the run a child call: it publishes to the root's stream.
func (r *Run) BindChild(c *protocol.ChildBinding) {
	if c == nil {
		return
	}
	cp := *c
	r.Child = &cp
	r.stream = c.Stream
	r.keyPrefix = r.ID + "/"
}

// Stream is the id of the stream the run publishes to (its own id, or its root's).
func (r *Run) Stream() string { return r.stream }

// Install registers the state query, the answer update and the answer signal. Call it first
// thing in the workflow so that no answer is ever dropped.
func (r *Run) Install(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, contracts.StateQueryName, func() (contracts.RunView, error) {
		return r.View(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contracts.RespondName,
		func(ctx workflow.Context, resp contracts.Response) (contracts.RespondResult, error) {
			ans, cancel, err := r.accept(resp)
			if err != nil {
				return contracts.RespondResult{}, contracts.ToTemporal(err)
			}
			r.deliver(resp.Token, ans, cancel)
			return contracts.RespondResult{RequestID: resp.RequestID, Cancelled: cancel}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, resp contracts.Response) error {
			_, _, err := r.accept(resp)
			return contracts.ToTemporal(err)
		}},
	); err != nil {
		return err
	}
	onSignal(ctx, protocol.ChildQuestionSignal, func(ctx workflow.Context, q protocol.ChildQuestion) {
		r.questions[q.Child] = &q
	})
	onSignal(ctx, protocol.BudgetReserveSignal, func(ctx workflow.Context, q protocol.Reservation) {
		r.reservations = append(r.reservations, q)
		r.serveReservations(ctx)
	})
	onSignal(ctx, protocol.BudgetGrantSignal, func(ctx workflow.Context, g protocol.Grant) {
		r.grants[g.ID] = g
	})
	onSignal(ctx, protocol.SteerSignal, func(ctx workflow.Context, m protocol.SteerMessage) {
		for _, have := range r.Snap.Steers {
			if have.ID == m.ID {
				return // a repeated signal
			}
		}
		r.Snap.Steers = append(r.Snap.Steers, m)
	})
	onSignal(ctx, contracts.RespondName, func(ctx workflow.Context, resp contracts.Response) {
		ans, cancel, err := r.accept(resp)
		if err != nil {
			if r.repeated(resp) {
				workflow.GetLogger(ctx).Info("kortyx: ignoring a repeated answer", "requestId", resp.RequestID)
				return
			}
			r.reject(ctx, resp, err)
			return
		}
		r.deliver(resp.Token, ans, cancel)
	})
	return nil
}

// View is the state query's answer.
func (r *Run) View() contracts.RunView {
	v := contracts.RunView{
		RunID:      r.ID,
		Workflow:   r.Snap.State.CurrentWorkflow,
		SessionID:  r.SessionID,
		Status:     r.Status,
		Node:       r.Node,
		State:      r.Snap.State,
		Rejections: r.Snap.Rejections,
	}
	if r.pending != nil && r.pending.answer == nil && !r.pending.cancel {
		p := r.pending.req
		v.Pending = &p
	}
	return v
}

// accept checks an answer against the pending request without changing anything.
func (r *Run) accept(resp contracts.Response) (contracts.Answer, bool, error) {
	p := r.pending
	if p != nil && (p.answer != nil || p.cancel) {
		if resp.Token == p.req.Token {
			return contracts.Answer{}, false, contracts.Errorf(contracts.CodeInvalidResume,
				"Request %s has already been answered.", p.req.RequestID)
		}
		p = nil
	}
	var req *contracts.PendingRequest
	if p != nil {
		req = &p.req
	}
	if exp, ok := r.expect[resp.Token]; ok && (p == nil || p.req.Token != resp.Token) {
		// A restored run answered before it asked again: checked against the question it
		// will ask (its response schema is applied when it asks).
		p, req = &pending{req: exp}, &exp
	}
	if err := protocol.CheckResponse(req, resp); err != nil {
		return contracts.Answer{}, false, err
	}
	if resp.Cancel {
		return contracts.Answer{RequestID: p.req.RequestID, Kind: p.req.Input.Kind}, true, nil
	}
	ans, err := protocol.NormalizeAnswer(p.req.Input, resp, p.schema)
	if err != nil {
		return contracts.Answer{}, false, err
	}
	ans.RequestID = p.req.RequestID
	return ans, false, nil
}

func (r *Run) deliver(token string, ans contracts.Answer, cancel bool) {
	p := r.pending
	if exp, ok := r.expect[token]; ok && (p == nil || p.req.Token != token) {
		p = &pending{req: exp}
		delete(r.expect, token)
		r.early[token] = p
	}
	if cancel {
		p.cancel = true
	} else {
		p.answer = &ans
	}
	r.answered = append(r.answered, p)
	if len(r.answered) > 16 {
		r.answered = r.answered[1:]
	}
}

// repeated reports whether resp is the same answer, to the same request with the same token,
// as one already accepted: a signal delivered twice. It has had its one effect; a different
// answer to an answered request is still rejected.
func (r *Run) repeated(resp contracts.Response) bool {
	for _, p := range r.answered {
		if p.req.RequestID != resp.RequestID || p.req.Token != resp.Token {
			continue
		}
		if resp.Cancel || p.cancel {
			return resp.Cancel && p.cancel
		}
		a, err := protocol.NormalizeAnswer(p.req.Input, resp, p.schema)
		return err == nil && bytes.Equal(a.Value, p.answer.Value)
	}
	return false
}

func (r *Run) reject(ctx workflow.Context, resp contracts.Response, err error) {
	f := contracts.FailureOf(err)
	r.Snap.Rejections = append(r.Snap.Rejections, contracts.Rejection{RequestID: resp.RequestID, Failure: f, At: workflow.Now(ctx)})
	if n := len(r.Snap.Rejections); n > maxRejections {
		r.Snap.Rejections = append([]contracts.Rejection(nil), r.Snap.Rejections[n-maxRejections:]...)
	}
	r.Emit(contracts.Chunk{Type: contracts.ChunkResumeRejected, RequestID: resp.RequestID, Message: f.Message, Failure: &f})
	r.Flush(ctx)
}

// AddUsage adds model usage into the run's token usage (spec F3.0); a Total of 0 counts as
// Input+Output+Reasoning.
func (r *Run) AddUsage(u providers.Usage) {
	if u == (providers.Usage{}) {
		return
	}
	total := u.Total
	if total == 0 {
		total = u.Input + u.Output + u.Reasoning
	}
	r.addTokenUsage(&contracts.Usage{Input: u.Input, Output: u.Output, Total: total})
}

// addTokenUsage adds u into the run's token usage, the one place that sums it: model passes
// (through [Run.AddUsage]) and child runs (counted once, when their call settles).
func (r *Run) addTokenUsage(u *contracts.Usage) {
	if u == nil {
		return
	}
	t := r.Snap.State.Runtime.TokenUsage
	if t == nil {
		t = &contracts.Usage{}
		r.Snap.State.Runtime.TokenUsage = t
	}
	t.Input += u.Input
	t.Output += u.Output
	t.Total += u.Total
}

// Cancelled reports whether a human cancelled the run through an answer.
func (r *Run) Cancelled() bool { return r.cancelled }

// Emit queues a workflow-side chunk; [Run.Flush] publishes queued chunks. Keys are "w:<seq>"
// from a counter in durable state (a child run, which publishes to its root's stream, prefixes
// them with "<its run id>/"), so a replayed or retried publish is de-duplicated.
func (r *Run) Emit(c contracts.Chunk) {
	if c.Type == contracts.ChunkStructuredData || c.Type == contracts.ChunkStructuredInvalidated {
		if r.session != nil {
			r.session.Published(c.StreamID)
		}
	}
	r.Snap.Seq++
	r.outbox = append(r.outbox, protocol.KeyedChunk{Key: fmt.Sprintf("%sw:%d", r.keyPrefix, r.Snap.Seq), Chunk: c})
}

// Flush publishes queued chunks through the publish local activity, in order. Concurrent
// flushes (signal handler and main coroutine) are serialized. While the broker's store does not
// answer (STREAM_UNAVAILABLE: Redis down) the publish is retried — for a minute inside the local
// activity, then again every [publishRetryPause] — so no chunk is lost and order is kept; the
// run waits meanwhile. Any other publish failure that lasts a minute is logged and the batch
// dropped: the stream is a view, the run's state is never lost.
func (r *Run) Flush(ctx workflow.Context) {
	for r.flushing {
		if err := workflow.Await(ctx, func() bool { return !r.flushing }); err != nil {
			return
		}
	}
	if len(r.outbox) == 0 && r.report == nil {
		return
	}
	batch, report := r.outbox, r.report
	r.outbox, r.report = nil, nil
	r.flushing = true
	defer func() { r.flushing = false }()
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    50 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
		},
	})
	for {
		err := workflow.ExecuteLocalActivity(lctx, protocol.PublishActivityName,
			protocol.PublishInput{RunID: r.stream, Chunks: batch, Report: report}).Get(lctx, nil)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			// Cancelled while publishing: keep the chunks (and the report) for the final flush
			// (on a disconnected context) so that the stream still shows them before cancelled
			// and done.
			r.outbox = append(batch, r.outbox...)
			if report != nil && r.report == nil {
				r.report = report
			}
			return
		}
		if report != nil {
			// The report did not go with the chunks: the run signals it, then publishes them.
			r.signalReport(ctx, report.Report)
			report = nil
			continue
		}
		if contracts.CodeOf(err) != contracts.CodeStreamUnavailable ||
			!r.Version(ctx, versionPublishUntilStored) {
			workflow.GetLogger(ctx).Warn("kortyx: publishing stream chunks failed; they are dropped from the stream",
				"runId", r.ID, "chunks", len(batch), "error", err)
			return
		}
		workflow.GetLogger(ctx).Warn("kortyx: the stream store does not answer; publishing again shortly",
			"runId", r.ID, "chunks", len(batch), "retryIn", publishRetryPause)
		r.SettleStatus(ctx)
		if err := workflow.Sleep(ctx, publishRetryPause); err != nil {
			r.outbox = append(batch, r.outbox...) // cancelled: the final flush publishes them
			return
		}
	}
}

// takeOutbox returns the queued chunks and empties the outbox, after any flush in progress (a
// model pass publishes them itself: [protocol.ModelPassInput.Chunks]).
func (r *Run) takeOutbox(ctx workflow.Context) []protocol.KeyedChunk {
	for r.flushing {
		if err := workflow.Await(ctx, func() bool { return !r.flushing }); err != nil {
			return nil
		}
	}
	r.sendReport(ctx) // before the activity publishes the chunks it waited for
	out := r.outbox
	r.outbox = nil
	return out
}

// requeue puts chunks taken by [Run.takeOutbox] back in front of the outbox (their pass never
// ran: the final flush publishes them).
func (r *Run) requeue(chunks []protocol.KeyedChunk) {
	if len(chunks) > 0 {
		r.outbox = append(append([]protocol.KeyedChunk(nil), chunks...), r.outbox...)
	}
}

// publishRetryPause is the pause between two publish local activities while the stream store
// does not answer (each retries for a minute itself).
const publishRetryPause = 5 * time.Second

// versionPublishUntilStored (a workflow.GetVersion change id, persisted in histories): a publish
// that fails with STREAM_UNAVAILABLE is retried until stored (before, it was dropped after a
// minute).
const versionPublishUntilStored = "kortyx.publish.until-stored"

// SetStatus records the run status and mirrors it into the KortyxStatus search attribute. A
// quiet run ([QuietStatusVersion]) leaves "running" after an answer unlisted until
// [Run.SettleStatus].
func (r *Run) SetStatus(ctx workflow.Context, s contracts.RunStatus) {
	r.Status = s
	if r.Child != nil && s == contracts.StatusWaiting {
		// A child's question is its root's: only the root is listed as waiting.
		s = contracts.StatusRunning
	}
	if r.saStatus == s {
		return
	}
	if r.QuietStatus && s == contracts.StatusRunning && r.saStatus == contracts.StatusWaiting {
		return
	}
	r.upsertStatus(ctx, s)
}

// SettleStatus lists the run's status as it is, before the run waits for something that takes
// time: an activity, a child run, a timer. A quiet run that took an answer is listed "running"
// from here (see [QuietStatusVersion]).
func (r *Run) SettleStatus(ctx workflow.Context) {
	if r.QuietStatus && r.Status == contracts.StatusRunning && r.saStatus == contracts.StatusWaiting {
		r.upsertStatus(ctx, contracts.StatusRunning)
	}
}

func (r *Run) upsertStatus(ctx workflow.Context, s contracts.RunStatus) {
	r.saStatus = s
	if err := workflow.UpsertTypedSearchAttributes(ctx, protocol.StatusKey.ValueSet(string(s))); err != nil {
		workflow.GetLogger(ctx).Warn("kortyx: search attribute upsert failed", "error", err)
	}
}

// SetWorkflow mirrors a hand-off to another workflow into the KortyxWorkflow search attribute.
func (r *Run) SetWorkflow(ctx workflow.Context, id string) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, protocol.WorkflowKey.ValueSet(id)); err != nil {
		workflow.GetLogger(ctx).Warn("kortyx: search attribute upsert failed", "error", err)
	}
}

// InitSearchAttributes sets session, workflow and status in one command, unless the run was
// started (or continued) with them already set (kortyx.StartRun sets them).
func (r *Run) InitSearchAttributes(ctx workflow.Context) {
	r.saStatus = r.Status
	cur := workflow.GetTypedSearchAttributes(ctx)
	wf, _ := cur.GetKeyword(protocol.WorkflowKey)
	st, _ := cur.GetKeyword(protocol.StatusKey)
	sess, _ := cur.GetKeyword(protocol.SessionKey)
	if wf == r.Snap.State.CurrentWorkflow && st == string(r.Status) && sess == r.SessionID {
		return
	}
	ups := []temporal.SearchAttributeUpdate{
		protocol.WorkflowKey.ValueSet(r.Snap.State.CurrentWorkflow),
		protocol.StatusKey.ValueSet(string(r.Status)),
	}
	if r.SessionID != "" {
		ups = append(ups, protocol.SessionKey.ValueSet(r.SessionID))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, ups...); err != nil {
		workflow.GetLogger(ctx).Warn("kortyx: search attribute upsert failed", "error", err)
	}
}

// Ask publishes an interrupt, closes the current response, and waits for a valid answer (by
// signal or update) or a cancellation. No node code runs while it waits.
func (r *Run) Ask(ctx workflow.Context, req contracts.PendingRequest, schema *contracts.Schema) (contracts.Answer, error) {
	if ans, ok, err := r.answeredEarly(ctx, req, schema); ok {
		return ans, err
	}
	delete(r.expect, req.Token)
	p := &pending{req: req, schema: schema}
	r.pending = p
	r.Snap.State.AwaitingHumanInput = true
	if r.Child != nil {
		if err := r.askParent(ctx, req, schema); err != nil {
			r.pending = nil
			r.Snap.State.AwaitingHumanInput = false
			return contracts.Answer{}, err
		}
		return r.await(ctx, p)
	}
	r.Emit(protocol.InterruptChunk(req))
	if r.session != nil && !r.completed {
		if r.session.Reexposing() {
			// The question a rollback or fork re-exposes: its checkpoint exists already.
		} else if _, err := r.checkpoint(ctx, &req, schema, false); err != nil {
			// A question that cannot be checkpointed is not asked: its chunk is withdrawn
			// before anything was published.
			r.outbox = r.outbox[:len(r.outbox)-1]
			r.Snap.Seq--
			r.pending = nil
			r.Snap.State.AwaitingHumanInput = false
			return contracts.Answer{}, err
		}
	}
	r.Emit(contracts.Chunk{Type: contracts.ChunkDone})
	r.Flush(ctx)
	return r.await(ctx, p)
}

// answeredEarly returns the answer a restored run received before it asked the question again
// (ok false: none, or it no longer fits the question: the run asks).
func (r *Run) answeredEarly(ctx workflow.Context, req contracts.PendingRequest, schema *contracts.Schema) (contracts.Answer, bool, error) {
	e := r.early[req.Token]
	if e == nil {
		return contracts.Answer{}, false, nil
	}
	delete(r.early, req.Token)
	if r.session != nil {
		r.session.Reexposing()
	}
	if e.cancel {
		r.cancelled = true
		return contracts.Answer{}, true, contracts.Errorf(contracts.CodeExecutionCancelled, "The run was cancelled by the person it asked.")
	}
	if schema != nil {
		if issues := schema.ValidateJSON(e.answer.Value); len(issues) > 0 {
			r.reject(ctx, contracts.Response{Token: req.Token, RequestID: req.RequestID}, &contracts.Error{Code: contracts.CodeInvalidResponse,
				Message: "The answer does not match the question's response schema.", Issues: issues})
			return contracts.Answer{}, false, nil
		}
	}
	return *e.answer, true, nil
}

// askParent hands a question of this child run to its parent, which presents it (the root as
// its interrupt) and sends the answer back as a Respond signal with the same token.
func (r *Run) askParent(ctx workflow.Context, req contracts.PendingRequest, schema *contracts.Schema) error {
	r.Flush(ctx)
	snap := protocol.Clone(r.Snap)
	q := protocol.ChildQuestion{Child: r.ID, Request: req, Snapshot: &snap}
	if schema != nil {
		q.Schema = schema.Raw()
	}
	if err := protocol.CheckPayload(fmt.Sprintf("the question of child workflow %q with its state", r.ID), q, protocol.CheckpointFix); err != nil {
		return err
	}
	return workflow.SignalExternalWorkflow(ctx, r.Child.ParentID, "", protocol.ChildQuestionSignal, q).Get(ctx, nil)
}

// await waits for the answer of the pending request p.
func (r *Run) await(ctx workflow.Context, p *pending) (contracts.Answer, error) {
	r.SetStatus(ctx, contracts.StatusWaiting)
	err := workflow.Await(ctx, func() bool { return p.answer != nil || p.cancel })
	r.pending = nil
	r.Snap.State.AwaitingHumanInput = false
	if err != nil {
		return contracts.Answer{}, err
	}
	if p.cancel {
		r.cancelled = true
		return contracts.Answer{}, contracts.Errorf(contracts.CodeExecutionCancelled, "The run was cancelled by the person it asked.")
	}
	r.SetStatus(ctx, contracts.StatusRunning)
	return *p.answer, nil
}

// newToken returns a new resume token: 192 random bits. Call it only inside workflow.SideEffect.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewRequestIDs returns an unguessable resume token (192 random bits) and a request id
// ("human-<uuid>") for a human input request, recorded once in history (one side effect) so
// that replay sees the same values. Every question, limit pause and reissued request of a fork
// gets its ids here.
func NewRequestIDs(ctx workflow.Context) (token, requestID string) {
	var ids [2]string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		return [2]string{newToken(), "human-" + uuid.NewString()}
	}).Get(&ids)
	return ids[0], ids[1]
}

// NewID returns prefix followed by a new UUID, recorded once in history (one side effect) so
// that replay sees the same id: run, checkpoint, session and operation ids.
func NewID(ctx workflow.Context, prefix string) string {
	var id string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return prefix + uuid.NewString() }).Get(&id)
	return id
}

// NewCheckpointID returns a new checkpoint id of session sessionID ([protocol.CheckpointID]:
// it carries the session), recorded once in history (one side effect). A history recorded
// before checkpoint ids carried their session replays with the id it recorded.
func NewCheckpointID(ctx workflow.Context, sessionID string) string {
	var id string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return protocol.CheckpointID(uuid.NewString(), sessionID) }).Get(&id)
	return id
}

// SessionSide is the run's half of the session protocol (sessionstate.RunSide, next to the
// session's state machine): it keeps the binding and what the current response ran and
// streamed, and builds the checkpoints and reports; the run generates ids, reads the time,
// signals the reports and queues the checkpoint chunks.
type SessionSide interface {
	// Binding is the binding as it stands (for continue-as-new).
	Binding() *protocol.SessionBinding
	// Touched and Published record a node the current response ran and a structured stream it
	// published to.
	Touched(node string)
	Published(streamID string)
	// Label names the next checkpoint.
	Label(label string)
	// Reexposing reports, once, that the question asked now is the one a restored run asks
	// again (its checkpoint exists).
	Reexposing() bool
	// Checkpoint builds the checkpoint of the run as it stands (PAYLOAD_TOO_LARGE when its
	// report would not fit); Report is the report that commits it; Committed moves on to the
	// next turn once it was reported.
	Checkpoint(id, runID string, now time.Time, snap protocol.RunSnapshot, pending *contracts.PendingRequest, schema json.RawMessage, final bool) (protocol.Checkpoint, error)
	Report(cp protocol.Checkpoint) protocol.CheckpointReport
	Committed(cp protocol.Checkpoint)
	// Closed is the report of a run that ended without a checkpoint (steered: the steering
	// messages its response took in).
	Closed(runID string, turnEnded bool, steered []contracts.Steer) protocol.CheckpointReport
}

// Bind ties the run to a session: side is its half of the session protocol.
func (r *Run) Bind(side SessionSide) {
	r.session = side
	for _, p := range side.Binding().Expect {
		r.expect[p.Token] = p
	}
}

// Binding returns the run's session binding as it stands (for continue-as-new).
func (r *Run) Binding() *protocol.SessionBinding {
	if r.session == nil {
		return nil
	}
	return r.session.Binding()
}

// Checkpoint commits a session checkpoint of the run as it stands and queues the checkpoint
// chunk: pending is the question the run waits for (nil at the end of a run), final marks the
// run's end. The checkpoint is reported to the session (a durable signal) before the chunk is
// queued, so a client that sees it can rely on it. It is a no-op for runs without a session
// and after CompleteResponse. A checkpoint whose report would exceed Temporal's payload limit
// is not committed: PAYLOAD_TOO_LARGE.
func (r *Run) Checkpoint(ctx workflow.Context, pending *contracts.PendingRequest, final bool) (string, error) {
	return r.checkpoint(ctx, pending, nil, final)
}

// checkpoint is [Run.Checkpoint] of a question with its response schema (nil: none), which
// the checkpoint carries so that the session checks answers as the run does.
func (r *Run) checkpoint(ctx workflow.Context, pending *contracts.PendingRequest, schema *contracts.Schema, final bool) (string, error) {
	if r.session == nil || r.completed {
		return "", nil
	}
	var raw json.RawMessage
	if schema != nil {
		raw = schema.Raw()
	}
	id := r.newCheckpointID(ctx, r.session.Binding().SessionID)
	cp, err := r.session.Checkpoint(id, r.ID, workflow.Now(ctx), r.Snap, pending, raw, final)
	if err != nil {
		return "", err
	}
	rep := r.session.Report(cp)
	rep.Spend = r.SessionSpend()
	if r.ReportWithPublish {
		// Every caller flushes next: the report goes with the checkpoint's chunks.
		r.sendReport(ctx)
		r.report = &protocol.PublishReport{WorkflowID: r.session.Binding().WorkflowID, Report: rep}
	} else {
		r.signalReport(ctx, rep)
	}
	turn := cp.TurnIndex
	r.Emit(contracts.Chunk{Type: contracts.ChunkCheckpoint, ID: cp.ID, SessionID: cp.SessionID, TurnIndex: &turn})
	r.session.Committed(cp)
	r.turnOver()
	return cp.ID, nil
}

// EndTurn tells the session that the run ended without a checkpoint (failure, cancel): its
// turn is over and its open questions are gone.
func (r *Run) EndTurn(ctx workflow.Context) {
	if r.session == nil {
		return
	}
	r.sendReport(ctx)
	rep := r.session.Closed(r.ID, !r.completed, r.Snap.Steered)
	rep.Spend = r.SessionSpend()
	r.signalReport(ctx, rep)
}

// ReportSpend sends the session, for its budget, what the run spent, when the run's response
// ended early (CompleteResponse: no final checkpoint reports it) and the session has a budget.
func (r *Run) ReportSpend(ctx workflow.Context) {
	spend := r.SessionSpend()
	if r.session == nil || !r.completed || spend == nil {
		return
	}
	r.sendReport(ctx)
	r.signalReport(ctx, protocol.CheckpointReport{RunID: r.ID, Spend: spend})
}

// CompleteResponse ends the current response (F6.8): a checkpoint of the state at the call,
// checkpoint and done chunks; the run goes on, but later work no longer reaches the session.
func (r *Run) CompleteResponse(ctx workflow.Context) (string, error) {
	if r.completed {
		return "", nil
	}
	id, err := r.Checkpoint(ctx, nil, false)
	if err != nil {
		return "", err
	}
	r.completed = true
	r.Emit(contracts.Chunk{Type: contracts.ChunkDone})
	r.Flush(ctx)
	return id, nil
}

// Completed reports whether CompleteResponse ended the response.
func (r *Run) Completed() bool { return r.completed }

// sendReport signals the report that waits for a flush ([Run.ReportWithPublish]) now, when
// something other than a flush is about to publish (a model pass, a tool call) or report.
func (r *Run) sendReport(ctx workflow.Context) {
	if p := r.report; p != nil {
		r.report = nil
		r.signalReport(ctx, p.Report)
	}
}

// signalReport sends the session a report and waits until it is in the session's history.
func (r *Run) signalReport(ctx workflow.Context, rep protocol.CheckpointReport) {
	for attempt := 1; ; attempt++ {
		b := r.session.Binding()
		err := workflow.SignalExternalWorkflow(ctx, b.WorkflowID, "", protocol.SessionCheckpointSignal, rep).Get(ctx, nil)
		if err == nil {
			return
		}
		if attempt == 5 || ctx.Err() != nil {
			workflow.GetLogger(ctx).Warn("kortyx: reporting to the session failed", "session", b.SessionID, "error", err)
			return
		}
		r.SettleStatus(ctx)
		_ = workflow.Sleep(ctx, time.Duration(attempt)*time.Second)
	}
}

// TakeSteers takes in the steering messages the run received for its current turn, before the
// model pass step of node's Reason call: each is recorded for the turn's checkpoint and shown
// by a status chunk (published with the pass). Messages sent to an earlier turn are dropped:
// the session queued them when that turn ended.
func (r *Run) TakeSteers(node string, step int) []contracts.Steer {
	if r.session == nil || r.completed || len(r.Snap.Steers) == 0 {
		return nil
	}
	turn := r.session.Binding().TurnIndex
	var taken []contracts.Steer
	for _, m := range r.Snap.Steers {
		if m.TurnIndex != turn {
			continue
		}
		st := m.Steer
		st.Node, st.Step = node, step
		taken = append(taken, st)
		r.Snap.Steered = append(r.Snap.Steered, st)
		shown := st
		r.Emit(contracts.Chunk{Type: contracts.ChunkStatus, Node: node, Message: "Steering message taken in", Steer: &shown})
	}
	r.Snap.Steers = nil
	return taken
}

// SteersWaiting reports whether steering messages for the run's current turn wait to be taken in.
func (r *Run) SteersWaiting() bool {
	if r.session == nil || r.completed {
		return false
	}
	turn := r.session.Binding().TurnIndex
	for _, m := range r.Snap.Steers {
		if m.TurnIndex == turn {
			return true
		}
	}
	return false
}

// turnOver forgets, once a turn's checkpoint was reported, what the turn took in and the
// steering messages it did not (the session queues those as the next turns).
func (r *Run) turnOver() {
	r.Snap.Steered = nil
	turn := r.session.Binding().TurnIndex
	kept := r.Snap.Steers[:0]
	for _, m := range r.Snap.Steers {
		if m.TurnIndex >= turn {
			kept = append(kept, m)
		}
	}
	r.Snap.Steers = kept
	if len(kept) == 0 {
		r.Snap.Steers = nil
	}
}
