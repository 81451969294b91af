package sessions

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"log/slog"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/digest"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/internal/temporalhealth"
	"github.com/kortyx-go/kortyx/stream"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// Options configure [New].
type Options struct {
	// Client reaches Temporal (required).
	Client client.Client
	// Broker is where the runs' streams are read: the workers' broker. Without one, answers
	// record no offset and [Service.Follow] fails.
	Broker stream.Broker
	// TaskQueue of new sessions and their runs (default [contracts.DefaultTaskQueue]).
	TaskQueue string
	// MaxCheckpoints kept per new session (default 50).
	MaxCheckpoints int
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Agents lists the agents the program serves, for the wires that show them (A2A cards,
	// MCP tools): a *workflows.Registry is one. nil: none.
	Agents Catalog
	// DataConverter decodes the payloads of run histories ([Service.TurnRun]): the one Client
	// was dialed with (nil: Temporal's default).
	DataConverter converter.DataConverter
	// SessionBudget is the budget of every session across its turns (its MaxTokens, MaxCost and
	// OnBudgetExhausted; docs/budgets.md), given with every prompt turn that does not name one
	// (TurnRequest.SessionBudget). Zero: none.
	SessionBudget contracts.Limits
}

// Catalog lists the agents a program serves ([Options].Agents).
type Catalog interface {
	Agents() []contracts.Agent
}

// Service is the session service: every call of a chat's turns and checkpoints, over the
// session workflow ([protocol.SessionWorkflowName]) and the broker. Safe for concurrent use.
type Service struct {
	o Options
}

// New checks the options and returns the service.
func New(o Options) (*Service, error) {
	if o.Client == nil {
		return nil, errors.New("kortyx sessions: Options.Client is required")
	}
	if o.TaskQueue == "" {
		o.TaskQueue = contracts.DefaultTaskQueue
	}
	if o.DataConverter == nil {
		o.DataConverter = converter.GetDefaultDataConverter()
	}
	return &Service{o: o}, nil
}

// Broker is the broker the service reads the runs' streams from (nil: none, see
// [Options].Broker): a wire that streams responses checks at construction that there is one.
func (s *Service) Broker() stream.Broker { return s.o.Broker }

func (s *Service) logger() *slog.Logger {
	if s.o.Logger == nil {
		return slog.Default()
	}
	return s.o.Logger
}

// checkSession checks a session id against the one id rule ([contracts.CheckID]): an id
// Temporal cannot carry fails here, with INVALID_SESSION, rather than in a gRPC header.
func checkSession(sessionID string) error {
	if err := contracts.CheckID("sessionId", sessionID); err != nil {
		return &contracts.Error{Code: contracts.CodeInvalidSession, Message: err.Message, Issues: err.Issues}
	}
	return nil
}

// brokerPingTimeout bounds the broker check before a turn.
const brokerPingTimeout = 2 * time.Second

// CheckBroker checks the broker's store when the broker can be pinged (the Redis broker; the
// in-memory one has no store): a turn whose chunks cannot be delivered is not started, on any
// wire. The error is STREAM_UNAVAILABLE (retryable, HTTP 503), its message naming no address.
// [Service.Start] and [Service.Answer] call it; a wire calls it itself only to refuse a turn
// before work of its own (the chat route, before its callbacks).
func (s *Service) CheckBroker(ctx context.Context) error {
	p, ok := s.o.Broker.(interface{ Ping(context.Context) error })
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, brokerPingTimeout)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		return &contracts.Error{Code: contracts.CodeStreamUnavailable, Retryable: true, Err: err,
			Message: "The stream store (Redis) does not answer, so no turn was started; try again shortly."}
	}
	return nil
}

// inputFix is what to do about an input over the payload limit.
const inputFix = "send less: pass large documents by reference (a URL or an id the tools can read) instead of inline"

// Start starts a prompt turn of a session, creating the session workflow on its first turn
// (update-with-start). The turn runs as a new run from the session's head state; a turn already
// active fails with SESSION_BUSY — unless it has the same ClientTurnID, in which case its run is
// returned (Reattached) rather than started twice. A broker that can be pinged (Redis) and does
// not answer fails it with STREAM_UNAVAILABLE before anything is sent (also in [Service.Answer]). A ClientTurnID the session remembers, sent
// with another input, fails with CLIENT_TURN_CONFLICT (Start sets req.Digest). The response
// begins the run's stream.
func (s *Service) Start(ctx context.Context, sessionID string, req TurnRequest) (TurnStarted, error) {
	var out TurnStarted
	if err := checkSession(sessionID); err != nil {
		return out, err
	}
	if err := protocol.CheckPayload("the turn request", req, inputFix); err != nil {
		return out, err
	}
	if err := s.CheckBroker(ctx); err != nil {
		return out, err
	}
	if err := CheckBusy(req.Busy); err != nil {
		return out, err
	}
	if req.Busy == BusySteer && req.ClientTurnID == "" {
		// FollowSteer finds the message by it when it becomes the next turn.
		req.ClientTurnID = "steer-" + uuid.NewString()
	}
	req.Digest = ""
	if req.ClientTurnID != "" {
		req.Digest = digest.Prompt(req)
	}
	if req.SessionBudget == nil && protocol.HasBudget(s.o.SessionBudget) {
		b := protocol.BudgetOf(s.o.SessionBudget)
		req.SessionBudget = &b
	}
	c := s.o.Client
	in := protocol.SessionInput{SessionID: sessionID, MaxCheckpoints: s.o.MaxCheckpoints, Seed: newSeed()}
	start := func() client.WithStartWorkflowOperation { // an operation is sent once
		return c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       protocol.SessionWorkflowID(sessionID),
			TaskQueue:                s.o.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    temporal.NewSearchAttributes(protocol.SessionKey.ValueSet(sessionID)),
		}, protocol.SessionWorkflowName, in)
	}
	caller := ctx
	return out, s.guard(ctx, func(ctx context.Context) error {
		res, err := s.startTurn(ctx, caller, start, sessionID, protocol.SessionStartTurnByCallerUpdate, req)
		if isUnknownUpdate(err) {
			// A worker of a release before the caller started runs: its session starts it.
			res, err = s.startTurn(ctx, caller, start, sessionID, protocol.SessionStartTurnUpdate, req)
		}
		if err != nil {
			return err
		}
		out = res.TurnStarted
		if res.Launch != nil {
			return s.launch(ctx, *res.Launch)
		}
		return nil
	})
}

// startTurn sends the start-turn update name (update-with-start) and waits for its result. A
// caller that leaves (caller, the caller's context, ends) once the session may have accepted
// the turn hands the rest to [Service.rescue], so that a turn the session accepted gets its
// run. (When Temporal stops answering, the call is abandoned and the session starts the run at
// its next request.)
func (s *Service) startTurn(ctx, caller context.Context, start func() client.WithStartWorkflowOperation, sessionID, name string, req TurnRequest) (protocol.StartedTurn, error) {
	var res protocol.StartedTurn
	id := uuid.NewString()
	h, err := s.o.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start(),
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateID: id, WorkflowID: protocol.SessionWorkflowID(sessionID), UpdateName: name,
			Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil && caller.Err() != nil && name == protocol.SessionStartTurnByCallerUpdate {
		go s.rescue(context.WithoutCancel(ctx), sessionID, id)
	}
	return res, err
}

// rescue waits (bounded by launchTimeout) for the result of start-turn update id of a caller
// that left, and starts the run the session left to it, if any.
func (s *Service) rescue(ctx context.Context, sessionID, id string) {
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	var res protocol.StartedTurn
	h := s.o.Client.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: protocol.SessionWorkflowID(sessionID), UpdateID: id})
	if err := h.Get(ctx, &res); err != nil || res.Launch == nil {
		return
	}
	if err := s.launch(ctx, *res.Launch); err != nil {
		s.logger().Warn("kortyx sessions: the run of a turn whose caller left could not be started", "session", sessionID, "run", res.Launch.RunID, "error", err)
	}
}

// isUnknownUpdate reports whether err is a session's rejection of an update name it has no
// handler for (a worker of an earlier release). The SDK rejects such an update with this text
// and no type of its own.
func isUnknownUpdate(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown update "+protocol.SessionStartTurnByCallerUpdate)
}

// launchTimeout bounds the start of a turn's run and, when it fails, the stop of its turn.
const launchTimeout = 10 * time.Second

// launch starts the run of a turn that its session left to this caller (docs/architecture.md#a-turns-run-started-by-its-caller):
// the session accepted the turn, and its run starts here with the options the session would
// give it as a child. The start does not depend on the caller staying (a client that leaves
// right after its prompt gets the turn the session accepted). An id that exists already is the
// run (a retried start, or the session started it because a request came before this start).
// When the start fails, the turn is stopped, so that an error means no turn ran: the session
// then starts the run itself and cancels it, so that a start still on its way cannot run it.
// Should the stop fail too, the session starts the run at its next request.
func (s *Service) launch(ctx context.Context, l protocol.RunLaunch) error {
	ctx = context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	_, err := s.o.Client.ExecuteWorkflow(sctx, client.StartWorkflowOptions{
		ID: l.RunID, TaskQueue: l.TaskQueue, WorkflowTaskTimeout: l.TaskTimeout,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: protocol.RunSearchAttributes(&l),
	}, contracts.RunWorkflowName, l.Input)
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	if err == nil || errors.As(err, &exists) {
		return nil
	}
	s.logger().Warn("kortyx sessions: the turn's run could not be started; stopping the turn", "session", l.SessionID, "run", l.RunID, "error", err)
	tctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	msg := "The turn's run could not be started, so the turn was stopped; send the message again."
	if _, serr := s.Stop(tctx, l.SessionID, l.RunID); serr != nil {
		s.logger().Warn("kortyx sessions: the turn whose run did not start could not be stopped; the session starts the run at its next request",
			"session", l.SessionID, "run", l.RunID, "error", serr)
		msg = "The turn's run could not be started yet; the session starts it at its next request. Send the message again with the same clientTurnId to follow it."
	}
	var coded *contracts.Error
	if err := temporalhealth.Classify(ctx, err); errors.As(err, &coded) {
		return err
	}
	return &contracts.Error{Code: contracts.CodeExecutionFailed, Retryable: true, Err: err, Message: msg}
}

// AnswerOptions are the options of [Service.Answer]; the zero value works.
type AnswerOptions struct {
	// ClientTurnID and Reconnect are as in [TurnRequest]: the same ClientTurnID
	// reattaches to the answer's turn; another answer under a ClientTurnID the session
	// remembers fails with CLIENT_TURN_CONFLICT.
	ClientTurnID string
	Reconnect    bool
	// Continue keeps the turn when the caller leaves (ctx ends) while a session that predates
	// carried answers has the answer delivered by the caller; by default the turn is stopped.
	Continue bool
}

// Answer answers an open question of a session with one update of the session: the session
// checks the answer against the question (a refused answer writes nothing), claims the answer
// turn and delivers the answer to the question's run. The result's Begin is where the
// response begins in the run's stream (read from the broker while the run waited). A turn
// reattached by its ClientTurnID returns the turn's run and Begin, from any process.
func (s *Service) Answer(ctx context.Context, sessionID string, answer contracts.Response, opts AnswerOptions) (TurnStarted, error) {
	if err := checkSession(sessionID); err != nil {
		return TurnStarted{}, err
	}
	if err := protocol.CheckPayload("the answer", answer, "give a shorter answer"); err != nil {
		return TurnStarted{}, err
	}
	if err := s.CheckBroker(ctx); err != nil {
		return TurnStarted{}, err
	}
	req := protocol.ResumeTurnRequest{Token: answer.Token, RequestID: answer.RequestID, ClientTurnID: opts.ClientTurnID, Reconnect: opts.Reconnect,
		Answer: &answer}
	if opts.ClientTurnID != "" {
		// Another answer under the same ClientTurnID is refused (CLIENT_TURN_CONFLICT), not
		// taken for a retry of this one.
		req.Digest = digest.Answer(answer)
	}
	// The update names the question's run; where the answer's response begins in its stream is
	// found there afterwards (answeredAt): the done that ends the response asking the
	// question. (No query first: a query is a billed Temporal action on every answer.)
	var ts TurnStarted
	if err := s.update(ctx, sessionID, protocol.SessionResumeTurnUpdate, req, &ts); err != nil {
		return ts, err
	}
	switch {
	case ts.Reattached:
		if !ts.Ended && !ts.Delivered {
			// A turn claimed by a session from before carried answers, whose first request may
			// have left before its answer reached the run: deliver it again (the update id runs
			// once).
			_, _ = kortyx.RespondAndWait(ctx, s.o.Client, ts.RunID, answerUpdateID(opts.ClientTurnID), answer)
		}
		if ts.Begin == 0 {
			ts.Begin, _ = s.answeredAt(ctx, ts.RunID, answer.Token, 0)
		}
		if ts.Begin == 0 {
			return ts, &contracts.Error{Code: contracts.CodeNotFound, Message: "The response to this answer is no longer in the stream."}
		}
		return ts, nil
	case !ts.Delivered:
		return s.deliver(ctx, sessionID, ts, answer, opts)
	}
	if ts.Begin == 0 {
		// The response that asked the question ends with a done (a run restored by a
		// rollback or fork asks it again at its start, perhaps after the update: then its
		// reader leaves that response out, FollowOptions.Answered).
		ts.Begin, _ = s.answeredAt(ctx, ts.RunID, answer.Token, 0)
	}
	return ts, nil
}

// deliver delivers the answer of a turn that a session from before carried answers claimed:
// by update on the run, releasing the turn when the run refuses it.
func (s *Service) deliver(ctx context.Context, sessionID string, ts TurnStarted, answer contracts.Response, opts AnswerOptions) (TurnStarted, error) {
	bg := context.WithoutCancel(ctx)
	if s.o.Broker != nil {
		from, err := s.o.Broker.Last(ctx, ts.RunID)
		if err != nil {
			_ = s.abort(bg, sessionID, ts.RunID)
			return ts, err
		}
		ts.Begin = from
	}
	if _, err := kortyx.RespondAndWait(ctx, s.o.Client, ts.RunID, answerUpdateID(opts.ClientTurnID), answer); err != nil {
		switch {
		case contracts.FailureOf(err).Category == "request":
			// The run refused the answer (or is gone): the question is open again.
			_ = s.abort(bg, sessionID, ts.RunID)
		case ctx.Err() != nil && !opts.Continue:
			_, _ = s.Stop(bg, sessionID, ts.RunID)
		}
		return ts, err
	}
	if at, err := s.answeredAt(ctx, ts.RunID, answer.Token, ts.Begin); err == nil {
		ts.Begin = at
	}
	return ts, nil
}

func answerUpdateID(clientTurnID string) string {
	if clientTurnID == "" {
		return ""
	}
	return "turn-" + clientTurnID
}

// abort releases the active turn of runID whose answer was refused: its question is open again.
func (s *Service) abort(ctx context.Context, sessionID, runID string) error {
	var ok bool
	return s.update(ctx, sessionID, protocol.SessionAbortTurnUpdate, runID, &ok)
}

// answeredAt returns the offset after which the response to the question of token begins in
// the run's stream: the done that follows the question's (last) interrupt chunk after offset
// from; from when the question was not asked after from. With from 0 it reads the stream back
// from its end in growing windows (the question is usually near the end: its run waits, or has
// just been answered), so an answer does not read a long stream whole.
func (s *Service) answeredAt(ctx context.Context, runID, token string, from int64) (int64, error) {
	if s.o.Broker == nil {
		return from, nil
	}
	after := from
	if from == 0 {
		first, last, err := s.o.Broker.Bounds(ctx, runID)
		if err != nil {
			return from, err
		}
		for window := int64(64); ; window *= 8 {
			start := max(last-window, first-1, 0)
			at, asked, err := s.scanAnswered(ctx, runID, token, start)
			if err != nil || asked || start <= max(first-1, 0) {
				if !asked {
					at = from
				}
				return at, err
			}
		}
	}
	at, _, err := s.scanAnswered(ctx, runID, token, after)
	return at, err
}

// scanAnswered reads the run's stream after offset after and returns the offset of the done
// that follows the last interrupt chunk of token (after when there is none), and whether that
// interrupt was found.
func (s *Service) scanAnswered(ctx context.Context, runID, token string, after int64) (int64, bool, error) {
	entries, err := s.o.Broker.Read(ctx, runID, after, 0)
	if err != nil {
		return after, false, err
	}
	found, asked := false, false
	at := after
	for _, e := range entries {
		switch {
		case e.Chunk.Type == contracts.ChunkInterrupt && e.Chunk.ResumeToken == token:
			if !asked {
				// Until its done is read: before the question (its reader leaves the
				// question's response out, FollowOptions.Answered).
				at = e.Offset - 1
			}
			asked, found = true, true
		case asked && e.Chunk.Type == contracts.ChunkDone:
			at, asked = e.Offset, false
		}
	}
	return at, found, nil
}

// newSeed returns the random seed a new session derives its ids from (SessionInput.Seed).
func newSeed() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// guard runs fn, which calls Temporal, failing it with TEMPORAL_UNAVAILABLE (503, retryable)
// when Temporal does not answer: every call of the service that reaches Temporal goes through
// it, so that no wire waits out the SDK's minute of retries or tells an unreachable service
// from another failure on its own (temporalhealth.Guard).
func (s *Service) guard(ctx context.Context, fn func(ctx context.Context) error) error {
	return temporalhealth.Guard(ctx, s.o.Client, fn)
}

// update sends an update to an existing session.
func (s *Service) update(ctx context.Context, sessionID, name string, arg, out any) error {
	if err := checkSession(sessionID); err != nil {
		return err
	}
	return s.guard(ctx, func(ctx context.Context) error {
		h, err := s.o.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: protocol.SessionWorkflowID(sessionID),
			UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return sessionNotFound(sessionID, err)
		}
		return h.Get(ctx, out)
	})
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

func sessionNotFound(sessionID string, err error) error {
	if isNotFound(err) {
		return &contracts.Error{Code: contracts.CodeInvalidSession, Message: fmt.Sprintf("Session %q does not exist (or has ended).", sessionID), Err: err}
	}
	return err
}

// Stop cancels the session's active run and returns its id ("" when no turn was active).
// With runID "" it stops whatever turn is active (a Stop button); else only the turn of runID
// (a reader of that turn left): it returns runID, or "" when another turn, or none, is active.
func (s *Service) Stop(ctx context.Context, sessionID, runID string) (string, error) {
	var stopped string
	return stopped, s.update(ctx, sessionID, protocol.SessionStopUpdate, strings.TrimSpace(runID), &stopped)
}

// Rollback makes a checkpoint the session's head (spec F5.4).
func (s *Service) Rollback(ctx context.Context, sessionID, checkpointID string) (RollbackResult, error) {
	var out RollbackResult
	return out, s.update(ctx, sessionID, protocol.SessionRollbackUpdate, checkpointID, &out)
}

// Fork copies a checkpoint into a new session (spec F5.5).
func (s *Service) Fork(ctx context.Context, sessionID string, req ForkRequest) (ForkResult, error) {
	var out ForkResult
	return out, s.update(ctx, sessionID, protocol.SessionForkUpdate, req, &out)
}

// View returns a session's checkpoints (summaries, oldest first), head, active turn and open
// questions (it needs a running worker).
func (s *Service) View(ctx context.Context, sessionID string) (SessionView, error) {
	var v SessionView
	if err := checkSession(sessionID); err != nil {
		return v, err
	}
	return v, s.guard(ctx, func(ctx context.Context) error {
		res, err := s.o.Client.QueryWorkflow(ctx, protocol.SessionWorkflowID(sessionID), "", protocol.SessionQueryName)
		if err != nil {
			return sessionNotFound(sessionID, err)
		}
		return res.Get(&v)
	})
}

// Owner returns the owner of a session ([TurnRequest].Owner) from its workflow's
// memo, without a worker: "" when the session does not exist, has not accepted a turn yet, or
// has no owner. The owner never changes once set, so checking it before acting on a session is
// free of races; a prompt to an unclaimed session is checked by the session itself.
func (s *Service) Owner(ctx context.Context, sessionID string) (string, error) {
	if err := checkSession(sessionID); err != nil {
		return "", err
	}
	var d *client.WorkflowExecutionDescription
	err := s.guard(ctx, func(ctx context.Context) error {
		var err error
		d, err = s.o.Client.DescribeWorkflow(ctx, protocol.SessionWorkflowID(sessionID), "")
		return err
	})
	if err != nil {
		if isNotFound(err) {
			return "", nil
		}
		return "", err
	}
	var owner string
	if p := d.RawResponse.GetWorkflowExecutionInfo().GetMemo().GetFields()[protocol.SessionOwnerMemo]; p != nil {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
			// Encoded by a payload codec (package codec) that this function cannot undo: ask the
			// session, whose answer the client decodes with its own data converter.
			v, err := s.View(ctx, sessionID)
			if err != nil {
				return "", err
			}
			return v.Owner, nil
		}
		if err := converter.GetDefaultDataConverter().FromPayload(p, &owner); err != nil {
			return "", fmt.Errorf("kortyx: the owner memo of session %q cannot be read: %w", sessionID, err)
		}
	}
	return owner, nil
}

// CheckpointSession returns the session a checkpoint id names: checkpoint ids carry their
// session ("cp-<uuid>@<sessionId>"), so a request that names only a checkpoint finds its
// session in any process, without a lookup; false for the "cp-<uuid>" ids of older
// checkpoints.
func CheckpointSession(checkpointID string) (sessionID string, ok bool) {
	return protocol.CheckpointSession(checkpointID)
}

// Checkpoint returns one checkpoint of a session without its state, or NOT_FOUND.
func (s *Service) Checkpoint(ctx context.Context, sessionID, checkpointID string) (Checkpoint, error) {
	var cp Checkpoint
	if err := checkSession(sessionID); err != nil {
		return cp, err
	}
	err := s.guard(ctx, func(ctx context.Context) error {
		res, err := s.o.Client.QueryWorkflow(ctx, protocol.SessionWorkflowID(sessionID), "", protocol.SessionCheckpointQueryName, checkpointID)
		if err != nil {
			return sessionNotFound(sessionID, err)
		}
		return res.Get(&cp)
	})
	if err != nil {
		return cp, err
	}
	if cp.ID == "" {
		return cp, &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Checkpoint %q not found in session %q.", checkpointID, sessionID)}
	}
	return cp, nil
}
