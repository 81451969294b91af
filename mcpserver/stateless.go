package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/kortyx-go/kortyx/contracts"
	"github.com/kortyx-go/kortyx/sessions"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessRevision is the first MCP revision without sessions: every request carries its
// protocol version and client capabilities in _meta, and a question is an input-required
// result (multi round-trip requests, SEP-2322) instead of a server-to-client request.
const statelessRevision = "2026-07-28"

// metaProtocolVersion is the _meta key of a request's protocol version (2026-07-28 and later).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// minStateKey is the shortest Options.RequestStateKey New accepts (the HMAC-SHA256 key size).
const minStateKey = 32

// requestState is what the requestState of an input-required result stands for: the open
// question of a run that the client's next call answers. It binds the state to the tool, the
// session, the question (its request id and a digest of its resume token) and, with
// Options.Owner, the caller; the session says whether the question is still open.
type requestState struct {
	Tool    string `json:"tool"`
	Session string `json:"session"`
	Run     string `json:"run,omitempty"`
	Request string `json:"request"` // the question's request id
	Token   string `json:"token"`   // tokenDigest of the question's resume token
	Owner   string `json:"owner,omitempty"`
}

// stateVersion prefixes a sealed state (and is part of what its MAC covers).
const stateVersion = "k1"

// sealState signs s with key: "k1.<payload>.<mac>", both base64url, the MAC an HMAC-SHA256 of
// "k1." and the payload.
func sealState(key []byte, s requestState) string {
	payload, _ := json.Marshal(s) // strings only: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return stateVersion + "." + p + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, p))
}

func stateMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateVersion + "." + payload))
	return m.Sum(nil)
}

// errForgedState is the refusal of a requestState that this server did not sign for the tool
// and caller of the call (JSON-RPC -32602, data code INVALID_RESUME).
var errForgedState = contracts.Errorf(contracts.CodeInvalidResume,
	"The requestState was not issued by this server for this tool and caller, or was changed: call the tool again without inputResponses and requestState.")

// errStaleState is the refusal of a requestState whose question is no longer open.
var errStaleState = contracts.Errorf(contracts.CodeInvalidResume,
	"The question this requestState answers is no longer open (it was answered, or its run ended): call the tool again without requestState; with _meta kortyx/sessionId the call asks the session's open question, if there is one.")

// openState verifies raw with key and returns its state, or errForgedState when the MAC does
// not match or the state is not one of tool's or owner's.
func openState(key []byte, raw, tool, owner string) (requestState, error) {
	version, rest, _ := strings.Cut(raw, ".")
	payload, mac, ok := strings.Cut(rest, ".")
	if version != stateVersion || !ok {
		return requestState{}, errForgedState
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, stateMAC(key, payload)) {
		return requestState{}, errForgedState
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var s requestState
	if err != nil || json.Unmarshal(b, &s) != nil || s.Tool != tool || s.Owner != owner || s.Session == "" {
		return requestState{}, errForgedState
	}
	return s, nil
}

// tokenDigest is the digest of a resume token that a requestState carries: the token itself
// stays on the server.
func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// stateless reports whether the call is of protocol 2026-07-28 or later.
func (c *call) stateless() bool {
	return c.h.stateless != nil && c.req.ProtocolVersion() >= statelessRevision
}

// inputKey is the key of a question's input request: the question's id (the interrupt's ID,
// "name" for hooks.AskText(ctx, "name", ...)), else its request id, else "answer".
func inputKey(q contracts.PendingRequest) string {
	switch {
	case q.Input.ID != "":
		return q.Input.ID
	case q.RequestID != "":
		return q.RequestID
	}
	return "answer"
}

// inputRequired is the input-required result that asks question q of turn ts (2026-07-28):
// an elicitation/create input request keyed by the question's id ([inputKey]), and the signed
// request state the client sends back with its answer. A client without the elicitation
// capability gets the "waiting" result instead. refusal, when set, is the failure of the
// answer that was refused (kortyx/failure).
func (c *call) inputRequired(ctx context.Context, ts sessions.TurnStarted, q contracts.PendingRequest, refusal error) *mcp.CallToolResult {
	caps := c.req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return c.waiting(ts.RunID, q)
	}
	params, _ := elicitation(q.Input, c.schema(ctx, q))
	params.Meta = mcp.Meta{metaSession: c.session, metaRequest: q.RequestID}
	if ts.RunID != "" {
		params.Meta[metaRun] = ts.RunID
	}
	st := requestState{Tool: c.t.def.ID, Session: c.session, Run: ts.RunID, Request: q.RequestID, Token: tokenDigest(q.Token), Owner: c.owner}
	res := &mcp.CallToolResult{Meta: c.meta(ts.RunID, statusWaiting), InputRequests: mcp.InputRequestMap{inputKey(q): params},
		RequestState: sealState(c.h.key, st)}
	res.Meta[metaRequest] = q.RequestID
	if refusal != nil {
		res.Meta[metaFailure] = publicFailure(refusal)
	}
	return res
}

// schema is the response schema of custom question q (nil for another kind, or when the
// session does not say).
func (c *call) schema(ctx context.Context, q contracts.PendingRequest) json.RawMessage {
	if q.Input.Kind != contracts.InterruptCustom {
		return nil
	}
	v, err := c.h.svc.View(ctx, c.session)
	if err != nil {
		return nil
	}
	return v.Schemas[q.RequestID]
}

// answerState answers the question of a call's requestState raw with the call's input
// response, and returns the rest of the run (2026-07-28). A state this server did not sign
// for the tool and caller, or whose question is no longer open, is refused with JSON-RPC
// -32602; an input response that is missing, or whose content does not match the question's
// form, gets the question again (with the refusal in kortyx/failure).
func (c *call) answerState(ctx context.Context, hdr http.Header, raw string) (*mcp.CallToolResult, error) {
	st, err := openState(c.h.key, raw, c.t.def.ID, c.owner)
	if err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidParams, err)
	}
	c.session = st.Session
	if err := c.h.access(ctx, hdr, sessions.Access{Wire: "mcp", Action: sessions.ActionAnswer, SessionID: st.Session}); err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidRequest, err)
	}
	v, err := c.h.svc.View(ctx, st.Session)
	switch {
	case contracts.CodeOf(err) == contracts.CodeInvalidSession:
		return nil, protocolError(jsonrpc.CodeInvalidParams, errStaleState)
	case err != nil:
		return c.failed(ctx, st.Run, lookupError(err))
	}
	var q contracts.PendingRequest
	for _, p := range v.Pending {
		if p.RequestID == st.Request && tokenDigest(p.Token) == st.Token {
			q = p
		}
	}
	if q.Token == "" {
		return nil, protocolError(jsonrpc.CodeInvalidParams, errStaleState)
	}
	ts := sessions.TurnStarted{SessionID: st.Session, RunID: st.Run}
	res, ok := c.req.Params.InputResponses[inputKey(q)].(*mcp.ElicitResult)
	if !ok {
		// Not answered (or not by an elicitation result): ask again, as the spec says.
		return c.inputRequired(ctx, ts, q, nil), nil
	}
	params, form := elicitation(q.Input, v.Schemas[q.RequestID])
	answer := contracts.Response{Token: q.Token, RequestID: q.RequestID}
	switch res.Action {
	case "accept":
		if err := checkContent(params.RequestedSchema, res.Content); err != nil {
			return c.inputRequired(ctx, ts, q, err), nil
		}
		answer = responseOf(q.Input, answer, res.Content, form)
	case "decline":
		if approval(q.Input) {
			answer.Selected = []string{"deny"}
		} else {
			answer.Cancel = true
		}
	default: // "cancel": dismissed, the question stays open
		return c.waiting(st.Run, q), nil
	}
	next, err := c.h.svc.Answer(ctx, st.Session, answer, sessions.AnswerOptions{})
	if err != nil {
		if ctx.Err() == nil && contracts.CodeOf(err) == contracts.CodeInvalidResponse {
			// The session refused the answer and wrote nothing: the run still waits.
			return c.inputRequired(ctx, ts, q, err), nil
		}
		return c.failed(ctx, st.Run, err)
	}
	return c.follow(ctx, next, next.Begin, answer.Token)
}

// checkContent checks an accepted elicitation's content against the form it answers (the
// go-sdk checks it for an elicitation/create request, not for an input response): nil, or the
// INVALID_RESPONSE error with the issues.
func checkContent(form any, content map[string]any) error {
	doc, err := json.Marshal(form)
	if err != nil {
		return nil
	}
	schema, err := contracts.CompileSchema(doc)
	if err != nil {
		return nil // a form the server built; the session checks the answer itself
	}
	value, _ := json.Marshal(content)
	if bytes.Equal(value, []byte("null")) {
		value = []byte("{}")
	}
	if issues := schema.ValidateJSON(value); len(issues) > 0 {
		return &contracts.Error{Code: contracts.CodeInvalidResponse, Message: "The answer does not match the question's form.", Issues: issues}
	}
	return nil
}
