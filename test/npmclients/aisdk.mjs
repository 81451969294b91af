// Drives Kortyx's AI SDK wire (package aisdk) with the AI SDK's own chat, unchanged: AbstractChat
// (what useChat runs) over DefaultChatTransport, with a minimal in-memory state in place of
// React's. The test sends one command per line; each runs at once (several chats may be
// streaming together) and ends with a "done" event carrying the chat's state:
//
//   {"op":"chat","name":"c1","api":"http://host/api/ui/chat","id":"<chat id>","agent":"support"}
//   {"op":"send","name":"c1","text":"..."}             sendMessage({text}); with "body": {...},
//                                                      sendMessage({text}, {body}) (e.g. {"busy": "steer"})
//   {"op":"approve","name":"c1","approved":true}        addToolApprovalResponse of the open approval
//   {"op":"answer","name":"c1","output":<json>}         addToolOutput of the last kortyx_ask call
//   {"op":"answer","name":"c1","errorText":"..."}       ... as an output-error (cancels the question)
//   {"op":"resume","name":"c1"}                         resumeStream()
//   {"op":"stop","name":"c1"}                           stop(): aborts the chat's request
//
// Events: {"event":"data","name","part"} for each data part that arrives (onData), and
// {"event":"done","name","op","status","error","finishReason","messages","requests"}: requests is
// the number of chat requests the chat has sent so far (sendMessages of its transport, the
// automatic ones included). An answer or approval is reported once the SDK is done with it: after
// the response to it, and after every request sendAutomaticallyWhen sent on its own after that
// response, until sendAutomaticallyWhen says no or a request fails or is aborted.
import { emit, next, fail } from "./lib.mjs";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";

// state is the chat's state as useChat keeps it, without React.
class State {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (m) => { this.messages = this.messages.concat(m); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  // As useChat's state (@ai-sdk/react), a replaced message is a copy: what the SDK changes in a
  // response's message after its last write does not reach the chat's messages.
  replaceMessage = (i, m) => { this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)]; };
  snapshot = (v) => structuredClone(v);
}

// CountingTransport is DefaultChatTransport counting the chat requests it sends.
class CountingTransport extends DefaultChatTransport {
  requests = 0;
  sendMessages(options) {
    this.requests++;
    return super.sendMessages(options);
  }
}

class Chat extends AbstractChat {
  constructor(name, init) {
    super({ ...init, state: new State() });
    this.name = name;
    this.counter = init.transport;
    this.finished = [];
    this.settlers = [];
  }
  // finish resolves at the chat's next onFinish.
  finish() {
    return new Promise((resolve) => this.finished.push(resolve));
  }
  // settled resolves when the SDK stops sending on its own: sendAutomaticallyWhen says no, or a
  // request ends aborted or failed (the SDK then does not ask sendAutomaticallyWhen).
  settled() {
    return new Promise((resolve) => this.settlers.push(resolve));
  }
  settle() {
    const waiters = this.settlers;
    this.settlers = [];
    for (const w of waiters) w();
  }
}

const chats = new Map();

function report(chat, op, finishReason) {
  const err = chat.error;
  emit("done", {
    name: chat.name,
    op,
    status: chat.status,
    finishReason: finishReason ?? null,
    error: err ? { message: err.message, statusCode: err.statusCode ?? null, responseBody: err.responseBody ?? null } : null,
    messages: chat.messages,
    requests: chat.counter.requests,
  });
}

function lastPart(chat, test) {
  const m = chat.messages[chat.messages.length - 1];
  const p = m && m.role === "assistant" ? [...m.parts].reverse().find(test) : undefined;
  if (!p) throw new Error(`chat ${chat.name}: no such part in ${JSON.stringify(chat.messages)}`);
  return p;
}

async function run(cmd) {
  const chat = chats.get(cmd.name);
  if (cmd.op === "chat") {
    const c = new Chat(cmd.name, {
      id: cmd.id,
      transport: new CountingTransport({ api: cmd.api, body: cmd.agent ? { agent: cmd.agent } : {} }),
      // Answers are sent as soon as the user gave them, as an app on useChat does.
      sendAutomaticallyWhen: ({ messages }) => {
        const send = lastAssistantMessageIsCompleteWithApprovalResponses({ messages }) || lastAssistantMessageIsCompleteWithToolCalls({ messages });
        if (!send) c.settle();
        return send;
      },
      onData: (part) => emit("data", { name: cmd.name, part }),
      onFinish: ({ finishReason, isAbort, isError }) => {
        const waiters = c.finished;
        c.finished = [];
        for (const w of waiters) w(finishReason);
        if (isAbort || isError) c.settle();
      },
    });
    chats.set(cmd.name, c);
    emit("done", { name: cmd.name, op: cmd.op });
    return;
  }
  const done = chat.finish();
  // addToolOutput and addToolApprovalResponse return before the requests they make end.
  const settled = cmd.op === "answer" || cmd.op === "approve" ? chat.settled() : null;
  switch (cmd.op) {
    case "send":
      await chat.sendMessage({ text: cmd.text }, cmd.body ? { body: cmd.body } : undefined);
      break;
    case "approve": {
      const p = lastPart(chat, (p) => p.state === "approval-requested");
      await chat.addToolApprovalResponse({ id: p.approval.id, approved: cmd.approved });
      break;
    }
    case "answer": {
      // The open call, or the last one answered when its answer was refused (answered again).
      const p = lastPart(chat, (p) => p.type === "tool-kortyx_ask");
      if (cmd.errorText !== undefined) {
        await chat.addToolOutput({ tool: "kortyx_ask", toolCallId: p.toolCallId, state: "output-error", errorText: cmd.errorText });
      } else {
        await chat.addToolOutput({ tool: "kortyx_ask", toolCallId: p.toolCallId, output: cmd.output });
      }
      break;
    }
    case "resume":
      await chat.resumeStream();
      break;
    case "stop": // the request is aborted (a closed tab); the pending op ends too
      await chat.stop();
      break;
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
  // A resume with nothing to resume (204) ends without onFinish: finishReason null.
  const reason = cmd.op === "resume" ? await Promise.race([done, Promise.resolve(null)]) : await done;
  await settled;
  report(chat, cmd.op, reason);
}

for (let cmd = await next(); cmd !== undefined; cmd = await next()) {
  run(cmd).catch(fail);
}
