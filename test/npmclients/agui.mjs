// Drives Kortyx's AG-UI wire (package agui) with AG-UI's own client, unchanged: HttpAgent of
// @ag-ui/client, whose pipeline validates every event and checks the sequence (verifyEvents)
// before the agent applies it. The test sends one command per line; each runs at once (several
// runs may be streaming together) and ends with a "done" event:
//
//   {"op":"agent","name":"a1","url":"http://host/api/agui/hello","threadId":"<id>"}   new HttpAgent
//   {"op":"run","name":"a1","runId":"r1","text":"hi"}    addMessage (a user message), runAgent({runId})
//   {"op":"run","name":"a1","runId":"r1"}                runAgent({runId}) again, no new message
//   {"op":"run",...,"abortOn":"STATE_SNAPSHOT"}           ... abortRun() once that event arrived
//   {"op":"verify","name":"v1","body":"data: ...\n\n"}   a new HttpAgent whose fetch answers
//        with body (an event stream), runAgent(): what the client makes of a response body
//   {"op":"resume","name":"a1","runId":"r2","status":"resolved","payload":<json>}
//        runAgent({runId, resume}) with the resume built by buildResumeArray: every pending
//        interrupt answered with status and payload
//
// Events: {"event":"event","name","type","data"} for each event the agent applied (onEvent),
// and {"event":"done","name","types","error","pendingInterrupts","messages","state"}: types are
// the event types of the run in order; error is the run's failure ({message, status, payload}:
// an HTTP error's status and JSON body), or null.
import { emit, next, fail } from "./lib.mjs";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const agents = new Map();

async function run(cmd) {
  const agent = agents.get(cmd.name);
  if (!agent) throw new Error(`no agent ${cmd.name}`);
  if (cmd.text !== undefined) {
    agent.addMessage({ id: `user-${cmd.runId}`, role: "user", content: cmd.text });
  }
  const params = { runId: cmd.runId };
  if (cmd.op === "resume") {
    const responses = {};
    for (const i of agent.pendingInterrupts) {
      responses[i.id] = cmd.status === "resolved" ? { status: "resolved", payload: cmd.payload } : { status: cmd.status };
    }
    params.resume = buildResumeArray(agent.pendingInterrupts, responses);
  }
  const types = [];
  let error = null;
  try {
    await agent.runAgent(params, {
      onEvent: ({ event }) => {
        types.push(event.type);
        emit("event", { name: cmd.name, type: event.type, data: event });
        if (cmd.abortOn === event.type) agent.abortRun();
      },
      onRunFailed: ({ error: err }) => {
        error = { message: err.message, status: err.status ?? null, payload: err.payload ?? null };
      },
    });
  } catch (err) {
    error = error ?? { message: err.message, status: err.status ?? null, payload: err.payload ?? null };
  }
  emit("done", {
    name: cmd.name, types, error, pendingInterrupts: agent.pendingInterrupts,
    messages: agent.messages, state: agent.state,
  });
}

for (let cmd = await next(); cmd !== undefined; cmd = await next()) {
  switch (cmd.op) {
    case "agent":
      agents.set(cmd.name, new HttpAgent({ url: cmd.url, threadId: cmd.threadId }));
      emit("done", { name: cmd.name });
      break;
    case "verify": {
      const body = cmd.body;
      const fetch = async () => new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
      agents.set(cmd.name, new HttpAgent({ url: "http://verify.invalid/", threadId: "thread-1", fetch }));
      run({ ...cmd, runId: "run-1" }).catch(fail);
      break;
    }
    case "run":
    case "resume":
      run(cmd).catch(fail);
      break;
    default:
      fail(`unknown op ${cmd.op}`);
  }
}
