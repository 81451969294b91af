package a2aserver

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/stream"
)

// translator turns the chunks of a task's run, in order, into A2A events: text as artifact
// updates (one artifact per text segment or UI message), structured data as data-part artifact
// updates (one per structured stream), status, tool and limit chunks as working status updates, and
// each response's done as the final status update of that response (input-required with its
// questions, completed with the response's text, failed or canceled).
type translator struct {
	task      a2a.TaskID
	contextID string
	seen      map[a2a.ArtifactID]bool
	texts     []text // the current response's text, by part
	questions []contracts.Chunk
	failure   *contracts.Failure
	cancelled string // the cancellation's message, once cancelled
	// schema returns the response schema the session keeps for an open question (nil: none
	// known); nil when there is no session to ask.
	schema func(requestID string) json.RawMessage
}

func newTranslator(task a2a.TaskID, contextID string) *translator {
	return &translator{task: task, contextID: contextID, seen: map[a2a.ArtifactID]bool{}}
}

// events returns the A2A events of entry e.
func (t *translator) events(e stream.Entry) []a2a.Event {
	c := e.Chunk
	at := strconv.FormatInt(e.Offset, 10)
	switch c.Type {
	case contracts.ChunkTextDelta:
		id := a2a.ArtifactID("text-" + c.OpID + "/" + c.SegmentID) // a segment id is unique within its model call
		t.write(id, c.Delta)
		return []a2a.Event{t.artifact(id, "", a2a.TextPart{Text: c.Delta}, true)}
	case contracts.ChunkTextInvalidated:
		// The segment's model pass is retried under a new segment: its text is void.
		id := a2a.ArtifactID("text-" + c.OpID + "/" + c.SegmentID)
		t.texts = slices.DeleteFunc(t.texts, func(x text) bool { return x.part == id })
		if t.seen[id] {
			return []a2a.Event{t.artifact(id, "", a2a.TextPart{Text: ""}, false)}
		}
	case contracts.ChunkMessage:
		t.write(a2a.ArtifactID("message-"+at), c.Content)
		return []a2a.Event{t.artifact(a2a.ArtifactID("message-"+at), "", a2a.TextPart{Text: c.Content}, false)}
	case contracts.ChunkStructuredData:
		return []a2a.Event{t.artifact(a2a.ArtifactID("data-"+c.StreamID), c.DataType, a2a.DataPart{Data: chunkData(c)}, c.Kind != contracts.StructuredFinal)}
	case contracts.ChunkStatus:
		return []a2a.Event{t.status(a2a.TaskStateWorking, false, at, a2a.TextPart{Text: c.Message})}
	case contracts.ChunkToolCallStart, contracts.ChunkToolCallResult, contracts.ChunkToolCallError, contracts.ChunkLimitReached:
		return []a2a.Event{t.status(a2a.TaskStateWorking, false, at, a2a.DataPart{Data: chunkData(c)})}
	case contracts.ChunkInterrupt:
		t.questions = append(t.questions, c)
	case contracts.ChunkError:
		f := c.Failure
		if f == nil {
			f = &contracts.Failure{Version: 1, Code: contracts.CodeExecutionFailed, Category: "workflow", Message: c.Message}
		}
		if f.Code == contracts.CodeExecutionCancelled {
			t.cancelled = f.Message
		} else {
			t.failure = f
		}
	case contracts.ChunkCancelled:
		t.cancelled = c.Reason
		if t.cancelled == "" {
			t.cancelled = "The task was cancelled."
		}
	case contracts.ChunkDone:
		return []a2a.Event{t.done(at)}
	}
	return nil
}

// text is the text a part (an artifact) added to a response.
type text struct {
	part a2a.ArtifactID
	s    string
}

// write adds s to the response's text of part.
func (t *translator) write(part a2a.ArtifactID, s string) {
	if n := len(t.texts); n > 0 && t.texts[n-1].part == part {
		t.texts[n-1].s += s
		return
	}
	t.texts = append(t.texts, text{part, s})
}

// artifact is the update of artifact id with p: appended to what was sent before when
// appendable, else replacing it.
func (t *translator) artifact(id a2a.ArtifactID, name string, p a2a.Part, appendable bool) *a2a.TaskArtifactUpdateEvent {
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: t.task, ContextID: t.contextID, Append: appendable && t.seen[id],
		Artifact: &a2a.Artifact{ID: id, Name: name, Parts: a2a.ContentParts{p}}}
	t.seen[id] = true
	return ev
}

// status is a status update whose message (id <task>/<at>) has parts.
func (t *translator) status(state a2a.TaskState, final bool, at string, parts ...a2a.Part) *a2a.TaskStatusUpdateEvent {
	ev := &a2a.TaskStatusUpdateEvent{TaskID: t.task, ContextID: t.contextID, Final: final, Status: a2a.TaskStatus{State: state}}
	if len(parts) > 0 {
		ev.Status.Message = &a2a.Message{ID: string(t.task) + "/" + at, Role: a2a.MessageRoleAgent, TaskID: t.task, ContextID: t.contextID, Parts: parts}
	}
	return ev
}

// done is the final status update of the response that ends at offset at.
func (t *translator) done(at string) *a2a.TaskStatusUpdateEvent {
	defer func() { *t = translator{task: t.task, contextID: t.contextID, seen: t.seen, schema: t.schema} }()
	switch {
	case len(t.questions) > 0:
		var parts []a2a.Part
		for _, q := range t.questions {
			text, data := question(q)
			if s := t.schemaOf(q); s != nil {
				data["schema"] = s
			}
			parts = append(parts, a2a.TextPart{Text: text}, a2a.DataPart{Data: data})
		}
		return t.status(a2a.TaskStateInputRequired, true, at, parts...)
	case t.cancelled != "":
		return t.status(a2a.TaskStateCanceled, true, at, a2a.TextPart{Text: t.cancelled})
	case t.failure != nil:
		var data map[string]any
		b, _ := json.Marshal(t.failure)
		_ = json.Unmarshal(b, &data)
		return t.status(a2a.TaskStateFailed, true, at, a2a.TextPart{Text: t.failure.Message}, a2a.DataPart{Data: data})
	case len(t.texts) > 0:
		all := make([]string, len(t.texts))
		for i, x := range t.texts {
			all[i] = x.s
		}
		return t.status(a2a.TaskStateCompleted, true, at, a2a.TextPart{Text: strings.Join(all, "\n")})
	}
	return t.status(a2a.TaskStateCompleted, true, at)
}

// chunkData is chunk c as a JSON object, as the run published it.
func chunkData(c contracts.Chunk) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(c)
	_ = json.Unmarshal(b, &m)
	return m
}

// schemaOf is the response schema the session keeps for custom question q (nil: none known).
func (t *translator) schemaOf(q contracts.Chunk) json.RawMessage {
	var in contracts.InterruptInput
	if t.schema == nil || json.Unmarshal(q.Input, &in) != nil || in.Kind != contracts.InterruptCustom {
		return nil
	}
	return t.schema(q.RequestID)
}

// question is the text part and the data part of a question: its input (kind, question,
// options, ...) with its requestId and the JSON Schema of the answer.
func question(c contracts.Chunk) (string, map[string]any) {
	var in contracts.InterruptInput
	_ = json.Unmarshal(c.Input, &in)
	data := map[string]any{}
	_ = json.Unmarshal(c.Input, &data)
	data["requestId"] = c.RequestID
	ids := make([]string, 0, len(in.Options))
	for _, o := range in.Options {
		ids = append(ids, o.ID)
	}
	text := in.Question
	if schema := in.AnswerSchema(); schema != nil {
		var v any
		_ = json.Unmarshal(schema, &v)
		data["schema"] = v
	} else {
		data["schema"] = map[string]any{"type": "object"} // unless the session says it (translator.schemaOf)
	}
	if text == "" {
		text = "Please answer."
		if len(ids) > 0 {
			text = "Please choose one of: " + strings.Join(ids, ", ") + "."
		}
	}
	return text, data
}

// fold applies ev to task t: artifact updates to its artifacts, status updates to its status;
// a response's final status message joins the history, followed by the answers it got.
func fold(t *a2a.Task, ev a2a.Event, answers map[string]contracts.Response) {
	switch ev := ev.(type) {
	case *a2a.TaskArtifactUpdateEvent:
		for _, a := range t.Artifacts {
			if a.ID != ev.Artifact.ID {
				continue
			}
			if !ev.Append {
				a.Parts = ev.Artifact.Parts
				return
			}
			for _, p := range ev.Artifact.Parts {
				prev, ok1 := a.Parts[len(a.Parts)-1].(a2a.TextPart)
				next, ok2 := p.(a2a.TextPart)
				if ok1 && ok2 {
					a.Parts[len(a.Parts)-1] = a2a.TextPart{Text: prev.Text + next.Text}
				} else {
					a.Parts = append(a.Parts, p)
				}
			}
			return
		}
		a := *ev.Artifact
		a.Parts = append(a2a.ContentParts(nil), a.Parts...)
		t.Artifacts = append(t.Artifacts, &a)
	case *a2a.TaskStatusUpdateEvent:
		t.Status = ev.Status
		if !ev.Final || ev.Status.Message == nil {
			return
		}
		t.History = append(t.History, ev.Status.Message)
		for _, id := range requestIDs(ev.Status.Message) {
			if r, ok := answers[id]; ok {
				t.History = append(t.History, answerMessage(t.ID, t.ContextID, r))
			}
		}
	}
}

// requestIDs are the request ids of the questions of an input-required message.
func requestIDs(m *a2a.Message) []string {
	var out []string
	for _, p := range m.Parts {
		if d, ok := p.(a2a.DataPart); ok {
			if id, ok := d.Data["requestId"].(string); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// answeredAll reports whether every question of an input-required message has an answer.
func answeredAll(m *a2a.Message, answers map[string]contracts.Response) bool {
	ids := requestIDs(m)
	for _, id := range ids {
		if _, ok := answers[id]; !ok {
			return false
		}
	}
	return len(ids) > 0
}

// userMessage is the user message of a run input: a text part for a string, a data part for
// an object (other JSON as text).
func userMessage(task a2a.TaskID, contextID, name string, input json.RawMessage) *a2a.Message {
	m := &a2a.Message{ID: string(task) + "/" + name, Role: a2a.MessageRoleUser, TaskID: task, ContextID: contextID}
	var s string
	var obj map[string]any
	switch {
	case json.Unmarshal(input, &s) == nil:
		m.Parts = a2a.ContentParts{a2a.TextPart{Text: s}}
	case json.Unmarshal(input, &obj) == nil && obj != nil:
		m.Parts = a2a.ContentParts{a2a.DataPart{Data: obj}}
	default:
		m.Parts = a2a.ContentParts{a2a.TextPart{Text: string(input)}}
	}
	return m
}

// answerMessage is the user message of an answer (id <task>/answer/<requestId>): its text, its
// selected ids as a data part {"selected": [...]}, its value, or {"cancel": true}.
func answerMessage(task a2a.TaskID, contextID string, r contracts.Response) *a2a.Message {
	var input json.RawMessage
	switch {
	case r.Cancel:
		input = json.RawMessage(`{"cancel":true}`)
	case len(r.Selected) > 0:
		input, _ = json.Marshal(map[string]any{"selected": r.Selected})
	case len(r.Value) > 0:
		input = r.Value
	default:
		input, _ = json.Marshal(r.Text)
	}
	return userMessage(task, contextID, "answer/"+r.RequestID, input)
}
