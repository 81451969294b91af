package a2aserver

import (
	"encoding/json"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/kortyx-go/kortyx/contracts"
)

// v1Response is a JSON-RPC response of A2A 1.0.
type v1Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *v1RPCError     `json:"error,omitempty"`
}

// rpcV1 serves a JSON-RPC request of A2A 1.0 (failed: the error of reading it, before its
// method). The methods call the same task logic as those of 0.3 and translate at the edge.
func (h *Handler) rpcV1(w http.ResponseWriter, r *http.Request, req rpcRequest, c *call, failed error) {
	err := failed
	if err == nil && v1Methods[req.Method] {
		err = checkVersion(r)
	}
	if err != nil {
		h.replyV1(w, r, req, nil, err)
		return
	}
	var res any
	switch req.Method {
	case v1Stream, v1Subscribe:
		h.streamV1(w, r, req, c)
		return
	case v1Send:
		res, err = with(req.Params, func(p *v1SendRequest) (any, error) { return c.sendV1(p) })
	case v1Get:
		res, err = with(req.Params, func(p *v1TaskRequest) (any, error) {
			t, err := c.get(a2a.TaskID(p.ID), p.HistoryLength)
			if err != nil {
				return nil, err
			}
			return toV1Task(t), nil
		})
	case v1Cancel:
		res, err = with(req.Params, func(p *v1TaskRequest) (any, error) {
			t, err := c.cancel(a2a.TaskID(p.ID))
			if err != nil {
				return nil, err
			}
			return toV1Task(t), nil
		})
	case v1List:
		err = rpcFail(codeUnsupported, contracts.CodeInvalidRequest, "Listing tasks is not supported: keep the ids of the tasks you start (a task is a run of a session).")
	case v1ExtendedCard:
		err = rpcFail(codeNoExtendedCard, contracts.CodeInvalidRequest, "This agent has no extended agent card: its public card is all there is.")
	case v1CreatePush, v1GetPush, v1ListPush, v1DeletePush:
		err = rpcFail(codePushNotSupp, contracts.CodeInvalidRequest, "Push notifications are not supported: follow the task with SendStreamingMessage or SubscribeToTask.")
	default:
		err = rpcFail(codeMethodNotFound, contracts.CodeInvalidRequest, "Unknown method %q.", req.Method)
	}
	h.replyV1(w, r, req, res, err)
}

// sendV1 serves SendMessage: the SendMessageResponse holding the task.
func (c *call) sendV1(p *v1SendRequest) (any, error) {
	params, err := p.params()
	if err != nil {
		return nil, err
	}
	res, err := c.send(params)
	if err != nil {
		return nil, err
	}
	t, _ := res.(*a2a.Task)
	return v1Event{Task: toV1Task(t)}, nil
}

// replyV1 writes a JSON-RPC response of A2A 1.0: result, or err as its error (HTTP 401 or 403
// for a refused authorization, else 200).
func (h *Handler) replyV1(w http.ResponseWriter, r *http.Request, req rpcRequest, result any, err error) {
	if err != nil && r.Context().Err() != nil {
		return // the client left
	}
	resp := v1Response{JSONRPC: "2.0", ID: req.ID, Result: result}
	status := http.StatusOK
	if err != nil {
		f := h.fault(r, req.Method, err)
		resp.Result, resp.Error = nil, f.rpc()
		if f.f.Code == contracts.CodeUnauthorized || f.f.Code == contracts.CodeForbidden {
			status = f.http
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// streamV1 serves SendStreamingMessage and SubscribeToTask as server-sent events, each a
// JSON-RPC response whose result is a StreamResponse. A failure before the first event is a
// plain JSON-RPC error response (application/json; HTTP 401 or 403 for a refusal, else 200),
// as A2A 1.0 answers an error at once; one after it is an error response in the stream.
func (h *Handler) streamV1(w http.ResponseWriter, r *http.Request, req rpcRequest, c *call) {
	out := h.events(w, c, func(ev a2a.Event) any { return v1Response{JSONRPC: "2.0", ID: req.ID, Result: toV1Event(ev)} })
	var err error
	if req.Method == v1Stream {
		_, err = with(req.Params, func(p *v1SendRequest) (any, error) {
			params, err := p.params()
			if err != nil {
				return nil, err
			}
			return nil, c.streamMessage(params)
		})
	} else {
		_, err = with(req.Params, func(p *v1TaskRequest) (any, error) { return nil, c.resubscribe(a2a.TaskID(p.ID), true) })
	}
	switch {
	case err == nil:
	case !out.opened():
		h.replyV1(w, r, req, nil, err)
	case out.open() == nil && r.Context().Err() == nil:
		_ = out.send("", v1Response{JSONRPC: "2.0", ID: req.ID, Error: h.fault(r, req.Method, err).rpc()})
	}
}
