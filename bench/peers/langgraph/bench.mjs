// The LangGraph JS peer of Kortyx's benchmarks (docs/performance.md): the same 50-step tool loop
// (a fake model node and a tool node) and the same interrupt round trip (interrupt() answered
// with Command({resume})), on a compiled StateGraph with a checkpointer, timed per step and per
// round trip. Prints one JSON object on stdout; exits non-zero when a run did not do the
// expected work.
//
//	node bench.mjs [--loop-iterations 5] [--interrupt-iterations 20] [--count 3]
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createRequire } from "node:module";

import { Annotation, Command, END, MemorySaver, MessagesAnnotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const loopIterations = Number(args["loop-iterations"] ?? 5);
const interruptIterations = Number(args["interrupt-iterations"] ?? 20);
const count = Number(args.count ?? 3);

const STEPS = 50; // tool calls per run; STEPS + 1 model passes
const BYTES = 16; // characters of each tool result
const TOOL = "bench_blob";

// The tool loop: the model asks for the tool until the conversation holds STEPS tool results,
// then answers; the tool returns BYTES random characters.
let modelPasses = 0;
let toolCalls = 0;
function model(state) {
  modelPasses++;
  const results = state.messages.filter((m) => m instanceof ToolMessage || m._getType?.() === "tool").length;
  if (results >= STEPS) {
    return { messages: [new AIMessage("Done with the blobs.")] };
  }
  const i = results + 1;
  return {
    messages: [new AIMessage({ content: "", tool_calls: [{ id: `call_${i}`, name: TOOL, args: { i, bytes: BYTES } }] })],
  };
}
function tools(state) {
  const last = state.messages[state.messages.length - 1];
  return {
    messages: last.tool_calls.map((c) => {
      toolCalls++;
      return new ToolMessage({ tool_call_id: c.id, name: c.name, content: randomBytes(BYTES).toString("base64").slice(0, c.args.bytes) });
    }),
  };
}
function loopGraph(checkpointer) {
  return new StateGraph(MessagesAnnotation)
    .addNode("model", model)
    .addNode("tools", tools)
    .addEdge(START, "model")
    .addConditionalEdges("model", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END), ["tools", END])
    .addEdge("tools", "model")
    .compile({ checkpointer });
}

// The interrupt: one node asks, then writes one custom stream chunk with the answer (Kortyx's
// structured-data chunk after the answer).
const AskState = Annotation.Root({ answer: Annotation() });
function interruptGraph(checkpointer) {
  return new StateGraph(AskState)
    .addNode("ask", (_state, config) => {
      const answer = interrupt({ question: "Proceed?" });
      config.writer({ answer });
      return { answer };
    })
    .addEdge(START, "ask")
    .addEdge("ask", END)
    .compile({ checkpointer });
}

let thread = 0;
async function loopRun(graph) {
  const p0 = modelPasses, t0 = toolCalls;
  const out = await graph.invoke(
    { messages: [new HumanMessage(`Call ${TOOL} ${STEPS} times with ${BYTES} bytes, then answer.`)] },
    { configurable: { thread_id: `loop-${++thread}` }, recursionLimit: 4 * STEPS + 10 },
  );
  const passes = modelPasses - p0, calls = toolCalls - t0;
  if (passes !== STEPS + 1 || calls !== STEPS || out.messages.length !== 2 * STEPS + 2) {
    throw new Error(`loop run did ${passes} model passes, ${calls} tool calls, ${out.messages.length} messages`);
  }
}

// One round trip: start a thread until it waits (not timed), then resume it and time until the
// first custom chunk arrives (roundTrip) and until the run has ended (done).
async function roundTrip(graph) {
  const cfg = { configurable: { thread_id: `ask-${++thread}` } };
  const first = await graph.invoke({ answer: "" }, cfg);
  if (!first.__interrupt__?.length) throw new Error("the run did not interrupt");
  const t0 = performance.now();
  const stream = await graph.stream(new Command({ resume: "yes" }), { ...cfg, streamMode: "custom" });
  let t1 = 0;
  const chunks = [];
  for await (const c of stream) {
    if (!t1) t1 = performance.now();
    chunks.push(c);
  }
  const t2 = performance.now();
  if (chunks.length !== 1 || chunks[0].answer !== "yes") throw new Error(`chunks after the answer: ${JSON.stringify(chunks)}`);
  return { roundTrip: t1 - t0, done: t2 - t0 };
}

async function measure(name, checkpointer) {
  const loop = loopGraph(checkpointer), ask = interruptGraph(checkpointer);
  await loopRun(loop); // warm-up, not reported
  await roundTrip(ask);
  const v = { checkpointer: name, msPerStep: [], msPerRoundTrip: [], msToDone: [] };
  for (let r = 0; r < count; r++) {
    const t0 = performance.now();
    for (let i = 0; i < loopIterations; i++) await loopRun(loop);
    v.msPerStep.push((performance.now() - t0) / (loopIterations * STEPS));
    let rt = 0, done = 0;
    for (let i = 0; i < interruptIterations; i++) {
      const m = await roundTrip(ask);
      rt += m.roundTrip;
      done += m.done;
    }
    v.msPerRoundTrip.push(rt / interruptIterations);
    v.msToDone.push(done / interruptIterations);
  }
  return v;
}

const require = createRequire(import.meta.url);
const version = (pkg) => JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), "utf8")).version;

const dir = mkdtempSync(join(tmpdir(), "kortyx-bench-langgraph-"));
try {
  const result = {
    peer: "langgraph-js",
    node: process.version,
    versions: Object.fromEntries(
      ["@langchain/langgraph", "@langchain/langgraph-checkpoint-sqlite", "@langchain/core", "better-sqlite3"].map((p) => [p, version(p)]),
    ),
    steps: STEPS,
    bytes: BYTES,
    loopIterations,
    interruptIterations,
    count,
    variants: [],
  };
  const file = SqliteSaver.fromConnString(join(dir, "checkpoints.db"));
  result.variants.push(await measure("sqlite-file", file));
  result.variants.push(await measure("sqlite-memory", SqliteSaver.fromConnString(":memory:")));
  result.variants.push(await measure("memory", new MemorySaver()));
  console.log(JSON.stringify(result));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
