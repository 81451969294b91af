package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/execution"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/sessionstate"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Session is the session workflow ([protocol.SessionWorkflowName]): one execution per session
// id that holds the session's checkpoints and head, serializes its turns (a prompt's run started
// by the update's caller, [protocol.SessionStartTurnByCallerUpdate], the others as child
// workflows that outlive it), and rolls back and forks (spec F5.3–F5.5).
func (r *Runner) Session(ctx workflow.Context, in protocol.SessionStart) error {
	s := &session{m: sessionstate.New(in, workflow.GetInfo(ctx).TaskQueueName), reg: r.reg}
	forked := s.m.Forked()
	if forked {
		// A forked session: its first checkpoint is the copy, and its open questions are asked
		// again, with the new tokens, by a run restored from the copy. The questions are open
		// before the handlers are installed: the fork's caller may answer at once, and that
		// answer's turn waits until the run has started (see ready).
		s.restoring = s.m.StartForked()
	}
	if err := s.install(ctx); err != nil {
		return err
	}
	if s.m.State.Owner != "" && workflow.GetInfo(ctx).Memo.GetFields()[protocol.SessionOwnerMemo] == nil {
		// A fork or a continued session that does not carry its owner's memo yet.
		if err := workflow.UpsertMemo(ctx, map[string]any{protocol.SessionOwnerMemo: s.m.State.Owner}); err != nil {
			return err
		}
	}
	if forked && s.restoring {
		_, err := s.restore(ctx, *in.Initial, in.InitialRunID)
		s.restoring = false
		if err != nil {
			return err
		}
	}
	for {
		if s.m.Empty() {
			// A session whose first turn was refused ends when nothing else comes: a rejected
			// request leaves no workflow behind (the next request starts the session again).
			ok, err := workflow.AwaitWithTimeout(ctx, emptySessionIdle, func() bool { return s.changed })
			if err != nil {
				return err
			}
			if !ok && s.m.Empty() {
				if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
					return err
				}
				if s.m.Empty() {
					return nil
				}
			}
		} else if err := workflow.Await(ctx, func() bool { return s.changed || s.queueReady() }); err != nil {
			return err
		}
		s.changed = false
		if s.queueReady() {
			// The turn of the first queued message starts when no turn runs.
			s.startQueued(ctx)
			continue
		}
		s.events++
		info := workflow.GetInfo(ctx)
		// Continue as new only at a quiet point, with no turn running: the active run's report
		// must reach this execution (the SDK can hand a workflow task's later events to the
		// code after it has decided to continue as new, and they would be lost).
		if s.m.ContinueAsNewDue(info.GetContinueAsNewSuggested(), s.events) {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			s.drain(ctx)
			next := s.m.Carry()
			if err := protocol.CheckPayload("the session state carried into continue-as-new", next, ""); err != nil {
				// Even without the older snapshots (the head's is kept): the session goes on in
				// this execution.
				workflow.GetLogger(ctx).Warn("kortyx: the session cannot continue as new", "session", s.m.In.SessionID, "error", err)
				continue
			}
			return workflow.NewContinueAsNewError(ctx, protocol.SessionWorkflowName, next)
		}
	}
}

// session is the workflow shell around the session's state machine (internal/sessionstate):
// it installs the handlers, generates ids and times, and issues the commands the machine's
// transitions ask for, in the order they always were.
type session struct {
	reg     *Registry
	m       *sessionstate.Machine
	changed bool
	events  int
	reports workflow.ReceiveChannel
	// restoring is set while a forked session starts the run of its open questions.
	restoring bool
	// launching is the run the start-turn update in progress left to its caller (see startRun).
	launching *protocol.RunLaunch
	// changing is set while an update handler that blocks between its checks and its last
	// change (cancelling runs, starting one) runs: handlers are coroutines, and another one
	// running in that gap would check a state that is about to change.
	changing bool
}

// ready waits until the session has started the runs it restores at its start (a fork) and no
// other handler is in the middle of a change: an update handler that changes the session runs
// only then.
func (s *session) ready(ctx workflow.Context) error {
	if !s.restoring && !s.changing {
		return nil
	}
	return workflow.Await(ctx, func() bool { return !s.restoring && !s.changing })
}

// queueReady reports whether the first queued message can start its turn now.
func (s *session) queueReady() bool {
	return s.m.QueueReady() && !s.restoring && !s.changing
}

// change marks the session as changing until the returned function is called (see ready).
func (s *session) change() func() {
	s.changing = true
	return func() { s.changing = false }
}

func (s *session) install(ctx workflow.Context) error {
	// First: an update buffered before its handler exists runs as soon as it is registered,
	// and the handlers read reports.
	s.reports = workflow.GetSignalChannel(ctx, protocol.SessionCheckpointSignal)
	if err := workflow.SetQueryHandler(ctx, protocol.SessionQueryName, func() (sessionapi.SessionView, error) { return s.m.View(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, protocol.SessionQuestionQuery, func(token string) (string, error) {
		return s.m.QuestionRun(token), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, protocol.SessionCheckpointQueryName, func(id string) (sessionapi.Checkpoint, error) {
		// Query errors reach the client as text only: "not found" is the zero checkpoint.
		return s.m.Checkpoint(id), nil
	}); err != nil {
		return err
	}
	// Validators refuse what is wrong whatever the session's state. Whether a turn is active is
	// decided by the handlers, after applying the reports that arrived before the request: a
	// validator runs before those are applied. For the same reason, a check that depends on the
	// reports (a question's token, a checkpoint id: a client learns them from the response that
	// follows the report) is left to the handler while reports wait to be applied.
	validate := func(check func() error) error {
		s.m.Validating = true
		defer func() { s.m.Validating = false }()
		return contracts.ToTemporal(check())
	}
	validateSettled := func(check func() error) error {
		if s.reports.Len() > 0 {
			return nil
		}
		return validate(check)
	}
	validateStart := func(ctx workflow.Context, req sessionapi.TurnRequest) error {
		return validate(func() error {
			again, err := s.m.CheckStart(req)
			if err == nil && again == nil {
				err = s.checkWorkflow(req)
			}
			return err
		})
	}
	updates := []struct {
		name     string
		handler  any
		validate any
	}{
		{protocol.SessionStartTurnUpdate, s.startTurn, validateStart},
		{protocol.SessionStartTurnByCallerUpdate, s.startTurnByCaller, validateStart},
		{protocol.SessionResumeTurnUpdate, s.resumeTurn, func(ctx workflow.Context, req protocol.ResumeTurnRequest) error {
			return validateSettled(func() error { _, _, err := s.m.CheckResume(req); return err })
		}},
		{protocol.SessionAbortTurnUpdate, s.abortTurn, nil},
		{protocol.SessionStopUpdate, s.stop, nil},
		{protocol.SessionRollbackUpdate, s.rollback, func(ctx workflow.Context, id string) error {
			return validateSettled(func() error { _, err := s.m.CheckTarget(id); return err })
		}},
		{protocol.SessionForkUpdate, s.fork, func(ctx workflow.Context, req sessionapi.ForkRequest) error {
			return validateSettled(func() error { return s.m.CheckFork(req) })
		}},
	}
	for _, u := range updates {
		opts := workflow.UpdateHandlerOptions{}
		if u.validate != nil {
			opts.Validator = u.validate
		}
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, opts); err != nil {
			return err
		}
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			// Reports stay in the channel until they are applied, so that an update handler's
			// drain sees every report that has arrived: a coroutine blocked in Receive would be
			// handed one and hold it until it runs — after a handler of the same workflow task
			// that decided "a turn is active" without it.
			if err := workflow.Await(ctx, func() bool { return s.reports.Len() > 0 }); err != nil {
				return
			}
			s.drain(ctx)
		}
	})
	return nil
}

// drain applies the reports that arrived but were not processed yet (before continue-as-new).
func (s *session) drain(ctx workflow.Context) {
	for {
		var rep protocol.CheckpointReport
		if !s.reports.ReceiveAsync(&rep) {
			return
		}
		if s.m.Apply(rep, workflow.Now(ctx), s.answeredOnRun(ctx)) {
			s.changed = true
		}
	}
}

// answeredOnRun is the version gate of a report that answers an open question on the run
// itself (kortyx.Respond, starter respond) rather than through a turn of the session.
func (s *session) answeredOnRun(ctx workflow.Context) func() bool {
	return func() bool {
		return workflow.GetVersion(ctx, "session-answered-on-run", workflow.DefaultVersion, 1) >= 1
	}
}

// applyEarly applies the reports of run that arrived before its turn was active.
func (s *session) applyEarly(ctx workflow.Context, run string) {
	if s.m.ApplyEarly(run, workflow.Now(ctx), s.answeredOnRun(ctx)) {
		s.changed = true
	}
}

// newID returns prefix followed by a new UUID: derived from the session's seed (no marker), or
// recorded (a session started without a seed).
func (s *session) newID(ctx workflow.Context, prefix string) string {
	if ids := s.m.State.IDs; ids != nil {
		return ids.UUID(prefix, "id")
	}
	return execution.NewID(ctx, prefix)
}

// newCheckpointID returns a new checkpoint id of session sessionID, as newID does.
func (s *session) newCheckpointID(ctx workflow.Context, sessionID string) string {
	if ids := s.m.State.IDs; ids != nil {
		return protocol.CheckpointID(ids.UUID("", "checkpoint"), sessionID)
	}
	return execution.NewCheckpointID(ctx, sessionID)
}

// emptySessionIdle is how long a session that never started a turn waits for one.
const emptySessionIdle = time.Minute

// checkWorkflow checks, in the update validator only (it reads the registry, which may change
// between deployments), that the turn's workflow is registered.
func (s *session) checkWorkflow(req sessionapi.TurnRequest) error {
	wf := s.m.TurnWorkflow(req)
	if s.reg == nil {
		return nil
	}
	_, err := s.reg.Workflow(wf)
	return err
}

// startTurn is the handler of [protocol.SessionStartTurnUpdate]: the session starts the turn's
// run as its child.
func (s *session) startTurn(ctx workflow.Context, req sessionapi.TurnRequest) (sessionapi.TurnStarted, error) {
	return s.turn(ctx, req, false)
}

// startTurnByCaller is the handler of [protocol.SessionStartTurnByCallerUpdate]: a prompt that
// starts its turn at once has its run left to the update's caller (the result's Launch), and
// to [session.heal] if the caller never starts it. The update's name, not a field of its
// request, says so: a worker of an earlier release rejects the name (writing nothing), where it
// would accept and ignore a field, and its history would then replay here differently.
func (s *session) startTurnByCaller(ctx workflow.Context, req sessionapi.TurnRequest) (protocol.StartedTurn, error) {
	started, err := s.turn(ctx, req, true)
	out := protocol.StartedTurn{TurnStarted: started}
	if err == nil {
		out.Launch = s.launching
	}
	s.launching = nil
	return out, err
}

func (s *session) turn(ctx workflow.Context, req sessionapi.TurnRequest, byCaller bool) (sessionapi.TurnStarted, error) {
	if err := s.ready(ctx); err != nil {
		return sessionapi.TurnStarted{}, err
	}
	s.drain(ctx)
	again, err := s.m.CheckStart(req)
	if err != nil {
		if contracts.CodeOf(err) == contracts.CodeSessionBusy && s.mayBeUnstarted(ctx) {
			// The running turn's run may not exist (its caller died before starting it): it
			// is started before the message is refused (see heal).
			s.healNow(ctx)
		}
		return sessionapi.TurnStarted{}, contracts.ToTemporal(err)
	}
	if again != nil {
		s.healNow(ctx)
		return *again, nil
	}
	if q := s.m.WaitingFor(req.ClientTurnID); q != nil {
		// The same message again (a retry) while it waits: the same answer.
		s.healNow(ctx)
		if s.m.Queued(q.ID) {
			return s.awaitQueued(ctx, q.ID)
		}
		return s.m.SteerStarted(*q), nil
	}
	if s.m.Busy() {
		// CheckStart refused the message unless it names a policy for a busy session.
		switch {
		case req.Busy == sessionapi.BusyInterrupt:
			return s.interrupt(ctx, req)
		case req.Busy == sessionapi.BusySteer && s.m.Running() && len(s.m.State.Queue) == 0:
			return s.steer(ctx, req)
		default: // enqueue, or steering while messages are queued: after them
			// The queue moves when the running turn's run ends: it must exist.
			s.healNow(ctx)
			q := s.m.Enqueue(req, s.newID(ctx, "queued-"), req.Busy, workflow.Now(ctx))
			s.changed = true
			return s.awaitQueued(ctx, q.ID)
		}
	}
	defer s.change()()
	return s.startPrompt(ctx, req, "", byCaller)
}

// startPrompt starts the prompt turn of req: the session is idle (or its running turn was just
// stopped); arrival is how its message came ([protocol.RunStart].Arrival). With delegate, the
// run is left to the request's caller (see startRun).
func (s *session) startPrompt(ctx workflow.Context, req sessionapi.TurnRequest, arrival string, delegate bool) (sessionapi.TurnStarted, error) {
	defer func() { s.changed = true }()
	if s.m.Claim(req.Owner) {
		// The owner is recorded in the session's memo, where it can be read without a worker.
		if err := workflow.UpsertMemo(ctx, map[string]any{protocol.SessionOwnerMemo: req.Owner}); err != nil {
			return sessionapi.TurnStarted{}, err
		}
	}
	if s.m.Head() == nil {
		s.m.StartSession(s.newCheckpointID(ctx, s.m.In.SessionID), workflow.Now(ctx), req.Workflow)
	}
	// A new prompt supersedes the questions still open: their runs stop waiting.
	for _, run := range s.m.PendingRuns() {
		s.cancelRun(ctx, run)
	}
	s.m.ClearPending()
	runID := s.newID(ctx, "run-")
	wf, in, started := s.m.StartPrompt(req, runID, workflow.GetInfo(ctx).WorkflowExecution.ID, workflow.Now(ctx))
	in.Arrival = arrival
	if err := s.startRun(ctx, runID, wf, in, delegate); err != nil {
		s.m.PromptNotStarted()
		return sessionapi.TurnStarted{}, err
	}
	s.applyEarly(ctx, runID)
	return started, nil
}

// awaitQueued waits until the turn of queued message id started, and returns how.
func (s *session) awaitQueued(ctx workflow.Context, id string) (sessionapi.TurnStarted, error) {
	if err := workflow.Await(ctx, func() bool { return s.m.Result(id) != nil }); err != nil {
		return sessionapi.TurnStarted{}, err
	}
	r := s.m.Result(id)
	return r.Started, r.Err
}

// startQueued starts the turn of the first queued message (the session is idle).
func (s *session) startQueued(ctx workflow.Context) {
	defer s.change()()
	q := s.m.PopQueued()
	started, err := s.startPrompt(ctx, q.Req, sessionapi.BusyEnqueue, false)
	if err != nil {
		workflow.GetLogger(ctx).Warn("kortyx session: a queued message's turn could not start", "message", q.ID, "error", err)
	} else {
		started.Kind = sessionapi.BusyEnqueue
	}
	s.m.Started(q.ID, sessionstate.QueuedResult{Started: started, Err: err})
}

// steer sends req to the running turn's run, which takes it in at its next model pass; a run
// that ended already leaves it to the queue.
func (s *session) steer(ctx workflow.Context, req sessionapi.TurnRequest) (sessionapi.TurnStarted, error) {
	done := s.change()
	id := s.newID(ctx, "steer-")
	q, msg := s.m.AddSteer(req, id, workflow.Now(ctx))
	run := q.RunID
	s.changed = true
	err := workflow.SignalExternalWorkflow(ctx, run, "", protocol.SteerSignal, msg).Get(ctx, nil)
	if err != nil && s.unstarted(run) {
		s.heal(ctx)
		err = workflow.SignalExternalWorkflow(ctx, run, "", protocol.SteerSignal, msg).Get(ctx, nil)
	}
	done()
	if err != nil {
		workflow.GetLogger(ctx).Info("kortyx session: a steering message could not reach its run; it is queued", "run", run, "error", err)
		s.m.SteerNotSent(id)
		return s.awaitQueued(ctx, id)
	}
	if s.m.Queued(id) || s.m.Result(id) != nil {
		// The turn ended while the message was on its way, without it: it is queued.
		return s.awaitQueued(ctx, id)
	}
	return s.m.SteerStarted(q), nil
}

// interrupt stops the running turn (as Stop does) and starts req's turn at once, with the
// stopped turn's prompt and steering messages in its conversation.
func (s *session) interrupt(ctx workflow.Context, req sessionapi.TurnRequest) (sessionapi.TurnStarted, error) {
	defer s.change()()
	stopped := ""
	if a := s.m.State.Active; a != nil {
		stopped = a.RunID
		s.cancelRun(ctx, a.RunID)
		req = s.m.Interrupting(a, req)
	}
	arrival := ""
	if stopped != "" {
		arrival = sessionapi.BusyInterrupt
	}
	started, err := s.startPrompt(ctx, req, arrival, false)
	if err != nil {
		return started, err
	}
	started.Kind, started.Interrupted = sessionapi.BusyInterrupt, stopped
	return started, nil
}

func (s *session) resumeTurn(ctx workflow.Context, req protocol.ResumeTurnRequest) (sessionapi.TurnStarted, error) {
	if err := s.ready(ctx); err != nil {
		return sessionapi.TurnStarted{}, err
	}
	s.drain(ctx)
	p, again, err := s.m.CheckResume(req)
	if err != nil {
		return sessionapi.TurnStarted{}, contracts.ToTemporal(err)
	}
	if again != nil {
		return *again, nil
	}
	defer func() { s.changed = true }()
	if !sessionstate.Delivers(req, p) {
		// A request without the answer (from before answers were carried): the caller delivers it.
		started := s.m.Resume(req, p, workflow.Now(ctx))
		s.applyEarly(ctx, p.RunID)
		return started, nil
	}
	// The answer turn and its delivery are one update: the turn is active before the run gets
	// the answer (the run's report after it must find its turn), and released if the run is gone.
	defer s.change()()
	started := s.m.Resume(req, p, workflow.Now(ctx))
	if err := workflow.SignalExternalWorkflow(ctx, p.RunID, "", contracts.RespondName, *req.Answer).Get(ctx, nil); err != nil {
		s.m.Abort(p.RunID)
		workflow.GetLogger(ctx).Info("kortyx session: the answer could not reach its run", "run", p.RunID, "error", err)
		// As a caller's delivery to a run that is gone is refused.
		return sessionapi.TurnStarted{}, contracts.ToTemporal(&contracts.Error{Code: contracts.CodeNotFound,
			Message: fmt.Sprintf("run %q not found (or no longer running)", p.RunID)})
	}
	s.applyEarly(ctx, p.RunID)
	return started, nil
}

// abortTurn releases the active turn of run runID that did not start (its answer was
// rejected): the question it claimed is open again.
func (s *session) abortTurn(ctx workflow.Context, runID string) (bool, error) {
	if err := s.ready(ctx); err != nil {
		return false, err
	}
	if !s.m.Abort(runID) {
		return false, nil
	}
	s.changed = true
	return true, nil
}

// stop cancels the active run (the Stop button) and frees the session; with a run id, only
// when that run is the active turn's.
func (s *session) stop(ctx workflow.Context, runID string) (string, error) {
	if err := s.ready(ctx); err != nil {
		return "", err
	}
	defer s.change()()
	s.drain(ctx)
	a := s.m.Stoppable(runID)
	if a == nil {
		return "", nil
	}
	s.cancelRun(ctx, a.RunID)
	s.m.Stopped(a)
	s.changed = true
	return a.RunID, nil
}

// rollback makes a checkpoint the head (spec F5.4): later checkpoints are deleted, their runs
// cancelled, their effects reported as invalidated, and the question open at the checkpoint is
// asked again under its own token by a run restored from it.
func (s *session) rollback(ctx workflow.Context, id string) (sessionapi.RollbackResult, error) {
	if err := s.ready(ctx); err != nil {
		return sessionapi.RollbackResult{}, err
	}
	defer s.change()()
	s.drain(ctx)
	plan, err := s.m.PlanRollback(id)
	if err != nil {
		return sessionapi.RollbackResult{}, contracts.ToTemporal(err)
	}
	defer func() { s.changed = true }()
	if plan.Noop {
		return plan.Result, nil
	}
	for _, run := range plan.Cancel {
		s.cancelRun(ctx, run)
	}
	for _, run := range s.m.PendingCancels(&plan) {
		s.cancelRun(ctx, run)
	}
	res := plan.Result
	if target := s.m.CommitRollback(plan); target != nil {
		runID, err := s.restore(ctx, *target, "")
		if err != nil {
			return sessionapi.RollbackResult{}, err
		}
		res.RunID = runID
		res.ActivePendingRequests = target.ActivePendingRequests
	}
	return res, nil
}

// restore starts a run from a checkpoint taken while a question was open: it asks the question
// again (with the tokens the checkpoint holds) and waits.
func (s *session) restore(ctx workflow.Context, cp protocol.Checkpoint, runID string) (string, error) {
	if err := sessionstate.CanRestore(cp); err != nil {
		return "", err
	}
	if runID == "" {
		runID = s.newID(ctx, "run-")
	}
	if err := s.startRun(ctx, runID, cp.Workflow, s.m.RestoreInput(cp, workflow.GetInfo(ctx).WorkflowExecution.ID), false); err != nil {
		return "", err
	}
	s.m.Reopen(cp, runID)
	return runID, nil
}

// fork copies a checkpoint into a new session (spec F5.5): every open question gets a new token
// and request id, and is asked again in the new session by a run restored from the copy.
func (s *session) fork(ctx workflow.Context, req sessionapi.ForkRequest) (sessionapi.ForkResult, error) {
	if err := s.ready(ctx); err != nil {
		return sessionapi.ForkResult{}, err
	}
	defer s.change()()
	s.drain(ctx)
	if err := s.m.CheckFork(req); err != nil {
		return sessionapi.ForkResult{}, contracts.ToTemporal(err)
	}
	src := s.m.ForkSource(req.CheckpointID)
	ids := sessionstate.ForkIDs{Session: req.NewSessionID}
	if ids.Session == "" {
		ids.Session = execution.NewID(ctx, "session-")
	}
	ids.Checkpoint = execution.NewCheckpointID(ctx, ids.Session)
	for range src.ActivePendingRequests {
		token, requestID := execution.NewRequestIDs(ctx)
		ids.Requests = append(ids.Requests, sessionapi.ReissuedRequest{Token: token, RequestID: requestID})
	}
	if len(src.ActivePendingRequests) > 0 {
		ids.Run = execution.NewID(ctx, "run-")
	}
	fin, reissued := s.m.Fork(src, ids, workflow.Now(ctx))
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            protocol.SessionWorkflowID(ids.Session),
		TaskQueue:             workflow.GetInfo(ctx).TaskQueueName,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(protocol.SessionKey.ValueSet(ids.Session)),
	}
	if owner := s.m.State.Owner; owner != "" {
		opts.Memo = map[string]any{protocol.SessionOwnerMemo: owner}
	}
	if err := protocol.CheckPayload(fmt.Sprintf("the copy of checkpoint %q", src.ID), fin, "fork from a checkpoint whose state is smaller"); err != nil {
		return sessionapi.ForkResult{}, contracts.ToTemporal(err)
	}
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), protocol.SessionWorkflowName, fin)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		// The client gets a message of its own; Temporal's text stays in the worker's log.
		workflow.GetLogger(ctx).Warn("kortyx session: the fork's session was not created", "session", ids.Session, "error", err)
		msg := fmt.Sprintf("Session %q could not be created; try the fork again.", ids.Session)
		var exists *temporal.ChildWorkflowExecutionAlreadyStartedError
		if errors.As(err, &exists) {
			msg = fmt.Sprintf("Session %q already exists: fork into another newSessionId, or send none.", ids.Session)
		}
		return sessionapi.ForkResult{}, contracts.ToTemporal(&contracts.Error{Code: contracts.CodeInvalidSession, Message: msg,
			Details: map[string]any{"newSessionId": ids.Session}})
	}
	s.changed = true
	return sessionapi.ForkResult{SessionID: ids.Session, ParentSessionID: s.m.In.SessionID, ForkedFrom: src.ID, Checkpoint: fin.Initial.Public(), RunID: ids.Run,
		Reissued: reissued}, nil
}

// startRun starts run runID of workflow wf as a child of the session, or, with delegate, leaves
// its start to the caller of the update that runs this (the start-turn result's Launch): one
// client start, where a child costs the session a command and two events. The run is then
// [sessionstate.Machine].Unstarted until it reports.
func (s *session) startRun(ctx workflow.Context, runID, wf string, in protocol.RunStart, delegate bool) error {
	var taskTimeout time.Duration // the server's default
	if d, err := s.reg.Workflow(wf); err == nil && d.FastPath {
		// A fast-path run learns of a cancellation when the SDK heartbeats its workflow task
		// (every 80% of this timeout) while a pass runs. Options of a started child are not
		// part of replay (only its type is compared), nor is an update's result, so reading the
		// file here is safe.
		taskTimeout = FastPathTaskTimeout
	}
	// A session with an id seed records the run's start in its input, seeded from its own
	// (workflows/start.go): the run records no marker to start. Only for a run on the session's
	// own task queue, whose workers have this worker's definitions and configuration.
	var rec *protocol.StartRecord
	if ids := s.m.State.IDs; ids != nil && s.m.In.RunTaskQueue == workflow.GetInfo(ctx).TaskQueueName {
		rec = s.reg.startRecord(in, ids.Derive("run:"+runID))
	}
	if err := protocol.AddStart(&in, rec, "the input of the turn's run (the turn's input and the head's state)",
		"send a smaller input, or keep large values out of the run's state"); err != nil {
		return contracts.ToTemporal(err)
	}
	l := &protocol.RunLaunch{RunID: runID, SessionID: s.m.In.SessionID, TaskQueue: s.m.In.RunTaskQueue, Workflow: wf, TaskTimeout: taskTimeout, Input: in}
	if delegate {
		s.m.Unstarted, s.launching = l, l
		return nil
	}
	if err := s.launch(ctx, l); err != nil {
		return contracts.ToTemporal(&contracts.Error{Code: contracts.CodeExecutionFailed, Message: "the run could not be started: " + err.Error(), Err: err})
	}
	return nil
}

// launch starts run l as a child of the session, with the options its caller would start it
// with ([sessions.Service.Start]).
func (s *session) launch(ctx workflow.Context, l *protocol.RunLaunch) error {
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowTaskTimeout:   l.TaskTimeout,
		WorkflowID:            l.RunID,
		TaskQueue:             l.TaskQueue,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: protocol.RunSearchAttributes(l),
	})
	return workflow.ExecuteChildWorkflow(child, contracts.RunWorkflowName, l.Input).GetChildWorkflowExecution().Get(ctx, nil)
}

// unstarted reports whether run is the active turn's run that the session left to its caller to
// start and that has not reported since.
func (s *session) unstarted(run string) bool {
	return s.m.Unstarted != nil && s.m.Unstarted.RunID == run
}

// heal starts the run the session left to its caller and that has not reported since: the
// caller may have died between the update and the start, and the turn would wait for a run
// that does not exist. A run the caller did start keeps its id, so this start is refused as a
// duplicate (a start of the caller's after this one is refused in the same way): the run never
// starts twice. The session heals before what needs the run to exist (an enqueued message waits
// for it to end, a retry reattaches to it) and when the run did not take a signal or
// cancellation, so that a healthy turn pays for none of it.
func (s *session) heal(ctx workflow.Context) {
	l := s.m.Unstarted
	if l == nil {
		return
	}
	s.m.Unstarted = nil
	err := s.launch(ctx, l)
	var exists *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case err == nil:
		workflow.GetLogger(ctx).Warn("kortyx session: started the turn's run that its caller did not start", "run", l.RunID)
	case !errors.As(err, &exists):
		// Neither started: the next request tries again.
		workflow.GetLogger(ctx).Warn("kortyx session: the turn's run could not be started", "run", l.RunID, "error", err)
		if s.m.Unstarted == nil {
			s.m.Unstarted = l
		}
	}
}

// launchGrace is how long after its turn started a run the session left to its caller is
// presumed started: a message refused as busy within it is refused as before, after it the
// session first starts the run if its caller did not (see heal).
const launchGrace = 5 * time.Second

// mayBeUnstarted reports whether the active turn's run was left to its caller more than
// launchGrace ago and has not reported since.
func (s *session) mayBeUnstarted(ctx workflow.Context) bool {
	l, a := s.m.Unstarted, s.m.State.Active
	return l != nil && a != nil && a.RunID == l.RunID && workflow.Now(ctx).Sub(a.Since) > launchGrace
}

// healNow heals (see heal) as a change of the session: no other handler runs in between. Only
// the active turn's run is started (a run whose turn ended without a report is not).
func (s *session) healNow(ctx workflow.Context) {
	l := s.m.Unstarted
	if l == nil {
		return
	}
	if a := s.m.State.Active; a == nil || a.RunID != l.RunID {
		s.m.Unstarted = nil
		return
	}
	defer s.change()()
	s.heal(ctx)
}

func (s *session) cancelRun(ctx workflow.Context, runID string) {
	err := workflow.RequestCancelExternalWorkflow(ctx, runID, "").Get(ctx, nil)
	if err != nil && s.unstarted(runID) {
		// Its caller did not start it (yet): start it, so that a start still on its way cannot
		// run it later, and cancel it.
		s.heal(ctx)
		err = workflow.RequestCancelExternalWorkflow(ctx, runID, "").Get(ctx, nil)
	}
	s.m.Confirmed(runID)
	if err != nil {
		workflow.GetLogger(ctx).Info("kortyx: cancelling a run of the session failed (it may have ended)", "run", runID, "error", err)
	}
}
