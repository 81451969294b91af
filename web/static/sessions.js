// The Sessions view: GET /api/sessions (the server's sessions: agent, turns, last activity,
// status) and one session (#/sessions/<id>): GET /api/sessions/{id} — its checkpoints, open
// questions and, for a fork, the session and checkpoint it came from, drawn as a branch — and
// its runs (GET /api/runs?session=<id>), each linked to its trace.
import { $, el, api, shortId, timeEl, statusBadge, link, go, plural, money } from "./util.js";

export async function show(r) {
  if (r.parts[1]) return detail(r.parts[1]);
  const body = $("sessions-body");
  let list;
  try { list = await api("/api/sessions"); } catch (e) { body.replaceChildren(el("div", { class: "error", role: "alert" }, `${e.code}: ${e.message}`)); return; }
  body.replaceChildren(el("div", { class: "table-wrap", tabindex: "0", "aria-label": "Sessions table" }, el("table", { class: "grid", id: "sessions-table" },
    el("thead", {}, el("tr", {}, ["Session", "Agent", "Turns", "Last activity", "Status"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, list.map((s) => el("tr", { "data-session": s.sessionId, class: "clickable", onclick: () => go("sessions/" + encodeURIComponent(s.sessionId)) },
      el("td", { "data-label": "Session" }, link("sessions/" + encodeURIComponent(s.sessionId), "open", { onclick: (e) => e.stopPropagation() }), " ", shortId(s.sessionId)),
      el("td", { "data-label": "Agent", class: "agent" }, s.agent || "—"),
      el("td", { "data-label": "Turns", class: "num turns" }, s.turns === undefined ? "—" : String(s.turns)),
      el("td", { "data-label": "Last activity" }, timeEl(s.lastActivityAt)),
      el("td", { "data-label": "Status" }, statusBadge(s.status))))))),
  ...(list.length ? [] : [el("p", { class: "meta" }, "No session yet.")]));
  body.dataset.loaded = "list";
}

async function detail(id) {
  const body = $("sessions-body");
  body.replaceChildren(el("p", { class: "meta" }, "Loading…"));
  let v, runs = { runs: [] }, parent = null;
  try { v = await api(`/api/sessions/${encodeURIComponent(id)}`); } catch (e) { body.replaceChildren(el("div", { class: "error", role: "alert", "data-code": e.code }, `${e.code}: ${e.message}`)); return; }
  let tr = null;
  try { tr = await api(`/api/sessions/${encodeURIComponent(id)}/transcript`); } catch (_) { tr = null; }
  if (!tr) { try { runs = await api(`/api/runs?session=${encodeURIComponent(id)}&pageSize=200`); } catch (_) { /* shown empty */ } }
  if (v.parentSessionId) { try { parent = await api(`/api/sessions/${encodeURIComponent(v.parentSessionId)}`); } catch (_) { parent = null; } }
  const openChat = async () => { const chat = await import("./chat.js"); chat.switchSession(id); location.hash = "#/chat"; };
  // (replaceChildren would draw a null as the text "null": the parts left out are dropped.)
  body.replaceChildren(...[
    el("p", {}, link("sessions", "← all sessions")),
    el("h3", { class: "session-title" }, "Session ", shortId(id), " ", el("button", { type: "button", class: "small open-chat", onclick: openChat }, "Open in chat")),
    v.parentSessionId ? el("p", { class: "forked-from" }, "Forked from session ", link("sessions/" + encodeURIComponent(v.parentSessionId), v.parentSessionId, { class: "parent-link" }), " at checkpoint ", shortId(v.forkedFrom)) : null,
    v.active ? el("p", { class: "meta active" }, `A turn is running: turn ${v.active.turnIndex} (${v.active.kind}), run `, shortId(v.active.runId)) : null,
    v.budget ? el("p", { class: "meta session-budget" }, "Budget: ", sessionBudgetText(v.budget)) : null,
    waiting(v),
    branches(v, parent),
    el("h4", {}, "Checkpoints"),
    el("ol", { class: "session-checkpoints" }, (v.checkpoints || []).map((c) => el("li", { "data-checkpoint": c.id, class: c.id === v.head ? "head" : null },
      `turn ${c.turnIndex} · ${c.workflow || "—"} · ${(c.nodes || []).join(", ") || "no node"} · `, timeEl(c.createdAt), c.id === v.head ? el("strong", {}, " (head)") : null, c.label ? ` · ${c.label}` : null))),
    el("h4", {}, "Open questions"),
    (v.pending || []).length ? el("ul", { class: "session-pending" }, v.pending.map((p) => el("li", { "data-request": p.requestId }, `${(p.input || {}).question || p.input.kind} (node ${p.node}) `, link("interrupts", "answer in the inbox"))))
      : el("p", { class: "meta" }, "None."),
    el("div", { class: "session-turns" }, tr ? transcriptOf(tr) : [
      el("h4", {}, "Runs (the turns, newest first)"),
      el("p", { class: "meta" }, "This API gives no transcript: each turn is a run; open its trace for what it did."),
      el("ol", { class: "session-runs" }, runs.runs.slice().sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt)).map((r) => el("li", { "data-run": r.runId }, link("runs/" + encodeURIComponent(r.runId), r.agent, { class: "run-link" }), " ", statusBadge(r.status), " ", shortId(r.runId), " · ", timeEl(r.startedAt),
        r.question ? [" · asks: ", el("em", {}, r.question.question)] : null)))])].filter(Boolean));
  body.dataset.loaded = "detail";
  body.dataset.session = id;
}

// promptText is a turn's prompt as the run received it: a string, a {message} or the last
// user message of {messages}, else its JSON.
function promptText(input) {
  if (input === undefined || input === null) return "";
  if (typeof input === "string") return input;
  if (typeof input.message === "string") return input.message;
  const ms = Array.isArray(input.messages) ? input.messages : Array.isArray(input) ? input : null;
  const last = ms && ms.filter((m) => m && m.role === "user").at(-1);
  if (last && typeof last.content === "string") return last.content;
  return JSON.stringify(input);
}

// transcriptOf draws GET /api/sessions/{id}/transcript: each turn's prompt, then what its run
// did as its history records it (the model's text, tool calls, questions and answers); a turn a
// rollback discarded is marked rolled back, a fork's turns of its parent inherited.
function transcriptOf(tr) {
  const rolled = (tr.turns || []).filter((t) => t.state === "rolledBack").length;
  return [el("h4", {}, "Transcript (oldest first)"),
    tr.truncated ? el("p", { class: "meta" }, "Only the newest turns are shown (the route says there are more).") : null,
    rolled ? el("p", { class: "meta rolled-back-note" }, `${plural(rolled, "turn was", "turns were")} rolled back: ${rolled === 1 ? "it is" : "they are"} marked, and the session goes on without ${rolled === 1 ? "it" : "them"}.`) : null,
    el("ol", { class: "session-transcript" }, (tr.turns || []).map(transcriptTurnItem))];
}

// transcriptTurnItem draws one turn of a transcript (the sessions view's and the chat's earlier
// turns): its state (rolled back, inherited from the parent session), its prompt, what its run
// did, and its run line.
export function transcriptTurnItem(t) {
  const state = t.state === "rolledBack" ? el("p", { class: "turn-state rolled-back" }, "Rolled back: the session no longer goes on from this turn.")
    : t.state === "inherited" ? el("p", { class: "turn-state inherited" }, "Inherited from session ", link("sessions/" + encodeURIComponent(t.sessionId), t.sessionId, { class: "parent-link" }), " (before the fork).")
      : null;
  return el("li", { class: "transcript-turn" + (t.state === "rolledBack" ? " rolled-back" : t.state === "inherited" ? " inherited" : ""), "data-run": t.runId, "data-state": t.state || "" },
    state,
    t.arrival ? el("p", { class: "meta arrival", "data-arrival": t.arrival }, t.arrival === "enqueue" ? "Queued: sent while the turn before ran, started after it." : "Interrupting: sent while a turn ran, which it stopped; the prompt holds both messages.") : null,
    el("div", { class: "user prompt" }, promptText(t.input)),
    el("div", { class: "assistant" }, (t.entries || []).map(transcriptEntry).filter(Boolean),
      el("div", { class: "meta run" }, link("runs/" + encodeURIComponent(t.runId), "trace", { class: "run-link" }), " ", statusBadge(t.status), " ", shortId(t.runId), " · ", timeEl(t.startedAt))));
}

function transcriptEntry(e) {
  switch (e.kind) {
    case "model": return e.text ? el("div", { class: "text model-text" }, e.text) : null;
    case "tool": return el("div", { class: "tool", "data-tool": e.tool || "" }, el("strong", {}, "→ " + (e.tool || "(local tool)")), e.arguments !== undefined ? el("pre", { class: "tool-args" }, JSON.stringify(e.arguments)) : null,
      e.error ? el("div", { class: "tool-error" }, "✗ " + e.error) : e.result ? el("div", { class: "tool-result" }, "← ", el("code", {}, e.result)) : null);
    case "question": return el("div", { class: "question asked" }, "? ", el("strong", {}, (e.question || {}).question || (e.question || {}).kind || "a question"));
    case "answer": return el("div", { class: "meta answered" }, "answered ", el("code", {}, JSON.stringify(e.answer)));
    case "steer": return el("div", { class: "user steer", "data-steer": e.steerId || "" }, "↪ ", e.text || "", el("span", { class: "meta" }, " (steering message)"));
    case "steered": return el("div", { class: "meta steered", "data-steer": e.steerId || "" }, `taken in before pass ${(e.step || 0) + 1} of ${e.node || "the node"}`);
    case "child": return el("div", { class: "meta" }, "child run ", shortId(e.childRunId), " · ", e.status || "running");
    default: return null;
  }
}

// waiting lists the messages that wait: queued ones (their turn starts when the turns before it
// end) and steering ones (sent to the running turn, not taken in yet).
function waiting(v) {
  const all = [...(v.queued || []).map((m) => ({ ...m, where: "queued" })), ...(v.steering || []).map((m) => ({ ...m, where: "steering" }))];
  if (!all.length) return null;
  return el("div", { class: "session-waiting" }, el("h4", {}, "Waiting messages"),
    el("ol", {}, all.map((m) => el("li", { "data-waiting": m.where, "data-kind": m.kind },
      m.where === "queued" ? `queued (${m.kind})` : "steering the running turn, run ", m.where === "steering" ? shortId(m.runId) : null,
      m.clientTurnId ? ` · ${m.clientTurnId}` : "", " · ", timeEl(m.since)))));
}

// branches draws the session's checkpoints as a line; a fork's line leaves its parent's line at
// the checkpoint it was forked from.
function branches(v, parent) {
  const R = 7, DX = 60, DY = 40, PAD = 20;
  const lanes = [];
  let offset = 0;
  if (parent) {
    lanes.push({ id: parent.sessionId, cps: parent.checkpoints || [], start: 0, cls: "lane parent" });
    const i = (parent.checkpoints || []).findIndex((c) => c.id === v.forkedFrom);
    offset = i >= 0 ? i : 0;
  }
  // A fork's checkpoints begin with the copy of the one it was forked from.
  lanes.push({ id: v.sessionId, cps: v.checkpoints || [], start: parent ? offset : 0, cls: "lane self" });
  const cols = Math.max(...lanes.map((l) => l.start + l.cps.length), 1);
  const width = PAD * 2 + (cols - 1) * DX + 160, height = PAD * 2 + (lanes.length - 1) * DY + 10;
  const svg = el("svg", { class: "branches", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": parent ? "The fork's branch from its parent session" : "The session's checkpoints" });
  lanes.forEach((l, li) => {
    const y = PAD + li * DY;
    const x0 = PAD + l.start * DX;
    const g = el("g", { class: l.cls, "data-session": l.id });
    if (li > 0) g.append(el("path", { class: "branch-edge", d: `M${x0},${PAD} C${x0},${y} ${x0},${y} ${x0 + 1},${y}` }));
    if (l.cps.length > 1) g.append(el("line", { x1: x0, y1: y, x2: x0 + (l.cps.length - 1) * DX, y2: y }));
    l.cps.forEach((c, i) => g.append(el("circle", { cx: x0 + i * DX, cy: y, r: R, "data-checkpoint": c.id, class: c.id === v.head && li === lanes.length - 1 ? "head" : null }, el("title", {}, `turn ${c.turnIndex} · ${c.id}`))));
    g.append(el("text", { x: x0 + Math.max(l.cps.length - 1, 0) * DX + 14, y: y + 4 }, (li === lanes.length - 1 ? "this session" : "parent ") + (li === lanes.length - 1 ? "" : l.id.slice(0, 12))));
    svg.append(g);
  });
  return el("div", { class: "graph-scroll", tabindex: "0", "aria-label": "Branches (scrolls)" }, svg);
}

// sessionBudgetText says what a session's runs reported spent of its budget: "62 of 200 tokens".
function sessionBudgetText(b) {
  const parts = [];
  if (b.maxTokens) parts.push(`${b.tokens} of ${b.maxTokens} tokens`);
  if (b.maxCost) parts.push(`${money(b.cost || 0)} of ${money(b.maxCost)}`);
  return parts.join(" · ");
}
