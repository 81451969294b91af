// Drives Kortyx's MCP server (package mcpserver) with the official 2.x TypeScript client
// (@modelcontextprotocol/client) speaking protocol 2026-07-28, for the Go tests:
// `node mcp-v2.mjs <endpoint>`. The client negotiates the revision itself (versionNegotiation
// "auto": server/discover first, then the 2025 initialize handshake if the server is not
// modern); "ready" says what it chose: {era, version}.
// Commands (one JSON line each on stdin):
//   {op: "discover"}                      → discovered {result}
//   {op: "list"}                          → tools {tools}
//   {op: "call", name, arguments, meta}   → (later) result {result} or callError {message, code, data}:
//                                           a question's input-required result is fulfilled by the
//                                           client (an "elicit" event, answered by a "reply")
//   {op: "manual", name, arguments, meta, inputResponses, requestState}
//                                         → raw {result} or callError: one tools/call in manual
//                                           multi-round-trip mode (an input-required result comes
//                                           back as it is; inputResponses and requestState are sent
//                                           as given)
//   {op: "reply", action, content}        → answers the elicitation in flight
// Each elicitation the client fulfils is an "elicit" event {message, requestedSchema, meta}.
import { emit, next, fail } from "./lib.mjs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const endpoint = new URL(process.argv[2]);
let replied; // resolves the elicitation in flight with the test's reply

const client = new Client(
  { name: "kortyx-node-test-v2", version: "1" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } },
);
client.setRequestHandler("elicitation/create", async (request) => {
  emit("elicit", { message: request.params.message, requestedSchema: request.params.requestedSchema, meta: request.params._meta });
  const reply = await new Promise((resolve) => (replied = resolve));
  return reply.content === undefined ? { action: reply.action } : reply;
});
await client.connect(new StreamableHTTPClientTransport(endpoint));
emit("ready", { era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion() });

function callError(err) {
  emit("callError", { message: String(err.message ?? err), code: err.code ?? null, data: err.data ?? null });
}

for (let c = await next(); c !== undefined; c = await next()) {
  switch (c.op) {
    case "discover":
      emit("discovered", { result: await client.discover() });
      break;
    case "list": {
      const { tools } = await client.listTools();
      emit("tools", { tools });
      break;
    }
    case "call":
      client.callTool({ name: c.name, arguments: c.arguments, _meta: c.meta }).then((result) => emit("result", { result }), callError);
      break;
    case "manual": {
      const params = { name: c.name, arguments: c.arguments, _meta: c.meta };
      if (c.inputResponses !== undefined) params.inputResponses = c.inputResponses;
      if (c.requestState !== undefined) params.requestState = c.requestState;
      await client.request({ method: "tools/call", params }, { allowInputRequired: true }).then((result) => emit("raw", { result }), callError);
      break;
    }
    case "reply":
      replied({ action: c.action, content: c.content });
      break;
    default:
      fail(`unknown command ${JSON.stringify(c)}`);
  }
}

await client.close();
process.exit(0);
