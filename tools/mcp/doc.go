// Package mcp offers the tools of MCP servers, reached over streamable HTTP, as worker tools.
//
// A [Pool] keeps one client session per server (URL and headers), opens it on first use,
// reconnects when it breaks and caches each server's tool list for a TTL ([Pool.TTL], one
// minute by default). Its zero value is ready to use. [Pool.Tools] converts a server's tools into [tools.Tool]s:
//
//   - Name is the MCP name, or "<prefix>_<name>" when [Server.Prefix] is set; [Server.Include]
//     and [Server.Exclude] (exact names or path.Match globs) filter by the MCP name.
//   - InputSchema and OutputSchema are the tool's schemas compiled with
//     contracts.CompileSchema, so arguments are validated on the worker before the server is
//     called. A schema that does not compile makes Tools fail with an INVALID_DEFINITION error
//     naming the tool; exclude the tool to use the others.
//   - Execute calls tools/call with the MCP name. Text content items become the result's
//     Content (joined by newlines); images, audio and resources are summarized as
//     "[image: <mime>]", "[audio: <mime>]", "[resource: <uri>]"; structuredContent becomes
//     Structured (checked against the output schema); isError becomes IsError (an error
//     result keeps only its content: its structuredContent is used as Content when there is
//     no text).
//   - The call's idempotency key travels in the request's _meta under [IdempotencyKeyMeta]
//     ("kortyx/idempotencyKey"). It is the same for every retry of one model tool call, so
//     a server with side effects can deduplicate.
//
// Errors: a server that cannot be reached (connection refused, HTTP 5xx, a lost session) is a
// retryable error ([tools.Retryable]): the tool activity fails and Temporal retries it with the
// same idempotency key. A JSON-RPC error answer of the server is a plain error, which the model
// sees as an isError result. Cancellation is returned as is. Listing a server that is down
// fails with "kortyx: MCP server <url>: listing tools: ...", retryable as well; what
// [Pool.Definitions] (a run's tool listing) fails with is then a retryable EXECUTION_FAILED
// *contracts.Error whose message, "MCP server <url> did not answer: its tools could not be
// listed.", is what the run's failure shows, that text its cause.
//
// Static use: list the servers' tools when the worker starts and register them with the Go
// tools.
//
//	pool := &mcp.Pool{ClientName: "billing-worker", ClientVersion: "1.4.0"}
//	defer pool.Close()
//	browser, err := pool.Tools(ctx, mcp.Server{
//		URL:     "http://localhost:8931/mcp",
//		Headers: map[string]string{"Authorization": "Bearer " + token},
//		Include: []string{"browser_*"},
//		Exclude: []string{"browser_install"},
//		Prefix:  "web",
//	})
//	if err != nil {
//		return err
//	}
//	set, err := tools.NewSet(append([]tools.Tool{lookup}, browser...)...)
//	if err != nil {
//		return err
//	}
//	acts := &activities.Activities{Stream: broker, Providers: models, Tools: set}
//
// The list is taken once, so tools the server adds later are not offered. Dynamic use, for
// runs configured with MCP servers: [Pool.Definitions] tells the model about the tools of
// several servers (and which server offers each name), and [Pool.Call] runs one call the way
// tools.Set.Run does (invalid arguments and tool failures become isError results).
//
//	defs, owner, err := pool.Definitions(ctx, servers) // in the model activity
//	...
//	res, err := pool.Call(ctx, servers[owner[in.Tool]], in) // in the tool activity
package mcp
