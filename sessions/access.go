package sessions

// Access is what a wire asks its authorization hook to allow before it calls the service for a
// request. Every wire (packages chat, aisdk, mcpserver, a2aserver and web) takes the same hook,
//
//	Authorize func(r *http.Request, a sessions.Access) error
//
// which refuses with a *contracts.Error of CodeUnauthorized or CodeForbidden; another
// *contracts.Error is that failure (TEMPORAL_UNAVAILABLE when an ownership lookup could not
// reach Temporal), and an error without a code refuses with FORBIDDEN. Each wire maps the code
// to its protocol's error shape. A hook is
// required unless the wire's options say AllowUnauthenticated (development: app.ServeHTTP).
type Access struct {
	// Wire names the protocol: "chat" (the chat and checkpoint routes), "aisdk", "mcp", "a2a",
	// "agui"; "web" for the studio (package web).
	Wire string
	// Action is what the request does.
	Action Action
	// SessionID is the session the request reaches ("" for a listing).
	SessionID string
	// Workflow is the agent a start runs ("" for the other actions).
	Workflow string
	// RunID is the run a request reads or answers when it names a run rather than a session
	// (the studio's run routes, package web; "" otherwise).
	RunID string
	// NewSessionID is, for ActionFork, the new session's id when the client picks it: check
	// that it is not someone else's ("" when the service picks it).
	NewSessionID string
}

// Action is what a request does ([Access].Action).
type Action string

// The actions of a request.
const (
	// ActionStart starts a new turn; [Access].Workflow names its agent ("" for the session's).
	ActionStart Action = "start"
	// ActionAnswer answers an open question.
	ActionAnswer Action = "answer"
	// ActionStop cancels the active turn.
	ActionStop Action = "stop"
	// ActionRead changes nothing: a reattach, a task's state, a checkpoint, a listing.
	ActionRead Action = "read"
	// ActionRollback makes a checkpoint the session's head.
	ActionRollback Action = "rollback"
	// ActionFork copies a checkpoint into a new session (SessionID is the source's).
	ActionFork Action = "fork"
)
