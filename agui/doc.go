// Package agui is the wire of AG-UI 1.0, the event protocol that LangGraph, Google ADK, Mastra,
// Pydantic AI and others speak to their UIs (`@ag-ui/client`'s HttpAgent): a RunAgentInput
// POSTed to the agent's route runs a turn of the session named by its threadId, and the
// response is the turn's chunks as AG-UI events (server-sent events "data: <event>"), from
// RUN_STARTED to RUN_FINISHED or RUN_ERROR.
//
// A question of the run ends the response with RUN_FINISHED whose outcome is an interrupt
// carrying the question (its id is the question's request id and resume token); the next run's
// resume entry answers it, through [sessions.Service.Answer], so the same question can be
// answered from any wire and only the first answer counts. The runId names the turn: the same
// RunAgentInput sent again (a dropped connection) reads the same turn's response again instead
// of running it twice. docs/agui.md has the routes, the mapping table and the errors.
//
// Like every wire, it only translates: it takes the one session service of the process and
// holds no state a second API process would need.
//
//	h, err := agui.New(svc, agui.Options{DefaultAgent: "support",
//		Authorize: func(r *http.Request, a sessions.Access) error { return nil }})
//	if err != nil {
//		return err
//	}
//	mux.Handle("POST /api/agui/{agent}", h)
package agui
