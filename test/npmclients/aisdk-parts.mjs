// Reads UI message streams the way the AI SDK's chat does: each command {name, sse, message} is
// the body of a response of Kortyx's AI SDK wire (server-sent events) and, optionally, the
// assistant message the response continues (an answer's); DefaultChatTransport's parser (the
// chunk schema of `ai`) and readUIMessageStream turn it into the assistant message, as the chat
// keeps it: the last one the stream wrote, else the message continued.
// Emits {"event":"message","name","message","error","sendAgain"}: sendAgain is what
// lastAssistantMessageIsCompleteWithToolCalls says of the message.
import { emit, next } from "./lib.mjs";
import { DefaultChatTransport, readUIMessageStream, lastAssistantMessageIsCompleteWithToolCalls } from "ai";

for (let cmd = await next(); cmd !== undefined; cmd = await next()) {
  const body = new Blob([cmd.sse]).stream();
  const chunks = new DefaultChatTransport().processResponseStream(body);
  let message = cmd.message ?? null;
  let error = null;
  try {
    for await (const m of readUIMessageStream({ message: cmd.message, stream: chunks, terminateOnError: true, onError: (e) => (error = String(e.message)) })) message = m;
  } catch (e) {
    error = String(e.message);
  }
  const sendAgain = message ? lastAssistantMessageIsCompleteWithToolCalls({ messages: [message] }) : false;
  emit("message", { name: cmd.name, message, error, sendAgain });
}
