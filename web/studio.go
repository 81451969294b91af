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
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
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
	// Arrival: how the turn's message came while another turn ran ("enqueue", "interrupt").
	Arrival string `json:"arrival,omitempty"`
	// State is the turn's place in the session's history: "live" (the session goes on from
	// it), "rolledBack" (a rollback discarded it) or "inherited" (a turn of the session this
	// one was forked from, up to the forked checkpoint; its sessionId is that session's).
	// Absent when the session's view cannot be read.
	State string `json:"state,omitempty"`
}

// The states of a transcript's turns.
const (
	turnLive       = "live"
	turnRolledBack = "rolledBack"
	turnInherited  = "inherited"
)

// transcript is the answer of GET /api/sessions/{id}/transcript.
type transcript struct {
	SessionID string           `json:"sessionId"`
	Turns     []transcriptTurn `json:"turns"`
	// Truncated says the session has more runs than the transcript reads (maxTranscriptTurns,
	// the newest).
	Truncated bool `json:"truncated"`
	// Head is the session's head checkpoint; ParentSessionID and ForkedFrom say where a fork
	// came from (as in the session's view).
	Head            string `json:"head,omitempty"`
	ParentSessionID string `json:"parentSessionId,omitempty"`
	ForkedFrom      string `json:"forkedFrom,omitempty"`

	first string // the session's oldest listed checkpoint
}

// maxTranscriptTurns bounds a transcript, and maxForkDepth how many sessions up a fork's
// transcript looks for its inherited turns.
const (
	maxTranscriptTurns = maxRunPage
	maxForkDepth       = 4
)

// transcriptOf serves GET /api/sessions/{id}/transcript: the session's runs, oldest first, each
// with its prompt and trace entries, from Temporal visibility and the runs' histories. It holds
// what history records: the model's text and the questions, not the messages or structured
// data a node streams itself (those live in the stream, for its retention). With the session's
// view (svc not nil), each turn says its state, and a fork's transcript begins with the turns
// it inherited from its parent.
func (o Options) transcriptOf(ctx context.Context, svc *sessions.Service, sessionID string) (*transcript, error) {
	return o.transcriptDepth(ctx, svc, sessionID, 0)
}

func (o Options) transcriptDepth(ctx context.Context, svc *sessions.Service, sessionID string, depth int) (*transcript, error) {
	out, err := o.ownTurns(ctx, sessionID)
	if err != nil || svc == nil {
		return out, err
	}
	view, err := svc.View(ctx, sessionID)
	if err != nil {
		return out, nil // no view (not a session workflow): the turns without their state
	}
	out.Head, out.ParentSessionID, out.ForkedFrom = view.Head, view.ParentSessionID, view.ForkedFrom
	if len(view.Checkpoints) > 0 {
		out.first = view.Checkpoints[0].ID
	}
	markRolledBack(out.Turns, view)
	if view.ParentSessionID == "" || depth >= maxForkDepth {
		return out, nil
	}
	parent, err := o.transcriptDepth(ctx, svc, view.ParentSessionID, depth+1)
	if err != nil {
		return out, nil // the parent's turns are left out, the fork's own are shown
	}
	inherited := inheritedTurns(parent, view.ForkedFrom)
	out.Turns = append(inherited, out.Turns...)
	out.Truncated = out.Truncated || parent.Truncated
	return out, nil
}

// checkpointsOf are the checkpoints a turn's run committed (its trace's checkpoint entries).
func checkpointsOf(t transcriptTurn) []timelineEntry {
	var out []timelineEntry
	for _, e := range t.Entries {
		if e.Kind == "checkpoint" && e.CheckpointID != "" {
			out = append(out, e)
		}
	}
	return out
}

// markRolledBack sets each turn's state from the session's view. A rollback deletes the
// checkpoints after its target: a turn whose run committed checkpoints, none of which the
// session still lists, and one of them after the session's oldest listed checkpoint (older
// ones are pruned, not rolled back), was rolled back. A turn that committed none (it failed,
// was stopped, or runs) was rolled back when a later turn was; the running turn is live.
func markRolledBack(turns []transcriptTurn, view sessions.SessionView) {
	current := map[string]bool{}
	var oldest time.Time
	for i, c := range view.Checkpoints {
		current[c.ID] = true
		if i == 0 || c.CreatedAt.Before(oldest) {
			oldest = c.CreatedAt
		}
	}
	later := false // a later turn was rolled back
	for i := len(turns) - 1; i >= 0; i-- {
		t := &turns[i]
		t.State = turnLive
		cps := checkpointsOf(*t)
		switch {
		case view.Active != nil && view.Active.RunID == t.RunID:
		case len(cps) == 0:
			if later {
				t.State = turnRolledBack
			}
		default:
			listed, after := false, false
			for _, e := range cps {
				listed = listed || current[e.CheckpointID]
				after = after || e.At.After(oldest)
			}
			if !listed && after {
				t.State = turnRolledBack
			}
		}
		later = later || t.State == turnRolledBack
	}
}

// inheritedTurns are the turns of a fork's parent up to the one that committed the forked
// checkpoint, as the parent's history now says (its rolled-back turns left out), marked
// inherited. A fork of a fork's first checkpoint (the copy the fork began with) inherits what
// that fork inherited; a fork of a session's start inherits nothing.
func inheritedTurns(parent *transcript, forkedFrom string) []transcriptTurn {
	end := -1
	for i, t := range parent.Turns {
		for _, e := range checkpointsOf(t) {
			if e.CheckpointID == forkedFrom {
				end = i
			}
		}
	}
	if end < 0 && forkedFrom != "" && forkedFrom == parent.first {
		for i, t := range parent.Turns {
			if t.State == turnInherited {
				end = i // the copy the parent, itself a fork, began with
			}
		}
	}
	if end < 0 {
		return nil
	}
	var out []transcriptTurn
	for i, t := range parent.Turns[:end+1] {
		if t.State == turnRolledBack && i != end {
			continue
		}
		t.State = turnInherited
		out = append(out, t)
	}
	return out
}

// ownTurns are the session's own runs, oldest first, with their prompts and entries.
func (o Options) ownTurns(ctx context.Context, sessionID string) (*transcript, error) {
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
		t.Input, t.Entries, t.Arrival = tl.Input, tl.Entries, tl.Arrival
		t.Usage, t.Cost = o.rowFigures(o.spendOfTimeline(tl))
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
// A session's turn (its run bound to the session: its child, or started by the session service) is answered through the session (sessions.Service.Answer, the operation
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
	// A session's turn is answered through its session; a run started with a session id but no
	// session workflow is answered like any other run.
	session := ""
	if svc != nil {
		if session, err = o.sessionOfRun(r.Context(), runID, d.RawResponse.GetWorkflowExecutionInfo()); err != nil {
			return nil, err
		}
	}
	if session != "" {
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

// sessionOfRun is the session whose turn run is ("" : none). A run its session started as a
// child has the session as its parent; one the session service started (a prompt's run, which
// the session leaves to its caller) has no parent, and its start input binds it to its session
// (read from the first event of its history). A run of no session has no KortyxSession.
func (o Options) sessionOfRun(ctx context.Context, runID string, info *workflowpb.WorkflowExecutionInfo) (string, error) {
	if p := info.GetParentExecution(); p != nil {
		session, ok := strings.CutPrefix(p.GetWorkflowId(), sessionPrefix)
		if !ok {
			return "", nil // a child run of a run
		}
		return session, nil
	}
	if info.GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeSession] == nil {
		return "", nil
	}
	resp, err := o.Client.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: o.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: runID, RunId: info.GetExecution().GetRunId()}, MaximumPageSize: 1})
	if err != nil {
		return "", err
	}
	if len(resp.GetHistory().GetEvents()) == 0 {
		return "", nil
	}
	dc := o.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var in struct { // the session binding of protocol.RunStart alone
		Session *struct {
			WorkflowID string `json:"workflowId"`
		} `json:"session"`
	}
	if dc.FromPayloads(resp.GetHistory().GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &in) != nil || in.Session == nil {
		return "", nil
	}
	session, _ := strings.CutPrefix(in.Session.WorkflowID, sessionPrefix)
	if session == in.Session.WorkflowID {
		return "", nil
	}
	return session, nil
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
