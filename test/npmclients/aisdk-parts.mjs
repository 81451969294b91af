// Reads UI message streams the way the AI SDK's chat does: each command {name, sse} is the
// body of a response of Kortyx's AI SDK wire (server-sent events); DefaultChatTransport's
// parser (the chunk schema of `ai`) and readUIMessageStream turn it into the assistant message.
// Emits {"event":"message","name","message","error","sendAgain"}: sendAgain is what
// lastAssistantMessageIsCompleteWithToolCalls says of the message.
import { emit, next } from "./lib.mjs";
import { DefaultChatTransport, readUIMessageStream, lastAssistantMessageIsCompleteWithToolCalls } from "ai";

for (let cmd = await next(); cmd !== undefined; cmd = await next()) {
  const body = new Blob([cmd.sse]).stream();
  const chunks = new DefaultChatTransport().processResponseStream(body);
  let message = null;
  let error = null;
  try {
    for await (const m of readUIMessageStream({ stream: chunks, terminateOnError: true, onError: (e) => (error = String(e.message)) })) message = m;
  } catch (e) {
    error = String(e.message);
  }
  const sendAgain = message ? lastAssistantMessageIsCompleteWithToolCalls({ messages: [message] }) : false;
  emit("message", { name: cmd.name, message, error, sendAgain });
}
