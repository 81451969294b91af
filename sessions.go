package kortyx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// SessionOptions are the Temporal options of a session workflow; the zero value works.
type SessionOptions struct {
	// TaskQueue of the session workflow and its runs (default [contracts.DefaultTaskQueue]).
	TaskQueue string
	// MaxCheckpoints kept per session (default 50); set when the session is created.
	MaxCheckpoints int
}

func (o SessionOptions) queue() string {
	if o.TaskQueue == "" {
		return contracts.DefaultTaskQueue
	}
	return o.TaskQueue
}

// checkSession checks a session id against the one id rule ([contracts.CheckID]): an id
// Temporal cannot carry fails here, with INVALID_SESSION, rather than in a gRPC header.
func checkSession(sessionID string) error {
	if err := contracts.CheckID("sessionId", sessionID); err != nil {
		return &contracts.Error{Code: contracts.CodeInvalidSession, Message: err.Message, Issues: err.Issues}
	}
	return nil
}

// StartTurn starts a prompt turn of a session, creating the session workflow on its first turn
// (update-with-start). The turn runs as a new run from the session's head state; a turn already
// active fails with SESSION_BUSY — unless it has the same ClientTurnID, in which case its run is
// returned (Reattached) rather than started twice. A ClientTurnID the session remembers, sent
// with another input, fails with CLIENT_TURN_CONFLICT (StartTurn sets req.Digest).
func StartTurn(ctx context.Context, c client.Client, sessionID string, req contracts.TurnRequest, opts SessionOptions) (contracts.TurnStarted, error) {
	var out contracts.TurnStarted
	if err := checkSession(sessionID); err != nil {
		return out, err
	}
	if err := contracts.CheckPayload("the turn request", req, inputFix); err != nil {
		return out, err
	}
	req.Digest = ""
	if req.ClientTurnID != "" {
		req.Digest = promptDigest(req)
	}
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       contracts.SessionWorkflowID(sessionID),
		TaskQueue:                opts.queue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(contracts.SessionKey.ValueSet(sessionID)),
	}, contracts.SessionWorkflowName, contracts.SessionInput{SessionID: sessionID, MaxCheckpoints: opts.MaxCheckpoints})
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: contracts.SessionWorkflowID(sessionID), UpdateName: contracts.SessionStartTurnUpdate,
			Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return out, err
	}
	return out, h.Get(ctx, &out)
}

// promptDigest identifies a prompt turn by its input (canonical JSON: key order and spacing do
// not count). The workflow, context and prior messages do not count: a retry may name the
// workflow the first attempt defaulted to.
func promptDigest(req contracts.TurnRequest) string {
	var input any
	if len(req.Input) > 0 && json.Unmarshal(req.Input, &input) != nil {
		input = string(req.Input)
	}
	b, _ := json.Marshal([]any{"prompt", input})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// sessionUpdate sends an update to an existing session.
func sessionUpdate(ctx context.Context, c client.Client, sessionID, name string, arg, out any) error {
	if err := checkSession(sessionID); err != nil {
		return err
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: contracts.SessionWorkflowID(sessionID),
		UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return sessionNotFound(sessionID, err)
	}
	return h.Get(ctx, out)
}

func sessionNotFound(sessionID string, err error) error {
	if contracts.CodeOf(notFound("", err)) == contracts.CodeNotFound {
		return &contracts.Error{Code: contracts.CodeInvalidSession, Message: fmt.Sprintf("Session %q does not exist (or has ended).", sessionID), Err: err}
	}
	return err
}

// ResumeTurn claims an answer turn: the token must belong to an open question of this session
// (INVALID_RESUME otherwise; a token of another session is rejected) and no other turn may be
// active. Send the answer to the returned run with [RespondAndWait]; if the run rejects it,
// release the turn with [AbortTurn].
func ResumeTurn(ctx context.Context, c client.Client, sessionID string, req contracts.ResumeTurnRequest) (contracts.TurnStarted, error) {
	var out contracts.TurnStarted
	return out, sessionUpdate(ctx, c, sessionID, contracts.SessionResumeTurnUpdate, req, &out)
}

// AbortTurn releases the active turn of runID whose answer was rejected: its question is open
// again.
func AbortTurn(ctx context.Context, c client.Client, sessionID, runID string) error {
	var ok bool
	return sessionUpdate(ctx, c, sessionID, contracts.SessionAbortTurnUpdate, runID, &ok)
}

// StopSession cancels the session's active run (a Stop button) and returns its id ("" when
// no turn was active).
func StopSession(ctx context.Context, c client.Client, sessionID string) (string, error) {
	var runID string
	return runID, sessionUpdate(ctx, c, sessionID, contracts.SessionStopUpdate, "", &runID)
}

// StopTurn cancels the session's active run only if it is runID (a reader of that turn left):
// it returns runID, or "" when another turn, or none, is active.
func StopTurn(ctx context.Context, c client.Client, sessionID, runID string) (string, error) {
	if strings.TrimSpace(runID) == "" {
		return "", contracts.Errorf(contracts.CodeInvalidRequest, "StopTurn needs the run id of the turn to stop")
	}
	var stopped string
	return stopped, sessionUpdate(ctx, c, sessionID, contracts.SessionStopUpdate, runID, &stopped)
}

// Rollback makes a checkpoint the session's head (spec F5.4).
func Rollback(ctx context.Context, c client.Client, sessionID, checkpointID string) (contracts.RollbackResult, error) {
	var out contracts.RollbackResult
	return out, sessionUpdate(ctx, c, sessionID, contracts.SessionRollbackUpdate, checkpointID, &out)
}

// Fork copies a checkpoint into a new session (spec F5.5).
func Fork(ctx context.Context, c client.Client, sessionID string, req contracts.ForkRequest) (contracts.ForkResult, error) {
	var out contracts.ForkResult
	return out, sessionUpdate(ctx, c, sessionID, contracts.SessionForkUpdate, req, &out)
}

// Session returns a session's checkpoints (summaries, oldest first), head, active turn and open
// questions (it needs a running worker).
func Session(ctx context.Context, c client.Client, sessionID string) (contracts.SessionView, error) {
	var v contracts.SessionView
	if err := checkSession(sessionID); err != nil {
		return v, err
	}
	res, err := c.QueryWorkflow(ctx, contracts.SessionWorkflowID(sessionID), "", contracts.SessionQueryName)
	if err != nil {
		return v, sessionNotFound(sessionID, err)
	}
	return v, res.Get(&v)
}

// SessionOwner returns the owner of a session ([contracts.TurnRequest].Owner) from its
// workflow's memo, without a worker: "" when the session does not exist, has not accepted a
// turn yet, or has no owner. The owner never changes once set, so checking it before acting on
// a session is free of races; a prompt to an unclaimed session is checked by the session itself.
func SessionOwner(ctx context.Context, c client.Client, sessionID string) (string, error) {
	if err := checkSession(sessionID); err != nil {
		return "", err
	}
	d, err := c.DescribeWorkflow(ctx, contracts.SessionWorkflowID(sessionID), "")
	if err != nil {
		if contracts.CodeOf(notFound("", err)) == contracts.CodeNotFound {
			return "", nil
		}
		return "", err
	}
	var owner string
	if p := d.RawResponse.GetWorkflowExecutionInfo().GetMemo().GetFields()[contracts.SessionOwnerMemo]; p != nil {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
			// Encoded by a payload codec (package codec) that this function cannot undo: ask the
			// session, whose answer the client decodes with its own data converter.
			v, err := Session(ctx, c, sessionID)
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

// GetCheckpoint returns one checkpoint of a session without its state, or NOT_FOUND.
func GetCheckpoint(ctx context.Context, c client.Client, sessionID, checkpointID string) (contracts.Checkpoint, error) {
	var cp contracts.Checkpoint
	if err := checkSession(sessionID); err != nil {
		return cp, err
	}
	res, err := c.QueryWorkflow(ctx, contracts.SessionWorkflowID(sessionID), "", contracts.SessionCheckpointQueryName, checkpointID)
	if err != nil {
		return cp, sessionNotFound(sessionID, err)
	}
	if err := res.Get(&cp); err != nil {
		return cp, err
	}
	if cp.ID == "" {
		return cp, &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Checkpoint %q not found in session %q.", checkpointID, sessionID)}
	}
	return cp, nil
}

// AnswerOptions are the options of [AnswerTurn]; the zero value works.
type AnswerOptions struct {
	// ClientTurnID and Reconnect are those of [contracts.ResumeTurnRequest]. With a
	// ClientTurnID the answer is delivered with the update id "turn-<ClientTurnID>"
	// ([RespondAndWait]), so that a second delivery of the same answer runs once; another
	// answer under a ClientTurnID the session remembers fails with CLIENT_TURN_CONFLICT.
	ClientTurnID string
	Reconnect    bool
	// Claimed, if set, runs once the turn is claimed or reattached, before the answer is
	// delivered (the run still waits, so its stream is still: a caller that follows the
	// stream reads its position here). An error on a newly claimed turn releases the turn and
	// is returned without delivering; on a reattached turn it is returned after the delivery.
	Claimed func(ctx context.Context, ts contracts.TurnStarted) error
	// Gone, if set, is asked when the delivery failed for another reason than the run's
	// refusal: true (the caller has left) stops the turn; false keeps it (the answer may have
	// reached the run: the same answer turn asked again delivers it again).
	Gone func() bool
}

// AnswerTurn answers an open question of a session in one call: it claims the answer turn
// ([ResumeTurn]), delivers the answer to the turn's run by update ([RespondAndWait]), and
// releases the turn ([AbortTurn]) when the run refuses the answer, so that the question is open
// again. A turn reattached by its ClientTurnID that has not ended gets the answer again (an
// update id runs once; errors of that delivery are not returned). The releasing and stopping
// calls run even when ctx is cancelled.
func AnswerTurn(ctx context.Context, c client.Client, sessionID string, answer contracts.Response, opts AnswerOptions) (contracts.TurnStarted, error) {
	req := contracts.ResumeTurnRequest{Token: answer.Token, RequestID: answer.RequestID, ClientTurnID: opts.ClientTurnID, Reconnect: opts.Reconnect}
	if opts.ClientTurnID != "" {
		// Another answer under the same ClientTurnID is refused (CLIENT_TURN_CONFLICT), not
		// taken for a retry of this one.
		req.Digest = answerDigest(answer)
	}
	ts, err := ResumeTurn(ctx, c, sessionID, req)
	if err != nil {
		return ts, err
	}
	claimed := func() error {
		if opts.Claimed == nil {
			return nil
		}
		return opts.Claimed(ctx, ts)
	}
	updateID := ""
	if opts.ClientTurnID != "" {
		updateID = "turn-" + opts.ClientTurnID
	}
	bg := context.WithoutCancel(ctx)
	if ts.Reattached {
		err := claimed()
		if !ts.Ended {
			// The first request may have left before its answer reached the run: deliver it
			// again under the same update id.
			_, _ = RespondAndWait(ctx, c, ts.RunID, updateID, answer)
		}
		return ts, err
	}
	if err := claimed(); err != nil {
		_ = AbortTurn(bg, c, sessionID, ts.RunID)
		return ts, err
	}
	if _, err := RespondAndWait(ctx, c, ts.RunID, updateID, answer); err != nil {
		switch {
		case contracts.FailureOf(err).Category == contracts.CategoryRequest:
			// The run refused the answer (or is gone): the question is open again.
			_ = AbortTurn(bg, c, sessionID, ts.RunID)
		case opts.Gone != nil && opts.Gone():
			_, _ = StopTurn(bg, c, sessionID, ts.RunID)
		}
		return ts, err
	}
	return ts, nil
}
