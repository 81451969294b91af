// Drives Kortyx's MCP server (package mcpserver) with the official TypeScript client, for the
// Go tests: `node mcp.mjs <endpoint>`. Commands (one JSON line each on stdin):
//   {op: "list"}                                  → tools {tools}
//   {op: "call", name, arguments, meta, progress} → (later) result {result, progress} or callError {message, code}
//   {op: "reconnect"}                             → reconnected: the client is closed (a call in
//                                                   flight fails) and a new one connects, same endpoint
//   {op: "reply", action, content}                → answers the elicitation in flight
// Each elicitation/create is an "elicit" event {message, requestedSchema, meta}; a reply with
// action "abort" cancels the call (the client sends notifications/cancelled), "drop" fails the
// elicitation, any other is the ElicitResult.
import { emit, next, fail } from "./lib.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const endpoint = new URL(process.argv[2]);
let client;
let call; // the AbortController of the call in flight
let replied; // resolves the elicitation in flight with the test's reply

async function connect() {
  client = new Client({ name: "kortyx-node-test", version: "1" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    emit("elicit", { message: request.params.message, requestedSchema: request.params.requestedSchema, meta: request.params._meta });
    const reply = await new Promise((resolve) => (replied = resolve));
    if (reply.action === "abort") {
      call.abort("the user cancelled");
      // The call is cancelled; this request is left for the server to drop.
      await new Promise((resolve) => extra.signal.addEventListener("abort", resolve));
      throw new Error("cancelled");
    }
    if (reply.action === "drop") throw new Error("dropped"); // a handler whose server went away
    return reply.content === undefined ? { action: reply.action } : reply;
  });
  await client.connect(new StreamableHTTPClientTransport(endpoint));
}

await connect();
emit("ready");
for (let c = await next(); c !== undefined; c = await next()) {
  switch (c.op) {
    case "list": {
      const { tools } = await client.listTools();
      emit("tools", { tools });
      break;
    }
    case "call": {
      call = new AbortController();
      const progress = [];
      const options = { signal: call.signal };
      if (c.progress) options.onprogress = (p) => progress.push(p.message);
      client.callTool({ name: c.name, arguments: c.arguments, _meta: c.meta }, undefined, options).then(
        (result) => emit("result", { result, progress }),
        (err) => emit("callError", { message: String(err.message ?? err), code: err.code ?? null }),
      );
      break;
    }
    case "reply":
      replied({ action: c.action, content: c.content });
      break;
    case "reconnect": {
      await client.close().catch(() => {});
      await connect();
      emit("reconnected");
      break;
    }
    default:
      fail(`unknown command ${JSON.stringify(c)}`);
  }
}

process.exit(0);
