// The example of docs/aisdk.md: the AI SDK's chat (what useChat runs, here without React)
// talks to the hello agent of a worker's dev API. Usage: node aisdk-example.mjs http://localhost:8080
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } from "ai";

// The chat's state, kept in memory (useChat keeps it in React state).
class State {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (m) => this.messages.push(m);
  popMessage = () => this.messages.pop();
  replaceMessage = (i, m) => { this.messages[i] = m; };
  snapshot = (v) => structuredClone(v);
}

let finished;
const chat = new AbstractChat({
  id: crypto.randomUUID(), // the chat id is the Kortyx session
  state: new State(),
  transport: new DefaultChatTransport({ api: `${process.argv[2]}/api/ui/chat`, body: { agent: "hello" } }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls, // send the answer at once
  onFinish: () => finished?.(),
});

await chat.sendMessage({ text: "hi" });
// hello asks for a name: a call of the tool kortyx_ask, with the question and its answer's schema.
const ask = chat.lastMessage.parts.find((p) => p.type === "tool-kortyx_ask");
console.log(ask.input.question, JSON.stringify(ask.input.schema));

const answered = new Promise((resolve) => (finished = resolve));
await chat.addToolOutput({ tool: "kortyx_ask", toolCallId: ask.toolCallId, output: "Ada" });
await answered;
console.log(chat.lastMessage.parts.filter((p) => p.type === "text").map((p) => p.text).join(""));
