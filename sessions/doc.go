// Package sessions is the session service: the one Go API over Kortyx sessions that every wire
// (the chat route's Kortyx and resumable framings, the JSON checkpoint routes, and any protocol
// added later) calls, and the only client code that talks to the session and run workflows for
// a chat. It starts a turn ([Service.Start]), answers a question with one update of the session
// ([Service.Answer]: the session checks the answer, claims the turn, delivers the answer to
// the run and says where the response begins in the run's stream), stops a turn, and lists,
// rolls back and forks checkpoints. It has no HTTP in it and calls nothing back.
//
//	svc, err := sessions.New(sessions.Options{Client: c, Broker: broker, TaskQueue: "kortyx"})
//	if err != nil {
//		return err
//	}
//	ts, err := svc.Start(ctx, "session-42", TurnRequest{Workflow: "support", Input: input})
//	if err != nil {
//		return err
//	}
//	// ts.RunID's stream, from offset ts.Begin (0 for a prompt), is the turn's response.
//
// # Writing a wire
//
// A wire is one package and one mount. It parses its protocol's request, authorizes it, and
// calls the service: Start for a new message, Answer for an answer to an open question (the
// result's RunID and Begin say where the response is), Stop when its reader asks to
// stop or leaves. It then reads the response with [Service.Follow] from Begin, in one loop:
// [Reader.Next] returns the next chunk (io.EOF after the response's done, stream.ErrIdle when a
// keep-alive is due), and the wire writes it in its own framing (package httpwire holds the
// one SSE writer) and, for the lifecycle hooks, keeps it for [Finalize]. A wire never calls
// another wire, and nothing here calls a wire: what differs between wires is only the parsing
// and the framing. The chat route (package chat) is the example: its Kortyx and resumable
// framings differ only in the writer's options.
//
// A streaming wire that lets several requests read one turn (a retry, a second tab, a
// reconnect) keeps them in a [Turns] registry: it serializes the requests of one ask, tells a
// reattach from a new run attempt, cancels a run when the last reader that started it leaves
// early (unless [TurnsOptions].Continue), and finalizes each run attempt's response once, for
// a callback, from what its readers read or, when they left, from a follower of its own. The
// wire then reads with [TurnReader.Next] instead of [Reader.Next]; see [Turns] for the calls.
package sessions
