package kortyx

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/internal/protocol"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/internal/digest"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// StartOptions are the Temporal options of a new run; the zero value works.
type StartOptions struct {
	// RunID is the workflow ID of the run; default "run-<uuid>".
	RunID string
	// TaskQueue defaults to [contracts.DefaultTaskQueue].
	TaskQueue string
	// WorkflowTaskTimeout is the run's workflow task timeout (0: the server's default, 10 s).
	// Start the runs of a fast-path agent with workflows.FastPathTaskTimeout.
	WorkflowTaskTimeout time.Duration
}

// StartRun starts a run with the search attributes that make it discoverable (session,
// workflow, status). It returns the Temporal handle: Get waits for the [contracts.RunResult].
func StartRun(ctx context.Context, c client.Client, in contracts.RunInput, opts StartOptions) (client.WorkflowRun, error) {
	if strings.TrimSpace(in.Workflow) == "" {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "kortyx: StartRun needs RunInput.Workflow, the id of a registered workflow")
	}
	if err := protocol.CheckPayload("the run input", in, inputFix); err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		opts.RunID = "run-" + uuid.NewString()
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = contracts.DefaultTaskQueue
	}
	sa := []temporal.SearchAttributeUpdate{
		protocol.WorkflowKey.ValueSet(in.Workflow),
		protocol.StatusKey.ValueSet(string(contracts.StatusRunning)),
	}
	if in.SessionID != "" {
		sa = append(sa, protocol.SessionKey.ValueSet(in.SessionID))
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    opts.RunID,
		TaskQueue:             opts.TaskQueue,
		WorkflowTaskTimeout:   opts.WorkflowTaskTimeout,
		TypedSearchAttributes: temporal.NewSearchAttributes(sa...),
	}, contracts.RunWorkflowName, in)
}

// inputFix is what to do about an input over the payload limit.
const inputFix = "send less: pass large documents by reference (a URL or an id the tools can read) instead of inline"

// Query returns the run's state, status and pending question (it needs a running worker).
func Query(ctx context.Context, c client.Client, runID string) (contracts.RunView, error) {
	var v contracts.RunView
	res, err := c.QueryWorkflow(ctx, runID, "", contracts.StateQueryName)
	if err != nil {
		return v, notFound(runID, err)
	}
	return v, res.Get(&v)
}

// Respond answers a pending question by signal: fire and forget. An invalid answer is recorded
// as rejected (see [contracts.RunView].Rejections and the resume-rejected chunk) and the run
// keeps waiting.
func Respond(ctx context.Context, c client.Client, runID string, resp contracts.Response) error {
	if err := protocol.CheckPayload("the answer", resp, "give a shorter answer"); err != nil {
		return err
	}
	return notFound(runID, c.SignalWorkflow(ctx, runID, "", contracts.RespondName, resp))
}

// RespondAndWait answers a pending question by update: the run validates the answer and
// rejects an invalid one with a typed error (INVALID_RESPONSE with per-field issues,
// INVALID_RESUME, RESUME_MISMATCH) without recording anything. updateID (default
// "answer-<requestId>") is the idempotency key of the answer: the Temporal update id is
// updateID plus a digest of the answer's content, so repeating the same answer has one effect
// and returns the same result, while a different answer reaches the run and is refused
// (INVALID_RESUME "already answered"; NOT_FOUND once the run has ended).
func RespondAndWait(ctx context.Context, c client.Client, runID, updateID string, resp contracts.Response) (contracts.RespondResult, error) {
	var out contracts.RespondResult
	if err := protocol.CheckPayload("the answer", resp, "give a shorter answer"); err != nil {
		return out, err
	}
	if updateID == "" {
		updateID = "answer-" + resp.RequestID
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   runID,
		UpdateID:     updateID + "/" + digest.Answer(resp),
		UpdateName:   contracts.RespondName,
		Args:         []any{resp},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return out, notFound(runID, err)
	}
	return out, h.Get(ctx, &out)
}

// WaitingRun is a run waiting for a human, as found through search attributes.
type WaitingRun struct {
	RunID     string    `json:"runId"`
	Workflow  string    `json:"workflow"`
	SessionID string    `json:"sessionId,omitempty"`
	StartedAt time.Time `json:"startedAt"`
}

// ListWaiting lists runs whose status is waiting, newest first, through the visibility store:
// no worker needed. sessionID, when set, narrows the list to one session.
func ListWaiting(ctx context.Context, c client.Client, sessionID string) ([]WaitingRun, error) {
	q := fmt.Sprintf("%s = '%s' AND ExecutionStatus = 'Running'", contracts.SearchAttributeStatus, contracts.StatusWaiting)
	if sessionID != "" {
		q += fmt.Sprintf(" AND %s = '%s'", contracts.SearchAttributeSession, strings.ReplaceAll(sessionID, "'", `\'`))
	}
	var out []WaitingRun
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.Executions {
			w := WaitingRun{RunID: e.GetExecution().GetWorkflowId(), StartedAt: e.GetStartTime().AsTime()}
			sa := e.GetSearchAttributes().GetIndexedFields()
			var s string
			if p := sa[contracts.SearchAttributeWorkflow]; p != nil && converter.GetDefaultDataConverter().FromPayload(p, &s) == nil {
				w.Workflow = s
			}
			s = ""
			if p := sa[contracts.SearchAttributeSession]; p != nil && converter.GetDefaultDataConverter().FromPayload(p, &s) == nil {
				w.SessionID = s
			}
			out = append(out, w)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
			return out, nil
		}
	}
}

// notFound turns Temporal's not-found into a NOT_FOUND code.
func notFound(runID string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("run %q not found (or no longer running)", runID), Err: err}
	}
	return err
}

// missingSearchAttributes returns the Kortyx search attributes ([protocol.SearchAttributeNames])
// that the namespace lacks, in that order.
func missingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("kortyx: listing the search attributes of namespace %q: %w", namespace, err)
	}
	var missing []string
	for _, name := range protocol.SearchAttributeNames() {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// CheckSearchAttributes fails when the namespace lacks a Kortyx search attribute, naming each
// missing one and how to create it. Call it when a worker starts: every run upserts these
// attributes, and on a namespace without them each of its workflow tasks fails and is retried
// without end.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	return missingError(namespace, missing, nil)
}

func missingError(namespace string, missing []string, cause error) error {
	cmd := "temporal operator search-attribute create --namespace " + namespace
	cloud := "tcld namespace search-attributes add --namespace " + namespace
	for _, name := range missing {
		cmd += " --name " + name + " --type Keyword"
		cloud += " --search-attribute " + name + "=Keyword"
	}
	msg := fmt.Sprintf("kortyx: namespace %q lacks the search attributes %s; create them (operator rights needed) with: %s",
		namespace, strings.Join(missing, ", "), cmd)
	if cause == nil {
		return errors.New(msg + " (or call kortyx.RegisterSearchAttributes)")
	}
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if errors.As(cause, &denied) || errors.As(cause, &unimplemented) || status.Code(cause) == codes.Unauthenticated ||
		status.Code(cause) == codes.PermissionDenied || status.Code(cause) == codes.Unimplemented {
		return fmt.Errorf("kortyx: namespace %q lacks the search attributes %s, and this client may not add them: adding search attributes "+
			"needs the operator permission AddSearchAttributes on the namespace (a self-hosted server's admin; on Temporal Cloud no SDK client "+
			"can add them). Add them once, each of type Keyword: on Temporal Cloud in the Cloud UI (Namespaces → %s → Search Attributes) or "+
			"with: %s; on a self-hosted server with: %s: %w", namespace, strings.Join(missing, ", "), namespace, cloud, cmd, cause)
	}
	return fmt.Errorf("%s (or kortyx.RegisterSearchAttributes): %w", msg, cause)
}

// RegisterSearchAttributes registers the Kortyx search attributes ([protocol.SearchAttributeNames],
// all Keyword) on a namespace that lacks them; it is a no-op when they exist. The embedded dev
// server registers them at start; call this for any other server (it needs operator rights:
// AddSearchAttributes on the namespace), or create them with the command that
// [CheckSearchAttributes]'s error names. When the server refuses (permission denied,
// unauthenticated, unimplemented — Temporal Cloud lets no SDK client add them), the error names
// the missing attributes, the permission, and the Cloud UI and tcld step that adds them.
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range missing {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: attrs})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return missingError(namespace, missing, err)
	}
	return nil
}
