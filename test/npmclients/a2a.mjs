// Drives Kortyx's A2A wire with the official A2A JS client (@a2a-js/sdk: ClientFactory, the
// agent card resolver and the JSON-RPC transport), one command of the Go test at a time:
//
//   {"cmd": "card", "agent": "hello"}                        → card {card}
//   {"cmd": "send", "agent", "text"|"data", "taskId"?, "contextId"?} → result {result}
//   {"cmd": "stream", "agent", "text", "leaveAfter"?: n}     → event {a2a}…, then end | left
//   {"cmd": "get" | "cancel" | "resubscribe", "agent", "taskId"}
//
// A JSON-RPC error is an "rpc-error" event {code, message, data} (for a stream, after its events).
// The base URL is A2A_BASE (http://host:port); each agent's client is made once from its card at
// <base>/a2a/<agent>/.well-known/agent-card.json.
import { randomUUID } from "node:crypto";
import { emit, next, fail } from "./lib.mjs";
import { ClientFactory } from "@a2a-js/sdk/client";

const base = process.env.A2A_BASE;
const factory = new ClientFactory();
const clients = new Map();

async function client(agent) {
  if (!clients.has(agent)) {
    // The trailing slash makes the resolver's relative card path land under the agent.
    clients.set(agent, await factory.createFromUrl(`${base}/a2a/${agent}/`));
  }
  return clients.get(agent);
}

// rpcError is the JSON-RPC error a call failed with (the transport keeps the response; a
// stream's error is the cause of the one it throws), or undefined.
function rpcError(err) {
  for (let e = err; e; e = e.cause) {
    if (e.errorResponse && e.errorResponse.error) return e.errorResponse.error;
  }
  return undefined;
}

async function attempt(fn) {
  try {
    await fn();
  } catch (err) {
    const e = rpcError(err);
    if (!e) throw err;
    emit("rpc-error", { code: e.code, message: e.message, data: e.data });
  }
}

function message(c) {
  const parts = c.data !== undefined ? [{ kind: "data", data: c.data }] : [{ kind: "text", text: c.text }];
  const m = { kind: "message", messageId: c.messageId, role: "user", parts };
  if (c.taskId) m.taskId = c.taskId;
  if (c.contextId) m.contextId = c.contextId;
  return { message: m };
}

async function events(iterable, leaveAfter, abort) {
  let n = 0;
  try {
    for await (const event of iterable) {
      emit("event", { a2a: event });
      if (leaveAfter && ++n >= leaveAfter) {
        abort.abort(); // the reader leaves: the connection closes, the task goes on
        emit("left");
        return;
      }
    }
  } catch (err) {
    if (abort.signal.aborted) {
      emit("left");
      return;
    }
    throw err;
  }
  emit("end");
}

// run runs command c. After the API process restarted, a request may first go out on a pooled
// connection the old process closed ("fetch failed" before any answer): it is sent again on a
// new one, as clients do; a message keeps its messageId and contextId, so the server gives its
// turn back rather than running it twice.
async function run(c) {
  for (let tries = 1; ; tries++) {
    try {
      return await once(c);
    } catch (err) {
      if (!(err instanceof TypeError) || err.message !== "fetch failed" || tries === 3) throw err;
      console.error(`${c.cmd}: ${err.message} (${err.cause}); sending it again`);
    }
  }
}

async function once(c) {
  const cl = await client(c.agent);
  const abort = new AbortController();
  switch (c.cmd) {
    case "card":
      emit("card", { card: await cl.getAgentCard() });
      break;
    case "send":
      await attempt(async () => emit("result", { result: await cl.sendMessage(message(c)) }));
      break;
    case "stream":
      await attempt(() => events(cl.sendMessageStream(message(c), { signal: abort.signal }), c.leaveAfter, abort));
      break;
    case "get":
      await attempt(async () => emit("result", { result: await cl.getTask({ id: c.taskId }) }));
      break;
    case "cancel":
      await attempt(async () => emit("result", { result: await cl.cancelTask({ id: c.taskId }) }));
      break;
    case "resubscribe":
      await attempt(() => events(cl.resubscribeTask({ id: c.taskId }, { signal: abort.signal }), 0, abort));
      break;
    default:
      throw new Error(`unknown command ${c.cmd}`);
  }
}

for (let c = await next(); c !== undefined; c = await next()) {
  if (c.cmd === "send" || c.cmd === "stream") {
    // One messageId per command, and a context of its own for a new task: a retry repeats both.
    c.messageId = randomUUID();
    if (!c.taskId && !c.contextId) c.contextId = `session-${randomUUID()}`;
  }
  await run(c).catch(fail);
}
