package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
	"github.com/kortyx-go/kortyx/internal/protocol"
	"github.com/kortyx-go/kortyx/sessions"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// wire is the studio's name in [sessions.Access].
const wire = "web"

// authorize asks the hook to allow a; without a hook only AllowUnauthenticated lets it pass.
func (o Options) authorize(r *http.Request, a sessions.Access) error {
	if o.Authorize != nil {
		return httpwire.Refusal(o.Authorize(r, a))
	}
	if o.AllowUnauthenticated {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeUnauthorized,
		Message: "This studio has no authorization hook: the operator sets web.Options.Authorize (or AllowUnauthenticated, for development)."}
}

// access is the Access of a studio request: an answer for POST /api/runs/{id}/answer, a read
// otherwise, with the session or run it names (a path id, or the session filter of a list).
func access(r *http.Request) sessions.Access {
	a := sessions.Access{Wire: wire, Action: sessions.ActionRead}
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/sessions/"):
		a.SessionID = r.PathValue("id")
	case strings.HasPrefix(r.URL.Path, "/api/runs/"):
		a.RunID = r.PathValue("id")
		if r.Method == http.MethodPost {
			a.Action = sessions.ActionAnswer
		}
	default:
		a.SessionID = r.URL.Query().Get("session")
	}
	return a
}

// transcriptTurn is one run of a session's transcript.
type transcriptTurn struct {
	runItem
	// Input is the turn's prompt (the run's input); Entries what the run did (as in its trace:
	// the model's text, tool calls, questions and answers, children, checkpoints).
	Input   json.RawMessage `json:"input,omitempty"`
	Entries []timelineEntry `json:"entries"`
}

// transcript is the answer of GET /api/sessions/{id}/transcript.
type transcript struct {
	SessionID string           `json:"sessionId"`
	Turns     []transcriptTurn `json:"turns"`
	// Truncated says the session has more runs than the transcript reads (maxTranscriptTurns,
	// the newest).
	Truncated bool `json:"truncated"`
}

// maxTranscriptTurns bounds a transcript.
const maxTranscriptTurns = maxRunPage

// transcriptOf serves GET /api/sessions/{id}/transcript: the session's runs, oldest first, each
// with its prompt and trace entries, from Temporal visibility and the runs' histories. It holds
// what history records: the model's text and the questions, not the messages or structured
// data a node streams itself (those live in the stream, for its retention).
func (o Options) transcriptOf(ctx context.Context, sessionID string) (*transcript, error) {
	query := "WorkflowType = '" + contracts.RunWorkflowName + "' AND ExecutionStatus != 'ContinuedAsNew' AND (" +
		sessionsFilter([]sessionItem{{SessionID: sessionID}}) + ")"
	resp, err := o.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace, PageSize: maxTranscriptTurns, Query: query,
	})
	if err != nil {
		return nil, err
	}
	out := &transcript{SessionID: sessionID, Turns: []transcriptTurn{}, Truncated: len(resp.NextPageToken) > 0}
	now := time.Now()
	for _, e := range resp.Executions {
		it := runOf(e, now)
		if it.SessionID != sessionID || it.ParentRunID != "" {
			continue // a prefix match of an id with quotes, or a child run
		}
		out.Turns = append(out.Turns, transcriptTurn{runItem: it})
	}
	slices.SortStableFunc(out.Turns, func(a, b transcriptTurn) int { return a.StartedAt.Compare(b.StartedAt) })
	eachAtMost(maxQueries, len(out.Turns), func(i int) {
		t := &out.Turns[i]
		t.Entries = []timelineEntry{}
		tl, err := buildTimeline(ctx, o.Client, o.DataConverter, t.RunID, false)
		if err != nil {
			return
		}
		t.Input, t.Entries = tl.Input, tl.Entries
		t.Usage, t.Cost = o.rowFigures(o.byModel(tl))
	})
	return out, nil
}

// answerResult is the answer of POST /api/runs/{id}/answer.
type answerResult struct {
	RunID     string `json:"runId"`
	RequestID string `json:"requestId"`
	// SessionID is the run's session when it has one: the answer was the session's answer
	// turn (as from the chat route), whose response is read from Begin of the run's stream.
	SessionID string `json:"sessionId,omitempty"`
	Begin     int64  `json:"begin,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// answer serves POST /api/runs/{id}/answer: a contracts.Response to the run's open question.
// A session's turn (a child of the session's workflow) is answered through the session (sessions.Service.Answer, the operation
// of the chat route's metadata.resume); another run by its respond update, which checks the
// answer first (a refused answer changes nothing).
func (o Options) answer(w http.ResponseWriter, r *http.Request, svc *sessions.Service) (any, error) {
	runID := r.PathValue("id")
	if err := contracts.CheckID("runId", runID); err != nil {
		return nil, err
	}
	body, err := httpwire.ReadBody(w, r, httpwire.DefaultMaxBody)
	if err != nil {
		return nil, err
	}
	var resp contracts.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, contracts.Errorf(contracts.CodeInvalidRequest, "The body must be a JSON answer: {token, requestId, text | selected | value | cancel}.")
	}
	if resp.Token == "" || resp.RequestID == "" {
		return nil, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "The answer names no question: send the question's token and requestId (GET /api/interrupts).",
			Issues: missing(resp)}
	}
	if err := protocol.CheckPayload("the answer", resp, "give a shorter answer"); err != nil {
		return nil, err
	}
	d, err := o.Client.DescribeWorkflow(r.Context(), runID, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, notFound(runID, err)
		}
		return nil, err
	}
	// A session's turn is a child of the session's workflow; a run started with a session id
	// but no session workflow is answered like any other run.
	if session, ok := strings.CutPrefix(d.RawResponse.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId(), sessionPrefix); ok && svc != nil {
		ts, err := svc.Answer(r.Context(), session, resp, sessions.AnswerOptions{Continue: true})
		if err != nil {
			return nil, err
		}
		return answerResult{RunID: ts.RunID, RequestID: resp.RequestID, SessionID: session, Begin: ts.Begin, Cancelled: resp.Cancel}, nil
	}
	res, err := kortyx.RespondAndWait(r.Context(), o.Client, runID, "", resp)
	if err != nil {
		return nil, err
	}
	return answerResult{RunID: runID, RequestID: res.RequestID, Cancelled: res.Cancelled}, nil
}

// missing lists the question fields an answer lacks.
func missing(r contracts.Response) []contracts.Issue {
	var out []contracts.Issue
	if r.Token == "" {
		out = append(out, contracts.Issue{Path: []any{"token"}, Code: "invalid_type", Message: "token is required"})
	}
	if r.RequestID == "" {
		out = append(out, contracts.Issue{Path: []any{"requestId"}, Code: "invalid_type", Message: "requestId is required"})
	}
	return out
}
