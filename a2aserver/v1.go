package a2aserver

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// A2A 1.0 beside 0.3. The task logic (package sessions calls, the run's history and stream)
// is written once, on the Go SDK's types of 0.3; the 1.0 bindings convert their requests to
// those types and the results and events back, at the edge. The 1.0 wire is written from the
// specification (a2a.proto of lf.a2a.v1 and its ProtoJSON form): no 1.0 Go SDK is used.

// v1Version is the protocolVersion of the 1.0 interfaces of a card.
const v1Version = "1.0"

// The protocol bindings a card names.
const (
	bindingJSONRPC = "JSONRPC"
	bindingREST    = "HTTP+JSON"
)

// versionHeader is the request header in which an A2A 1.0 client names its protocol version.
const versionHeader = "A2A-Version"

// The JSON-RPC method names of A2A 1.0.
const (
	v1Send         = "SendMessage"
	v1Stream       = "SendStreamingMessage"
	v1Get          = "GetTask"
	v1List         = "ListTasks"
	v1Cancel       = "CancelTask"
	v1Subscribe    = "SubscribeToTask"
	v1CreatePush   = "CreateTaskPushNotificationConfig"
	v1GetPush      = "GetTaskPushNotificationConfig"
	v1ListPush     = "ListTaskPushNotificationConfigs"
	v1DeletePush   = "DeleteTaskPushNotificationConfig"
	v1ExtendedCard = "GetExtendedAgentCard"
)

// v1Methods are the JSON-RPC methods of A2A 1.0.
var v1Methods = map[string]bool{v1Send: true, v1Stream: true, v1Get: true, v1List: true, v1Cancel: true, v1Subscribe: true,
	v1CreatePush: true, v1GetPush: true, v1ListPush: true, v1DeletePush: true, v1ExtendedCard: true}

// wantsV1 reports whether r names A2A 1.x in its A2A-Version header.
func wantsV1(r *http.Request) bool {
	major, _, _ := strings.Cut(strings.TrimSpace(r.Header.Get(versionHeader)), ".")
	return major == "1"
}

// checkVersion refuses a request of a 1.0 method or route whose A2A-Version header names
// another version than 1.0 (none is taken as 1.0: the method or route is of 1.0 alone).
func checkVersion(r *http.Request) error {
	switch v := strings.TrimSpace(r.Header.Get(versionHeader)); v {
	case "", "1", "1.0":
		return nil
	default:
		return rpcFail(codeVersion, contracts.CodeInvalidRequest,
			"A2A-Version %q is not supported by this method: it is of A2A 1.0 (this endpoint also serves 0.3's message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe).", v)
	}
}

// The A2A 1.0 wire types (ProtoJSON of lf.a2a.v1): enums are their names, a part is one of
// text or data, events are wrapped in a StreamResponse. Only what this wire sends is here.
type (
	v1Task struct {
		ID        string       `json:"id"`
		ContextID string       `json:"contextId"`
		Status    v1Status     `json:"status"`
		Artifacts []v1Artifact `json:"artifacts,omitempty"`
		History   []v1Message  `json:"history,omitempty"`
	}
	v1Status struct {
		State   string     `json:"state"`
		Message *v1Message `json:"message,omitempty"`
	}
	v1Message struct {
		MessageID string   `json:"messageId"`
		ContextID string   `json:"contextId,omitempty"`
		TaskID    string   `json:"taskId,omitempty"`
		Role      string   `json:"role"`
		Parts     []v1Part `json:"parts"`
	}
	v1Part struct {
		Text *string `json:"text,omitempty"`
		Data any     `json:"data,omitempty"`
	}
	v1Artifact struct {
		ArtifactID string   `json:"artifactId"`
		Name       string   `json:"name,omitempty"`
		Parts      []v1Part `json:"parts"`
	}
	v1StatusUpdate struct {
		TaskID    string   `json:"taskId"`
		ContextID string   `json:"contextId"`
		Status    v1Status `json:"status"`
	}
	v1ArtifactUpdate struct {
		TaskID    string     `json:"taskId"`
		ContextID string     `json:"contextId"`
		Artifact  v1Artifact `json:"artifact"`
		Append    bool       `json:"append,omitempty"`
	}
	// v1Event is a StreamResponse (and, with a task, a SendMessageResponse).
	v1Event struct {
		Task           *v1Task           `json:"task,omitempty"`
		Message        *v1Message        `json:"message,omitempty"`
		StatusUpdate   *v1StatusUpdate   `json:"statusUpdate,omitempty"`
		ArtifactUpdate *v1ArtifactUpdate `json:"artifactUpdate,omitempty"`
	}
)

// v1States are the TaskState names of A2A 1.0 by the state names of 0.3.
var v1States = map[a2a.TaskState]string{
	a2a.TaskStateSubmitted: "TASK_STATE_SUBMITTED", a2a.TaskStateWorking: "TASK_STATE_WORKING",
	a2a.TaskStateCompleted: "TASK_STATE_COMPLETED", a2a.TaskStateFailed: "TASK_STATE_FAILED",
	a2a.TaskStateCanceled: "TASK_STATE_CANCELED", a2a.TaskStateInputRequired: "TASK_STATE_INPUT_REQUIRED",
	a2a.TaskStateRejected: "TASK_STATE_REJECTED", a2a.TaskStateAuthRequired: "TASK_STATE_AUTH_REQUIRED",
}

// The Role names of A2A 1.0.
const (
	roleUser  = "ROLE_USER"
	roleAgent = "ROLE_AGENT"
)

func toV1State(s a2a.TaskState) string {
	if v, ok := v1States[s]; ok {
		return v
	}
	return "TASK_STATE_UNSPECIFIED"
}

func toV1Parts(ps a2a.ContentParts) []v1Part {
	out := make([]v1Part, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, v1Part{Text: &p.Text})
		case a2a.DataPart:
			data := p.Data
			if data == nil {
				data = map[string]any{}
			}
			out = append(out, v1Part{Data: data})
		}
	}
	return out
}

func toV1Message(m *a2a.Message) *v1Message {
	if m == nil {
		return nil
	}
	role := roleAgent
	if m.Role == a2a.MessageRoleUser {
		role = roleUser
	}
	return &v1Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: role, Parts: toV1Parts(m.Parts)}
}

func toV1Status(s a2a.TaskStatus) v1Status {
	return v1Status{State: toV1State(s.State), Message: toV1Message(s.Message)}
}

func toV1Artifact(a *a2a.Artifact) v1Artifact {
	return v1Artifact{ArtifactID: string(a.ID), Name: a.Name, Parts: toV1Parts(a.Parts)}
}

func toV1Task(t *a2a.Task) *v1Task {
	out := &v1Task{ID: string(t.ID), ContextID: t.ContextID, Status: toV1Status(t.Status)}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, toV1Artifact(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, *toV1Message(m))
	}
	return out
}

// toV1Event is the StreamResponse of an event. A status update has no "final" in 1.0: the
// stream ends when the task stops (input-required or ended).
func toV1Event(ev a2a.Event) v1Event {
	switch ev := ev.(type) {
	case *a2a.Task:
		return v1Event{Task: toV1Task(ev)}
	case *a2a.Message:
		return v1Event{Message: toV1Message(ev)}
	case *a2a.TaskStatusUpdateEvent:
		return v1Event{StatusUpdate: &v1StatusUpdate{TaskID: string(ev.TaskID), ContextID: ev.ContextID, Status: toV1Status(ev.Status)}}
	case *a2a.TaskArtifactUpdateEvent:
		return v1Event{ArtifactUpdate: &v1ArtifactUpdate{TaskID: string(ev.TaskID), ContextID: ev.ContextID, Artifact: toV1Artifact(ev.Artifact), Append: ev.Append}}
	}
	return v1Event{}
}

// v1SendRequest is a SendMessageRequest of A2A 1.0 as this wire reads it.
type v1SendRequest struct {
	Message       *v1InMessage `json:"message"`
	Configuration *struct {
		HistoryLength              *int            `json:"historyLength"`
		ReturnImmediately          bool            `json:"returnImmediately"`
		Blocking                   *bool           `json:"blocking"` // the name of 1.0's drafts
		TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig"`
	} `json:"configuration"`
}

// v1InMessage is a client's message: its parts hold one of text, data, url or raw.
type v1InMessage struct {
	MessageID string `json:"messageId"`
	ContextID string `json:"contextId"`
	TaskID    string `json:"taskId"`
	Role      string `json:"role"`
	Parts     []struct {
		Text *string         `json:"text"`
		Data json.RawMessage `json:"data"`
		URL  *string         `json:"url"`
		Raw  *string         `json:"raw"`
	} `json:"parts"`
}

// v1TaskRequest is a GetTaskRequest, CancelTaskRequest or SubscribeToTaskRequest.
type v1TaskRequest struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

// params are the send parameters of 0.3 that p asks for: text parts as text parts, a data
// part (a JSON object) as a data part; a file part (url or raw) is ContentTypeNotSupported.
func (p *v1SendRequest) params() (*a2a.MessageSendParams, error) {
	m := p.Message
	switch {
	case m == nil:
		return nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "params.message is required.")
	case m.Role != roleUser:
		return nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, `params.message.role must be "ROLE_USER".`)
	}
	if c := p.Configuration; c != nil && len(c.TaskPushNotificationConfig) > 0 && string(c.TaskPushNotificationConfig) != "null" {
		return nil, rpcFail(codePushNotSupp, contracts.CodeInvalidRequest, "Push notifications are not supported: follow the task with SendStreamingMessage or SubscribeToTask.")
	}
	out := &a2a.MessageSendParams{Message: &a2a.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Role: a2a.MessageRoleUser}}
	for _, part := range m.Parts {
		switch {
		case part.Text != nil:
			out.Message.Parts = append(out.Message.Parts, a2a.TextPart{Text: *part.Text})
		case len(part.Data) > 0 && string(part.Data) != "null":
			var data map[string]any
			if json.Unmarshal(part.Data, &data) != nil {
				return nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "A data part must hold a JSON object.")
			}
			out.Message.Parts = append(out.Message.Parts, a2a.DataPart{Data: data})
		case part.URL != nil || part.Raw != nil:
			return nil, rpcFail(codeContentType, contracts.CodeInvalidRequest, "File parts are not accepted: send text or one data part.")
		default:
			return nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "Each part needs text or data.")
		}
	}
	if c := p.Configuration; c != nil {
		blocking := !c.ReturnImmediately && (c.Blocking == nil || *c.Blocking)
		out.Config = &a2a.MessageSendConfig{Blocking: &blocking, HistoryLength: c.HistoryLength}
	}
	return out, nil
}

// A2A 1.0 errors: a JSON-RPC code, or an HTTP status with a google.rpc.Status body, both with
// details: a google.rpc.ErrorInfo naming the A2A error (its reason, domain a2a-protocol.org),
// and Kortyx's failure descriptor.

// errorInfoType and failureType are the "@type" of the two details of an error.
const (
	errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"
	failureType   = "github.com/kortyx-go/kortyx/contracts.Failure"
)

// v1ErrorKinds are the ErrorInfo reason, HTTP status and status name of the A2A errors, by
// JSON-RPC code (HTTP 0: the failure's own status, [httpwire.Status]).
var v1ErrorKinds = map[int]struct {
	reason string
	http   int
	status string
}{
	codeTaskNotFound:   {"TASK_NOT_FOUND", http.StatusNotFound, "NOT_FOUND"},
	codeNotCancelable:  {"TASK_NOT_CANCELABLE", http.StatusConflict, "FAILED_PRECONDITION"},
	codePushNotSupp:    {"PUSH_NOTIFICATION_NOT_SUPPORTED", http.StatusBadRequest, "UNIMPLEMENTED"},
	codeUnsupported:    {"UNSUPPORTED_OPERATION", http.StatusBadRequest, "UNIMPLEMENTED"},
	codeContentType:    {"CONTENT_TYPE_NOT_SUPPORTED", http.StatusUnsupportedMediaType, "INVALID_ARGUMENT"},
	codeNoExtendedCard: {"EXTENDED_AGENT_CARD_NOT_CONFIGURED", http.StatusBadRequest, "FAILED_PRECONDITION"},
	codeVersion:        {"VERSION_NOT_SUPPORTED", http.StatusBadRequest, "UNIMPLEMENTED"},
	codeInvalidParams:  {"INVALID_PARAMS", 0, ""},
	codeMethodNotFound: {"", http.StatusNotFound, "NOT_FOUND"},
}

// statusNames are the google.rpc status names of the other HTTP statuses.
var statusNames = map[int]string{
	http.StatusBadRequest: "INVALID_ARGUMENT", http.StatusUnauthorized: "UNAUTHENTICATED", http.StatusForbidden: "PERMISSION_DENIED",
	http.StatusNotFound: "NOT_FOUND", http.StatusMethodNotAllowed: "UNIMPLEMENTED", http.StatusConflict: "FAILED_PRECONDITION",
	http.StatusGone: "NOT_FOUND", http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT", http.StatusUnsupportedMediaType: "INVALID_ARGUMENT",
	http.StatusBadGateway: "UNAVAILABLE", http.StatusServiceUnavailable: "UNAVAILABLE",
}

// v1Fault is an error as A2A 1.0 answers it.
type v1Fault struct {
	code    int // JSON-RPC
	http    int
	status  string
	details []any
	f       contracts.Failure
}

// fault is err as A2A 1.0 answers it (an internal failure is logged).
func (h *Handler) fault(r *http.Request, method string, err error) v1Fault {
	code, f := h.codeOf(r, method, err, true)
	kind := v1ErrorKinds[code]
	out := v1Fault{code: code, http: kind.http, status: kind.status, f: f}
	if out.http == 0 {
		out.http = httpwire.Status(f)
	}
	if out.status == "" {
		out.status = statusNames[out.http]
		if out.status == "" {
			out.status = "INTERNAL"
		}
	}
	if kind.reason != "" {
		out.details = append(out.details, map[string]any{"@type": errorInfoType, "reason": kind.reason, "domain": "a2a-protocol.org"})
	}
	detail := map[string]any{}
	b, _ := json.Marshal(f)
	_ = json.Unmarshal(b, &detail)
	detail["@type"] = failureType
	out.details = append(out.details, detail)
	return out
}

// v1RPCError is the JSON-RPC error of a fault: its data the details.
type v1RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []any  `json:"data"`
}

func (f v1Fault) rpc() *v1RPCError {
	return &v1RPCError{Code: f.code, Message: f.f.Message, Data: f.details}
}

// restBody is the HTTP+JSON body of a fault: a google.rpc.Status under "error".
func (f v1Fault) restBody() map[string]any {
	return map[string]any{"error": map[string]any{"code": f.http, "status": f.status, "message": f.f.Message, "details": f.details}}
}
