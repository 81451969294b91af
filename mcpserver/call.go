package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The _meta keys of calls and results. A call may name the Kortyx session it continues
// (metaSession) and an idempotency key of its turn (metaTurn); every result and elicitation
// names the session and the run, and a result says how the run stands (metaStatus) and, for
// a failure, its descriptor (metaFailure).
const (
	metaSession = "kortyx/sessionId"
	metaTurn    = "kortyx/turnId"
	metaRun     = "kortyx/runId"
	metaStatus  = "kortyx/status"
	metaRequest = "kortyx/requestId"
	metaFailure = "kortyx/failure"
	// metaBusy is what to do when the named session's turn is still running (docs/steering.md).
	metaBusy = "kortyx/busy"
)

// The statuses of a result (metaStatus): the run's response statuses, and "waiting" for a
// run that waits for an answer the call could not get.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
	statusWaiting   = "waiting"
)

// call is one tools/call: a turn of a session (or the answer to its open question).
type call struct {
	h        *Handler
	t        *agentTool
	req      *mcp.CallToolRequest
	session  string
	run      string  // the run followed (for the log messages; "" until one is)
	progress any     // the client's progress token (nil: no progress notifications)
	n        float64 // progress notifications sent
	owner    string  // the caller (Options.Owner; "" without it)
	// steer is the request of a steering message: its response is read from where the run
	// took it in (sessions.Service.FollowSteer).
	steer *sessions.TurnRequest
}

func (h *Handler) call(ctx context.Context, t *agentTool, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, err := t.input(req.Params.Arguments)
	if err != nil {
		// A tool execution error, not a protocol error (MCP 2025-11-25): the caller (a model)
		// can read what is wrong and call again. No session was touched.
		return toolError(&mcp.CallToolResult{Meta: mcp.Meta{metaStatus: statusFailed}}, publicFailure(err)), nil
	}
	meta := req.Params.Meta
	session, _ := meta[metaSession].(string)
	turn, _ := meta[metaTurn].(string)
	busy, _ := meta[metaBusy].(string)
	session, turn, busy = strings.TrimSpace(session), strings.TrimSpace(turn), strings.TrimSpace(busy)
	if err := sessions.CheckBusy(busy); err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidParams, &contracts.Error{Code: contracts.CodeInvalidRequest,
			Message: metaBusy + " must be reject, enqueue, interrupt or steer."})
	}
	if busy == "" {
		busy = h.o.Busy
	}
	named := session != ""
	if !named {
		session = "mcp-" + uuid.NewString()
	}
	for field, id := range map[string]string{metaSession: session, metaTurn: turn} {
		if id == "" {
			continue
		}
		if err := contracts.CheckID(field, id); err != nil {
			return nil, protocolError(jsonrpc.CodeInvalidParams, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: err.Message, Issues: err.Issues})
		}
	}
	var hdr http.Header
	if req.Extra != nil {
		hdr = req.Extra.Header
	}
	c := &call{h: h, t: t, req: req, session: session, progress: req.Params.GetProgressToken()}
	if h.o.Owner != nil {
		c.owner = h.o.Owner(h.request(ctx, hdr))
	}
	if c.stateless() && req.Params.RequestState != "" {
		// 2026-07-28: the client's answer to the input-required result of an earlier call.
		return c.answerState(ctx, hdr, req.Params.RequestState)
	}
	if named && turn == "" {
		// A session with an open question: the host came back for it (from any process).
		if err := h.access(ctx, hdr, sessions.Access{Wire: "mcp", Action: sessions.ActionRead, SessionID: session}); err != nil {
			return nil, protocolError(jsonrpc.CodeInvalidRequest, err)
		}
		v, err := h.svc.View(ctx, session)
		switch {
		case contracts.CodeOf(err) == contracts.CodeInvalidSession:
			// No such session (the id was checked above): the call starts its first turn.
		case err != nil:
			// A new prompt would supersede the question the host may have come back to
			// answer: a lookup that failed (no worker polling, Temporal away) fails the call.
			return c.failed(ctx, "", lookupError(err))
		case len(v.Pending) > 0:
			if err := h.access(ctx, hdr, sessions.Access{Wire: "mcp", Action: sessions.ActionAnswer, SessionID: session}); err != nil {
				return nil, protocolError(jsonrpc.CodeInvalidRequest, err)
			}
			return c.ask(ctx, sessions.TurnStarted{SessionID: session, RunID: h.questionRun(ctx, session, v)}, v.Pending[0])
		}
	}
	if err := h.access(ctx, hdr, sessions.Access{Wire: "mcp", Action: sessions.ActionStart, SessionID: session, Workflow: t.def.ID}); err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidRequest, err)
	}
	tr := sessions.TurnRequest{Workflow: t.def.ID, Input: in, ClientTurnID: turn, Busy: busy}
	if tr.ClientTurnID == "" {
		// The host gave no turn id: the call names its turn itself, so that a cancel arriving
		// while the turn is being started can reattach to it below (a turn without one
		// cannot be found again: the start would fail SESSION_BUSY and the run outlive the
		// call).
		tr.ClientTurnID = "mcp-turn-" + uuid.NewString()
	}
	tr.Owner = c.owner
	ts, err := h.svc.Start(ctx, session, tr)
	if err != nil {
		if cancelled(ctx) {
			// The client cancelled while the turn was being started: the session may have
			// started it without this call hearing back. Its ClientTurnID names it: reattach
			// (detached) and stop that run, so no turn outlives the cancelled call.
			bg, cancel := detached(ctx)
			defer cancel()
			tr.Reconnect = true
			if ts, serr := h.svc.Start(bg, session, tr); serr == nil && ts.RunID != "" {
				return c.failed(ctx, ts.RunID, err)
			}
		}
		return c.failed(ctx, "", err)
	}
	if ts.Kind == sessions.BusySteer {
		c.steer = &tr
	}
	return c.follow(ctx, ts, 0, "")
}

// lookupError is the failure of a session view that failed: a coded error as it is, else
// TEMPORAL_UNAVAILABLE (retryable; the cause stays in the log), since nothing was started.
func lookupError(err error) error {
	var ke *contracts.Error
	if errors.As(err, &ke) {
		return err
	}
	return &contracts.Error{Code: contracts.CodeTemporalUnavailable, Retryable: true, Err: err,
		Message: "The session's open question could not be looked up (the workflow service or its workers did not answer); nothing was started. Try again shortly."}
}

// cleanupTimeout bounds what a call does after its client cancelled it (answering the
// question with cancel, stopping the run): the call's context has ended, and with no worker
// polling an unbounded update would keep its goroutine for ever.
const cleanupTimeout = 30 * time.Second

// detached is ctx without its cancel, bounded by cleanupTimeout.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// questionRun is the run that asks the first open question of session view v: the run of
// the newest checkpoint that has it open ("" when none says).
func (h *Handler) questionRun(ctx context.Context, session string, v sessions.SessionView) string {
	for i := len(v.Checkpoints) - 1; i >= 0; i-- {
		cp, err := h.svc.Checkpoint(ctx, session, v.Checkpoints[i].ID)
		if err != nil {
			return ""
		}
		for _, p := range cp.ActivePendingRequests {
			if p.Token == v.Pending[0].Token {
				return cp.RunID
			}
		}
	}
	return ""
}

// follow reads the response of turn ts from offset from, sending progress notifications, and
// answers its question by elicitation; it returns the call's result when a response ends
// without a question (or the question stays open).
func (c *call) follow(ctx context.Context, ts sessions.TurnStarted, from int64, answered string) (*mcp.CallToolResult, error) {
	c.run = ts.RunID
	var rd *sessions.Reader
	var err error
	if c.steer != nil && ts.Kind == sessions.BusySteer {
		rd, err = c.h.svc.FollowSteer(ctx, c.session, ts, *c.steer, sessions.FollowOptions{})
	} else {
		rd, err = c.h.svc.Follow(ctx, c.session, ts, from, sessions.FollowOptions{Answered: answered, Started: !ts.Reattached})
	}
	if err != nil {
		return c.failed(ctx, ts.RunID, err)
	}
	var chunks []contracts.Chunk
	for {
		e, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.failed(ctx, ts.RunID, err)
		}
		chunks = append(chunks, e.Chunk)
		c.notify(ctx, e.Chunk)
	}
	msg, status := sessions.Finalize("", chunks)
	if status != "interrupted" {
		return c.result(ts.RunID, chunks, msg, string(status)), nil
	}
	for _, ch := range chunks {
		if ch.Type != contracts.ChunkInterrupt {
			continue
		}
		q := contracts.PendingRequest{RequestID: ch.RequestID, Token: ch.ResumeToken}
		_ = json.Unmarshal(ch.Input, &q.Input)
		// One question at a time: the response to its answer asks the next one again.
		return c.ask(ctx, ts, q)
	}
	return c.result(ts.RunID, chunks, msg, string(status)), nil
}

// ask asks question q of turn ts by elicitation and answers it with the human's answer; a
// question that gets no answer leaves the call with a result that says the run waits. A call
// of protocol 2026-07-28 returns the input-required result of the question instead
// ([call.inputRequired]): the client's next call answers it.
func (c *call) ask(ctx context.Context, ts sessions.TurnStarted, q contracts.PendingRequest) (*mcp.CallToolResult, error) {
	if c.stateless() {
		return c.inputRequired(ctx, ts, q, nil), nil
	}
	caps := c.req.Session.InitializeParams()
	if caps == nil || caps.Capabilities == nil || caps.Capabilities.Elicitation == nil {
		return c.waiting(ts.RunID, q), nil
	}
	var schema json.RawMessage
	if q.Input.Kind == contracts.InterruptCustom {
		if v, err := c.h.svc.View(ctx, c.session); err == nil {
			schema = v.Schemas[q.RequestID]
		}
	}
	params, form := elicitation(q.Input, schema)
	params.Meta = mcp.Meta{metaSession: c.session, metaRequest: q.RequestID}
	if ts.RunID != "" {
		params.Meta[metaRun] = ts.RunID
	}
	res, err := c.req.Session.Elicit(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			if cancelled(ctx) {
				// The client cancelled the call while the run waits: the cancel answer ends
				// the run (cancelled + done); Stop has no active turn to stop.
				bg, cancel := detached(ctx)
				defer cancel()
				if _, aerr := c.h.svc.Answer(bg, c.session, contracts.Response{Token: q.Token, RequestID: q.RequestID, Cancel: true}, sessions.AnswerOptions{}); aerr != nil {
					c.h.o.Logger.Warn("kortyx mcpserver: cancelling the run of a cancelled call failed", "session", c.session, "error", aerr)
				}
			}
			return nil, ctx.Err()
		}
		c.h.o.Logger.Warn("kortyx mcpserver: elicitation failed; the question stays open", "session", c.session, "error", err)
		return c.waiting(ts.RunID, q), nil
	}
	answer := contracts.Response{Token: q.Token, RequestID: q.RequestID}
	switch res.Action {
	case "accept":
		answer = responseOf(q.Input, answer, res.Content, form)
	case "decline":
		if approval(q.Input) {
			answer.Selected = []string{"deny"}
		} else {
			answer.Cancel = true
		}
	default: // "cancel": dismissed, the question stays open
		return c.waiting(ts.RunID, q), nil
	}
	next, err := c.h.svc.Answer(ctx, c.session, answer, sessions.AnswerOptions{})
	if err != nil {
		if ctx.Err() == nil && contracts.CodeOf(err) == contracts.CodeInvalidResponse {
			// The session refused the answer and wrote nothing: the run still waits.
			return c.refused(ts.RunID, q, err), nil
		}
		return c.failed(ctx, ts.RunID, err)
	}
	return c.follow(ctx, next, next.Begin, answer.Token)
}

// elicitation is the elicitation/create request of a question, and whether it is the form of
// a custom question's own schema. A custom question whose response schema is an elicitation
// form (a flat object of string, number, integer and boolean properties) is asked with that
// schema, and the form's content is the answer. Any other question has one field, "answer": a
// string for text; a string of the option ids for choice; an array of them for multi-choice;
// for another custom question, a string holding the JSON value (its description shows the
// schema), checked by the session against the question's response schema.
func elicitation(in contracts.InterruptInput, schema json.RawMessage) (*mcp.ElicitParams, bool) {
	message := in.Question
	if message == "" {
		message = "Answer the question."
	}
	if in.Kind == contracts.InterruptCustom {
		if form := formSchema(schema); form != nil {
			return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: form}, true
		}
	}
	field := map[string]any{"type": "string", "title": "Answer"}
	var options []map[string]any
	for _, o := range in.Options {
		options = append(options, map[string]any{"const": o.ID, "title": o.Label})
	}
	switch in.Kind {
	case contracts.InterruptChoice:
		field["oneOf"] = options
	case contracts.InterruptMultiChoice:
		field = map[string]any{"type": "array", "title": "Answer", "minItems": 1, "items": map[string]any{"anyOf": options}}
	case contracts.InterruptCustom:
		field["description"] = "A JSON value"
		switch {
		case len(schema) > 0:
			field["description"] = "A JSON value matching the schema " + string(schema)
		case in.SchemaID != "":
			field["description"] = "A JSON value of schema " + in.SchemaID
		}
	}
	return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"answer": field}, "required": []string{"answer"}}}, false
}

// formSchema is schema as an elicitation form (nil when it is none): an object whose
// properties are all strings (an enum of strings counts; its type is added when it is left
// out), numbers, integers, booleans or multi-select enums (an array whose items are an enum of
// strings, or an anyOf of string consts with titles), as MCP's restricted elicitation schema
// allows (2025-11-25).
func formSchema(schema json.RawMessage) map[string]any {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil || s["type"] != "object" {
		return nil
	}
	props, ok := s["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return nil
	}
	for _, p := range props {
		p, ok := p.(map[string]any)
		if !ok {
			return nil
		}
		if enum, ok := p["enum"].([]any); ok && p["type"] == nil {
			for _, v := range enum {
				if _, ok := v.(string); !ok {
					return nil
				}
			}
			p["type"] = "string"
		}
		switch p["type"] {
		case "string", "number", "integer", "boolean":
		case "array":
			if !multiSelect(p["items"]) {
				return nil
			}
		default:
			return nil
		}
		if _, nested := p["properties"]; nested {
			return nil
		}
	}
	return s
}

// multiSelect reports whether items (an array property's) are those of a multi-select enum:
// {"type":"string","enum":[strings]} or {"anyOf":[{"const":string,"title":string}, ...]}.
func multiSelect(items any) bool {
	it, ok := items.(map[string]any)
	if !ok {
		return false
	}
	if enum, ok := it["enum"].([]any); ok && it["type"] == "string" && len(enum) > 0 {
		for _, v := range enum {
			if _, ok := v.(string); !ok {
				return false
			}
		}
		return true
	}
	options, ok := it["anyOf"].([]any)
	if !ok || len(options) == 0 || it["type"] != nil {
		return false
	}
	for _, o := range options {
		o, ok := o.(map[string]any)
		if !ok {
			return false
		}
		c, _ := o["const"].(string)
		title, _ := o["title"].(string)
		if c == "" || title == "" {
			return false
		}
	}
	return true
}

// approval reports whether a question is a tool approval (hooks' Reason approval: a choice of
// approve or deny).
func approval(in contracts.InterruptInput) bool {
	return in.Kind == contracts.InterruptChoice && strings.HasPrefix(in.ID, "tool:") && len(in.Options) == 2 &&
		in.Options[0].ID == "approve" && in.Options[1].ID == "deny"
}

// responseOf is the answer of an accepted elicitation's content.
func responseOf(in contracts.InterruptInput, r contracts.Response, content map[string]any, form bool) contracts.Response {
	if form { // the custom question's own form: the content is the value
		r.Value, _ = json.Marshal(content)
		return r
	}
	switch v := content["answer"].(type) {
	case string:
		switch in.Kind {
		case contracts.InterruptChoice:
			r.Selected = []string{v}
		case contracts.InterruptCustom:
			if json.Valid([]byte(v)) {
				r.Value = json.RawMessage(v)
			} else {
				r.Value, _ = json.Marshal(v)
			}
		default:
			r.Text = v
		}
	case []any:
		for _, s := range v {
			if s, ok := s.(string); ok {
				r.Selected = append(r.Selected, s)
			}
		}
	}
	return r
}

// notify sends the progress notification of a chunk (text, status, a tool call starting)
// when the client asked for progress, and its log message: the text at level debug, the
// status and the tool call at info.
func (c *call) notify(ctx context.Context, ch contracts.Chunk) {
	var msg, level string
	switch ch.Type {
	case contracts.ChunkTextDelta:
		msg, level = ch.Delta, "debug"
	case contracts.ChunkStatus:
		msg, level = ch.Message, "info"
	case contracts.ChunkToolCallStart:
		msg, level = "Calling "+ch.Tool+".", "info"
	default:
		return
	}
	c.log(ctx, level, msg, nil)
	if c.progress == nil {
		return
	}
	c.n++
	if err := c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.progress, Progress: c.n, Message: msg}); err != nil {
		c.h.o.Logger.Debug("kortyx mcpserver: a progress notification was not sent", "session", c.session, "error", err)
	}
}

func (c *call) meta(runID, status string) mcp.Meta {
	m := mcp.Meta{metaSession: c.session, metaStatus: status}
	if runID != "" {
		m[metaRun] = runID
	}
	return m
}

// result is the call's result of a response that ended: its text (or the structured
// value's JSON), structuredContent when the agent has an output schema, and for a failed or
// cancelled run an error result with the failure's safe message.
func (c *call) result(runID string, chunks []contracts.Chunk, msg sessions.FinalizedMessage, status string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Meta: c.meta(runID, status)}
	switch status {
	case statusCompleted:
		text := msg.Content
		if c.t.output {
			var st struct {
				Data json.RawMessage `json:"data"`
			}
			for _, ch := range chunks {
				if ch.Type == contracts.ChunkDone {
					_ = json.Unmarshal(ch.Data, &st)
				}
			}
			if len(st.Data) > 0 && string(st.Data) != "null" {
				res.StructuredContent = st.Data
				if text == "" {
					text = string(st.Data)
				}
			}
		}
		res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		return res
	case "cancelled":
		f := publicFailure(contracts.Errorf(contracts.CodeExecutionCancelled, "The run was cancelled."))
		return toolError(res, f)
	}
	for _, p := range msg.ContentPieces {
		if p.Type == "error" && p.Failure != nil {
			f := *p.Failure
			f.Cause = nil
			return toolError(res, f)
		}
	}
	return toolError(res, publicFailure(errors.New("the run failed")))
}

// toolError makes res a tool error: isError, the text "<message> (<CODE>)" and the failure
// descriptor f in _meta.
func toolError(res *mcp.CallToolResult, f contracts.Failure) *mcp.CallToolResult {
	res.IsError = true
	res.Meta[metaFailure] = f
	res.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s (%s)", f.Message, f.Code)}}
	return res
}

// waiting is the result of a call whose run waits for an answer it could not get here.
func (c *call) waiting(runID string, q contracts.PendingRequest) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Meta: c.meta(runID, statusWaiting)}
	res.Meta[metaRequest] = q.RequestID
	res.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
		"The run waits for an answer: %s Call %s again with _meta {%q: %q} to answer it.", q.Input.Question, c.t.def.ID, metaSession, c.session)}}
	return res
}

// refused is the "waiting" result of a call whose answer the session refused (err, code
// INVALID_RESPONSE): the question stays open, and kortyx/failure says why it was refused.
func (c *call) refused(runID string, q contracts.PendingRequest, err error) *mcp.CallToolResult {
	f := publicFailure(err)
	res := c.waiting(runID, q)
	res.Meta[metaFailure] = f
	tc := res.Content[0].(*mcp.TextContent)
	tc.Text = fmt.Sprintf("The answer was refused: %s (%s) %s", f.Message, f.Code, tc.Text)
	return res
}

// failed is the result of a call that failed: a client's cancel (notifications/cancelled)
// stops the run and returns ctx's error (the SDK answers nothing); the host leaving any other
// way (its session closed, the process stopping) leaves the run as it is; any other error is
// a tool error with the failure's safe message and code.
func (c *call) failed(ctx context.Context, runID string, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		if cancelled(ctx) && runID != "" {
			bg, cancel := detached(ctx)
			defer cancel()
			if _, serr := c.h.svc.Stop(bg, c.session, runID); serr != nil {
				c.h.o.Logger.Warn("kortyx mcpserver: stopping the run of a cancelled call failed", "run", runID, "error", serr)
			}
		}
		return nil, ctx.Err()
	}
	f := publicFailure(err)
	if f.Category == "" || f.Code == contracts.CodeExecutionFailed {
		c.h.o.Logger.Error("kortyx mcpserver: the call failed", "session", c.session, "run", runID, "error", err)
	}
	return toolError(&mcp.CallToolResult{Meta: c.meta(runID, statusFailed)}, f), nil
}

// cancelled reports whether ctx ended by the client's notifications/cancelled: the SDK cancels
// the call's context without a cause then, and with the connection's error when it closes.
func cancelled(ctx context.Context) bool { return context.Cause(ctx) == context.Canceled }
