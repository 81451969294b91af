// Package a2aserver serves Kortyx agents to other agents over A2A (the Agent2Agent protocol):
// version 1.0 over its JSON-RPC and HTTP+JSON bindings, and version 0.3 over JSON-RPC, side by
// side. The 0.3 binding is written on the types of the official Go SDK
// (github.com/a2aproject/a2a-go/a2a, v0.3); the 1.0 bindings are written from the
// specification with types of their own, converting at the edge to the same task logic. It is
// one wire over the session service (package sessions): it keeps no state of its own, so any
// API process answers any task, also after a restart.
//
// Every agent of the registry gets an agent card at /a2a/{agent}/.well-known/agent-card.json
// that serves both versions (0.3's url and preferredTransport, 1.0's supportedInterfaces; its
// skill is the agent's description; streaming on), a JSON-RPC endpoint at /a2a/{agent} that
// answers the methods of both (1.0: SendMessage, SendStreamingMessage, GetTask, CancelTask,
// SubscribeToTask; 0.3: message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe), and 1.0's HTTP+JSON routes under it (message:send, message:stream,
// tasks/{id}, tasks/{id}:cancel, tasks/{id}:subscribe). A task is one run of a session: the
// task id is the run id, the contextId the session id. A message starts a task (a prompt turn)
// or, with the taskId of a task in input-required, answers its question; getting a task
// rebuilds it from the run's Temporal history and its stream; cancelling stops the run;
// subscribing sends the task and follows its stream from the broker. A question of the agent
// is the input-required state, whose message carries the question as a text part and a data
// part with its kind, options and the JSON Schema of the answer.
//
//	// svc: the program's one session service, with sessions.Options.Agents the agents to serve.
//	h, err := a2aserver.New(svc, a2aserver.Options{
//		Authorize: func(r *http.Request, a sessions.Access) error { return checkCaller(r, a) }})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/a2a/", h)
//
// Errors carry the A2A codes (-32001 TaskNotFound, -32602 InvalidParams, ...; over HTTP+JSON
// the matching HTTP status) and the failure descriptor ({code, category, message, retryable,
// ...}) the other routes send: as the JSON-RPC error's data in 0.3, as a detail beside 1.0's
// ErrorInfo in 1.0. A safe message, never internal text. docs/a2a.md has the mapping.
package a2aserver
