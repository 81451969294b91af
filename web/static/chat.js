// The studio's chat view and run inspector. Plain JavaScript (an ES module), no dependencies.
//
// Each turn is kept in sessionStorage as the request that started it and the chunks received
// with their stream offsets; the transcript is rendered from them. After a reload, a turn that
// had not ended is asked again with Last-Event-ID: <last offset>, so its text continues where
// it stopped, with nothing lost and nothing twice.
import { $, el, json, api, apiError, shortId, studio, setStatus, temporalLink, plural, confirmAction } from "./util.js";
import { transcriptTurnItem } from "./sessions.js";

const state = { sessionId: "", turns: [], reading: new Set(), remote: null };
const randomId = (p) => p + "-" + (crypto.randomUUID ? crypto.randomUUID() : Math.random().toString(16).slice(2) + Date.now().toString(16));
// endStatus says how the last turn ended, once it has (while it runs, an earlier turn's end
// changes nothing).
function endStatus(ended) {
  const turn = state.turns[state.turns.length - 1];
  if (!turn || (turn !== ended && !turn.ended && !turn.failed)) return;
  const chunks = turn.chunks.map((c) => c.chunk);
  const err = chunks.find((c) => c.type === "error");
  if (turn.failed) setStatus(`Failed: ${turn.failed.code}`);
  else if (err) setStatus(`Failed: ${(err.failure && err.failure.code) || "ERROR"}`);
  else if (chunks.some((c) => c.type === "cancelled")) setStatus("Cancelled.");
  else if (chunks.some((c) => c.type === "interrupt")) setStatus("Waiting for your answer.");
  else setStatus("");
}

// ---- storage ----
const turnsKey = (s) => "kortyx.turns." + s;
function save() {
  sessionStorage.setItem("kortyx.session", state.sessionId);
  sessionStorage.setItem(turnsKey(state.sessionId), JSON.stringify(state.turns));
  syncStop();
}
// syncStop enables Stop only while a turn of this session runs (also while it reconnects).
function syncStop() {
  $("stop").disabled = !state.turns.some((t) => !t.ended && !t.failed);
}
function load(sessionId) {
  state.sessionId = sessionId;
  state.turns = JSON.parse(sessionStorage.getItem(turnsKey(sessionId)) || "[]");
  state.remote = null;
}
// loadRemote shows a session whose turns this tab has not kept (made in another tab or by another
// client): its earlier turns from the server (GET /api/sessions/{id}/transcript) and its view,
// with its open questions to answer.
async function loadRemote() {
  const id = state.sessionId;
  if (!id || state.turns.length) return;
  try {
    const [view, tr] = await Promise.all([api(`/api/sessions/${encodeURIComponent(id)}`),
      api(`/api/sessions/${encodeURIComponent(id)}/transcript`).catch(() => null)]);
    if (state.sessionId === id && !state.turns.length) { view.transcript = tr; state.remote = view; render(); }
  } catch (e) { setStatus(`${e.code}: ${e.message}`); }
}


// ---- chat ----
async function send(turn) {
  state.reading.add(turn.clientTurnId);
  const headers = { "Content-Type": "application/json", "Accept": "text/event-stream", "X-Kortyx-Resumable": "1" };
  if (turn.lastId !== undefined) headers["Last-Event-ID"] = String(turn.lastId);
  try {
    const res = await fetch("/api/chat", { method: "POST", headers, body: JSON.stringify(turn.body) });
    if (!res.ok) {
      const data = await res.json().catch(() => null);
      const e = apiError(res.status, data);
      turn.failed = { code: e.code, message: e.message, issues: e.issues };
      turn.ended = true;
      save();
      render();
      endStatus(turn);
      return;
    }
    // Connected (again, after a reload or a lost connection): the status says it runs.
    if (turn === state.turns[state.turns.length - 1]) setStatus("Running…");
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 2);
        onEvent(turn, raw);
      }
    }
    if (!turn.ended) { // the connection ended early: continue from the last offset
      turn.lastId = turn.lastId || 0;
      save();
      setTimeout(() => send(turn), 500);
      return;
    }
  } catch (err) {
    if (!turn.ended) { setStatus("Connection lost; reconnecting…"); setTimeout(() => send(turn), 1000); return; }
  } finally {
    state.reading.delete(turn.clientTurnId);
    syncStop();
  }
  endStatus(turn);
  afterTurn(turn);
}

function onEvent(turn, raw) {
  let id, data = "";
  for (const line of raw.split("\n")) {
    if (line.startsWith("id:")) id = parseInt(line.slice(3).trim(), 10);
    else if (line.startsWith("data:")) data += line.slice(5).trimStart();
  }
  if (!data) return;
  if (data === "[DONE]") { turn.ended = true; save(); endStatus(turn); return; }
  const chunk = JSON.parse(data);
  if (id !== undefined) {
    if (turn.lastId !== undefined && id <= turn.lastId) return; // already have it
    turn.lastId = id;
  } else if (chunk.type === "session" && turn.chunks.some((c) => c.chunk.type === "session")) {
    return; // a reconnect repeats the session chunk
  }
  turn.chunks.push({ id, chunk });
  save();
  renderTurn(turn);
  if (chunk.type === "session" && !turn.runId) activeRun(turn);
}

// activeRun finds the run of a turn while it runs: the session's active turn (GET
// /api/sessions/{id}) when it is this one, so the run line and its trace link show from the
// start (a turn that ended first gets its run from its checkpoint, afterTurn).
async function activeRun(turn) {
  let v;
  try { v = await api(`/api/sessions/${encodeURIComponent(turn.body.sessionId)}`); } catch (_) { return; }
  const a = v && v.active;
  if (!a || !a.runId || turn.runId || (a.clientTurnId && a.clientTurnId !== turn.clientTurnId)) return;
  turn.runId = a.runId;
  save();
  renderTurn(turn);
}

async function afterTurn(turn) {
  const cp = turn.chunks.map((c) => c.chunk).find((c) => c.type === "checkpoint");
  if (cp && !turn.runId) {
    try {
      const full = await api("/api/checkpoints", { action: "get", sessionId: cp.sessionId, checkpointId: cp.id });
      if (full && full.runId) { turn.runId = full.runId; save(); renderTurn(turn); }
    } catch (_) { /* the run link is optional */ }
  }
  const cancelled = turn.chunks.find((c) => c.chunk.type === "cancelled");
  if (cancelled && !turn.runId) { turn.runId = cancelled.chunk.runId; save(); renderTurn(turn); }
  refreshCheckpoints();
  refreshSessions();
}

function startTurn(message, extra) {
  if (!state.sessionId) { state.sessionId = randomId("web"); }
  const clientTurnId = randomId("t");
  const body = { sessionId: state.sessionId, clientTurnId, messages: [message] };
  if (extra && extra.workflowId) body.workflowId = extra.workflowId;
  const turn = { clientTurnId, body, user: (extra && extra.label) || message.content, chunks: [] };
  state.turns.push(turn);
  save();
  render();
  setStatus("Running…");
  send(turn);
}

function answer(question, resume, label) {
  startTurn({ role: "user", content: label, metadata: { resume: Object.assign({ token: question.resumeToken, requestId: question.requestId }, resume) } }, { label });
}

// ---- rendering ----
function render() {
  syncStop();
  $("session-id").textContent = state.sessionId || "(new)";
  const t = $("transcript");
  t.replaceChildren(...(state.remote ? [remoteView(state.remote)] : []),
    ...state.turns.map((turn) => { const d = el("div", { class: "turn", "data-turn": turn.clientTurnId }); fillTurn(d, turn); return d; }));
  for (const b of document.querySelectorAll("#sessions button.session")) b.setAttribute("aria-current", b.dataset.session === state.sessionId ? "true" : "false");
  t.scrollTop = t.scrollHeight;
}
function renderTurn(turn) {
  const d = document.querySelector(`.turn[data-turn="${CSS.escape(turn.clientTurnId)}"]`);
  if (!d) return render();
  fillTurn(d, turn);
  const t = $("transcript");
  t.scrollTop = t.scrollHeight;
}

// answeredRequests maps each question the transcript answered (by a turn that did not fail) to
// the answer sent: {selected}, {value}, {cancel: true} or {} for text.
function answeredRequests() {
  const ids = new Map();
  for (const t of state.turns) {
    const r = t.body.messages[t.body.messages.length - 1].metadata;
    if (r && r.resume && !t.failed) ids.set(r.resume.requestId, r.resume);
  }
  return ids;
}

// toolApproval is what a tool approval question asks about ({tool, toolCallId, input}), or null.
function toolApproval(q) {
  const m = q && q.meta;
  return m && typeof m === "object" && typeof m.tool === "string" && m.toolCallId ? m : null;
}

// deniedCalls are the ids of the tool calls whose approval the transcript answered with deny.
function deniedCalls(answered) {
  const ids = new Set();
  for (const t of state.turns) for (const { chunk: c } of t.chunks) {
    const m = c.type === "interrupt" ? toolApproval(c.input) : null;
    const a = m && answered.get(c.requestId);
    if (a && (a.cancel || (a.selected || []).includes("deny"))) ids.add(m.toolCallId);
  }
  return ids;
}

// fillTurn renders a turn from its chunks.
function fillTurn(d, turn) {
  const kids = [el("div", { class: "user" }, turn.user)];
  const a = el("div", { class: "assistant" });
  const segments = new Map(); // segmentId → text
  let textEl = null;
  const structured = new Map();
  const tools = new Map();
  const answered = answeredRequests();
  const denied = deniedCalls(answered);
  const newText = () => { textEl = el("div", { class: "text", "aria-live": "polite" }); a.append(textEl); return textEl; };
  for (const { chunk: c } of turn.chunks) {
    switch (c.type) {
      case "text-delta": {
        const seg = c.segmentId || "";
        if (!segments.has(seg)) segments.set(seg, el("span", { "data-segment": seg }));
        const span = segments.get(seg);
        if (!span.isConnected) (textEl || newText()).append(span);
        span.textContent += c.delta;
        break;
      }
      case "text-invalidated": {
        const span = segments.get(c.segmentId);
        if (span) span.remove();
        segments.delete(c.segmentId);
        break;
      }
      case "message":
        a.append(el("div", { class: "text message" }, c.content));
        textEl = null;
        break;
      case "structured-data": {
        let s = structured.get(c.streamId);
        if (!s) {
          s = { data: {}, box: el("section", { class: "structured", "data-stream": c.streamId, "aria-live": "polite" }), dataType: c.dataType };
          structured.set(c.streamId, s);
          a.append(s.box);
        }
        applyStructured(s, c);
        drawStructured(s);
        break;
      }
      case "tool-call-start": {
        const box = el("div", { class: "tool", "data-tool": c.tool }, el("strong", {}, "→ " + c.tool), el("pre", { class: "tool-args" }, json(c.input)));
        tools.set(c.toolCallId, box);
        a.append(box);
        break;
      }
      case "tool-call-result": {
        const box = tools.get(c.toolCallId) || a.appendChild(el("div", { class: "tool", "data-tool": c.tool }, el("strong", {}, c.tool)));
        if (denied.has(c.toolCallId)) {
          box.classList.add("denied");
          box.append(el("div", { class: "tool-denied" }, "✗ Denied: not run. ", el("span", { class: "meta" }, "The model was told: ", el("code", {}, c.content))));
        } else if (c.isError) {
          box.classList.add("failed");
          box.append(el("div", { class: "tool-result tool-error" }, "✗ ", el("code", {}, c.content)));
        } else {
          box.append(el("div", { class: "tool-result" }, "← ", el("code", {}, c.content)));
        }
        break;
      }
      case "tool-call-error": {
        const box = tools.get(c.toolCallId) || a.appendChild(el("div", { class: "tool" }, el("strong", {}, c.tool)));
        box.append(el("div", { class: "error", role: "alert" }, errorText(c.failure, c.message)));
        break;
      }
      case "interrupt":
        a.append(questionForm(c, answered.has(c.requestId) || turn !== state.turns[state.turns.length - 1] ? answered.get(c.requestId) || {} : null));
        break;
      case "error":
        a.append(el("div", { class: "error", role: "alert", "data-code": (c.failure || {}).code }, errorText(c.failure, c.message)));
        break;
      case "cancelled":
        a.append(el("div", { class: "cancelled" }, "Run cancelled."));
        break;
      case "status":
        a.append(c.steer ? el("div", { class: "meta status-chunk steer-chunk", role: "status" }, "↪ Steering message taken in: " + (c.steer.content || ""))
          : el("div", { class: "meta status-chunk", role: "status" }, "… " + (c.message || "")));
        break;
      case "checkpoint":
        a.append(el("div", { class: "meta checkpoint", "data-checkpoint": c.id }, "checkpoint ", shortId(c.id), ` (turn ${c.turnIndex})`));
        break;
    }
  }
  if (turn.failed) a.append(el("div", { class: "error", role: "alert", "data-code": turn.failed.code }, `${turn.failed.code}: ${turn.failed.message}`));
  if (turn.runId) a.append(runLinks(turn.runId));
  kids.push(a);
  d.replaceChildren(...kids);
}

// remoteView is the part of a session this tab did not see: its earlier turns as the server's
// transcript has them (or, where that route is not served, a note), and its open questions.
function remoteView(v) {
  const answered = answeredRequests();
  const n = (v.checkpoints || []).length;
  const tr = v.transcript;
  const box = el("section", { class: "remote", "aria-label": "Earlier turns" },
    tr && !(tr.turns || []).length ? el("p", { class: "meta remote-note" }, "This session has no earlier turn on the server.")
      : tr ? [el("p", { class: "meta remote-note" }, `Earlier turns of this session, from the server (${plural(tr.turns.length, "turn")}):`),
      el("ol", { class: "session-transcript remote-turns" }, (tr.turns || []).map(transcriptTurnItem))]
      : el("p", { class: "meta remote-note" }, `Earlier turns of this session were made elsewhere and are not shown here (${plural(n, "checkpoint")}).`));
  for (const p of v.pending || []) {
    const c = { type: "interrupt", requestId: p.requestId, resumeToken: p.token, id: p.hookId, workflow: p.workflow, node: p.node, input: p.input };
    box.append(questionForm(c, answered.has(p.requestId) ? answered.get(p.requestId) : null));
  }
  return box;
}

function errorText(f, message) { return `${(f && f.code) || "ERROR"}: ${(f && f.message) || message}`; }

function runLinks(runId) {
  return el("div", { class: "meta run" }, "run ", shortId(runId, "run-id"), " ",
    el("button", { type: "button", class: "inspect small", onclick: () => inspect(runId) }, "Inspect"), " ",
    el("a", { href: "#/runs/" + encodeURIComponent(runId), class: "trace-link" }, "Trace"), " ", temporalLink(runId));
}

// ---- structured data ----
function setPath(obj, path, f) {
  const keys = String(path || "").split(".").filter((k) => k !== "");
  if (keys.length === 0) return;
  let o = obj;
  for (const k of keys.slice(0, -1)) { if (typeof o[k] !== "object" || o[k] === null) o[k] = {}; o = o[k]; }
  const last = keys[keys.length - 1];
  o[last] = f(o[last]);
}
function applyStructured(s, c) {
  switch (c.kind) {
    case "set": setPath(s.data, c.path, () => c.value); break;
    case "append": setPath(s.data, c.path, (v) => (Array.isArray(v) ? v : []).concat(c.items || [])); break;
    case "text-delta": setPath(s.data, c.path, (v) => (typeof v === "string" ? v : "") + c.delta); break;
    default: s.data = c.data; s.final = true;
  }
}
function drawStructured(s) {
  const rows = [];
  const data = s.data && typeof s.data === "object" ? s.data : { value: s.data };
  for (const [k, v] of Object.entries(data)) {
    rows.push(el("dt", {}, k), el("dd", { "data-field": k }, typeof v === "string" ? v : Array.isArray(v) && v.every((x) => typeof x === "string") ? v.join(", ") : JSON.stringify(v)));
  }
  s.box.replaceChildren(el("h3", {}, s.dataType || "data", s.final ? "" : " (streaming…)"), el("dl", {}, rows));
  if (s.final) s.box.dataset.final = "true";
}

// ---- questions ----
let formSeq = 0;
// questionForm draws a question: a form, or when answered (the answer sent, {} when unknown)
// what happened to it.
export function questionForm(c, answered, onAnswer = answer) {
  const q = c.input || {};
  const n = ++formSeq;
  const form = el("form", { novalidate: true, class: "question", "data-request": c.requestId, "data-kind": q.kind, "aria-labelledby": `q${n}` });
  const request = q.request || {};
  const title = el("p", { id: `q${n}` }, el("strong", {}, q.question || request.question || "Question"));
  form.append(title);
  const approval = toolApproval(q);
  if (approval) {
    form.dataset.tool = approval.tool;
    form.append(el("div", { class: "approval" }, "Tool ", el("code", { class: "approval-tool" }, approval.tool), " with arguments:",
      el("pre", { class: "approval-args" }, json(approval.input === undefined ? null : approval.input))));
  }
  if (request && Object.keys(request).length && q.kind !== "custom") form.append(el("pre", {}, json(request)));
  if (q.kind === "choice" && q.options.length === 0 && request.args) form.append(el("pre", {}, json(request.args)));
  if (answered) { form.append(el("p", { class: "meta answer-state" }, answered.cancel ? "Cancelled." : "Answered.")); return form; }
  const errors = el("div", { class: "field-error", role: "alert" });
  let collect;
  if (q.kind === "choice" || q.kind === "multi-choice") {
    const multi = q.kind === "multi-choice";
    const fs = el("fieldset", {}, el("legend", { class: "visually-hidden" }, multi ? "Choose one or more" : "Choose one"));
    q.options.forEach((o, i) => {
      const id = `q${n}-o${i}`;
      fs.append(el("div", { class: "field option" }, el("input", { type: multi ? "checkbox" : "radio", name: `q${n}`, id, value: o.id }),
        " ", el("label", { for: id, style: "display:inline" }, o.label || o.id), o.description ? el("span", { class: "meta" }, " — " + o.description) : null));
    });
    form.append(fs);
    collect = () => {
      const sel = [...form.querySelectorAll(`input[name="q${n}"]:checked`)].map((i) => i.value);
      if (sel.length === 0) return { errors: ["Choose at least one option."] };
      const labels = sel.map((id) => (q.options.find((o) => o.id === id) || {}).label || id);
      return { resume: { selected: sel }, label: labels.join(", ") };
    };
  } else if (q.kind === "custom") {
    const schema = request.schema || { type: "object", properties: {} };
    const fields = schemaFields(schema, n);
    fields.forEach((f) => form.append(f.node));
    if (fields.length === 0) {
      const ta = el("textarea", { id: `q${n}-json`, rows: 3 });
      form.append(el("div", { class: "field" }, el("label", { for: `q${n}-json` }, "Answer (JSON)"), ta));
      collect = () => { try { const v = JSON.parse(ta.value); return { resume: { value: v }, label: ta.value }; } catch (e) { return { errors: ["The answer is not valid JSON."] }; } };
    } else {
      collect = () => {
        const value = {}, errs = [];
        for (const f of fields) {
          f.error.textContent = "";
          const r = f.read();
          if (r.error) { errs.push(`${f.label}: ${r.error}`); f.error.textContent = r.error; f.input.setAttribute("aria-invalid", "true"); continue; }
          f.input.removeAttribute("aria-invalid");
          if (r.value !== undefined) value[f.name] = r.value;
        }
        return errs.length ? { errors: errs } : { resume: { value }, label: JSON.stringify(value) };
      };
    }
  } else {
    const id = `q${n}-text`;
    const input = el("input", { id, type: "text", "aria-required": "true", autocomplete: "off" });
    form.append(el("div", { class: "field" }, el("label", { for: id }, "Your answer"), input));
    collect = () => (input.value.trim() === "" ? { errors: ["Write an answer."] } : { resume: {}, label: input.value });
  }
  form.append(errors);
  const submit = el("button", { type: "submit" }, "Answer");
  // Nothing is chosen for the human: a single choice (a tool approval among them) is answered
  // only once an option is picked.
  if (q.kind === "choice") {
    const sync = () => { submit.disabled = !form.querySelector(`input[name="q${n}"]:checked`); };
    form.addEventListener("change", sync);
    sync();
  }
  form.append(submit, " ",
    el("button", { type: "button", class: "cancel", onclick: async () => {
      if (await confirmCancel()) onAnswer(c, { cancel: true }, "Cancel");
    } }, "Cancel run"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const r = collect();
    if (r.errors) { errors.replaceChildren(...r.errors.map((e) => el("div", {}, e))); return; }
    errors.textContent = "";
    onAnswer(c, r.resume, r.label);
  });
  return form;
}

// confirmCancel asks before a question's Cancel: it answers with a cancellation, which ends the
// run that asks it.
function confirmCancel() {
  return confirmAction("Cancel the run?", "Cancel does not skip this question: it cancels the run that asks it. The run ends, cancelled, and does nothing more; this cannot be undone.",
    "Cancel the run", "Keep the question");
}

// schemaFields builds one input per property of an object schema: enums are selects, numbers
// and integers number inputs, booleans checkboxes, the rest text inputs.
function schemaFields(schema, n) {
  const required = new Set(schema.required || []);
  return Object.entries(schema.properties || {}).map(([name, p], i) => {
    const id = `q${n}-f${i}`;
    const label = p.title || name;
    const req = required.has(name);
    const error = el("div", { class: "field-error", id: id + "-err" });
    let input;
    if (Array.isArray(p.enum)) {
      input = el("select", { id, name, "aria-describedby": id + "-err", "aria-required": req ? "true" : null }, el("option", { value: "" }, "—"), p.enum.map((v) => el("option", { value: JSON.stringify(v) }, String(v))));
    } else if (p.type === "boolean") {
      input = el("input", { id, name, type: "checkbox" });
    } else if (p.type === "number" || p.type === "integer") {
      input = el("input", { id, name, type: "text", inputmode: "decimal", "aria-describedby": id + "-err", "aria-required": req ? "true" : null });
    } else {
      input = el("input", { id, name, type: "text", "aria-describedby": id + "-err", "aria-required": req ? "true" : null });
    }
    const read = () => {
      if (p.type === "boolean") return { value: input.checked };
      const raw = input.value.trim();
      if (raw === "") return req ? { error: "required" } : {};
      if (Array.isArray(p.enum)) return { value: JSON.parse(raw) };
      if (p.type === "number" || p.type === "integer") {
        const v = Number(raw);
        if (!Number.isFinite(v)) return { error: "must be a number" };
        if (p.type === "integer" && !Number.isInteger(v)) return { error: "must be a whole number" };
        if (p.minimum !== undefined && v < p.minimum) return { error: `must be at least ${p.minimum}` };
        if (p.maximum !== undefined && v > p.maximum) return { error: `must be at most ${p.maximum}` };
        return { value: v };
      }
      if (p.minLength !== undefined && raw.length < p.minLength) return { error: `must have at least ${p.minLength} characters` };
      return { value: raw };
    };
    const node = el("div", { class: "field" }, el("label", { for: id }, label + (req ? " (required)" : "")), p.description ? el("div", { class: "meta" }, p.description) : null, input, error);
    return { name, label, input, error, read, node };
  });
}

// ---- sessions and checkpoints ----
async function refreshSessions() {
  let list = [];
  try { list = await api("/api/sessions"); } catch (_) { return; }
  const ul = $("sessions");
  ul.replaceChildren(...list.map((s) => el("li", {}, el("button", { type: "button", class: "session", "data-session": s.sessionId, "data-status": s.status,
    "aria-current": s.sessionId === state.sessionId ? "true" : "false", onclick: () => switchSession(s.sessionId) },
    el("span", { class: "session-id" }, s.sessionId),
    el("span", { class: "session-meta" }, el("span", { class: "session-agent" }, s.agent || "no run yet"), " · ",
      el("span", { class: "session-status" }, s.status), " · ", el("time", { datetime: s.lastActivityAt }, when(s.lastActivityAt)))))));
}
// when is a time as the sessions list shows it: the time of day today, else the date.
function when(t) {
  const d = new Date(t);
  return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleDateString();
}
export function switchSession(id) {
  load(id);
  save();
  render();
  loadRemote();
  refreshCheckpoints();
  refreshSessions();
}
async function refreshCheckpoints(tries = 20) {
  const ul = $("checkpoints");
  if (!state.sessionId) { ul.replaceChildren(); return; }
  let list;
  try { list = await api("/api/checkpoints", { action: "list", sessionId: state.sessionId }); } catch (_) { ul.replaceChildren(); return; }
  // The session commits a turn's checkpoint just after the response ends: ask again until the
  // transcript's last checkpoint is listed.
  const last = state.turns.map((t) => t.chunks.map((x) => x.chunk).find((c) => c.type === "checkpoint")).filter(Boolean).at(-1);
  if (last && !list.some((cp) => cp.id === last.id) && tries > 0) { setTimeout(() => refreshCheckpoints(tries - 1), 250); }
  ul.replaceChildren(...list.map((cp) => el("li", { "data-checkpoint": cp.id }, `turn ${cp.turnIndex} · ${cp.workflow} · ${(cp.nodes || []).join(", ")}`, el("br"),
    el("button", { type: "button", class: "rollback", onclick: () => rollback(cp.id), "aria-label": `Roll back to turn ${cp.turnIndex}` }, "Roll back"), " ",
    el("button", { type: "button", class: "fork", onclick: () => fork(cp.id), "aria-label": `Fork from turn ${cp.turnIndex}` }, "Fork"))));
}
async function checkpointTurn(id) {
  const cp = await api("/api/checkpoints", { action: "get", sessionId: state.sessionId, checkpointId: id });
  return cp ? cp.turnIndex : undefined;
}
// keepUpTo keeps the turns up to the one that ended at checkpoint id (all when none did).
// A session's first checkpoint (turn 0) is its start: nothing is kept.
function keepUpTo(turns, id, n) {
  const i = turns.findIndex((t) => t.chunks.some((x) => x.chunk.type === "checkpoint" && x.chunk.id === id));
  if (i < 0) return n === 0 ? [] : turns;
  return turns.slice(0, i + 1);
}
// reissue gives the copied questions of a fork the tokens and request ids the fork asks them
// with: from the result's reissued list, else from its checkpoint's activePendingRequests (the
// open questions in order, matched by hook id), as Kortyx's client does.
function reissue(turns, res) {
  const interrupts = turns.flatMap((t) => t.chunks.map((x) => x.chunk).filter((c) => c.type === "interrupt"));
  const byToken = new Map((res.reissued || []).map((r) => [r.fromToken, r]));
  const pending = ((res.checkpoint && res.checkpoint.activePendingRequests) || []).slice();
  for (const c of interrupts.reverse()) { // the open questions are the latest ones
    let r = byToken.get(c.resumeToken);
    if (!r && byToken.size === 0) {
      const i = pending.findLastIndex((p) => (p.hookId || "") === (c.id || ""));
      if (i >= 0) r = pending.splice(i, 1)[0];
    }
    if (r) { c.resumeToken = r.token; c.requestId = r.requestId; }
  }
  return turns;
}
// confirmRollback says what a rollback to checkpoint id discards, from the session's checkpoint
// list and this tab's transcript, and asks to go on.
async function confirmRollback(id) {
  const list = await api("/api/checkpoints", { action: "list", sessionId: state.sessionId });
  const i = list.findIndex((cp) => cp.id === id);
  const target = i >= 0 ? list[i] : null;
  const later = i >= 0 ? list.slice(i + 1) : [];
  const turns = state.turns.length - keepUpTo(state.turns, id, target ? target.turnIndex : undefined).length;
  const n = target ? target.turnIndex : "?";
  const text = later.length === 0 && turns === 0
    ? `Turn ${n} is the session's last checkpoint: nothing is discarded.`
    : `This discards ${plural(later.length, "later checkpoint")}` + (later.length ? ` (turn ${later[0].turnIndex}` + (later.length > 1 ? ` to turn ${later[later.length - 1].turnIndex})` : ")") : "") +
      ` and ${plural(turns, "turn")} of this transcript after it; a run still open among them is cancelled. The session goes on from turn ${n}; this cannot be undone.`;
  return confirmAction(`Roll back to turn ${n}?`, text, "Roll back", "Keep the turns");
}
async function rollback(id) {
  try {
    if (!(await confirmRollback(id))) return;
    const n = await checkpointTurn(id);
    await api("/api/checkpoints", { action: "rollback", sessionId: state.sessionId, checkpointId: id });
    state.turns = keepUpTo(state.turns, id, n);
    save();
    render();
    setStatus(`Rolled back to turn ${n}.`);
  } catch (e) { setStatus(`${e.code}: ${e.message}`); }
  refreshCheckpoints();
}
async function fork(id) {
  try {
    const n = await checkpointTurn(id);
    const res = await api("/api/checkpoints", { action: "fork", sessionId: state.sessionId, checkpointId: id });
    const turns = reissue(JSON.parse(JSON.stringify(keepUpTo(state.turns, id, n))), res);
    load(res.sessionId);
    state.turns = turns;
    save();
    render();
    loadRemote(); // a fork of a session this tab did not make: its inherited turns from the server
    setStatus(`Forked into ${res.sessionId}.`);
  } catch (e) { setStatus(`${e.code}: ${e.message}`); }
  refreshCheckpoints();
  refreshSessions();
}

// ---- inspector ----
export async function inspect(runId) {
  $("inspect-run").value = runId;
  const box = $("timeline");
  box.replaceChildren(el("p", {}, "Loading…"));
  let tl;
  try { tl = await api(`/api/runs/${encodeURIComponent(runId)}/timeline`); } catch (e) { box.replaceChildren(el("div", { class: "error", role: "alert" }, `${e.code}: ${e.message}`)); return; }
  const u = tl.usage || {};
  box.replaceChildren(
    el("p", { class: "totals", "data-run": tl.runId }, `${tl.workflow} · ${tl.status} · ${tl.modelPasses} model passes · ${tl.toolCalls} tool calls · tokens ${u.input || 0} in / ${u.output || 0} out / ${u.total || 0} total`),
    el("p", { class: "totals nodes" }, "nodes: " + tl.nodes.join(" → ")),
    el("ol", { class: "entries" }, tl.entries.map((e) => el("li", { "data-kind": e.kind }, entryText(e), entryExtra(e, tl)))));
}
function entryText(e) {
  switch (e.kind) {
    case "started": return "run started";
    case "node": return `node ${e.node}`;
    case "model": return `model ${e.model || studio.config.defaultModel || "(the worker's default)"} · ${e.usage ? e.usage.total : 0} tokens (${e.usage ? e.usage.input : 0} in, ${e.usage ? e.usage.output : 0} out) · ${e.finishReason || "?"} · ${e.durationMs} ms`;
    case "tool": return `tool ${e.tool} ${JSON.stringify(e.arguments)} → ${e.error ? "error: " + e.error : e.result} · ${e.durationMs} ms · attempt ${e.attempts}`;
    case "question": return `question ${e.question.kind}: ${e.question.question || ""}`;
    case "answer": return `answer ${JSON.stringify(e.answer)}`;
    case "steer": return `steering message: ${e.text || ""}`;
    case "steered": return `steering message taken in before pass ${(e.step || 0) + 1} of ${e.node || "the node"}`;
    case "child": return `child run ${e.childRunId} · ${e.status || "running"}`;
    case "checkpoint": return `checkpoint ${e.checkpointId} (turn ${e.turnIndex})`;
    case "ended": return `run ${e.status}${e.error ? ": " + e.error : ""}`;
    default: return e.kind;
  }
}
function entryExtra(e, tl) {
  if (e.kind === "child") return [" ", el("button", { type: "button", onclick: () => inspect(e.childRunId) }, "Inspect")];
  if (e.kind !== "checkpoint" || !tl.sessionId) return null;
  const inSession = (f) => async () => { if (state.sessionId !== tl.sessionId) switchSession(tl.sessionId); await f(e.checkpointId); };
  return [" ", el("button", { type: "button", class: "rollback", onclick: inSession(rollback) }, "Roll back"), " ",
    el("button", { type: "button", class: "fork", onclick: inSession(fork) }, "Fork")];
}

// ---- wiring ----
$("composer").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("message").value.trim();
  if (!text) return;
  $("message").value = "";
  try { localStorage.setItem(AGENT_KEY, $("workflow").value.trim()); } catch (_) { /* private mode */ }
  startTurn({ role: "user", content: text }, { workflowId: $("workflow").value.trim() });
});
// The Agent field is kept across reloads (localStorage).
$("workflow").addEventListener("change", () => { try { localStorage.setItem(AGENT_KEY, $("workflow").value.trim()); } catch (_) { /* private mode */ } });
$("message").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("composer").requestSubmit(); }
});
$("stop").addEventListener("click", async () => {
  if (!state.sessionId) return;
  setStatus("Stopping…");
  let res;
  try { res = await api("/api/chat/stop", { sessionId: state.sessionId }); } catch (e) { setStatus(`${e.code}: ${e.message}`); return; }
  const last = state.turns[state.turns.length - 1];
  if (!res || !res.runId) setStatus("Nothing was running.");
  else if (last && last.ended) endStatus(last); // else the response's end says how it ended
});
$("new-session").addEventListener("click", () => { state.sessionId = ""; state.turns = []; state.remote = null; sessionStorage.removeItem("kortyx.session"); render(); refreshCheckpoints(); refreshSessions(); });
$("inspect-form").addEventListener("submit", (ev) => { ev.preventDefault(); const id = $("inspect-run").value.trim(); if (id) inspect(id); });

// showAgents suggests the worker's registered workflows in the Agent field.
function showAgents() {
  const c = studio.config;
  $("workflow-names").replaceChildren(...(c.agents || []).map((a) => el("option", { value: a.id, label: a.description ? `${a.id} — ${a.description}` : a.id })));
  $("workflow").placeholder = c.defaultWorkflow ? `default: ${c.defaultWorkflow}` : "default";
}

const AGENT_KEY = "kortyx.agent";

// init starts the chat view (the configuration is loaded).
export function init() {
  showAgents();
  try { const a = localStorage.getItem(AGENT_KEY); if (a) $("workflow").value = a; } catch (_) { /* private mode */ }
  const s = sessionStorage.getItem("kortyx.session");
  if (s) load(s);
  render();
  loadRemote();
  for (const t of state.turns) if (!t.ended && !t.failed) { setStatus("Reconnecting…"); send(Object.assign(t, { lastId: t.lastId || 0 })); }
  refreshSessions();
  refreshCheckpoints();
}
