// The Interrupts view: GET /api/interrupts, every waiting question oldest first with its age,
// each answered in place with the chat's question form through POST /api/runs/{id}/answer: a
// session's run as the session's answer turn (the chat's operation), whose response is then
// read from the run's stream; any other run by its respond update, then its trace says how it
// went on.
import { $, el, api, shortId, ms, link, setStatus } from "./util.js";
import { questionForm } from "./chat.js";

const REFRESH_MS = 3000;
let timer = null;
let items = new Map(); // requestId → {item, card}
const answered = new Set(); // questions answered here: not drawn again while the route still lists them

export async function show() {
  await load();
  schedule();
}
export function hide() { clearTimeout(timer); timer = null; }
function schedule() {
  clearTimeout(timer);
  timer = setTimeout(async () => { if (document.body.dataset.view === "interrupts") await load(); schedule(); }, REFRESH_MS);
}

// load asks for the inbox and updates the cards in place: a card being filled in is kept as it
// is, a question that was answered elsewhere leaves.
async function load() {
  let list;
  try { list = await api("/api/interrupts"); } catch (e) { setStatus(`${e.code}: ${e.message}`); return; }
  const box = $("inbox");
  const seen = new Set();
  list = list.filter((it) => !answered.has(it.question.requestId));
  list.forEach((it, i) => {
    const id = it.question.requestId;
    seen.add(id);
    let entry = items.get(id);
    if (!entry) { entry = { item: it, card: card(it) }; items.set(id, entry); }
    entry.item = it;
    entry.card.querySelector(".age").textContent = "waiting " + ms(it.ageMs);
    // In the list's order (oldest first), moved only when out of place: a card taken out of
    // the page and put back loses the focus of the field being filled in.
    const at = box.children[i];
    if (at !== entry.card) box.insertBefore(entry.card, at || null);
  });
  for (const [id, entry] of items) {
    if (!seen.has(id) && !entry.card.dataset.answering) { entry.card.remove(); items.delete(id); }
  }
  $("inbox-empty").hidden = list.length > 0;
  $("inbox-count").textContent = list.length ? String(list.length) : "";
  box.dataset.count = String(list.length);
  box.dataset.loaded = String(Date.now());
}

function card(it) {
  const q = it.question;
  const c = { type: "interrupt", requestId: q.requestId, resumeToken: q.token, node: q.node, input: q.input };
  const result = el("div", { class: "answer-result", role: "status" });
  const box = el("article", { class: "interrupt card", "data-request": q.requestId, "data-run": it.runId, "data-session": it.sessionId || "", "aria-label": "Question of run " + it.runId },
    el("div", { class: "who" },
      // A child's question: the child (its agent, node and run) first, then the root that
      // presents it and is answered.
      it.asker ? [el("span", { class: "asker", "data-run": it.asker.runId }, "asked by ", el("span", { class: "asker-agent" }, it.asker.agent), " · node ", el("code", { class: "node" }, q.node || "—"),
        " · run ", shortId(it.asker.runId), " ", link("runs/" + encodeURIComponent(it.asker.runId), "trace", { class: "asker-trace-link" })), " · in ",
      el("span", { class: "agent" }, it.agent), " · root run "] : [el("span", { class: "agent" }, it.agent), " · node ", el("code", { class: "node" }, q.node || "—"), " · run "],
      shortId(it.runId), " ", link("runs/" + encodeURIComponent(it.runId), "trace", { class: "trace-link" }),
      it.sessionId ? [" · session ", shortId(it.sessionId), " ", link("sessions/" + encodeURIComponent(it.sessionId), "session", { class: "session-link" })] : " · no session",
      " · ", el("span", { class: "age" })),
    questionForm(c, null, (cq, resume, label) => send(it, box, result, resume, label)),
    result);
  return box;
}

// send answers the question; the card then says how the run went on and leaves the inbox.
async function send(it, box, result, resume, label) {
  const q = it.question;
  box.dataset.answering = "true";
  for (const b of box.querySelectorAll("button, input, select, textarea")) b.disabled = true;
  result.textContent = "Sending…";
  try {
    const body = Object.assign({ token: q.token, requestId: q.requestId }, resume);
    if (!resume.selected && !resume.value && !resume.cancel) body.text = label;
    // One operation for every run: the route answers a session's run as the session's answer
    // turn (the chat's operation) and any other run by its respond update.
    const res = await api(`/api/runs/${encodeURIComponent(it.runId)}/answer`, body);
    if (res.sessionId) {
      const chunks = await response(res.runId, res.begin || 0);
      result.replaceChildren(...(chunks ? summary(chunks) : [el("span", {}, "Answered; the session goes on.")]), " ",
        el("button", { type: "button", class: "small open-chat", onclick: () => openChat(res.sessionId) }, "Open in chat"));
    } else {
      result.replaceChildren(...(await settled(it.runId, q.requestId)), " ", link("runs/" + encodeURIComponent(it.runId), "See its trace", { class: "trace-link" }));
    }
    box.dataset.answered = "true";
    answered.add(q.requestId);
  } catch (e) {
    delete box.dataset.answering;
    for (const b of box.querySelectorAll("button, input, select, textarea")) b.disabled = false;
    for (const f of box.querySelectorAll("form")) f.dispatchEvent(new Event("change")); // a choice's Answer waits for its pick again
    result.replaceChildren(el("div", { class: "error", role: "alert", "data-code": e.code }, `${e.code}: ${e.message}`));
    return;
  }
  setTimeout(() => { box.remove(); items.delete(q.requestId); load(); }, 1500);
  load();
}

async function openChat(sessionId) {
  const chat = await import("./chat.js");
  chat.switchSession(sessionId);
  location.hash = "#/chat";
}

// summary says how the answered turn went on: its cancellation, its error, the next question,
// its last message, or its end.
function summary(chunks) {
  const next = chunks.filter((c) => c.type === "interrupt").at(-1);
  const gone = new Set(chunks.filter((c) => c.type === "text-invalidated").map((c) => c.segmentId));
  const text = chunks.filter((c) => c.type === "text-delta" && !gone.has(c.segmentId)).map((c) => c.delta).join("");
  const last = chunks.filter((c) => c.type === "message").at(-1);
  const msg = last ? { content: last.content } : text ? { content: text } : null;
  const err = chunks.find((c) => c.type === "error");
  if (chunks.some((c) => c.type === "cancelled")) return [el("span", { class: "run-cancelled" }, "Run cancelled.")];
  if (err) return [el("span", { class: "error", "data-code": (err.failure || {}).code }, `${(err.failure || {}).code || "ERROR"}: ${(err.failure || {}).message || err.message}`)];
  if (next) return [el("span", { class: "next-question" }, "Answered; the run asks next: ", el("strong", {}, (next.input || {}).question || "a question"))];
  if (msg) return [el("span", { class: "next-message" }, "Answered; the run said: ", el("strong", {}, msg.content))];
  return [el("span", {}, "Answered; the turn ended.")];
}

// response reads the answered turn's response: the run's stream after offset begin, until the
// response's end (GET /v1/runs/{id}/stream?until=response, the stream the chat reads). Null
// when the stream is not served here.
async function response(runId, begin) {
  const res = await fetch(`/v1/runs/${encodeURIComponent(runId)}/stream?after=${begin}&until=response`, { headers: { "Accept": "text/event-stream" } });
  if (!res.ok) return null;
  const text = await res.text();
  const chunks = [];
  for (const raw of text.replace(/\r\n/g, "\n").split("\n\n")) {
    let data = "";
    for (const line of raw.split("\n")) if (line.startsWith("data:")) data += line.slice(5).trimStart();
    if (!data || data === "[DONE]") continue;
    try { chunks.push(JSON.parse(data)); } catch (_) { /* not a chunk */ }
  }
  return chunks;
}

// settled says how a run of no session went on after its answer: it asks its trace
// (GET /api/runs/{id}) until the run waits for another question or has ended, for up to 15 s.
async function settled(runId, requestId) {
  for (let i = 0; i < 50; i++) {
    let tr = null;
    try { tr = await api(`/api/runs/${encodeURIComponent(runId)}`); } catch (_) { tr = null; }
    if (tr) {
      const next = (tr.entries || []).filter((e) => e.kind === "question" && e.requestId && e.requestId !== requestId).at(-1);
      if (tr.status === "waiting" && next) return [el("span", { class: "next-question" }, "Answered; the run asks next: ", el("strong", {}, (next.question || {}).question || "a question"))];
      if (tr.closedAt && tr.status === "cancelled") return [el("span", { class: "run-cancelled", "data-status": tr.status }, "Run cancelled.")];
      if (tr.closedAt) return [el("span", { class: "run-ended", "data-status": tr.status }, "Answered; the run ", tr.status === "completed" ? "completed." : "ended: " + tr.status + ".")];
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return [el("span", {}, "Answered; the run continues.")];
}
