// Package a2aserver serves Kortyx agents to other agents over A2A (the Agent2Agent protocol,
// version 0.3, JSON-RPC binding), on the types of the official Go SDK
// (github.com/a2aproject/a2a-go/a2a). It is one wire over the session service (package
// sessions): it keeps no state of its own, so any API process answers any task, also after a
// restart.
//
// Every agent of the registry gets an agent card at /a2a/{agent}/.well-known/agent-card.json
// (its skill is the agent's description; streaming on) and a JSON-RPC endpoint at
// /a2a/{agent}. A task is one run of a session: the task id is the run id, the contextId the
// session id. message/send and message/stream start a task (a prompt turn) or, with the
// taskId of a task in input-required, answer its question; tasks/get rebuilds the task from
// the run's Temporal history and its stream; tasks/cancel stops the run; tasks/resubscribe
// sends the task and follows its stream from the broker. A question of the agent is the
// input-required state, whose message carries the question as a text part and a data part
// with its kind, options and the JSON Schema of the answer.
//
//	h, err := a2aserver.New(a2aserver.Options{Client: c, Broker: broker, Registry: reg,
//		Authorize: func(r *http.Request, a sessions.Access) error { return checkCaller(r, a) }})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/a2a/", h)
//
// Errors are JSON-RPC errors with the A2A codes (-32001 TaskNotFound, -32602 InvalidParams,
// ...) whose data is the failure descriptor ({code, category, message, retryable, ...}) the
// other routes send: a safe message, never internal text. docs/a2a.md has the mapping.
package a2aserver
