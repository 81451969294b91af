// The Runs view: GET /api/runs as a live-refreshing table. The filters (agent, status, session,
// q, from, to, pageSize) and the page (pageToken) are the route's query, so a view can be shared
// and back/forward walk through the filters and pages.
import { $, el, api, shortId, ms, money, timeEl, statusBadge, go, link, studio, setStatus, toLocal, fromLocal } from "./util.js";

const FILTERS = ["agent", "status", "session", "q", "from", "to", "pageSize", "code"];
const REFRESH_MS = 3000;
let timer = null;
let params = new URLSearchParams();
let seq = 0;


function fillForm() {
  const agents = $("f-agent");
  const known = new Set([...agents.options].map((o) => o.value));
  for (const a of studio.config.agents || []) if (!known.has(a.id)) agents.append(el("option", { value: a.id }, a.id));
  const want = params.get("agent") || "";
  if (want && ![...agents.options].some((o) => o.value === want)) agents.append(el("option", { value: want }, want));
  for (const k of FILTERS) {
    const input = $("f-" + k);
    const v = params.get(k) || "";
    input.value = k === "from" || k === "to" ? (v ? toLocal(v) : "") : v;
  }
}

function readForm() {
  const p = new URLSearchParams();
  for (const k of FILTERS) {
    let v = $("f-" + k).value.trim();
    if ((k === "from" || k === "to") && v) v = fromLocal(v);
    if (v) p.set(k, v);
  }
  return p;
}

export async function show(r) {
  params = r.params;
  fillForm();
  await load();
  schedule();
}

export function hide() { clearTimeout(timer); timer = null; }

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(async () => { if ($("runs-live").checked && document.body.dataset.view === "runs") await load(); schedule(); }, REFRESH_MS);
}

function query() {
  const q = new URLSearchParams();
  for (const k of [...FILTERS, "pageToken"]) if (params.get(k)) q.set(k, params.get(k));
  return q.toString();
}

async function load() {
  const n = ++seq;
  let page;
  try { page = await api("/api/runs" + (query() ? "?" + query() : "")); } catch (e) {
    if (n === seq) { setStatus(`${e.code}: ${e.message}`); draw({ runs: [], nextPageToken: "" }, e); }
    return;
  }
  if (n !== seq) return; // a later load answered first
  draw(page);
  if ($("runs-cost").open) loadCost();
}

// loadCost shows GET /api/cost?groupBy=agent|session with the table's filters: rows of
// {key, runs, usage, cost}.
async function loadCost() {
  const q = new URLSearchParams();
  for (const k of FILTERS) if (k !== "pageSize" && params.get(k)) q.set(k, params.get(k));
  q.set("groupBy", $("cost-group").value);
  const box = $("cost-body");
  let data;
  try { data = await api("/api/cost?" + q.toString()); } catch (e) { box.replaceChildren(el("p", { class: "meta" }, `${e.code}: ${e.message}`)); return; }
  const rows = (Array.isArray(data) ? data : (data && data.rows) || []).concat(data && data.total ? [data.total] : []);
  box.replaceChildren(el("div", { class: "table-wrap" }, el("table", { class: "grid cost-table", id: "cost-table" },
    el("thead", {}, el("tr", {}, ["Key", "Runs", "Input", "Output", "Cost"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows.map((r) => el("tr", { "data-key": r.key }, el("td", {}, r.key || "—"), el("td", { class: "num" }, String(r.runs ?? "")),
      el("td", { class: "num" }, String((r.usage || {}).input || 0)), el("td", { class: "num" }, String((r.usage || {}).output || 0)),
      el("td", { class: "num" }, r.cost ? money(r.cost.total, r.cost.currency) : "—")))))),
  ...(data && data.truncated ? [el("p", { class: "meta" }, "Only the newest matching runs are counted (the route says there are more).")] : []));
}

function draw(page, err) {
  const body = $("runs-table").tBodies[0];
  body.replaceChildren(...page.runs.map(row));
  $("runs-empty").hidden = page.runs.length > 0 || !!err;
  $("runs-next").disabled = !page.nextPageToken;
  $("runs-next").dataset.token = page.nextPageToken || "";
  $("runs-first").disabled = !params.get("pageToken");
  $("runs-table").dataset.count = String(page.runs.length);
  $("runs-updated").textContent = err ? "" : "Updated " + new Date().toLocaleTimeString();
  $("view-runs").dataset.loaded = String(seq);
}

function row(r) {
  const u = r.usage;
  const open = () => go("runs/" + encodeURIComponent(r.runId));
  const tr = el("tr", { "data-run": r.runId, "data-status": r.status, class: "clickable", onclick: open },
    el("td", { "data-label": "Run" }, link("runs/" + encodeURIComponent(r.runId), "open", { class: "open-run", "aria-label": "Open the trace of run " + r.runId, onclick: (e) => e.stopPropagation() }), " ", shortId(r.runId)),
    el("td", { "data-label": "Agent", class: "agent" }, r.agent),
    el("td", { "data-label": "Status" }, statusBadge(r.status)),
    el("td", { "data-label": "Session", class: "session" }, r.sessionId ? shortId(r.sessionId) : r.parentRunId ? el("span", { class: "meta" }, "child of ", shortId(r.parentRunId)) : "—"),
    el("td", { "data-label": "Started" }, timeEl(r.startedAt)),
    el("td", { "data-label": "Duration", class: "num" }, ms(r.durationMs)),
    el("td", { "data-label": "Tokens", class: "num tokens" }, u ? `${u.input || 0} in / ${u.output || 0} out` : "—"),
    el("td", { "data-label": "Cost", class: "num cost" }, r.cost ? money(r.cost.total, r.cost.currency) : "—"),
    el("td", { "data-label": "Open question", class: "question-text" }, r.question ? r.question.question || r.question.kind : ""),
    el("td", { "data-label": "Error", class: "error-cell" }, r.error ? [el("code", { class: "error-code", "data-code": r.error.code }, r.error.code), " ", el("span", { class: "error-text" }, r.error.message)] : ""));
  return tr;
}

$("runs-filters").addEventListener("submit", (ev) => { ev.preventDefault(); go("runs", readForm()); });
$("runs-clear").addEventListener("click", () => go("runs", new URLSearchParams()));
$("runs-next").addEventListener("click", () => {
  const p = new URLSearchParams(params);
  p.set("pageToken", $("runs-next").dataset.token);
  go("runs", p);
});
$("runs-first").addEventListener("click", () => { const p = new URLSearchParams(params); p.delete("pageToken"); go("runs", p); });
$("runs-cost").addEventListener("toggle", () => { if ($("runs-cost").open) loadCost(); });
$("cost-group").addEventListener("change", loadCost);
$("runs-live").addEventListener("change", () => { if ($("runs-live").checked) load(); });
