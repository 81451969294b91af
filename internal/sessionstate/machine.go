package sessionstate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/internal/sessionapi"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"go.temporal.io/sdk/workflow"
)

// Turn kinds (sessionapi.ActiveTurn.Kind; they persist in the session's state).
const (
	KindPrompt = "prompt"
	KindAnswer = "interrupt-response"
)

// MaxPayload bounds the state a session carries across continue-as-new; beyond it the
// snapshots of the oldest checkpoints are dropped (they stay listed, but cannot be restored).
const MaxPayload = 1536 << 10

// maxEarlyReports bounds the reports kept for turns that have not started.
const maxEarlyReports = 16

// Machine is one session's state and the transitions over it.
type Machine struct {
	// In is the session's input, with its defaults applied (see [New]).
	In protocol.SessionStart
	// State is the durable state (carried across continue-as-new).
	State protocol.SessionState
	// Resumed is the question the active answer turn claimed (given back by [Machine.Abort]).
	Resumed *protocol.PendingTurn
	// Validating is set while an update validator runs: "a turn is active" is not decided
	// there (the reports that arrived before the request are applied by the handlers).
	Validating bool
	// schemas caches the compiled response schemas of open questions, by token (not durable:
	// compiling again gives the same schema).
	schemas map[string]*contracts.Schema
	// results are how the turns of queued messages started, by message id (see [QueuedResult]).
	results map[string]*QueuedResult
	// Unstarted is the run of the active turn that the session left to its caller to start
	// and that has not reported since: the caller may have died before starting it. Any
	// report of that run clears it. Not durable: replay sets it again, and a session
	// continues as new only with no turn active.
	Unstarted *protocol.RunLaunch
}

// Confirmed clears [Machine.Unstarted] when it is run's (the run exists).
func (m *Machine) Confirmed(run string) {
	if m.Unstarted != nil && m.Unstarted.RunID == run {
		m.Unstarted = nil
	}
}

// New returns the machine of a session started (or continued) with in; taskQueue is the
// session's own task queue, the default for its runs.
func New(in protocol.SessionStart, taskQueue string) *Machine {
	m := &Machine{In: in}
	if in.State != nil {
		m.State = *in.State
	} else {
		m.State.Owner = in.Owner // a fork belongs to its source's owner
	}
	if m.State.Pending == nil {
		m.State.Pending = map[string]protocol.PendingTurn{}
	}
	if m.State.IDs == nil && len(in.Seed) > 0 {
		m.State.IDs = &protocol.IDSource{Seed: in.Seed}
	}
	if in.MaxCheckpoints <= 0 {
		m.In.MaxCheckpoints = protocol.DefaultMaxCheckpoints
	}
	if m.In.RunTaskQueue == "" {
		m.In.RunTaskQueue = taskQueue
	}
	return m
}

// Forked reports whether the session is a fork starting from its first checkpoint.
func (m *Machine) Forked() bool { return m.In.State == nil && m.In.Initial != nil }

// StartForked makes the fork's copy the first checkpoint; its open questions are open at once,
// with the new tokens, asked by the run In.InitialRunID. It reports whether that run must be
// started (the copy has open questions).
func (m *Machine) StartForked() bool {
	cp := *m.In.Initial
	m.State.Checkpoints = []protocol.Checkpoint{cp}
	m.State.Head = cp.ID
	m.State.NextTurn = cp.TurnIndex + 1
	if m.In.InitialRunID != "" {
		for i, p := range cp.ActivePendingRequests {
			m.State.Pending[p.Token] = cp.Pending(i, m.In.InitialRunID)
		}
	}
	return len(cp.ActivePendingRequests) > 0
}

// Empty reports whether the session never started a turn.
func (m *Machine) Empty() bool {
	return len(m.State.Checkpoints) == 0 && m.State.Active == nil && len(m.State.Pending) == 0
}

// View is the session query's answer.
func (m *Machine) View() sessionapi.SessionView {
	v := sessionapi.SessionView{SessionID: m.In.SessionID, Head: m.State.Head, Active: m.State.Active,
		ParentSessionID: m.In.ParentSessionID, ForkedFrom: m.In.ForkedFrom, Owner: m.State.Owner, Checkpoints: []sessionapi.CheckpointSummary{}}
	for _, q := range m.State.Queue {
		v.Queued = append(v.Queued, q.View())
	}
	for _, q := range m.State.Steers {
		v.Steering = append(v.Steering, q.View())
	}
	for _, cp := range m.State.Checkpoints {
		v.Checkpoints = append(v.Checkpoints, cp.Summary())
	}
	if sb := m.RunBudget(); sb != nil {
		v.Budget = &contracts.Spend{Tokens: sb.Spent.Tokens, Cost: sb.Spent.Cost}
		if sb.Limits.MaxTokens > 0 {
			v.Budget.MaxTokens = sb.Limits.MaxTokens + sb.More.Tokens
		}
		if sb.Limits.MaxCost > 0 {
			v.Budget.MaxCost = sb.Limits.MaxCost + sb.More.Cost
		}
	}
	for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
		p := m.State.Pending[tok]
		v.Pending = append(v.Pending, p.Request)
		if len(p.Schema) > 0 {
			if v.Schemas == nil {
				v.Schemas = map[string]json.RawMessage{}
			}
			v.Schemas[p.Request.RequestID] = p.Schema
		}
	}
	return v
}

// Checkpoint returns the public form of checkpoint id (the zero checkpoint: none).
func (m *Machine) Checkpoint(id string) sessionapi.Checkpoint {
	for _, cp := range m.State.Checkpoints {
		if cp.ID == id {
			return cp.Public()
		}
	}
	return sessionapi.Checkpoint{}
}

// Head returns the head checkpoint (nil: none yet).
func (m *Machine) Head() *protocol.Checkpoint {
	for i := range m.State.Checkpoints {
		if m.State.Checkpoints[i].ID == m.State.Head {
			return &m.State.Checkpoints[i]
		}
	}
	return nil
}

// busyNow reports whether a turn is active (never while validating).
func (m *Machine) busyNow() bool { return m.State.Active != nil && !m.Validating }

func (m *Machine) busy() error {
	a := m.State.Active
	if a == nil {
		return &contracts.Error{Code: contracts.CodeSessionBusy,
			Message: fmt.Sprintf("Messages are waiting to run in session %q; wait for their turns, or send this one with busy \"enqueue\".", m.In.SessionID),
			Details: map[string]any{"queued": len(m.State.Queue)}}
	}
	return &contracts.Error{Code: contracts.CodeSessionBusy,
		Message: fmt.Sprintf("A turn is already running in session %q (run %s); wait for it to finish, or stop it.", m.In.SessionID, a.RunID),
		Details: map[string]any{"runId": a.RunID}}
}

// again returns the turn a request with this clientTurnId and kind already made: the active
// one, or one that ended (nil: none) — one that failed or was stopped only for a reconnecting
// reader. token, for answers, must match too. A turn whose digest differs from the request's
// (both set) is not the same turn: the request is refused with CLIENT_TURN_CONFLICT.
func (m *Machine) again(clientTurnID, kind, token, digest string, reconnect bool) (*sessionapi.ActiveTurn, bool, error) {
	if clientTurnID == "" {
		return nil, false, nil
	}
	if a := m.State.Active; a != nil && a.ClientTurnID == clientTurnID && a.Kind == kind && a.Token == token {
		if err := m.conflict(a, digest); err != nil {
			return nil, false, err
		}
		return a, false, nil
	}
	for i := len(m.State.Recent) - 1; i >= 0; i-- {
		if t := m.State.Recent[i]; t.ClientTurnID == clientTurnID && t.Kind == kind && t.Token == token {
			if err := m.conflict(&t, digest); err != nil {
				return nil, false, err
			}
			if !t.Committed && !reconnect {
				return nil, false, nil
			}
			return &m.State.Recent[i], true, nil
		}
	}
	return nil, false, nil
}

// conflict refuses a request of digest for turn t made with another content (turns and
// requests without a digest, from before digests, match any).
func (m *Machine) conflict(t *sessionapi.ActiveTurn, digest string) error {
	if t.Digest == "" || digest == "" || t.Digest == digest {
		return nil
	}
	what := "message"
	if t.Kind == KindAnswer {
		what = "answer"
	}
	return &contracts.Error{Code: contracts.CodeClientTurnConflict,
		Message: fmt.Sprintf("clientTurnId %q was already used in session %q with another %s: a retry must repeat the same request; send a new %s with a new clientTurnId.",
			t.ClientTurnID, m.In.SessionID, what, what),
		Details: map[string]any{"clientTurnId": t.ClientTurnID, "turnIndex": t.TurnIndex}}
}

func (m *Machine) reattached(t *sessionapi.ActiveTurn, ended bool) sessionapi.TurnStarted {
	return sessionapi.TurnStarted{SessionID: m.In.SessionID, RunID: t.RunID, TurnIndex: t.TurnIndex, Reattached: true, Ended: ended,
		Begin: t.Begin, Delivered: t.Delivered}
}

// remember keeps an ended turn that had a clientTurnId.
func (m *Machine) remember(t *sessionapi.ActiveTurn) {
	if t == nil || t.ClientTurnID == "" {
		return
	}
	m.State.Recent = append(m.State.Recent, *t)
	if n := len(m.State.Recent); n > protocol.MaxRecentTurns {
		m.State.Recent = append([]sessionapi.ActiveTurn(nil), m.State.Recent[n-protocol.MaxRecentTurns:]...)
	}
}

// CheckOwner refuses a turn of another owner than the session's. A session that never
// committed a checkpoint and has no owner yet is claimed by its first accepted turn.
func (m *Machine) CheckOwner(owner string) error {
	if owner == m.State.Owner || (m.State.Owner == "" && m.Empty()) {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeForbidden, Message: "This session belongs to another user."}
}

// CheckStart checks that a prompt turn can start; it returns the turn to re-attach to when the
// same clientTurnId started one already.
func (m *Machine) CheckStart(req sessionapi.TurnRequest) (*sessionapi.TurnStarted, error) {
	if err := m.CheckOwner(req.Owner); err != nil {
		return nil, err
	}
	t, ended, err := m.again(req.ClientTurnID, KindPrompt, "", req.Digest, req.Reconnect)
	if err != nil {
		return nil, err
	}
	if t != nil {
		ts := m.reattached(t, ended)
		return &ts, nil
	}
	if err := sessionapi.CheckBusy(req.Busy); err != nil {
		return nil, err
	}
	if err := m.checkWaiting(req); err != nil {
		return nil, err
	}
	if m.busyNow() || (!m.Validating && len(m.State.Queue) > 0) {
		if req.Busy == "" || req.Busy == sessionapi.BusyReject {
			return nil, m.busy()
		}
		if len(m.State.Queue)+len(m.State.Steers) >= protocol.MaxWaiting && m.WaitingFor(req.ClientTurnID) == nil {
			err := m.busy().(*contracts.Error)
			err.Message = fmt.Sprintf("Session %q has %d messages waiting already; wait for its turns to finish, or stop them.", m.In.SessionID, protocol.MaxWaiting)
			return nil, err
		}
	}
	if req.SessionBudget != nil {
		if err := protocol.CheckLimits(*req.SessionBudget); err != nil {
			return nil, contracts.Errorf(contracts.CodeInvalidInput, "sessionBudget: %s", contracts.FailureOf(err).Message)
		}
	}
	if strings.TrimSpace(req.Workflow) == "" && m.Head() == nil {
		return nil, contracts.Errorf(contracts.CodeUnknownWorkflow, "No workflow selected: the first turn of session %q must name its workflow.", m.In.SessionID)
	}
	return nil, nil
}

// TurnWorkflow is the workflow a prompt turn runs: the request's, or the head's.
func (m *Machine) TurnWorkflow(req sessionapi.TurnRequest) string {
	wf := strings.TrimSpace(req.Workflow)
	if wf == "" {
		if head := m.Head(); head != nil {
			wf = head.Workflow
		}
	}
	return wf
}

// Claim makes owner the owner of a session that has none; it reports whether the owner
// changed (the shell then records it in the session's memo).
func (m *Machine) Claim(owner string) bool {
	if owner == "" || m.State.Owner != "" {
		return false
	}
	m.State.Owner = owner
	return true
}

// StartSession adds the "session start" checkpoint a session's first turn starts from
// (spec F5.3), when there is no head yet; id and now are its id and time.
func (m *Machine) StartSession(id string, now time.Time, wf string) {
	m.append(protocol.Checkpoint{Checkpoint: sessionapi.Checkpoint{ID: id, SessionID: m.In.SessionID, TurnIndex: 0, CreatedAt: now,
		Workflow: wf, Nodes: []string{}, Label: "session start", ActivePendingRequests: []contracts.PendingRequest{},
		Effects: sessionapi.CheckpointEffects{StructuredStreamIDs: []string{}, InterruptTokens: []string{}}}})
}

// PendingRuns are the runs of the open questions, one per question in token order (a new
// prompt cancels them; see [Machine.ClearPending]).
func (m *Machine) PendingRuns() []string {
	var runs []string
	for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
		runs = append(runs, m.State.Pending[tok].RunID)
	}
	return runs
}

// ClearPending forgets the open questions (they stay in their checkpoints, where a rollback
// can ask them again).
func (m *Machine) ClearPending() { m.State.Pending = map[string]protocol.PendingTurn{} }

// StartPrompt makes the prompt turn of run runID active (before its run starts: a fast run can
// report its end in the same workflow task that sees it started, and that report must find
// its turn) and returns the run's input. sessionWorkflowID is the session's workflow id, to
// which the run reports. The head must exist ([Machine.StartSession]).
func (m *Machine) StartPrompt(req sessionapi.TurnRequest, runID, sessionWorkflowID string, now time.Time) (wf string, in protocol.RunStart, started sessionapi.TurnStarted) {
	head := m.Head()
	wf = req.Workflow
	if strings.TrimSpace(wf) == "" {
		wf = head.Workflow
	}
	turn := head.TurnIndex + 1
	if req.SessionBudget != nil {
		m.SetBudget(*req.SessionBudget)
	}
	in = protocol.RunStart{RunInput: contracts.RunInput{Workflow: wf, Input: req.Input, SessionID: m.In.SessionID, Context: req.Context, Messages: req.Messages, Limits: req.Limits, Tenant: m.State.Owner},
		Prior:         head.Snapshot,
		Session:       &protocol.SessionBinding{WorkflowID: sessionWorkflowID, SessionID: m.In.SessionID, TurnIndex: turn, ParentCheckpointID: head.ID},
		SessionBudget: m.RunBudget()}
	m.State.Active = &sessionapi.ActiveTurn{RunID: runID, TurnIndex: turn, ClientTurnID: req.ClientTurnID, Kind: KindPrompt, Since: now, Digest: req.Digest}
	prompt := req
	prompt.Owner, prompt.Limits, prompt.SessionBudget = "", nil, nil
	m.State.Prompt = &prompt
	return wf, in, sessionapi.TurnStarted{SessionID: m.In.SessionID, RunID: runID, TurnIndex: turn}
}

// PromptNotStarted releases the turn of a run that could not be started.
func (m *Machine) PromptNotStarted() { m.State.Active, m.State.Prompt = nil, nil }

// CheckResume finds the open question an answer turn claims; it returns the turn to re-attach
// to when the same clientTurnId answered the same question already.
func (m *Machine) CheckResume(req protocol.ResumeTurnRequest) (protocol.PendingTurn, *sessionapi.TurnStarted, error) {
	t, ended, err := m.again(req.ClientTurnID, KindAnswer, req.Token, req.Digest, req.Reconnect)
	if err != nil {
		return protocol.PendingTurn{}, nil, err
	}
	if t != nil {
		ts := m.reattached(t, ended)
		return protocol.PendingTurn{}, &ts, nil
	}
	if m.busyNow() {
		return protocol.PendingTurn{}, nil, m.busy()
	}
	p, ok := m.State.Pending[req.Token]
	if !ok || strings.TrimSpace(req.Token) == "" {
		return p, nil, contracts.Errorf(contracts.CodeInvalidResume,
			"Interrupt is expired, already consumed, or does not belong to session %q.", m.In.SessionID)
	}
	if p.Request.RequestID != req.RequestID {
		return p, nil, &contracts.Error{Code: contracts.CodeResumeMismatch,
			Message: fmt.Sprintf("Answer names request %q but the token belongs to %q.", req.RequestID, p.Request.RequestID)}
	}
	if req.Answer != nil && p.Checked {
		if err := m.checkAnswer(p, *req.Answer); err != nil {
			return p, nil, err
		}
	}
	return p, nil, nil
}

// checkAnswer checks an answer as the run that asks p checks it (the same calls, with the
// question's response schema), so that an answer the run would refuse is refused by the
// session's validator and writes nothing to history.
func (m *Machine) checkAnswer(p protocol.PendingTurn, ans contracts.Response) error {
	if err := protocol.CheckResponse(&p.Request, ans); err != nil {
		return err
	}
	if ans.Cancel {
		return nil
	}
	var schema *contracts.Schema
	if len(p.Schema) > 0 {
		if m.schemas == nil {
			m.schemas = map[string]*contracts.Schema{}
		}
		schema = m.schemas[p.Request.Token]
		if schema == nil {
			sc, err := contracts.CompileSchema(p.Schema)
			if err != nil {
				// The run compiled it; a schema that does not compile here is checked by the run.
				return nil
			}
			schema = sc
			m.schemas[p.Request.Token] = sc
		}
	}
	_, err := protocol.NormalizeAnswer(p.Request.Input, ans, schema)
	return err
}

// Delivers reports whether the session delivers the answer of req to the run of question p
// itself (the request carries the answer, and the session knows how the run checks it):
// otherwise the caller does, as before answers were carried.
func Delivers(req protocol.ResumeTurnRequest, p protocol.PendingTurn) bool {
	return req.Answer != nil && p.Checked
}

// Resume makes the answer turn of question p (found by [Machine.CheckResume]) active; the
// question is no longer open. Its run's reports that arrived early are applied next
// ([Machine.ApplyEarly]).
func (m *Machine) Resume(req protocol.ResumeTurnRequest, p protocol.PendingTurn, now time.Time) sessionapi.TurnStarted {
	delete(m.State.Pending, req.Token)
	claimed := p
	m.Resumed = &claimed
	turn := 0
	if head := m.Head(); head != nil {
		turn = head.TurnIndex + 1
	}
	a := &sessionapi.ActiveTurn{RunID: p.RunID, TurnIndex: turn, ClientTurnID: req.ClientTurnID, Kind: KindAnswer,
		Since: now, Token: req.Token, Digest: req.Digest, Delivered: Delivers(req, p)}
	if a.Delivered && req.StreamRun == p.RunID && m.askedBy(p) {
		a.Begin = req.From
	}
	m.State.Active = a
	return sessionapi.TurnStarted{SessionID: m.In.SessionID, RunID: p.RunID, TurnIndex: turn, Begin: a.Begin, Delivered: a.Delivered}
}

// askedBy reports whether question p is asked by the run that took its checkpoint: a run
// restored by a rollback or fork asks it again at its start, possibly after the caller read
// where the response would begin, so no offset is recorded for it (the caller then finds the
// response in the stream).
func (m *Machine) askedBy(p protocol.PendingTurn) bool {
	for _, cp := range m.State.Checkpoints {
		if cp.ID == p.CheckpointID {
			return cp.RunID == p.RunID
		}
	}
	return false
}

// QuestionRun returns the run that asks the open question of token ("" when none does).
func (m *Machine) QuestionRun(token string) string {
	return m.State.Pending[token].RunID
}

// Abort releases the active turn of run runID that did not start (its answer was refused):
// the question it claimed is open again. It reports whether there was such a turn.
func (m *Machine) Abort(runID string) bool {
	a := m.State.Active
	if a == nil || a.RunID != runID {
		return false
	}
	m.State.Active, m.State.Prompt = nil, nil
	if m.Resumed != nil && m.Resumed.RunID == runID {
		m.State.Pending[m.Resumed.Request.Token] = *m.Resumed
	}
	m.Resumed = nil
	return true
}

// Stoppable is the turn a stop request ends: the active one (with runID != "", only when it
// is that run's; nil: none). The shell cancels its run, then calls [Machine.Stopped].
func (m *Machine) Stoppable(runID string) *sessionapi.ActiveTurn {
	a := m.State.Active
	if a == nil || (runID != "" && a.RunID != runID) {
		return nil
	}
	return a
}

// Stopped frees the session of the stopped turn a, remembered by its clientTurnId.
func (m *Machine) Stopped(a *sessionapi.ActiveTurn) {
	m.remember(a)
	m.requeueSteers(a.RunID, nil)
	m.State.Active, m.Resumed, m.State.Prompt = nil, nil, nil
}

// Apply commits what a run reports, and reports whether the session changed. Only the active
// turn's run moves the session: a late report of a run the session has moved past (stopped,
// superseded, rolled back) changes nothing, and a report of a run whose turn is not active yet
// is kept until it is ([Machine.ApplyEarly]). The report of the run of an open question that
// was answered on the run itself (not through a turn of the session) is that answer's turn
// when answeredOnRun (the version gate; asked only then) allows it.
func (m *Machine) Apply(rep protocol.CheckpointReport, now time.Time, answeredOnRun func() bool) bool {
	m.Confirmed(rep.RunID)
	if cp := rep.Checkpoint; cp != nil && m.Checkpoint(cp.ID).ID != "" {
		// The report of a checkpoint the session has: the publish activity that signalled it
		// was retried (protocol.PublishReport). A run's own signals arrive once.
		return false
	}
	changed := false
	if rep.Closed {
		for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
			if m.State.Pending[tok].RunID == rep.RunID {
				delete(m.State.Pending, tok)
				changed = true
			}
		}
	}
	m.applySpend(rep)
	if rep.Spend != nil && rep.Checkpoint == nil && !rep.Closed && !rep.TurnEnded {
		return true // what a run spent after its response ended: nothing else to apply
	}
	a := m.State.Active
	if a == nil && rep.Checkpoint != nil && m.owns(rep.RunID) && answeredOnRun() {
		for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
			if m.State.Pending[tok].RunID == rep.RunID {
				delete(m.State.Pending, tok)
			}
		}
		a = &sessionapi.ActiveTurn{RunID: rep.RunID, TurnIndex: rep.Checkpoint.TurnIndex, Kind: KindAnswer, Since: now}
		m.State.Active = a
	}
	if a == nil || a.RunID != rep.RunID {
		m.State.Early = append(m.State.Early, rep)
		if n := len(m.State.Early); n > maxEarlyReports {
			m.State.Early = append([]protocol.CheckpointReport(nil), m.State.Early[n-maxEarlyReports:]...)
		}
		return changed
	}
	if cp := rep.Checkpoint; cp != nil {
		a.Committed = true
		m.append(*cp)
		for i, p := range cp.ActivePendingRequests {
			m.State.Pending[p.Token] = cp.Pending(i, rep.RunID)
		}
	}
	if rep.TurnEnded {
		m.remember(m.State.Active)
		m.requeueSteers(a.RunID, rep.Steered)
		m.State.Active, m.Resumed, m.State.Prompt = nil, nil, nil
	}
	return true
}

// SetBudget sets the session's budget across its turns (the budget fields of l; a session's
// spend is kept).
func (m *Machine) SetBudget(l contracts.Limits) {
	b := m.State.Budget
	if b == nil {
		b = &protocol.SessionBudgetState{}
		m.State.Budget = b
	}
	b.Limits = protocol.BudgetOf(l)
}

// RunBudget is the session's budget as it gives it to a new run (nil: none): its limits, what
// its runs spent (the ended ones' and the last report of the others) and the allowances given.
func (m *Machine) RunBudget() *protocol.SessionBudget {
	b := m.State.Budget
	if b == nil || !protocol.HasBudget(b.Limits) {
		return nil
	}
	sb := &protocol.SessionBudget{Limits: b.Limits, Spent: b.Spent, More: b.More, Warned: b.Warned}
	for _, run := range workflow.DeterministicKeys(b.Live) {
		r := b.Live[run]
		sb.Spent.Tokens += r.Tokens
		sb.Spent.Cost += r.Cost
		sb.More.Tokens += r.MoreTokens
		sb.More.Cost += r.MoreCost
	}
	return sb
}

// applySpend takes in what a run reported spent under the session's budget: a run's last
// report counts (so a report applied again, or late, counts once); past MaxLiveRuns runs, the
// oldest run's last report is added to the session's spend for good.
func (m *Machine) applySpend(rep protocol.CheckpointReport) {
	b := m.State.Budget
	if rep.Spend == nil || b == nil {
		return
	}
	if b.Live == nil {
		b.Live = map[string]protocol.RunSpendReport{}
	}
	if _, ok := b.Live[rep.RunID]; !ok {
		b.Order = append(b.Order, rep.RunID)
	}
	b.Live[rep.RunID] = *rep.Spend
	if rep.Spend.Warned {
		b.Warned = true
	}
	for len(b.Order) > protocol.MaxLiveRuns {
		old := b.Order[0]
		b.Order = b.Order[1:]
		r := b.Live[old]
		delete(b.Live, old)
		b.Spent.Tokens += r.Tokens
		b.Spent.Cost += r.Cost
		b.More.Tokens += r.MoreTokens
		b.More.Cost += r.MoreCost
	}
}

// ApplyEarly applies the reports of run that arrived before its turn was active.
func (m *Machine) ApplyEarly(run string, now time.Time, answeredOnRun func() bool) bool {
	var mine []protocol.CheckpointReport
	kept := m.State.Early[:0]
	for _, rep := range m.State.Early {
		if rep.RunID == run {
			mine = append(mine, rep)
		} else {
			kept = append(kept, rep)
		}
	}
	m.State.Early = kept
	changed := false
	for _, rep := range mine {
		changed = m.Apply(rep, now, answeredOnRun) || changed
	}
	return changed
}

// owns reports whether run asks one of the session's open questions.
func (m *Machine) owns(run string) bool {
	for _, tok := range workflow.DeterministicKeys(m.State.Pending) {
		if m.State.Pending[tok].RunID == run {
			return true
		}
	}
	return false
}

// append commits cp as the head and prunes the oldest checkpoints beyond In.MaxCheckpoints.
func (m *Machine) append(cp protocol.Checkpoint) {
	m.State.Checkpoints = append(m.State.Checkpoints, cp)
	m.State.Head = cp.ID
	m.State.NextTurn = cp.TurnIndex + 1
	if n := len(m.State.Checkpoints); n > m.In.MaxCheckpoints {
		m.State.Checkpoints = append([]protocol.Checkpoint(nil), m.State.Checkpoints[n-m.In.MaxCheckpoints:]...)
	}
}

// CheckTarget finds the checkpoint a rollback or fork names; the session must be idle.
func (m *Machine) CheckTarget(id string) (int, error) {
	if m.busyNow() {
		return -1, m.busy()
	}
	for i, cp := range m.State.Checkpoints {
		if cp.ID == id {
			return i, nil
		}
	}
	return -1, &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Checkpoint %q not found.", id), Details: map[string]any{"checkpointId": id}}
}
