// Package chat serves the Kortyx chat and checkpoint routes over Temporal: [Handler] takes a
// chat request (POST, JSON), starts or reattaches to the session's turn and streams the turn's
// response as server-sent events (or buffered JSON); [CheckpointHandler] lists, gets, rolls back
// and forks a session's checkpoints. Both call only client-side Temporal APIs and read the runs'
// streams from the workers' [stream.Broker].
//
// Put the handlers behind your own authentication and authorize every request against the
// session it names (Options.Authorize):
//
//	svc, err := sessions.New(sessions.Options{Client: c, Broker: broker}) // one for every wire
//	if err != nil {
//		return err
//	}
//	h, err := chat.NewHandler(svc, chat.Options{
//		DefaultWorkflow: "support",
//		Authorize: func(r *http.Request, a sessions.Access) error { return owns(r, a.SessionID) },
//	})
//	if err != nil {
//		return err
//	}
//	mux.Handle("POST /api/chat", h)
//	mux.Handle("POST /api/chat/stop", h.StopHandler())
//
// Ids (sessionId, clientTurnId, checkpoint and run ids) follow [contracts.CheckID]. Errors are
// JSON {error, failure} with the failure's status ([WriteError]); when Temporal does not answer,
// the routes answer 503 TEMPORAL_UNAVAILABLE within seconds. The handler keeps in memory the
// turns its requests read, in a registry of the session service's ([sessions.Turns]): readers
// of one turn share it (the last one leaving cancels it, with the default Disconnect
// "cancel"), and the lifecycle callbacks run once per run attempt. See docs/chat.md.
package chat
