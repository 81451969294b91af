package a2aserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/httpwire"
)

// The HTTP+JSON binding of A2A 1.0, under the agent's endpoint /a2a/{agent}:
//
//	POST /message:send         SendMessage
//	POST /message:stream       SendStreamingMessage (server-sent events)
//	GET  /tasks/{id}           GetTask (?historyLength=n)
//	POST /tasks/{id}:cancel    CancelTask
//	POST /tasks/{id}:subscribe SubscribeToTask (server-sent events; GET too)
//
// Errors are the HTTP status of the A2A error with a google.rpc.Status body {"error": {code,
// status, message, details}}; an error after the first event of a stream is an event named
// "error" holding that body.

// restRoute is the route of an HTTP+JSON request (its escaped path after /a2a/{agent}/) and
// the agent it names; "" when the path is no route of the binding.
func restRoute(r *http.Request) (agent, route string) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/a2a/")
	if !ok {
		return "", ""
	}
	agent, route, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(agent, "%") {
		return "", ""
	}
	switch {
	case route == "message:send", route == "message:stream", route == "extendedAgentCard", route == "tasks", strings.HasPrefix(route, "tasks/"):
		return agent, route
	}
	return "", ""
}

// rest serves one request of the HTTP+JSON binding to agent's endpoint.
func (h *Handler) rest(w http.ResponseWriter, r *http.Request, agent, route string) {
	c := &call{h: h, r: r, agent: agent}
	if err := checkVersion(r); err != nil {
		h.restFail(w, r, err)
		return
	}
	task, action, sub := "", "", ""
	if rest, ok := strings.CutPrefix(route, "tasks/"); ok {
		rest, sub, _ = strings.Cut(rest, "/")
		var err error
		if task, err = url.PathUnescape(rest); err != nil {
			task = rest
		}
		if i := strings.LastIndexByte(task, ':'); i >= 0 {
			task, action = task[:i], task[i+1:]
		}
		route = "tasks/{id}"
	}
	switch {
	case route == "message:send" && h.method(w, r, http.MethodPost):
		h.restSend(w, r, c)
	case route == "message:stream" && h.method(w, r, http.MethodPost):
		h.restStream(w, r, c, func() error {
			p, err := h.restBody(w, r)
			if err == nil {
				err = c.streamMessage(p)
			}
			return err
		})
	case route == "extendedAgentCard" && h.method(w, r, http.MethodGet):
		h.restFail(w, r, rpcFail(codeNoExtendedCard, contracts.CodeInvalidRequest, "This agent has no extended agent card: its public card is all there is."))
	case route == "tasks" && h.method(w, r, http.MethodGet):
		h.restFail(w, r, rpcFail(codeUnsupported, contracts.CodeInvalidRequest, "Listing tasks is not supported: keep the ids of the tasks you start (a task is a run of a session)."))
	case route != "tasks/{id}":
	case sub == "pushNotificationConfigs" || strings.HasPrefix(sub, "pushNotificationConfigs/"):
		h.restFail(w, r, rpcFail(codePushNotSupp, contracts.CodeInvalidRequest, "Push notifications are not supported: follow the task with message:stream or tasks/{id}:subscribe."))
	case sub != "" || (action != "" && action != "cancel" && action != "subscribe"):
		h.restFail(w, r, rpcFail(codeMethodNotFound, contracts.CodeNotFound, "No A2A route at %s.", r.URL.Path))
	case action == "" && h.method(w, r, http.MethodGet):
		h.restGet(w, r, c, task)
	case action == "cancel" && h.method(w, r, http.MethodPost):
		t, err := c.cancel(a2a.TaskID(task))
		h.restReply(w, r, t, err)
	case action == "subscribe" && h.method(w, r, http.MethodPost, http.MethodGet):
		h.restStream(w, r, c, func() error { return c.resubscribe(a2a.TaskID(task), true) })
	}
}

// method reports whether r uses one of the methods; else it answers 405 with Allow.
func (h *Handler) method(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	err := rpcFail(codeInvalidRequest, contracts.CodeInvalidRequest, "Use %s.", strings.Join(methods, " or "))
	f := h.fault(r, "", err)
	f.http, f.status = http.StatusMethodNotAllowed, statusNames[http.StatusMethodNotAllowed]
	h.restWrite(w, f)
	return false
}

// restBody reads a SendMessageRequest body as the send parameters of 0.3.
func (h *Handler) restBody(w http.ResponseWriter, r *http.Request) (*a2a.MessageSendParams, error) {
	body, err := httpwire.ReadBody(w, r, h.o.MaxBodyBytes)
	var req v1SendRequest
	switch {
	case err != nil:
		return nil, rpcFail(codeInvalidRequest, contracts.CodeInvalidRequest, "%s", contracts.FailureOf(err).Message)
	case !json.Valid(body):
		return nil, rpcFail(codeParse, contracts.CodeInvalidRequest, "The request body is not JSON.")
	case json.Unmarshal(body, &req) != nil:
		return nil, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "The request body is not a SendMessageRequest.")
	}
	return req.params()
}

// restSend serves message:send.
func (h *Handler) restSend(w http.ResponseWriter, r *http.Request, c *call) {
	p, err := h.restBody(w, r)
	var res a2a.SendMessageResult
	if err == nil {
		res, err = c.send(p)
	}
	if err != nil {
		h.restFail(w, r, err)
		return
	}
	t, _ := res.(*a2a.Task)
	h.restJSON(w, v1Event{Task: toV1Task(t)})
}

// restGet serves tasks/{id}.
func (h *Handler) restGet(w http.ResponseWriter, r *http.Request, c *call, task string) {
	var n *int
	if s := r.URL.Query().Get("historyLength"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			h.restFail(w, r, rpcFail(codeInvalidParams, contracts.CodeInvalidRequest, "historyLength must be an integer, not %q.", s))
			return
		}
		n = &v
	}
	t, err := c.get(a2a.TaskID(task), n)
	h.restReply(w, r, t, err)
}

// restReply writes task t, or err.
func (h *Handler) restReply(w http.ResponseWriter, r *http.Request, t *a2a.Task, err error) {
	if err != nil {
		h.restFail(w, r, err)
		return
	}
	h.restJSON(w, toV1Task(t))
}

func (h *Handler) restJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// restFail writes err as an HTTP+JSON error (nothing when the client left).
func (h *Handler) restFail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	h.restWrite(w, h.fault(r, r.Method+" "+r.URL.Path, err))
}

func (h *Handler) restWrite(w http.ResponseWriter, f v1Fault) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.http)
	_ = json.NewEncoder(w).Encode(f.restBody())
}

// restStream serves a stream route: each event a StreamResponse. A failure before the first
// event is a plain HTTP+JSON error; one after it an "error" event.
func (h *Handler) restStream(w http.ResponseWriter, r *http.Request, c *call, run func() error) {
	out := h.events(w, c, func(ev a2a.Event) any { return toV1Event(ev) })
	err := run()
	switch {
	case err == nil:
	case !out.opened():
		h.restFail(w, r, err)
	case out.open() == nil && r.Context().Err() == nil:
		_ = out.send("error", h.fault(r, r.Method+" "+r.URL.Path, err).restBody())
	}
}
