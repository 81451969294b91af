package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/google/uuid"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/kortyx-go/kortyx/stream"
)

// cancelWait bounds how long tasks/cancel waits for the run to end.
const cancelWait = 30 * time.Second

// metaBusy is the message metadata key of a busy policy: what to do when the task's (or the
// context's) run is still working (docs/steering.md).
const metaBusy = "kortyx/busy"

// call is one JSON-RPC request to an agent's endpoint.
type call struct {
	// steer is the request of a steering message (its response is read from where the run
	// took it in).
	steer *sessions.TurnRequest
	h     *Handler
	r     *http.Request
	agent string
	// emit writes one event of a stream (nil: a keep-alive); nil when not streaming.
	emit func(a2a.Event) error
	idle time.Duration
}

func (c *call) ctx() context.Context { return c.r.Context() }

// send serves message/send: the task once its response ended (or at once, with blocking
// false).
func (c *call) send(p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	ts, from, answered, _, err := c.begin(p)
	if err != nil {
		return nil, err
	}
	if p.Config == nil || p.Config.Blocking == nil || *p.Config.Blocking {
		if err := c.follow(ts, from, answered, nil, !ts.Reattached); err != nil {
			return nil, err
		}
	}
	var n *int
	if p.Config != nil {
		n = p.Config.HistoryLength
	}
	return c.get(a2a.TaskID(ts.RunID), n)
}

// streamMessage serves message/stream: the task (a new one) or a working status (an answer),
// then the events of the response.
func (c *call) streamMessage(p *a2a.MessageSendParams) error {
	ts, from, answered, input, err := c.begin(p)
	if err != nil {
		return err
	}
	id := a2a.TaskID(ts.RunID)
	var first a2a.Event = &a2a.TaskStatusUpdateEvent{TaskID: id, ContextID: ts.SessionID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	if answered == "" && ts.Kind != sessions.BusySteer {
		first = &a2a.Task{ID: id, ContextID: ts.SessionID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
			History: []*a2a.Message{userMessage(id, ts.SessionID, "prompt", input)}}
	}
	if err := c.emit(first); err != nil {
		return err
	}
	return c.follow(ts, from, answered, c.translator(id, ts.SessionID), !ts.Reattached)
}

// translator is a translator of task id in session that shows a custom question's response
// schema as the session keeps it (asked once, when a question needs it).
func (c *call) translator(id a2a.TaskID, session string) *translator {
	tr := newTranslator(id, session)
	var schemas map[string]json.RawMessage
	asked := false
	tr.schema = func(requestID string) json.RawMessage {
		if !asked {
			asked = true
			if v, err := c.h.svc.View(c.ctx(), session); err == nil {
				schemas = v.Schemas
			}
		}
		return schemas[requestID]
	}
	return tr
}

// begin starts the turn a message asks for: a prompt turn of the endpoint's agent (no taskId),
// or the answer to the open question of the task it names. It returns the turn, where its
// response begins, the answered question's token ("" for a prompt) and the prompt's input.
func (c *call) begin(p *a2a.MessageSendParams) (sessions.TurnStarted, int64, string, json.RawMessage, error) {
	var ts sessions.TurnStarted
	m := p.Message
	if m == nil || m.Role != a2a.MessageRoleUser {
		return ts, 0, "", nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, `params.message must be a message of role "user".`)
	}
	text, data, err := content(m)
	if err != nil {
		return ts, 0, "", nil, err
	}
	turnID := ""
	if len(m.ID) <= 128 && contracts.CheckID("messageId", m.ID) == nil {
		turnID = m.ID // a message sent again (same messageId) gets its turn back, not a second run
	}
	busy, _ := m.Metadata[metaBusy].(string)
	if err := sessions.CheckBusy(busy); err != nil {
		return ts, 0, "", nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "metadata %q must be reject, enqueue, interrupt or steer.", metaBusy)
	}
	if busy == "" {
		busy = c.h.o.Busy
	}
	if m.TaskID == "" {
		session := m.ContextID
		if session == "" {
			session = "session-" + uuid.NewString()
		}
		input, _ := json.Marshal(text)
		if data != nil {
			input, _ = json.Marshal(data)
		}
		if err := c.h.authorize(c.r, sessions.Access{Action: sessions.ActionStart, SessionID: session, Workflow: c.agent}); err != nil {
			return ts, 0, "", nil, err
		}
		tr := sessions.TurnRequest{ClientTurnID: turnID, Workflow: c.agent, Input: input, Busy: busy}
		if c.h.o.Owner != nil {
			tr.Owner = c.h.o.Owner(c.r)
		}
		ts, err = c.h.svc.Start(c.ctx(), session, tr)
		if err == nil && ts.Kind == sessions.BusySteer {
			c.steer = &tr
		}
		return ts, 0, "", input, err
	}
	rec, err := c.task(m.TaskID, sessions.ActionAnswer)
	if err != nil {
		return ts, 0, "", nil, err
	}
	if m.ContextID != "" && m.ContextID != rec.session {
		return ts, 0, "", nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "Task %s belongs to context %s, not %s.", m.TaskID, rec.session, m.ContextID)
	}
	if rec.closed != "" {
		return ts, 0, "", nil, endedFail("Task %s is %s and cannot be continued: send the message without taskId to start a new task in the same context.", m.TaskID, rec.closed)
	}
	view, err := c.h.svc.RunView(c.ctx(), string(m.TaskID))
	if err != nil {
		return ts, 0, "", nil, err
	}
	if view.Pending == nil {
		if busy == "" || busy == sessions.BusyReject {
			return ts, 0, "", nil, rpcFail(codeInvalidRequest, contracts.CodeSessionBusy,
				"Task %s is working and asks nothing yet: answer it when it is input-required, or send the message with metadata {%q: \"steer\"} (or enqueue, interrupt).", m.TaskID, metaBusy)
		}
		// A message on a working task, with a busy policy (docs/steering.md): steer adds it to
		// the task's run; enqueue and interrupt make it a task of its own in the same context.
		input, _ := json.Marshal(text)
		if data != nil {
			input, _ = json.Marshal(data)
		}
		if err := c.h.authorize(c.r, sessions.Access{Action: sessions.ActionStart, SessionID: rec.session, Workflow: c.agent}); err != nil {
			return ts, 0, "", nil, err
		}
		tr := sessions.TurnRequest{ClientTurnID: turnID, Workflow: c.agent, Input: input, Busy: busy}
		if c.h.o.Owner != nil {
			tr.Owner = c.h.o.Owner(c.r)
		}
		ts, err = c.h.svc.Start(c.ctx(), rec.session, tr)
		if err == nil && ts.Kind == sessions.BusySteer {
			c.steer = &tr
		}
		return ts, 0, "", input, err
	}
	answer := contracts.Response{Token: view.Pending.Token, RequestID: view.Pending.RequestID, Text: text}
	if data != nil {
		answer.Text = ""
		if sel, ok := selected(data); ok {
			answer.Selected = sel
		} else {
			answer.Value, _ = json.Marshal(data)
		}
	}
	// A reader that leaves does not stop the task (it resubscribes).
	ts, err = c.h.svc.Answer(c.ctx(), rec.session, answer, sessions.AnswerOptions{ClientTurnID: turnID, Continue: true})
	return ts, ts.Begin, answer.Token, nil, err
}

// content is what a message says: its text parts joined by new lines, or its one data part.
// File parts are refused (UnsupportedContentType).
func content(m *a2a.Message) (string, map[string]any, error) {
	var texts []string
	var data map[string]any
	for _, p := range m.Parts {
		switch p := p.(type) {
		case a2a.TextPart:
			texts = append(texts, p.Text)
		case a2a.DataPart:
			if data != nil {
				return "", nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "Send at most one data part in a message.")
			}
			data = p.Data
			if data == nil {
				data = map[string]any{}
			}
		default:
			return "", nil, rpcFail(codeContentType, contracts.CodeInvalidRequest, "File parts are not accepted: send text or one data part.")
		}
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	switch {
	case data != nil && text != "":
		return "", nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "Send either text or one data part, not both.")
	case data == nil && text == "":
		return "", nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "The message has no text and no data part.")
	}
	return text, data, nil
}

// selected reads a data part {"selected": id or [ids]}: the answer to a choice question.
func selected(data map[string]any) ([]string, bool) {
	v, ok := data["selected"]
	if !ok || len(data) != 1 {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		return []string{v}, true
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			str, ok := s.(string)
			if !ok {
				return nil, false
			}
			out = append(out, str)
		}
		return out, true
	}
	return nil, false
}

// follow reads the response of ts from offset from to its done; with tr, it emits the events
// of each chunk (and keep-alives). started: this request started or answered the turn.
func (c *call) follow(ts sessions.TurnStarted, from int64, answered string, tr *translator, started bool) error {
	var rd *sessions.Reader
	var err error
	if c.steer != nil && ts.Kind == sessions.BusySteer {
		// A steering message's response: the task's run's, from where it took the message in.
		rd, err = c.h.svc.FollowSteer(c.ctx(), ts.SessionID, ts, *c.steer, sessions.FollowOptions{Idle: c.idle})
	} else {
		rd, err = c.h.svc.Follow(c.ctx(), ts.SessionID, ts, from, sessions.FollowOptions{Idle: c.idle, Answered: answered, Started: started})
	}
	for err == nil {
		var e stream.Entry
		e, err = rd.Next(c.ctx())
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, stream.ErrIdle):
			err = c.emit(nil)
		case err == nil && tr != nil:
			for _, ev := range tr.events(e) {
				if err = c.emit(ev); err != nil {
					break
				}
			}
		}
	}
	return err
}

// get serves tasks/get.
func (c *call) get(id a2a.TaskID, historyLength *int) (*a2a.Task, error) {
	rec, err := c.task(id, sessions.ActionRead)
	if err != nil {
		return nil, err
	}
	t, _, _, err := c.build(id, rec)
	if err == nil && historyLength != nil && *historyLength < len(t.History) {
		t.History = t.History[len(t.History)-max(*historyLength, 0):]
	}
	return t, err
}

// cancel serves tasks/cancel: a task that waits for an answer is answered with a cancel; a
// working one is stopped (its run cancelled). It returns the task once its run has ended.
func (c *call) cancel(id a2a.TaskID) (*a2a.Task, error) {
	rec, err := c.task(id, sessions.ActionStop)
	if err != nil {
		return nil, err
	}
	if rec.closed != "" {
		return nil, rpcFail(codeNotCancelable, contracts.CodeInvalidRequest, "Task %s is already %s.", id, rec.closed)
	}
	view, err := c.h.svc.RunView(c.ctx(), string(id))
	if err != nil {
		return nil, err
	}
	if p := view.Pending; p != nil {
		_, err = c.h.svc.Answer(c.ctx(), rec.session, contracts.Response{Token: p.Token, RequestID: p.RequestID, Cancel: true}, sessions.AnswerOptions{})
	} else {
		var stopped string
		if stopped, err = c.h.svc.Stop(c.ctx(), rec.session, string(id)); err == nil && stopped == "" {
			err = rpcFail(codeNotCancelable, contracts.CodeInvalidRequest, "Task %s is not the active turn of its context: it cannot be cancelled from here.", id)
		}
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.ctx(), cancelWait)
	defer cancel()
	_ = c.h.svc.WaitRun(ctx, string(id)) // its end: the cancellation
	if rec, err = c.reread(id); err != nil {
		return nil, err
	}
	t, _, _, err := c.build(id, rec)
	return t, err
}

// resubscribe serves tasks/resubscribe (and SubscribeToTask of A2A 1.0, with ended true): the
// task as it is, then, while a response is being written, its events from the broker until its
// end. With ended, a task that has ended is UnsupportedOperation (A2A 1.0: there is nothing to
// subscribe to).
func (c *call) resubscribe(id a2a.TaskID, ended bool) error {
	rec, err := c.task(id, sessions.ActionRead)
	if err != nil {
		return err
	}
	t, tr, last, err := c.build(id, rec)
	if err != nil {
		return err
	}
	if ended && t.Status.State.Terminal() {
		return &codedError{code: codeUnsupported, err: contracts.Errorf(contracts.CodeInvalidRequest,
			"Task %s is %s: there is nothing to subscribe to; read it with GetTask.", id, t.Status.State)}
	}
	if err := c.emit(t); err != nil || t.Status.State != a2a.TaskStateWorking {
		return err
	}
	v, err := c.h.svc.View(c.ctx(), rec.session)
	if err != nil || v.Active == nil || v.Active.RunID != string(id) {
		return err // no turn of this task is running: nothing more comes without a message
	}
	return c.follow(sessions.TurnStarted{SessionID: rec.session, RunID: string(id), TurnIndex: v.Active.TurnIndex}, last, "", tr, false)
}

// record is what a task's run history says: its session, its prompt, the answers it got (by
// request id) and, once it ended, its final state.
type record struct {
	session string
	input   json.RawMessage
	answers map[string]contracts.Response
	closed  a2a.TaskState
}

// task opens task id for action: it reads the start of its run (its session and agent), asks
// the authorization hook about action on that session, then reads the rest of the run's
// history, in one pass ([sessions.Service.TurnRun]). An id that is not a run of a session of
// the endpoint's agent is TaskNotFound, once the hook was asked with no session: a refused
// caller learns nothing of which runs exist, and nothing past the run's start is read for it.
func (c *call) task(id a2a.TaskID, action sessions.Action) (record, error) {
	return c.load(id, func(session string) error {
		return c.h.authorize(c.r, sessions.Access{Action: action, SessionID: session})
	})
}

// reread is the record of task id again (after task authorized it).
func (c *call) reread(id a2a.TaskID) (record, error) {
	return c.load(id, func(string) error { return nil })
}

// load reads task id's run into its record, asking allow about its session once the run's
// start is read (about "" when there is no such task of this agent, or the run could not be
// read, before it says so).
func (c *call) load(id a2a.TaskID, allow func(session string) error) (record, error) {
	rec := record{answers: map[string]contracts.Response{}}
	notFound := rpcFail(codeTaskNotFound, contracts.CodeNotFound, "Task %q not found.", id)
	if id == "" || contracts.CheckID("id", string(id)) != nil {
		return rec, firstErr(allow(""), notFound)
	}
	asked := false
	run, err := c.h.svc.TurnRun(c.ctx(), string(id), func(run sessions.TurnRun) error {
		if run.Workflow != c.agent {
			return errOtherAgent // the run of a session turn of another agent
		}
		asked = true
		return allow(run.SessionID)
	})
	switch {
	case asked && err != nil:
		return rec, err
	case errors.Is(err, errOtherAgent) || contracts.CodeOf(err) == contracts.CodeNotFound:
		return rec, firstErr(allow(""), notFound)
	case err != nil:
		return rec, firstErr(allow(""), err)
	}
	rec.session, rec.input, rec.answers = run.SessionID, run.Input, run.Answers
	switch run.End {
	case contracts.StatusCompleted:
		rec.closed = a2a.TaskStateCompleted
	case contracts.StatusCancelled:
		rec.closed = a2a.TaskStateCanceled
	case contracts.StatusFailed:
		rec.closed = a2a.TaskStateFailed
	}
	return rec, nil
}

// errOtherAgent ends the read of a run that belongs to another agent's endpoint.
var errOtherAgent = errors.New("the run of another agent")

// firstErr is the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// build is task id as its record and its run's stream say: the history (the prompt, each
// response's closing message, the answers, the steering messages taken in), the artifacts and
// the state. It also returns the
// translator that read the stream and the offset it read up to.
func (c *call) build(id a2a.TaskID, rec record) (*a2a.Task, *translator, int64, error) {
	entries, err := c.h.svc.Broker().Read(c.ctx(), string(id), 0, 0)
	if err != nil && contracts.CodeOf(err) != contracts.CodeStreamGone {
		return nil, nil, 0, err
	}
	tr := c.translator(id, rec.session)
	t := &a2a.Task{ID: id, ContextID: rec.session, Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
		History: []*a2a.Message{userMessage(id, rec.session, "prompt", rec.input)}}
	var last int64
	ended := false // the stream's last chunk ended a response
	for _, e := range entries {
		last, ended = e.Offset, e.Chunk.Type == contracts.ChunkDone
		if st := e.Chunk.Steer; e.Chunk.Type == contracts.ChunkStatus && st != nil {
			// A steering message the run took in (docs/steering.md): the user's, in the history.
			b, _ := json.Marshal(st.Content)
			t.History = append(t.History, userMessage(id, rec.session, "steer/"+st.ID, b))
		}
		for _, ev := range tr.events(e) {
			fold(t, ev, rec.answers)
		}
	}
	switch {
	case rec.closed != "" && t.Status.State != rec.closed:
		t.Status = a2a.TaskStatus{State: rec.closed}
	case rec.closed != "":
	case ended && t.Status.State == a2a.TaskStateInputRequired && answeredAll(t.Status.Message, rec.answers):
		t.Status = a2a.TaskStatus{State: a2a.TaskStateWorking} // answered: the next response is being written
	case !ended:
		t.Status.State = a2a.TaskStateWorking
		if st, err := c.h.svc.RunState(c.ctx(), string(id)); err == nil && st.Phase == "waiting" && len(entries) == 0 {
			t.Status = a2a.TaskStatus{State: a2a.TaskStateInputRequired} // its stream is gone
		}
	}
	return t, tr, last, nil
}
