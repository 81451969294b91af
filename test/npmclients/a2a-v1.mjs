// Drives Kortyx's A2A 1.0 bindings with the official A2A JS client 1.x (@a2a-js/sdk 1.3.0,
// installed as @a2a-js/sdk-v1) in its default mode (no legacy compatibility): ClientFactory, the
// agent card resolver, and the transport it picks from the card's supportedInterfaces. With
// A2A_TRANSPORT=HTTP+JSON the factory prefers the HTTP+JSON transport (its preferredTransports
// option); otherwise the card's first interface (JSON-RPC) is used. One command of the Go test
// at a time:
//
//   {"cmd": "card", "agent"}                                        → card {card, transport, version}
//   {"cmd": "send", "agent", "text"|"data", "taskId"?, "contextId"?} → result {result}
//   {"cmd": "stream", "agent", "text", "taskId"?, "leaveAfter"?: n}  → event {a2a}…, then end | left
//   {"cmd": "get" | "cancel" | "subscribe", "agent", "taskId"}
//
// Results and events are written back with the SDK's own ProtoJSON encoders (Task.toJSON,
// StreamResponse.toJSON), as they arrived. An error the client raises as an A2A error is an
// "a2a-error" event {name, message, code (JSON-RPC) | status (HTTP), data}; for a stream, after
// its events. The base URL is A2A_BASE (http://host:port).
import { randomUUID } from "node:crypto";
import { emit, next, fail } from "./lib.mjs";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk-v1/client";
import { A2AError } from "@a2a-js/sdk-v1/errors";
import {
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
} from "@a2a-js/sdk-v1";

const base = process.env.A2A_BASE;
const factory =
  process.env.A2A_TRANSPORT === "HTTP+JSON"
    ? new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ["HTTP+JSON"] }))
    : new ClientFactory();
const clients = new Map();

async function client(agent) {
  if (!clients.has(agent)) {
    // The trailing slash makes the resolver's relative card path land under the agent.
    clients.set(agent, await factory.createFromUrl(`${base}/a2a/${agent}/`));
  }
  return clients.get(agent);
}

// a2aError is the A2A error a call failed with (a stream's error over JSON-RPC is the cause of
// the one the transport throws), or undefined.
function a2aError(err) {
  for (let e = err; e; e = e.cause) {
    if (e instanceof A2AError) return e;
  }
  return undefined;
}

async function attempt(fn) {
  try {
    await fn();
  } catch (err) {
    const e = a2aError(err);
    if (!e) throw err;
    emit("a2a-error", { name: e.name, message: e.message, code: e.envelopeCode, status: e.statusCode, data: e.data });
  }
}

function request(c) {
  const parts = c.data !== undefined ? [{ data: c.data }] : [{ text: c.text }];
  const m = { messageId: c.messageId, role: "ROLE_USER", parts };
  if (c.taskId) m.taskId = c.taskId;
  if (c.contextId) m.contextId = c.contextId;
  return SendMessageRequest.fromJSON({ message: m });
}

async function events(iterable, leaveAfter, abort) {
  let n = 0;
  try {
    for await (const event of iterable) {
      emit("event", { a2a: StreamResponse.toJSON(event) });
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
      emit("card", { card: await cl.getAgentCard(), transport: cl.transport.protocolName, version: cl.protocolVersion });
      break;
    case "send":
      await attempt(async () => {
        const res = await cl.sendMessage(request(c));
        emit("result", { result: "messageId" in res ? Message.toJSON(res) : Task.toJSON(res) });
      });
      break;
    case "stream":
      await attempt(() => events(cl.sendMessageStream(request(c), { signal: abort.signal }), c.leaveAfter, abort));
      break;
    case "get":
      await attempt(async () => emit("result", { result: Task.toJSON(await cl.getTask(GetTaskRequest.fromJSON({ id: c.taskId }))) }));
      break;
    case "cancel":
      await attempt(async () => emit("result", { result: Task.toJSON(await cl.cancelTask(CancelTaskRequest.fromJSON({ id: c.taskId }))) }));
      break;
    case "subscribe":
      await attempt(() => events(cl.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: c.taskId }), { signal: abort.signal }), 0, abort));
      break;
    default:
      throw new Error(`unknown command ${c.cmd}`);
  }
}

for (let c = await next(); c !== undefined; c = await next()) {
  if (c.cmd === "send" || c.cmd === "stream") {
    // One messageId per command, and a context of its own for a new task.
    c.messageId = randomUUID();
    if (!c.taskId && !c.contextId) c.contextId = `session-${randomUUID()}`;
  }
  await run(c).catch(fail);
}
