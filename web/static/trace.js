// The Run trace view (#/runs/<id>): GET /api/runs/{id} drawn as a waterfall on the run's time
// scale, with the payload viewer, child runs expandable in place (their own GET
// /api/runs/{childRunId}), rollback and fork from each checkpoint (/api/checkpoints), the
// Temporal UI link, the cost and Temporal's counts.
import { $, el, api, shortId, ms, money, timeEl, statusBadge, payload, link, temporalLink, setStatus, json, studio, when, plural, confirmAction } from "./util.js";

// A run that has not closed is asked again every REFRESH_MS while its trace is shown; the
// waterfall is drawn again when what it shows changed.
const REFRESH_MS = 2000;
let timer = null;
let shown = 0; // the show() call the refresh belongs to

export async function show(r) {
  const id = r.parts[1];
  const n = ++shown;
  clearTimeout(timer);
  const body = $("trace-body");
  body.replaceChildren(el("p", { class: "meta" }, "Loading…"));
  delete body.dataset.refreshes;
  let tl;
  try { tl = await fetchTrace(id); } catch (e) {
    body.replaceChildren(el("div", { class: "error", role: "alert", "data-code": e.code }, `${e.code}: ${e.message}`));
    return;
  }
  draw(body, tl);
  if (!tl.closedAt) refresh(id, n, signature(tl));
}

export function hide() { clearTimeout(timer); timer = null; shown++; }

// fetchTrace asks for a run's trace, with the raw causes of its failures when this studio gives
// them to this viewer (GET /api/config's rawFailures).
function fetchTrace(id) {
  return api(`/api/runs/${encodeURIComponent(id)}${studio.config && studio.config.rawFailures ? "?raw=1" : ""}`);
}

function draw(body, tl) {
  body.replaceChildren(header(tl), zoomControl(() => draw(body, tl)), traceBox(tl, 0));
  body.dataset.run = tl.runId;
  body.dataset.status = tl.status || "";
}

// signature is what a redraw would change: the entries' states and the run's status.
function signature(tl) {
  return JSON.stringify([tl.status, tl.node, tl.closedAt, (tl.entries || []).map((e) => [e.kind, e.status, e.attempts, e.error, e.pending && e.pending.attempt, e.pending && e.pending.state]), (tl.internal || []).length]);
}

function refresh(id, n, sig) {
  timer = setTimeout(async () => {
    if (n !== shown || document.body.dataset.view !== "trace") return;
    let tl;
    try { tl = await fetchTrace(id); } catch (_) { refresh(id, n, sig); return; }
    if (n !== shown) return;
    const body = $("trace-body");
    body.dataset.refreshes = String(Number(body.dataset.refreshes || 0) + 1);
    const next = signature(tl);
    if (next !== sig) draw(body, tl);
    if (!tl.closedAt) refresh(id, n, next);
  }, REFRESH_MS);
}

// failureLine shows a failure: its code, its safe message, where (node, activity, attempt), and
// for an operator its raw cause, folded.
function failureLine(f, cls) {
  if (!f) return null;
  const where = [f.node ? `node ${f.node}` : "", f.activity ? f.activity + (f.attempt ? ` attempt ${f.attempt}` : "") : ""].filter(Boolean).join(" · ");
  return el("span", { class: "failure" + (cls ? " " + cls : ""), "data-code": f.code },
    el("code", { class: "failure-code" }, f.code), " ", el("span", { class: "error-text failure-message" }, f.message),
    where ? [" ", el("span", { class: "meta failure-where" }, "(" + where + ")")] : null,
    f.raw ? el("details", { class: "raw-cause" }, el("summary", {}, "Raw cause"), el("pre", {}, f.raw)) : null);
}

// zoom is how long a wait (a stretch where no model pass, tool call or run point happens) may
// be on the waterfall's scale, in ms; longer ones are drawn that long, marked as compressed.
// 0: the real scale.
let zoom = 0;

// zoomControl chooses zoom; changing it draws the trace again.
function zoomControl(draw) {
  const pick = el("select", { id: "trace-zoom" }, [[0, "real time"], [1000, "1 s"], [10000, "10 s"], [60000, "1 min"]].map(([v, t]) =>
    el("option", { value: String(v), selected: v === zoom }, v ? "compress waits over " + t : t)));
  pick.addEventListener("change", () => { zoom = Number(pick.value); draw(); });
  return el("div", { class: "toolbar trace-zoom" }, el("label", { for: "trace-zoom" }, "Time scale "), pick);
}

// timeScale maps a run's times onto its waterfall: linear, or with every idle stretch longer
// than zoom (no model pass, tool call or point in it: a human wait) shortened to zoom.
function timeScale(tl, sc) {
  const gaps = [];
  if (zoom > 0) {
    const busy = [];
    for (const e of tl.entries) {
      if (e.kind === "question" || e.kind === "child") continue;
      const s = sc.of(e);
      busy.push([s.from, s.to]);
    }
    busy.push([sc.start, sc.start], [sc.end, sc.end]);
    busy.sort((a, b) => a[0] - b[0]);
    let reach = busy[0][1];
    for (const [from, to] of busy) {
      if (from - reach > zoom) gaps.push({ from: reach, to: from, cut: from - reach - zoom });
      reach = Math.max(reach, to);
    }
  }
  const map = (t) => { let v = t - sc.start; for (const g of gaps) if (t > g.from) v -= Math.min(t - g.from, g.to - g.from) * (g.cut / (g.to - g.from)); return v; };
  const total = Math.max(map(sc.end), 1);
  const unmap = (v) => { let t = sc.start + v; for (const g of gaps) { const a = map(g.from), b = map(g.to); if (v >= b) t += g.cut; else if (v > a) t += (v - a) / (b - a) * g.cut; } return t; };
  return { pct: (t) => Math.max(0, Math.min(100, (map(t) / total) * 100)), at: (p) => unmap((total * p) / 100) - sc.start,
    breaks: gaps.map((g) => ({ left: (map(g.from) / total) * 100, width: ((map(g.to) - map(g.from)) / total) * 100, real: g.to - g.from })) };
}

// budgetText says what a run spent of its budget: "812 of 1000 tokens · 0.41 of 0.5 EUR", and
// "so far" while the run may spend more.
function budgetText(b) {
  const parts = [];
  if (b.maxTokens) parts.push(`${b.tokens} of ${b.maxTokens} tokens`);
  if (b.maxCost) parts.push(`${money(b.cost, b.currency)} of ${money(b.maxCost, b.currency)}`);
  return parts.join(" · ") + (b.final ? "" : " so far");
}

function header(tl) {
  const u = tl.usage || {};
  const t = tl.temporal || {};
  const c = tl.cost || { total: 0, models: {}, unpriced: [] };
  const models = Object.entries(c.models || {}).sort(([a], [b]) => a.localeCompare(b));
  return el("div", { class: "trace-head" },
    el("p", { class: "trace-line" }, el("strong", { class: "trace-workflow" }, tl.workflow || "run"), " ", statusBadge(tl.status), " run ", shortId(tl.runId),
      tl.sessionId ? [" · session ", shortId(tl.sessionId), " ", link("sessions/" + encodeURIComponent(tl.sessionId), "open session")] : null,
      tl.node ? [" · at node ", el("code", { class: "trace-node" }, tl.node)] : null,
      !tl.closedAt ? [" · ", el("span", { class: "meta live" }, "live")] : null,
      " · ", link(`workflows?agent=${encodeURIComponent(tl.workflow)}&run=${encodeURIComponent(tl.runId)}`, "graph", { class: "graph-link" }), " ", temporalLink(tl.runId)),
    tl.failure ? el("p", { class: "trace-failure", role: "alert" }, "Failed: ", failureLine(tl.failure)) : null,
    el("div", { class: "figures" },
      figure("Started", timeEl(tl.startedAt)), figure("Duration", ms(tl.durationMs), "duration"),
      figure("Tokens", `${u.input || 0} in / ${u.output || 0} out / ${u.total || 0} total`, "tokens"),
      figure("Model passes", tl.modelPasses, "passes"), figure("Tool calls", tl.toolCalls, "tools"),
      figure("Cost", money(c.total, c.currency), "cost-total"),
      figure("Temporal actions", [String(c.actions || 0), " ≈ ", money(c.actionsCost || 0, c.currency)], "actions"),
      tl.budget && (tl.budget.maxTokens || tl.budget.maxCost) ? figure("Budget", budgetText(tl.budget), "budget") : null,
      ((tl.budget && tl.budget.scopes) || []).map((s) => figure(`${s.scope === "tenant" ? "Tenant" : "Agent"} budget (${s.key})`,
        [`this run ${s.tokens} tokens of ${s.grantedTokens || 0} granted · `, link("home", "ledger")], "budget-" + s.scope))),
    el("p", { class: "meta action-price" }, `Temporal actions counted from the run's history (no queries or heartbeats), priced at ${money(c.actionPrice || 0, c.currency)} per million: an estimate.`),
    tl.rollup ? rollupLine(tl.rollup) : null,
    el("details", { class: "cost-detail", open: models.length > 0 },
      el("summary", {}, "Cost by model"),
      el("div", { class: "table-wrap" }, el("table", { class: "grid cost-table" },
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Model"), el("th", { scope: "col" }, "Input"), el("th", { scope: "col" }, "Output"), el("th", { scope: "col" }, "Cache read"), el("th", { scope: "col" }, "Cost"))),
        el("tbody", {}, models.map(([k, m]) => el("tr", { "data-model": k }, el("td", {}, k), el("td", { class: "num" }, m.usage.input || 0), el("td", { class: "num" }, m.usage.output || 0),
          el("td", { class: "num" }, m.usage.cacheRead || 0), el("td", { class: "num model-cost" }, (c.unpriced || []).includes(k) ? "no price" : money(m.cost, c.currency))))))),
      (c.unpriced || []).length ? el("p", { class: "meta unpriced" }, "Not in the price table: " + c.unpriced.join(", ")) : null),
    tl.input !== undefined || tl.output !== undefined ? el("div", { class: "run-payloads" },
      tl.input !== undefined ? payload("input", tl.input) : null, tl.output !== undefined ? payload("output", tl.output) : null) : null,
    el("details", { class: "temporal-counts" }, el("summary", {}, `Temporal: ${plural(t.events || 0, "event")}, ${plural(t.activities || 0, "activity", "activities")}, ${plural(t.updates || 0, "update")}, ${plural(t.signalsReceived || 0, "signal")}`),
      el("dl", {}, Object.entries(t).map(([k, v]) => [el("dt", {}, k), el("dd", { "data-count": k }, String(v))]))));
}

// rollupLine is the run's figures with its child runs'.
function rollupLine(r) {
  const c = r.cost || {};
  return el("p", { class: "rollup", "data-runs": String(r.runs) }, el("strong", {}, `With its ${plural(r.runs - 1, "child run")}: `),
    el("span", { class: "rollup-tokens" }, `${(r.usage || {}).input || 0} in / ${(r.usage || {}).output || 0} out`), " · cost ",
    el("span", { class: "rollup-cost" }, money(c.total, c.currency)), " · ", el("span", { class: "rollup-actions" }, `${plural(c.actions || 0, "action")} ≈ ${money(c.actionsCost || 0, c.currency)}`),
    r.truncated ? " (the first runs only)" : "");
}

function figure(label, value, cls) {
  return el("div", { class: "figure" + (cls ? " " + cls : "") }, el("span", { class: "figure-label" }, label), el("span", { class: "figure-value" }, value));
}

// spans gives each entry its interval on the run's scale: activities and children from their
// scheduling for their duration, a question until its answer (or until now/the close).
function spans(tl) {
  const start = new Date(tl.startedAt).getTime();
  const end = start + Math.max(tl.durationMs || 0, 1);
  const answers = new Map();
  for (const e of tl.entries) if (e.kind === "answer") answers.set(e.requestId, new Date(e.at).getTime());
  return { start, end, of(e) {
    const at = new Date(e.at).getTime();
    if (e.kind === "question") {
      const a = answers.get(e.requestId);
      return { from: at, to: a !== undefined ? a : end, open: a === undefined };
    }
    if (e.durationMs) return { from: at, to: at + e.durationMs };
    return { from: at, to: at, point: true };
  } };
}

function label(e) {
  switch (e.kind) {
    case "started": return "run started";
    case "ended": return `run ${e.status}`;
    case "node": return `node ${e.node}`;
    case "model": return `model ${e.model || studio.config.defaultModel || "(the worker's default)"}${e.node ? " · " + e.node : ""}`;
    case "tool": return `tool ${e.tool || "(local)"}${e.local ? " · local" : ""}`;
    case "question": return `question ${(e.question || {}).kind || ""}`;
    case "answer": return "answer";
    case "steer": return "steering message";
    case "steered": return `steering message taken in${e.node ? " · " + e.node : ""}`;
    case "child": return "child run";
    case "activity": return `activity ${e.activity}${e.node ? " · " + e.node : ""}`;
    case "checkpoint": return `checkpoint · turn ${e.turnIndex}`;
    default: return e.kind;
  }
}

function detail(e, tl, depth) {
  const out = [];
  switch (e.kind) {
    case "model": {
      const u = e.usage || {};
      out.push(el("span", { class: "tokens" }, `${u.input || 0} in / ${u.output || 0} out`), " · ", el("span", { class: "dur" }, ms(e.durationMs)), e.finishReason ? " · " + e.finishReason : "");
      if (e.attempts > 1) out.push(" · ", el("span", { class: "retries" }, plural(e.attempts, "attempt")));
      break;
    }
    case "tool":
      out.push(el("span", { class: "dur" }, ms(e.durationMs)), " · ", el("span", { class: "attempts" }, `attempt${e.attempts > 1 ? "s" : ""} ${e.attempts || 1}`));
      if (e.attempts > 1) out.push(" · ", el("span", { class: "retries" }, plural(e.attempts - 1, "retry", "retries")));
      if (e.error) out.push(" · ", el("span", { class: "error-text" }, "error"));
      break;
    case "question": out.push(el("span", { class: "question-text" }, (e.question || {}).question || "")); break;
    case "child": out.push(shortId(e.childRunId), " · ", el("span", { class: "child-status" }, e.status || "running"), e.durationMs ? " · " + ms(e.durationMs) : ""); break;
    case "checkpoint": out.push(shortId(e.checkpointId)); break;
    case "activity":
      if (!e.pending) {
        out.push(el("span", { class: "dur" }, ms(e.durationMs)), " · ", el("span", { class: "attempts" }, `attempt${e.attempts > 1 ? "s" : ""} ${e.attempts || 1}`));
        if (e.attempts > 1) out.push(" · ", el("span", { class: "retries" }, plural(e.attempts - 1, "retry", "retries")));
      }
      break;
    case "ended": if (e.failure) out.push(failureLine(e.failure)); else if (e.error) out.push(el("span", { class: "error-text" }, e.error)); break;
  }
  if (e.pending) out.push(pendingDetail(e.pending));
  else if (e.kind !== "ended" && e.failure) out.push(" · ", failureLine(e.failure, "activity-failure"));
  else if (e.lastFailure) out.push(" · before: ", failureLine(e.lastFailure, "last-failure"));
  return out;
}

// pendingDetail says where an unfinished activity is: its attempt (of its maximum, ∞ for none),
// its state, the next attempt's time and the last attempt's failure.
function pendingDetail(p) {
  return el("span", { class: "pending-detail" }, " · ", el("span", { class: "badge pending-state", "data-state": p.state }, p.state),
    " · ", el("span", { class: "pending-attempt" }, `attempt ${p.attempt} / ${p.maximumAttempts || "∞"}`),
    p.nextAttemptAt ? [" · ", el("span", { class: "next-attempt" }, "next attempt " + when(p.nextAttemptAt))] : null,
    p.expiresAt ? [" · ", el("span", { class: "expires" }, "gives up by " + when(p.expiresAt))] : null,
    p.lastFailure ? [" · last failure: ", failureLine(p.lastFailure, "last-failure")] : null);
}

// internalBox folds the run's own activities that completed at their first attempt, by node.
function internalBox(tl) {
  const list = tl.internal || [];
  if (!list.length) return null;
  const byNode = new Map();
  for (const e of list) {
    const k = e.node || "";
    if (!byNode.has(k)) byNode.set(k, []);
    byNode.get(k).push(e);
  }
  return el("details", { class: "internal-activities" }, el("summary", {}, `${plural(list.length, "internal activity", "internal activities")} (tool listing, publishing)`),
    el("ul", {}, [...byNode].map(([node, es]) => el("li", { "data-node": node }, node ? ["node ", el("code", {}, node), ": "] : "no node: ",
      es.map((e, i) => [i ? ", " : "", el("span", { class: "internal-activity", "data-activity": e.activity }, e.activity + (e.local ? " (local)" : "") + (e.durationMs ? " " + ms(e.durationMs) : ""))])))));
}

function payloads(e) {
  const p = [];
  if (e.kind === "model") {
    if (e.text) p.push(payload("text", e.text));
    p.push(payload("usage", e.usage || {}));
  }
  if (e.kind === "tool") {
    p.push(payload("arguments", e.arguments === undefined ? null : e.arguments));
    if (e.result !== undefined && e.result !== "") p.push(payload("result", e.result));
    if (e.error) p.push(payload("error", e.error));
  }
  if (e.kind === "question") p.push(payload("question", e.question));
  if (e.kind === "answer") p.push(payload("answer", e.answer));
  if (e.kind === "steer" || e.kind === "steered") p.push(payload("message", e.text || ""));
  return p;
}

// traceBox draws a run's waterfall; depth > 0 for a child drawn inside its parent.
function traceBox(tl, depth) {
  const sc = spans(tl);
  const ts = timeScale(tl, sc);
  const pct = ts.pct;
  const axis = el("div", { class: "axis", "aria-hidden": "true" }, [0, 25, 50, 75, 100].map((p) => el("span", { style: `left:${p}%` }, ms(ts.at(p)))));
  const breaks = ts.breaks.map((b) => el("i", { class: "axis-break", style: `left:${b.left}%;width:${b.width}%`, title: `a wait of ${ms(b.real)}, compressed` }));
  const rows = tl.entries.map((e, i) => {
    const s = sc.of(e);
    const left = pct(s.from), width = s.point ? 0 : Math.max(pct(s.to) - left, 0.4);
    const bar = el("div", { class: `bar bar-${e.kind}${s.point ? " point" : ""}${s.open || e.pending ? " open" : ""}${e.attempts > 1 ? " retried" : ""}${e.error || (e.pending && e.pending.lastFailure) ? " failed" : ""}`,
      style: `left:${left}%;width:${s.point ? 0 : width}%`, title: `${label(e)}: ${s.point ? "at " : ""}+${ms(s.from - sc.start)}${s.point ? "" : " for " + ms(s.to - s.from)}` });
    if (e.attempts > 1) for (let a = 1; a < e.attempts; a++) bar.append(el("span", { class: "attempt-mark", style: `left:${(a / e.attempts) * 100}%` }));
    const pl = payloads(e);
    const extra = [];
    if (e.kind === "child") extra.push(childToggle(e, depth));
    if (e.kind === "checkpoint" && tl.sessionId) extra.push(checkpointActions(e, tl));
    return el("li", { class: "row" + (e.pending ? " pending" : "") + (e.internal ? " internal" : ""), "data-kind": e.kind, "data-index": String(i),
      "data-activity": e.activity || null, "data-child": e.kind === "child" ? e.childRunId : null, "data-status": e.status || null },
      el("div", { class: "row-label" }, el("span", { class: "kind" }, label(e)), " ", el("span", { class: "row-detail" }, detail(e, tl, depth)), extra),
      el("div", { class: "track" }, bar),
      pl.length ? el("details", { class: "row-payloads" }, el("summary", {}, "payload: " + pl.map((x) => x.dataset.label).join(", ")), pl) : null,
      e.kind === "child" ? el("div", { class: "child-box", hidden: true }) : null);
  });
  return el("section", { class: "trace" + (depth ? " nested" : ""), "data-run": tl.runId, "aria-label": `Trace of run ${tl.runId}` },
    depth ? el("p", { class: "trace-line" }, el("strong", { class: "trace-workflow" }, tl.workflow), " ", statusBadge(tl.status), " ", shortId(tl.runId), " · ", ms(tl.durationMs), " · ",
      link("runs/" + encodeURIComponent(tl.runId), "open")) : null,
    el("div", { class: "waterfall" }, el("div", { class: "axis-row" }, el("div", { class: "row-label meta" }, "time since start"), el("div", { class: "track" }, axis, breaks)),
      el("ol", { class: "rows" }, rows)),
    internalBox(tl));
}

function childToggle(e, depth) {
  const b = el("button", { type: "button", class: "small expand", "aria-expanded": "false", "data-child": e.childRunId }, "Expand");
  b.addEventListener("click", async () => {
    const box = b.closest("li").querySelector(".child-box");
    if (b.getAttribute("aria-expanded") === "true") { box.hidden = true; b.setAttribute("aria-expanded", "false"); b.textContent = "Expand"; return; }
    b.setAttribute("aria-expanded", "true");
    b.textContent = "Collapse";
    box.hidden = false;
    if (!box.dataset.loaded) {
      box.replaceChildren(el("p", { class: "meta" }, "Loading…"));
      try {
        const child = await api(`/api/runs/${encodeURIComponent(e.childRunId)}`);
        box.replaceChildren(traceBox(child, depth + 1));
        box.dataset.loaded = "true";
      } catch (err) { box.replaceChildren(el("div", { class: "error", role: "alert" }, `${err.code}: ${err.message}`)); }
    }
  });
  return [" ", b];
}

function checkpointActions(e, tl) {
  const act = async (action) => {
    try {
      if (action === "rollback" && !(await confirmRollback(e, tl))) return;
      const res = await api("/api/checkpoints", { action, sessionId: tl.sessionId, checkpointId: e.checkpointId });
      const out = el("p", { class: "checkpoint-result", role: "status", "data-action": action });
      if (action === "fork") out.append(`Forked from turn ${e.turnIndex} into session `, shortId(res.sessionId), " ", link("sessions/" + encodeURIComponent(res.sessionId), "open the fork", { class: "fork-link" }));
      else out.append(`Rolled back session `, shortId(tl.sessionId), ` to turn ${e.turnIndex}.`);
      out.dataset.session = res.sessionId;
      const li = document.querySelector(`#trace-body li[data-kind="checkpoint"] button[data-checkpoint="${CSS.escape(e.checkpointId)}"]`);
      (li ? li.closest("li") : $("trace-body")).append(out);
      setStatus(action === "fork" ? `Forked into ${res.sessionId}.` : `Rolled back to turn ${e.turnIndex}.`);
    } catch (err) { setStatus(`${err.code}: ${err.message}`); }
  };
  return [" ", el("button", { type: "button", class: "small rollback", "data-checkpoint": e.checkpointId, onclick: () => act("rollback") }, "Roll back"), " ",
    el("button", { type: "button", class: "small fork", "data-checkpoint": e.checkpointId, onclick: () => act("fork") }, "Fork")];
}

// confirmRollback says what a rollback to the checkpoint of entry e discards, from the session's
// checkpoint list (as the chat's Roll back does), and asks to go on.
async function confirmRollback(e, tl) {
  const list = await api("/api/checkpoints", { action: "list", sessionId: tl.sessionId });
  const i = list.findIndex((cp) => cp.id === e.checkpointId);
  const later = i >= 0 ? list.slice(i + 1) : [];
  const n = e.turnIndex;
  const text = later.length === 0
    ? `Turn ${n} is the session's last checkpoint: nothing is discarded.`
    : `This discards ${plural(later.length, "later checkpoint")} of session ${tl.sessionId} (turn ${later[0].turnIndex}` +
      (later.length > 1 ? ` to turn ${later[later.length - 1].turnIndex}` : "") +
      `); a run still open among them is cancelled. The session goes on from turn ${n}; this cannot be undone.`;
  return confirmAction(`Roll back to turn ${n}?`, text, "Roll back", "Keep the turns");
}
