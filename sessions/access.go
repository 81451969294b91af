package sessions

// Access is what a wire asks its authorization hook to allow before it calls the service for a
// request. The protocol wires (packages aisdk, mcpserver and a2aserver) take the same hook,
//
//	Authorize func(r *http.Request, a sessions.Access) error
//
// which refuses with a *contracts.Error of CodeUnauthorized or CodeForbidden; another
// *contracts.Error is that failure (TEMPORAL_UNAVAILABLE when an ownership lookup could not
// reach Temporal), and an error without a code refuses with FORBIDDEN. Each wire maps the code
// to its protocol's error shape. A hook is
// required unless the wire's options say AllowUnauthenticated (development: app.ServeHTTP).
type Access struct {
	// Wire names the protocol: "aisdk", "mcp" or "a2a"; "web" for the studio (package web).
	Wire string
	// Action is what the request does: "start" (a new turn; Workflow names its agent),
	// "answer" (an open question), "stop" (cancels the active turn), "read" (a reattach, a
	// task's state, a listing: nothing changes).
	Action string
	// SessionID is the session the request reaches ("" for a listing).
	SessionID string
	// Workflow is the agent a start runs ("" for the other actions).
	Workflow string
	// RunID is the run a request reads or answers when it names a run rather than a session
	// (the studio's run routes, package web; "" otherwise).
	RunID string
}
