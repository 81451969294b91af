package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
)

// CheckpointRequest is a checkpoint route request (spec F6.10), discriminated by Action:
// list {sessionId}, get {sessionId?, checkpointId}, rollback {sessionId?, checkpointId},
// fork {sessionId?, checkpointId, newSessionId?}.
//
// Kortyx's client sends get, rollback and fork without sessionId: the route then finds the
// checkpoint's session (from the checkpoint id, which carries it; for ids made before they did,
// the index, then CheckpointOptions.ResolveSession), sets SessionID and
// SessionResolved and authorizes the request like any other (see [CheckpointHandler]).
type CheckpointRequest struct {
	Action       string `json:"action"`
	SessionID    string `json:"sessionId"`
	CheckpointID string `json:"checkpointId,omitempty"`
	NewSessionID string `json:"newSessionId,omitempty"`
	// SessionResolved is set when the request named no session: SessionID was found from the
	// checkpoint id (the client did not claim it).
	SessionResolved bool `json:"-"`
}

// Forked is passed to CheckpointOptions.OnForked after a successful fork.
type Forked struct {
	Request            *http.Request
	SourceSessionID    string
	NewSessionID       string
	SourceCheckpointID string
	NewCheckpointID    string
	// Reissued are the source checkpoint's open questions with the tokens and request ids they
	// have in the new session: rewrite copied transcript rows with them.
	Reissued []sessions.ReissuedRequest
}

// RolledBack is passed to CheckpointOptions.OnRolledBack after a successful rollback.
type RolledBack struct {
	Request                        *http.Request
	SessionID                      string
	HeadCheckpointID               string
	InvalidatedStructuredStreamIDs []string
}

// CheckpointOptions configure [NewCheckpointHandler].
type CheckpointOptions struct {
	// Authorize runs before any work (required unless AllowUnauthenticated), with what the
	// request does ([sessions.Access], Wire "chat": ActionRead for get and list,
	// ActionRollback, ActionFork with the NewSessionID the client picked; SessionID the
	// request's session, or the one its checkpoint id names when the request names none).
	Authorize            func(r *http.Request, a sessions.Access) error
	AllowUnauthenticated bool
	OnForked             func(ctx context.Context, ev Forked) error
	OnRolledBack         func(ctx context.Context, ev RolledBack) error
	OnLifecycleError     func(ev LifecycleError)
	MaxBodyBytes         int64
	Logger               *slog.Logger
	// index is where the sessions of checkpoints whose ids do not carry their session (ids
	// made before they did) are looked up for requests without sessionId (nil:
	// the process-wide index, which the chat handlers of the process fill).
	index *sessionIndex // tests set it
	// ResolveSession, when set, finds the session of a checkpoint the index does not know (an
	// application that keeps checkpoint ids in its transcript knows it); return "" or a
	// NOT_FOUND error when there is none.
	ResolveSession func(ctx context.Context, r *http.Request, checkpointID string) (string, error)
	// CORS, when set, answers preflight requests and adds the CORS headers for the origins it
	// allows (off by default).
	CORS *CORS
}

// CheckpointHandler is the checkpoint route.
type CheckpointHandler struct {
	o     CheckpointOptions
	svc   *sessions.Service
	index *sessionIndex
}

// NewCheckpointHandler checks the options and returns the checkpoint route over svc, the
// session service the program's wires share.
func NewCheckpointHandler(svc *sessions.Service, o CheckpointOptions) (*CheckpointHandler, error) {
	switch {
	case svc == nil:
		return nil, errors.New("kortyx checkpoints: the session service is required")
	case o.Authorize == nil && !o.AllowUnauthenticated:
		return nil, errors.New("kortyx checkpoints: CheckpointOptions.Authorize is required (or set AllowUnauthenticated for development)")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 64 << 10
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &CheckpointHandler{o: o, svc: svc, index: o.index.orDefault()}, nil
}

func (h *CheckpointHandler) parse(r *http.Request) (*CheckpointRequest, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.o.MaxBodyBytes))
	if err != nil {
		return nil, invalid("Request body is too large or could not be read.")
	}
	if !json.Valid(body) {
		return nil, invalid("Request body is not valid JSON.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req CheckpointRequest
	if err := dec.Decode(&req); err != nil {
		return nil, invalid("Request body is invalid: %v", err)
	}
	req.SessionID, req.CheckpointID, req.NewSessionID = strings.TrimSpace(req.SessionID), strings.TrimSpace(req.CheckpointID), strings.TrimSpace(req.NewSessionID)
	var issues []contracts.Issue
	for _, f := range []struct{ name, v string }{{"sessionId", req.SessionID}, {"checkpointId", req.CheckpointID}, {"newSessionId", req.NewSessionID}} {
		if f.v != "" {
			if err := contracts.CheckID(f.name, f.v); err != nil {
				issues = append(issues, err.Issues...)
			}
		}
	}
	need := func(field, v string) {
		if v == "" {
			issues = append(issues, contracts.Issue{Path: []any{field}, Code: "required", Message: field + " is required for " + req.Action})
		}
	}
	switch req.Action {
	case "list":
	case "get", "rollback":
		need("checkpointId", req.CheckpointID)
	case "fork":
		need("checkpointId", req.CheckpointID)
	default:
		issues = append(issues, contracts.Issue{Path: []any{"action"}, Code: "invalid_enum", Message: "action must be list, get, rollback or fork"})
	}
	if req.Action == "list" {
		need("sessionId", req.SessionID)
	}
	if req.Action != "fork" && req.NewSessionID != "" {
		issues = append(issues, contracts.Issue{Path: []any{"newSessionId"}, Code: "unrecognized_keys", Message: "newSessionId is only for fork"})
	}
	if len(issues) > 0 {
		return nil, &contracts.Error{Code: contracts.CodeInvalidRequest, Message: "Request body is invalid.", Issues: issues}
	}
	return &req, nil
}

// resolve finds the session of a request that names only a checkpoint.
func (h *CheckpointHandler) resolve(r *http.Request, req *CheckpointRequest) error {
	if req.SessionID != "" {
		return nil
	}
	session, ok := sessions.CheckpointSession(req.CheckpointID) // cp-<uuid>@<sessionId>
	if !ok {
		session, ok = h.index.session(req.CheckpointID) // an older cp-<uuid> this process saw
	}
	if !ok && h.o.ResolveSession != nil {
		s, err := h.o.ResolveSession(r.Context(), r, req.CheckpointID)
		switch {
		case contracts.CodeOf(err) == contracts.CodeNotFound:
		case err != nil:
			return err
		}
		session = s
	}
	if session == "" {
		return &contracts.Error{Code: contracts.CodeNotFound,
			Message: fmt.Sprintf("Checkpoint %q is not known to this server: send its sessionId with it.", req.CheckpointID),
			Details: map[string]any{"checkpointId": req.CheckpointID}}
	}
	if err := contracts.CheckID("sessionId", session); err != nil {
		return err
	}
	req.SessionID, req.SessionResolved = session, true
	return nil
}

// ServeHTTP serves one checkpoint request.
//
// Every answer has Kortyx's shapes, whether or not the request named its session: list a list
// of [sessions.CheckpointSummary] ([] for a session that does not exist, as Kortyx's store
// answers), get a [sessions.Checkpoint] (or null), rollback a [sessions.RollbackResult], fork
// a [sessions.ForkResult], except that every createdAt is a number (milliseconds since the
// epoch) and rollback's head is the head checkpoint's id (a string; its summary is in
// headCheckpoint).
func (h *CheckpointHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.o.CORS.Serve(w, r, http.MethodPost) {
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, h.o.Logger)
		return
	}
	req, err := h.parse(r)
	if err != nil {
		fail(w, r, h.o.Logger, err)
		return
	}
	if err := h.resolve(r, req); err != nil {
		fail(w, r, h.o.Logger, err)
		return
	}
	if h.o.Authorize != nil {
		if err := h.o.Authorize(r, sessions.Access{Wire: wire, Action: checkpointAction(req.Action), SessionID: req.SessionID, NewSessionID: req.NewSessionID}); err != nil {
			fail(w, r, h.o.Logger, authError(err))
			return
		}
	}
	out, callback, err := h.act(r.Context(), r, req)
	if err != nil {
		fail(w, r, h.o.Logger, err)
		return
	}
	if callback != nil {
		callback()
	}
	h.learn(req, out)
	out = kortyxResult(out)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// learn records the sessions of the checkpoints an answer names.
func (h *CheckpointHandler) learn(req *CheckpointRequest, out any) {
	switch v := out.(type) {
	case []sessions.CheckpointSummary:
		for _, c := range v {
			h.index.put(c.ID, c.SessionID)
		}
	case sessions.Checkpoint:
		h.index.put(v.ID, v.SessionID)
	case sessions.RollbackResult:
		h.index.put(v.Head.ID, v.SessionID)
	case sessions.ForkResult:
		h.index.put(v.Checkpoint.ID, v.SessionID)
	}
}

// kortyxResult rewrites an answer into Kortyx's shapes: createdAt in milliseconds, rollback's
// head as the checkpoint id.
func kortyxResult(out any) any {
	b, err := json.Marshal(out)
	if err != nil {
		return out
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return out
	}
	v = millis(v)
	if rb, ok := out.(sessions.RollbackResult); ok {
		if m, ok := v.(map[string]any); ok {
			m["headCheckpoint"] = m["head"]
			m["head"] = rb.Head.ID
		}
	}
	return v
}

// millis replaces every RFC 3339 createdAt in v with milliseconds since the epoch.
func millis(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "createdAt" {
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
					x[k] = t.UnixMilli()
				}
				continue
			}
			x[k] = millis(e)
		}
	case []any:
		for i, e := range x {
			x[i] = millis(e)
		}
	}
	return v
}

// act carries out the request's action and returns its answer, and the lifecycle callback to run
// after a successful rollback or fork.
func (h *CheckpointHandler) act(ctx context.Context, r *http.Request, req *CheckpointRequest) (any, func(), error) {
	bg := context.WithoutCancel(r.Context())
	switch req.Action {
	case "list":
		v, err := h.svc.View(ctx, req.SessionID)
		switch {
		case contracts.CodeOf(err) == contracts.CodeInvalidSession: // no such session (its id was checked)
			return []sessions.CheckpointSummary{}, nil, nil
		case err != nil:
			return nil, nil, err
		}
		return v.Checkpoints, nil, nil
	case "get":
		cp, err := h.svc.Checkpoint(ctx, req.SessionID, req.CheckpointID)
		switch {
		case contracts.CodeOf(err) == contracts.CodeNotFound:
			return nil, nil, nil
		case contracts.CodeOf(err) == contracts.CodeInvalidSession && req.SessionResolved:
			return nil, nil, nil // the session its id names does not exist
		case err != nil:
			return nil, nil, err
		}
		return cp, nil, nil
	case "rollback":
		res, err := h.svc.Rollback(ctx, req.SessionID, req.CheckpointID)
		if err != nil {
			return nil, nil, h.unknown(req, err)
		}
		if h.o.OnRolledBack == nil {
			return res, nil, nil
		}
		return res, func() {
			h.callback(phaseRolledBack, func() error {
				return h.o.OnRolledBack(bg, RolledBack{Request: r, SessionID: req.SessionID,
					HeadCheckpointID: res.Head.ID, InvalidatedStructuredStreamIDs: res.InvalidatedStructuredStreamIDs})
			})
		}, nil
	case "fork":
		res, err := h.svc.Fork(ctx, req.SessionID, sessions.ForkRequest{CheckpointID: req.CheckpointID, NewSessionID: req.NewSessionID})
		if err != nil {
			return nil, nil, h.unknown(req, err)
		}
		if h.o.OnForked == nil {
			return res, nil, nil
		}
		return res, func() {
			h.callback(phaseForked, func() error {
				return h.o.OnForked(bg, Forked{Request: r, SourceSessionID: req.SessionID, NewSessionID: res.SessionID,
					SourceCheckpointID: req.CheckpointID, NewCheckpointID: res.Checkpoint.ID, Reissued: res.Reissued})
			})
		}, nil
	}
	return nil, nil, nil
}

// unknown turns the INVALID_SESSION of a session that the checkpoint id named (the client
// did not) into the checkpoint's NOT_FOUND.
func (h *CheckpointHandler) unknown(req *CheckpointRequest, err error) error {
	if req.SessionResolved && contracts.CodeOf(err) == contracts.CodeInvalidSession {
		return &contracts.Error{Code: contracts.CodeNotFound, Message: fmt.Sprintf("Checkpoint %q not found.", req.CheckpointID),
			Details: map[string]any{"checkpointId": req.CheckpointID}}
	}
	return err
}

// callback runs a lifecycle callback; its failure reaches OnLifecycleError and never the response.
func (h *CheckpointHandler) callback(phase string, fn func() error) {
	if err := runCallback(phase, fn); err != nil {
		reportCallbackError(h.o.OnLifecycleError, h.o.Logger, LifecycleError{Phase: phase, Err: err})
	}
}

// checkpointAction is what a checkpoint request does, for Authorize.
func checkpointAction(action string) sessions.Action {
	switch action {
	case "rollback":
		return sessions.ActionRollback
	case "fork":
		return sessions.ActionFork
	}
	return sessions.ActionRead
}
