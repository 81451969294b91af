// Package mcpserver is the MCP wire: an MCP server over streamable HTTP (the MCP go-sdk)
// whose tools are the agents of a registry. A tools/call is a turn of a Kortyx session (a new
// session per call unless its _meta names one, "kortyx/sessionId"); its result is the run's
// result (structuredContent when the agent has an object output schema); a question of the
// run is an elicitation/create request whose answer resumes the run; streamed text, status
// and tool calls are progress notifications when the call has a progress token, and log
// messages at the client's logging/setLevel; a client's notifications/cancelled cancels the run. A call naming a session whose question is open
// asks it again, from any API process: the session and the broker hold the state. With
// Options.StatelessRevision it also serves MCP 2026-07-28, which has no sessions: a question
// is an input-required result whose signed requestState (Options.RequestStateKey) the
// client's next call sends back with the answer. The mapping and what is not mapped:
// docs/mcp-server.md.
//
//	// svc: the program's one session service, with sessions.Options.Agents the agents to serve.
//	h, err := mcpserver.New(svc, mcpserver.Options{
//		Authorize: func(r *http.Request, a sessions.Access) error { return checkCaller(r, a) }})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/mcp", h)
package mcpserver
