package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/engine"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// maxSessionPayload bounds the state a session carries across continue-as-new; beyond it the
// snapshots of the oldest checkpoints are dropped (they stay listed, but cannot be restored).
const maxSessionPayload = 1536 << 10

// Session is the session workflow ([contracts.SessionWorkflowName]): one execution per session
// id that holds the session's checkpoints and head, serializes its turns (starting each run as
// a child workflow that outlives it), and rolls back and forks (spec F5.3–F5.5).
func (r *Runner) Session(ctx workflow.Context, in contracts.SessionInput) error {
	s := &session{in: in, reg: r.reg}
	if in.State != nil {
		s.st = *in.State
	} else {
		s.st.Owner = in.Owner // a fork belongs to its source's owner
	}
	if s.st.Pending == nil {
		s.st.Pending = map[string]contracts.PendingTurn{}
	}
	if in.MaxCheckpoints <= 0 {
		s.in.MaxCheckpoints = contracts.DefaultMaxCheckpoints
	}
	if s.in.RunTaskQueue == "" {
		s.in.RunTaskQueue = workflow.GetInfo(ctx).TaskQueueName
	}
	forked := in.State == nil && in.Initial != nil
	if forked {
		// A forked session: its first checkpoint is the copy, and its open questions are asked
		// again, with the new tokens, by a run restored from the copy. The questions are open
		// before the handlers are installed: the fork's caller may answer at once, and that
		// answer's turn waits until the run has started (see ready).
		cp := *in.Initial
		s.st.Checkpoints = []contracts.Checkpoint{cp}
		s.st.Head = cp.ID
		s.st.NextTurn = cp.TurnIndex + 1
		if in.InitialRunID != "" {
			for _, p := range cp.ActivePendingRequests {
				s.st.Pending[p.Token] = contracts.PendingTurn{Request: p, RunID: in.InitialRunID, CheckpointID: cp.ID}
			}
		}
		s.restoring = len(cp.ActivePendingRequests) > 0
	}
	if err := s.install(ctx); err != nil {
		return err
	}
	if s.st.Owner != "" && workflow.GetInfo(ctx).Memo.GetFields()[contracts.SessionOwnerMemo] == nil {
		// A fork or a continued session that does not carry its owner's memo yet.
		if err := workflow.UpsertMemo(ctx, map[string]any{contracts.SessionOwnerMemo: s.st.Owner}); err != nil {
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
		if s.empty() {
			// A session whose first turn was refused ends when nothing else comes: a rejected
			// request leaves no workflow behind (the next request starts the session again).
			ok, err := workflow.AwaitWithTimeout(ctx, emptySessionIdle, func() bool { return s.changed })
			if err != nil {
				return err
			}
			if !ok && s.empty() {
				if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
					return err
				}
				if s.empty() {
					return nil
				}
			}
		} else if err := workflow.Await(ctx, func() bool { return s.changed }); err != nil {
			return err
		}
		s.changed = false
		s.events++
		info := workflow.GetInfo(ctx)
		// Continue as new only at a quiet point, with no turn running: the active run's report
		// must reach this execution (the SDK can hand a workflow task's later events to the
		// code after it has decided to continue as new, and they would be lost).
		due := info.GetContinueAsNewSuggested() || (s.in.ContinueAsNewAfter > 0 && s.events >= s.in.ContinueAsNewAfter)
		if due && s.st.Active == nil {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			s.drain(ctx)
			next := s.in
			next.Initial, next.InitialRunID = nil, ""
			st := s.compact()
			next.State = &st
			if err := contracts.CheckPayload("the session state carried into continue-as-new", next, ""); err != nil {
				// Even without the older snapshots (the head's is kept): the session goes on in
				// this execution.
				workflow.GetLogger(ctx).Warn("kortyx: the session cannot continue as new", "session", s.in.SessionID, "error", err)
				continue
			}
			return workflow.NewContinueAsNewError(ctx, contracts.SessionWorkflowName, next)
		}
	}
}

type session struct {
	reg     *Registry
	in      contracts.SessionInput
	st      contracts.SessionState
	changed bool
	events  int
	resumed *contracts.PendingTurn // the question the active answer turn claimed
	reports workflow.ReceiveChannel
	// validating is set while an update validator runs: "a turn is active" is not decided there.
	validating bool
	// restoring is set while a forked session starts the run of its open questions.
	restoring bool
}

// ready waits until the session has started the runs it restores at its start (a fork): an
// update handler that changes the session runs only then.
func (s *session) ready(ctx workflow.Context) error {
	if !s.restoring {
		return nil
	}
	return workflow.Await(ctx, func() bool { return !s.restoring })
}

func (s *session) install(ctx workflow.Context) error {
	// First: an update buffered before its handler exists runs as soon as it is registered,
	// and the handlers read reports.
	s.reports = workflow.GetSignalChannel(ctx, contracts.SessionCheckpointSignal)
	if err := workflow.SetQueryHandler(ctx, contracts.SessionQueryName, func() (contracts.SessionView, error) { return s.view(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contracts.SessionCheckpointQueryName, func(id string) (contracts.Checkpoint, error) {
		for _, cp := range s.st.Checkpoints {
			if cp.ID == id {
				return cp.Public(), nil
			}
		}
		// Query errors reach the client as text only: "not found" is the zero checkpoint.
		return contracts.Checkpoint{}, nil
	}); err != nil {
		return err
	}
	// Validators refuse what is wrong whatever the session's state. Whether a turn is active is
	// decided by the handlers, after applying the reports that arrived before the request: a
	// validator runs before those are applied. For the same reason, a check that depends on the
	// reports (a question's token, a checkpoint id: a client learns them from the response that
	// follows the report) is left to the handler while reports wait to be applied.
	validate := func(check func() error) error {
		s.validating = true
		defer func() { s.validating = false }()
		return contracts.ToTemporal(check())
	}
	validateSettled := func(check func() error) error {
		if s.reports.Len() > 0 {
			return nil
		}
		return validate(check)
	}
	updates := []struct {
		name     string
		handler  any
		validate any
	}{
		{contracts.SessionStartTurnUpdate, s.startTurn, func(ctx workflow.Context, req contracts.TurnRequest) error {
			return validate(func() error {
				again, err := s.checkStart(req)
				if err == nil && again == nil {
					err = s.checkWorkflow(req)
				}
				return err
			})
		}},
		{contracts.SessionResumeTurnUpdate, s.resumeTurn, func(ctx workflow.Context, req contracts.ResumeTurnRequest) error {
			return validateSettled(func() error { _, _, err := s.checkResume(req); return err })
		}},
		{contracts.SessionAbortTurnUpdate, s.abortTurn, nil},
		{contracts.SessionStopUpdate, s.stop, nil},
		{contracts.SessionRollbackUpdate, s.rollback, func(ctx workflow.Context, id string) error {
			return validateSettled(func() error { _, err := s.checkTarget(id); return err })
		}},
		{contracts.SessionForkUpdate, s.fork, func(ctx workflow.Context, req contracts.ForkRequest) error {
			return validateSettled(func() error { return s.checkFork(req) })
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
		var rep contracts.CheckpointReport
		if !s.reports.ReceiveAsync(&rep) {
			return
		}
		s.apply(ctx, rep)
	}
}

// emptySessionIdle is how long a session that never started a turn waits for one.
const emptySessionIdle = time.Minute

// empty reports whether the session never started a turn.
func (s *session) empty() bool {
	return len(s.st.Checkpoints) == 0 && s.st.Active == nil && len(s.st.Pending) == 0
}

func (s *session) view() contracts.SessionView {
	v := contracts.SessionView{SessionID: s.in.SessionID, Head: s.st.Head, Active: s.st.Active,
		ParentSessionID: s.in.ParentSessionID, ForkedFrom: s.in.ForkedFrom, Owner: s.st.Owner, Checkpoints: []contracts.CheckpointSummary{}}
	for _, cp := range s.st.Checkpoints {
		v.Checkpoints = append(v.Checkpoints, cp.Summary())
	}
	for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
		v.Pending = append(v.Pending, s.st.Pending[tok].Request)
	}
	return v
}

// busyNow reports whether a turn is active (never while validating: see install).
func (s *session) busyNow() bool { return s.st.Active != nil && !s.validating }

func (s *session) busy() error {
	a := s.st.Active
	return &contracts.Error{Code: contracts.CodeSessionBusy,
		Message: fmt.Sprintf("A turn is already running in session %q (run %s); wait for it to finish, or stop it.", s.in.SessionID, a.RunID),
		Details: map[string]any{"runId": a.RunID}}
}

// again returns the turn a request with this clientTurnId and kind already made: the active
// one, or one that ended (nil: none) — one that failed or was stopped only for a reconnecting
// reader. token, for answers, must match too.
func (s *session) again(clientTurnID, kind, token string, reconnect bool) (*contracts.ActiveTurn, bool) {
	if clientTurnID == "" {
		return nil, false
	}
	if a := s.st.Active; a != nil && a.ClientTurnID == clientTurnID && a.Kind == kind && a.Token == token {
		return a, false
	}
	for i := len(s.st.Recent) - 1; i >= 0; i-- {
		if t := s.st.Recent[i]; t.ClientTurnID == clientTurnID && t.Kind == kind && t.Token == token {
			if !t.Committed && !reconnect {
				return nil, false
			}
			return &s.st.Recent[i], true
		}
	}
	return nil, false
}

// reattached is the answer to a request whose turn exists already.
func (s *session) reattached(t *contracts.ActiveTurn, ended bool) contracts.TurnStarted {
	return contracts.TurnStarted{SessionID: s.in.SessionID, RunID: t.RunID, TurnIndex: t.TurnIndex, Reattached: true, Ended: ended}
}

// remember keeps an ended turn that had a clientTurnId.
func (s *session) remember(t *contracts.ActiveTurn) {
	if t == nil || t.ClientTurnID == "" {
		return
	}
	s.st.Recent = append(s.st.Recent, *t)
	if n := len(s.st.Recent); n > contracts.MaxRecentTurns {
		s.st.Recent = append([]contracts.ActiveTurn(nil), s.st.Recent[n-contracts.MaxRecentTurns:]...)
	}
}

// checkStart checks that a prompt turn can start; it returns the turn to re-attach to when the
// same clientTurnId started one already.
func (s *session) checkStart(req contracts.TurnRequest) (*contracts.TurnStarted, error) {
	if err := s.checkOwner(req.Owner); err != nil {
		return nil, err
	}
	if t, ended := s.again(req.ClientTurnID, "prompt", "", req.Reconnect); t != nil {
		ts := s.reattached(t, ended)
		return &ts, nil
	}
	if s.busyNow() {
		return nil, s.busy()
	}
	if strings.TrimSpace(req.Workflow) == "" && s.headCheckpoint() == nil {
		return nil, contracts.Errorf(contracts.CodeUnknownWorkflow, "No workflow selected: the first turn of session %q must name its workflow.", s.in.SessionID)
	}
	return nil, nil
}

// checkOwner refuses a turn of another owner than the session's. A session that never
// committed a checkpoint and has no owner yet is claimed by its first accepted turn.
func (s *session) checkOwner(owner string) error {
	if owner == s.st.Owner || (s.st.Owner == "" && s.empty()) {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeForbidden, Message: "This session belongs to another user."}
}

// claim makes the turn's owner the owner of a session that has none, and records it in the
// session's memo (contracts.SessionOwnerMemo), where it can be read without a worker.
func (s *session) claim(ctx workflow.Context, owner string) error {
	if owner == "" || s.st.Owner != "" {
		return nil
	}
	s.st.Owner = owner
	return workflow.UpsertMemo(ctx, map[string]any{contracts.SessionOwnerMemo: owner})
}

// checkWorkflow checks, in the update validator only (it reads the registry, which may change
// between deployments), that the turn's workflow is registered.
func (s *session) checkWorkflow(req contracts.TurnRequest) error {
	wf := strings.TrimSpace(req.Workflow)
	if wf == "" {
		if head := s.headCheckpoint(); head != nil {
			wf = head.Workflow
		}
	}
	if s.reg == nil {
		return nil
	}
	_, err := s.reg.Workflow(wf)
	return err
}

func (s *session) startTurn(ctx workflow.Context, req contracts.TurnRequest) (contracts.TurnStarted, error) {
	if err := s.ready(ctx); err != nil {
		return contracts.TurnStarted{}, err
	}
	s.drain(ctx)
	again, err := s.checkStart(req)
	if err != nil {
		return contracts.TurnStarted{}, contracts.ToTemporal(err)
	}
	if again != nil {
		return *again, nil
	}
	defer func() { s.changed = true }()
	if err := s.claim(ctx, req.Owner); err != nil {
		return contracts.TurnStarted{}, err
	}
	head := s.headCheckpoint()
	if head == nil {
		// The first turn of a session starts with a "session start" checkpoint (spec F5.3).
		cp := contracts.Checkpoint{ID: engine.NewID(ctx, "cp-"), SessionID: s.in.SessionID, TurnIndex: 0, CreatedAt: workflow.Now(ctx),
			Workflow: req.Workflow, Nodes: []string{}, Label: "session start", ActivePendingRequests: []contracts.PendingRequest{},
			Effects: contracts.CheckpointEffects{StructuredStreamIDs: []string{}, InterruptTokens: []string{}}}
		s.append(cp)
		head = s.headCheckpoint()
	}
	// A new prompt supersedes the questions still open: their runs stop waiting (the questions
	// stay in their checkpoints, where a rollback can ask them again).
	for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
		s.cancelRun(ctx, s.st.Pending[tok].RunID)
	}
	s.st.Pending = map[string]contracts.PendingTurn{}
	wf := req.Workflow
	if strings.TrimSpace(wf) == "" {
		wf = head.Workflow
	}
	runID := engine.NewID(ctx, "run-")
	turn := head.TurnIndex + 1
	in := contracts.RunInput{Workflow: wf, Input: req.Input, SessionID: s.in.SessionID, Context: req.Context, Messages: req.Messages, Limits: req.Limits,
		Prior:   head.Snapshot,
		Session: &contracts.SessionBinding{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, SessionID: s.in.SessionID, TurnIndex: turn, ParentCheckpointID: head.ID}}
	// The turn is active before its run starts: a fast run can report its end in the same
	// workflow task that sees it started, and that report must find its turn.
	s.st.Active = &contracts.ActiveTurn{RunID: runID, TurnIndex: turn, ClientTurnID: req.ClientTurnID, Kind: "prompt", Since: workflow.Now(ctx)}
	if err := s.startRun(ctx, runID, wf, in); err != nil {
		s.st.Active = nil
		return contracts.TurnStarted{}, err
	}
	s.applyEarly(ctx, runID)
	return contracts.TurnStarted{SessionID: s.in.SessionID, RunID: runID, TurnIndex: turn}, nil
}

// checkResume finds the open question an answer turn claims; it returns the turn to re-attach
// to when the same clientTurnId answered the same question already.
func (s *session) checkResume(req contracts.ResumeTurnRequest) (contracts.PendingTurn, *contracts.TurnStarted, error) {
	if t, ended := s.again(req.ClientTurnID, "interrupt-response", req.Token, req.Reconnect); t != nil {
		ts := s.reattached(t, ended)
		return contracts.PendingTurn{}, &ts, nil
	}
	if s.busyNow() {
		return contracts.PendingTurn{}, nil, s.busy()
	}
	p, ok := s.st.Pending[req.Token]
	if !ok || strings.TrimSpace(req.Token) == "" {
		return p, nil, contracts.Errorf(contracts.CodeInvalidResume,
			"Interrupt is expired, already consumed, or does not belong to session %q.", s.in.SessionID)
	}
	if p.Request.RequestID != req.RequestID {
		return p, nil, &contracts.Error{Code: contracts.CodeResumeMismatch,
			Message: fmt.Sprintf("Answer names request %q but the token belongs to %q.", req.RequestID, p.Request.RequestID)}
	}
	return p, nil, nil
}

func (s *session) resumeTurn(ctx workflow.Context, req contracts.ResumeTurnRequest) (contracts.TurnStarted, error) {
	if err := s.ready(ctx); err != nil {
		return contracts.TurnStarted{}, err
	}
	s.drain(ctx)
	p, again, err := s.checkResume(req)
	if err != nil {
		return contracts.TurnStarted{}, contracts.ToTemporal(err)
	}
	if again != nil {
		return *again, nil
	}
	defer func() { s.changed = true }()
	delete(s.st.Pending, req.Token)
	claimed := p
	s.resumed = &claimed
	turn := 0
	if head := s.headCheckpoint(); head != nil {
		turn = head.TurnIndex + 1
	}
	s.st.Active = &contracts.ActiveTurn{RunID: p.RunID, TurnIndex: turn, ClientTurnID: req.ClientTurnID, Kind: "interrupt-response",
		Since: workflow.Now(ctx), Token: req.Token}
	s.applyEarly(ctx, p.RunID)
	return contracts.TurnStarted{SessionID: s.in.SessionID, RunID: p.RunID, TurnIndex: turn}, nil
}

// abortTurn releases the active turn of run runID that did not start (its answer was
// rejected): the question it claimed is open again.
func (s *session) abortTurn(ctx workflow.Context, runID string) (bool, error) {
	if err := s.ready(ctx); err != nil {
		return false, err
	}
	a := s.st.Active
	if a == nil || a.RunID != runID {
		return false, nil
	}
	s.st.Active = nil
	if s.resumed != nil && s.resumed.RunID == runID {
		s.st.Pending[s.resumed.Request.Token] = *s.resumed
	}
	s.resumed = nil
	s.changed = true
	return true, nil
}

// stop cancels the active run (the Stop button) and frees the session; with a run id, only
// when that run is the active turn's.
func (s *session) stop(ctx workflow.Context, runID string) (string, error) {
	if err := s.ready(ctx); err != nil {
		return "", err
	}
	s.drain(ctx)
	a := s.st.Active
	if a == nil || (runID != "" && a.RunID != runID) {
		return "", nil
	}
	s.cancelRun(ctx, a.RunID)
	s.remember(a)
	s.st.Active, s.resumed, s.changed = nil, nil, true
	return a.RunID, nil
}

// apply commits what a run reports.
func (s *session) apply(ctx workflow.Context, rep contracts.CheckpointReport) {
	// Only the active turn's run moves the session: a late report of a run the session has
	// moved past (stopped, superseded, rolled back) changes nothing.
	if rep.Closed {
		for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
			if s.st.Pending[tok].RunID == rep.RunID {
				delete(s.st.Pending, tok)
				s.changed = true
			}
		}
	}
	a := s.st.Active
	if a == nil && rep.Checkpoint != nil && s.owns(rep.RunID) &&
		workflow.GetVersion(ctx, "session-answered-on-run", workflow.DefaultVersion, 1) >= 1 {
		// The run of an open question was answered on the run itself (kortyx.Respond,
		// starter respond), not through a turn of the session: its report is that answer's
		// turn, and its questions are no longer open.
		for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
			if s.st.Pending[tok].RunID == rep.RunID {
				delete(s.st.Pending, tok)
			}
		}
		a = &contracts.ActiveTurn{RunID: rep.RunID, TurnIndex: rep.Checkpoint.TurnIndex, Kind: "interrupt-response", Since: workflow.Now(ctx)}
		s.st.Active = a
	}
	if a == nil || a.RunID != rep.RunID {
		// Kept until that run's turn starts (the report and the start of its turn can arrive
		// in the same workflow task); a stale run's report is never applied.
		s.st.Early = append(s.st.Early, rep)
		if n := len(s.st.Early); n > maxEarlyReports {
			s.st.Early = append([]contracts.CheckpointReport(nil), s.st.Early[n-maxEarlyReports:]...)
		}
		return
	}
	if cp := rep.Checkpoint; cp != nil {
		a.Committed = true
		s.append(*cp)
		for _, p := range cp.ActivePendingRequests {
			s.st.Pending[p.Token] = contracts.PendingTurn{Request: p, RunID: rep.RunID, CheckpointID: cp.ID}
		}
	}
	if rep.TurnEnded {
		s.remember(s.st.Active)
		s.st.Active, s.resumed = nil, nil
	}
	s.changed = true
}

// owns reports whether run asks one of the session's open questions.
func (s *session) owns(run string) bool {
	for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
		if s.st.Pending[tok].RunID == run {
			return true
		}
	}
	return false
}

// maxEarlyReports bounds the reports kept for turns that have not started.
const maxEarlyReports = 16

// applyEarly applies the reports of run that arrived before its turn was active.
func (s *session) applyEarly(ctx workflow.Context, run string) {
	var mine []contracts.CheckpointReport
	kept := s.st.Early[:0]
	for _, rep := range s.st.Early {
		if rep.RunID == run {
			mine = append(mine, rep)
		} else {
			kept = append(kept, rep)
		}
	}
	s.st.Early = kept
	for _, rep := range mine {
		s.apply(ctx, rep)
	}
}

func (s *session) append(cp contracts.Checkpoint) {
	s.st.Checkpoints = append(s.st.Checkpoints, cp)
	s.st.Head = cp.ID
	s.st.NextTurn = cp.TurnIndex + 1
	if n := len(s.st.Checkpoints); n > s.in.MaxCheckpoints {
		s.st.Checkpoints = append([]contracts.Checkpoint(nil), s.st.Checkpoints[n-s.in.MaxCheckpoints:]...)
	}
}

func (s *session) headCheckpoint() *contracts.Checkpoint {
	for i := range s.st.Checkpoints {
		if s.st.Checkpoints[i].ID == s.st.Head {
			return &s.st.Checkpoints[i]
		}
	}
	return nil
}

func (s *session) checkTarget(id string) (int, error) {
	if s.busyNow() {
		return -1, s.busy()
	}
	for i, cp := range s.st.Checkpoints {
		if cp.ID == id {
			return i, nil
		}
	}
	return -1, &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Checkpoint %q not found.", id), Details: map[string]any{"checkpointId": id}}
}

// rollback makes a checkpoint the head (spec F5.4): later checkpoints are deleted, their runs
// cancelled, their effects reported as invalidated, and the question open at the checkpoint is
// asked again under its own token by a run restored from it.
func (s *session) rollback(ctx workflow.Context, id string) (contracts.RollbackResult, error) {
	if err := s.ready(ctx); err != nil {
		return contracts.RollbackResult{}, err
	}
	s.drain(ctx)
	idx, err := s.checkTarget(id)
	if err != nil {
		return contracts.RollbackResult{}, contracts.ToTemporal(err)
	}
	defer func() { s.changed = true }()
	target := s.st.Checkpoints[idx]
	res := contracts.RollbackResult{SessionID: s.in.SessionID, Head: target.Summary(),
		InvalidatedStructuredStreamIDs: []string{}, InvalidatedInterruptTokens: []string{}, ActivePendingRequests: []contracts.PendingRequest{}}
	removed := s.st.Checkpoints[idx+1:]
	if len(removed) == 0 {
		for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
			res.ActivePendingRequests = append(res.ActivePendingRequests, s.st.Pending[tok].Request)
		}
		return res, nil
	}
	cancelled := map[string]bool{}
	for _, cp := range removed {
		res.InvalidatedStructuredStreamIDs = appendNew(res.InvalidatedStructuredStreamIDs, cp.Effects.StructuredStreamIDs...)
		res.InvalidatedInterruptTokens = appendNew(res.InvalidatedInterruptTokens, cp.Effects.InterruptTokens...)
		for _, p := range cp.ActivePendingRequests {
			res.InvalidatedInterruptTokens = appendNew(res.InvalidatedInterruptTokens, p.Token)
		}
		if cp.RunID != "" && !cancelled[cp.RunID] {
			cancelled[cp.RunID] = true
			s.cancelRun(ctx, cp.RunID)
		}
	}
	for _, tok := range workflow.DeterministicKeys(s.st.Pending) {
		if p := s.st.Pending[tok]; !cancelled[p.RunID] {
			cancelled[p.RunID] = true
			s.cancelRun(ctx, p.RunID)
		}
	}
	s.st.Pending = map[string]contracts.PendingTurn{}
	s.st.Checkpoints = append([]contracts.Checkpoint(nil), s.st.Checkpoints[:idx+1]...)
	s.st.Head, s.st.NextTurn = target.ID, target.TurnIndex+1
	// The discarded turns are forgotten: their clientTurnIds may run again.
	kept := s.st.Recent[:0]
	for _, t := range s.st.Recent {
		if t.TurnIndex <= target.TurnIndex {
			kept = append(kept, t)
		}
	}
	s.st.Recent = kept
	if len(target.ActivePendingRequests) > 0 {
		runID, err := s.restore(ctx, target, "")
		if err != nil {
			return contracts.RollbackResult{}, err
		}
		res.RunID = runID
		res.ActivePendingRequests = target.ActivePendingRequests
	}
	return res, nil
}

// restore starts a run from a checkpoint taken while a question was open: it asks the question
// again (with the tokens the checkpoint holds) and waits.
func (s *session) restore(ctx workflow.Context, cp contracts.Checkpoint, runID string) (string, error) {
	if cp.Snapshot == nil {
		return "", contracts.Errorf(contracts.CodeResumeFailed, "Checkpoint %q no longer holds the state to restore its open question.", cp.ID)
	}
	if runID == "" {
		runID = engine.NewID(ctx, "run-")
	}
	in := contracts.RunInput{Workflow: cp.Workflow, SessionID: s.in.SessionID, Snapshot: cp.Snapshot,
		Session: &contracts.SessionBinding{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, SessionID: s.in.SessionID,
			TurnIndex: cp.TurnIndex + 1, ParentCheckpointID: cp.ID, Restore: true, Expect: cp.ActivePendingRequests}}
	if err := s.startRun(ctx, runID, cp.Workflow, in); err != nil {
		return "", err
	}
	for _, p := range cp.ActivePendingRequests {
		s.st.Pending[p.Token] = contracts.PendingTurn{Request: p, RunID: runID, CheckpointID: cp.ID}
	}
	return runID, nil
}

func (s *session) checkFork(req contracts.ForkRequest) error {
	if _, err := s.checkTarget(req.CheckpointID); err != nil && contracts.CodeOf(err) == contracts.CodeNotFound {
		return err
	}
	if req.NewSessionID != "" && (strings.TrimSpace(req.NewSessionID) != req.NewSessionID || req.NewSessionID == s.in.SessionID) {
		return contracts.Errorf(contracts.CodeInvalidSession, "newSessionId %q cannot be used: give another id, or none", req.NewSessionID)
	}
	return nil
}

// fork copies a checkpoint into a new session (spec F5.5): every open question gets a new token
// and request id, and is asked again in the new session by a run restored from the copy.
func (s *session) fork(ctx workflow.Context, req contracts.ForkRequest) (contracts.ForkResult, error) {
	if err := s.ready(ctx); err != nil {
		return contracts.ForkResult{}, err
	}
	s.drain(ctx)
	if err := s.checkFork(req); err != nil {
		return contracts.ForkResult{}, contracts.ToTemporal(err)
	}
	var src contracts.Checkpoint
	for _, cp := range s.st.Checkpoints {
		if cp.ID == req.CheckpointID {
			src = cp
		}
	}
	newSession := req.NewSessionID
	if newSession == "" {
		newSession = engine.NewID(ctx, "session-")
	}
	cp := engine.Clone(src)
	cp.ID, cp.SessionID, cp.ParentCheckpointID = engine.NewID(ctx, "cp-"), newSession, ""
	cp.ParentSessionID, cp.ForkedFrom, cp.CreatedAt = s.in.SessionID, src.ID, workflow.Now(ctx)
	cp.Effects.InterruptTokens = []string{}
	var reissued []contracts.ReissuedRequest
	for i, p := range cp.ActivePendingRequests {
		token, requestID := engine.NewRequestIDs(ctx)
		old := p.Token
		reissued = append(reissued, contracts.ReissuedRequest{FromToken: p.Token, FromRequestID: p.RequestID, Token: token, RequestID: requestID})
		p.Token, p.RequestID = token, requestID
		cp.ActivePendingRequests[i] = p
		cp.Effects.InterruptTokens = append(cp.Effects.InterruptTokens, p.Token)
		if cp.Snapshot != nil {
			engine.RewritePending(cp.Snapshot, old, p)
		}
	}
	var runID string
	if len(cp.ActivePendingRequests) > 0 {
		runID = engine.NewID(ctx, "run-")
	}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:            contracts.SessionWorkflowID(newSession),
		TaskQueue:             workflow.GetInfo(ctx).TaskQueueName,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(contracts.SessionKey.ValueSet(newSession)),
	}
	if s.st.Owner != "" {
		opts.Memo = map[string]any{contracts.SessionOwnerMemo: s.st.Owner}
	}
	fin := contracts.SessionInput{
		SessionID: newSession, MaxCheckpoints: s.in.MaxCheckpoints, RunTaskQueue: s.in.RunTaskQueue,
		ParentSessionID: s.in.SessionID, ForkedFrom: src.ID, Initial: &cp, InitialRunID: runID, Owner: s.st.Owner}
	if err := contracts.CheckPayload(fmt.Sprintf("the copy of checkpoint %q", src.ID), fin, "fork from a checkpoint whose state is smaller"); err != nil {
		return contracts.ForkResult{}, contracts.ToTemporal(err)
	}
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), contracts.SessionWorkflowName, fin)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return contracts.ForkResult{}, contracts.ToTemporal(&contracts.Error{Code: contracts.CodeInvalidSession,
			Message: fmt.Sprintf("session %q cannot be created (it may exist already): %v", newSession, err), Err: err})
	}
	s.changed = true
	return contracts.ForkResult{SessionID: newSession, ParentSessionID: s.in.SessionID, ForkedFrom: src.ID, Checkpoint: cp.Public(), RunID: runID,
		Reissued: reissued}, nil
}

func (s *session) startRun(ctx workflow.Context, runID, wf string, in contracts.RunInput) error {
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            runID,
		TaskQueue:             s.in.RunTaskQueue,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			contracts.SessionKey.ValueSet(s.in.SessionID),
			contracts.WorkflowKey.ValueSet(wf),
			contracts.StatusKey.ValueSet(string(contracts.StatusRunning))),
	})
	if err := contracts.CheckPayload("the input of the turn's run (the turn's input and the head's state)", in,
		"send a smaller input, or keep large values out of the run's state"); err != nil {
		return contracts.ToTemporal(err)
	}
	f := workflow.ExecuteChildWorkflow(child, contracts.RunWorkflowName, in)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return contracts.ToTemporal(&contracts.Error{Code: contracts.CodeExecutionFailed, Message: "the run could not be started: " + err.Error(), Err: err})
	}
	return nil
}

func (s *session) cancelRun(ctx workflow.Context, runID string) {
	if err := workflow.RequestCancelExternalWorkflow(ctx, runID, "").Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Info("kortyx: cancelling a run of the session failed (it may have ended)", "run", runID, "error", err)
	}
}

// compact keeps the carried state under the payload limit by dropping the oldest snapshots.
func (s *session) compact() contracts.SessionState {
	st := engine.Clone(s.st)
	for i := 0; i < len(st.Checkpoints); i++ {
		b, _ := json.Marshal(st)
		if len(b) <= maxSessionPayload {
			break
		}
		if st.Checkpoints[i].ID != st.Head {
			st.Checkpoints[i].Snapshot = nil
		}
	}
	return st
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		dup := false
		for _, have := range list {
			dup = dup || have == it
		}
		if !dup {
			list = append(list, it)
		}
	}
	return list
}
