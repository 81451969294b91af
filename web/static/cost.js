// The Cost view (#/cost?range=hour|day|week|custom&from=…&to=…&agent=…&q=…): GET /api/cost for the
// runs started in the range, grouped by agent and by session, then the most expensive runs with
// their child runs rolled up. Every cost is shown with its currency; Temporal actions with their
// estimated cost at the studio's price per million.
import { $, el, api, go, link, money, shortId, statusBadge, studio, setStatus, toLocal, fromLocal } from "./util.js";

const RANGES = { hour: 3600e3, day: 86400e3, week: 7 * 86400e3 };
let params = new URLSearchParams();
let seq = 0;


function fillForm() {
  const range = params.get("range") || "day";
  $("c-range").value = range;
  for (const f of document.querySelectorAll("#cost-filters .c-custom")) f.hidden = range !== "custom";
  $("c-from").value = params.get("from") ? toLocal(params.get("from")) : "";
  $("c-to").value = params.get("to") ? toLocal(params.get("to")) : "";
  const agents = $("c-agent");
  const known = new Set([...agents.options].map((o) => o.value));
  for (const a of studio.config.agents || []) if (!known.has(a.id)) agents.append(el("option", { value: a.id }, a.id));
  const want = params.get("agent") || "";
  if (want && ![...agents.options].some((o) => o.value === want)) agents.append(el("option", { value: want }, want));
  agents.value = want;
}

export async function show(r) {
  params = r.params;
  fillForm();
  await load();
}

// query is the route's filters: the range's start (and end), the agent.
function query(groupBy) {
  const q = new URLSearchParams({ groupBy });
  const range = params.get("range") || "day";
  if (range === "custom") {
    if (params.get("from")) q.set("from", params.get("from"));
    if (params.get("to")) q.set("to", params.get("to"));
  } else {
    q.set("from", new Date(Date.now() - RANGES[range]).toISOString().replace(/\.\d{3}Z$/, "Z"));
  }
  for (const k of ["agent", "q"]) if (params.get(k)) q.set(k, params.get(k));
  return q.toString();
}

async function load() {
  const n = ++seq;
  const body = $("cost-view-body");
  let byAgent, bySession;
  try { [byAgent, bySession] = await Promise.all([api("/api/cost?" + query("agent")), api("/api/cost?" + query("session"))]); } catch (e) {
    if (n === seq) { setStatus(`${e.code}: ${e.message}`); body.replaceChildren(el("div", { class: "error", role: "alert", "data-code": e.code }, `${e.code}: ${e.message}`)); }
    return;
  }
  if (n !== seq) return;
  const c = byAgent.total.cost;
  body.replaceChildren(
    el("div", { class: "figures" },
      el("div", { class: "figure cost-runs" }, el("span", { class: "figure-label" }, "Runs"), el("span", { class: "figure-value" }, String(byAgent.total.runs))),
      el("div", { class: "figure cost-models" }, el("span", { class: "figure-label" }, "Model cost"), el("span", { class: "figure-value" }, money(c.total, c.currency))),
      el("div", { class: "figure cost-actions" }, el("span", { class: "figure-label" }, "Temporal actions"), el("span", { class: "figure-value" }, `${c.actions} ≈ ${money(c.actionsCost, c.currency)}`)),
      el("div", { class: "figure cost-sum" }, el("span", { class: "figure-label" }, "Together"), el("span", { class: "figure-value" }, money(c.total + c.actionsCost, c.currency)))),
    el("p", { class: "meta" }, `Temporal actions are counted from each run's history (queries and heartbeats are not in it) and priced at ${money(c.actionPrice, c.currency)} per million: an estimate. Model cost is from the price table.`),
    el("p", { class: "meta truncated", hidden: !byAgent.truncated }, "Only the newest matching runs are counted (the route says there are more)."),
    el("h3", {}, "By agent"), table("cost-by-agent", byAgent.rows.concat([byAgent.total]), (k) => k === "total" ? "total" : link(`runs?agent=${encodeURIComponent(k)}`, k || "—")),
    el("h3", {}, "By session"), el("p", { class: "meta" }, "A child run counts under the session of the run that started it."),
    table("cost-by-session", bySession.rows.concat([bySession.total]), (k) => k === "total" ? "total" : k ? link(`sessions/${encodeURIComponent(k)}`, k) : "no session"),
    el("h3", {}, "Most expensive runs, child runs included"), runsTable(byAgent.runs));
  body.dataset.loaded = String(n);
}

// table lists cost rows {key, runs, usage, cost}.
function table(id, rows, keyCell) {
  return el("div", { class: "table-wrap" }, el("table", { class: "grid cost-table", id },
    el("thead", {}, el("tr", {}, ["Key", "Runs", "Input", "Output", "Model cost", "Actions", "Actions cost"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows.map((r) => el("tr", { "data-key": r.key }, el("td", {}, keyCell(r.key)), el("td", { class: "num" }, String(r.runs)),
      el("td", { class: "num" }, String(r.usage.input || 0)), el("td", { class: "num" }, String(r.usage.output || 0)),
      el("td", { class: "num" }, money(r.cost.total, r.cost.currency)), el("td", { class: "num" }, String(r.cost.actions)),
      el("td", { class: "num" }, money(r.cost.actionsCost, r.cost.currency)))))));
}

// runsTable lists the most expensive runs: own figures and, with their child runs, the total.
function runsTable(runs) {
  if (!runs.length) return el("p", { class: "meta" }, "No run in this range.");
  return el("div", { class: "table-wrap" }, el("table", { class: "grid cost-table", id: "cost-runs" },
    el("thead", {}, el("tr", {}, ["Run", "Agent", "Status", "Child runs", "Own cost", "Own actions", "With children: cost", "With children: actions"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, runs.map((r) => el("tr", { "data-run": r.runId },
      el("td", {}, link("runs/" + encodeURIComponent(r.runId), "open", { class: "open-run" }), " ", shortId(r.runId)), el("td", { class: "agent" }, r.agent), el("td", {}, statusBadge(r.status)),
      el("td", { class: "num children" }, String(r.children)),
      el("td", { class: "num own-cost" }, money(r.own.cost.total, r.own.cost.currency)), el("td", { class: "num own-actions" }, `${r.own.cost.actions} ≈ ${money(r.own.cost.actionsCost, r.own.cost.currency)}`),
      el("td", { class: "num total-cost" }, money(r.total.cost.total, r.total.cost.currency)), el("td", { class: "num total-actions" }, `${r.total.cost.actions} ≈ ${money(r.total.cost.actionsCost, r.total.cost.currency)}`))))));
}

$("c-range").addEventListener("change", () => { for (const f of document.querySelectorAll("#cost-filters .c-custom")) f.hidden = $("c-range").value !== "custom"; });
$("cost-filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const p = new URLSearchParams({ range: $("c-range").value });
  if ($("c-range").value === "custom") {
    if ($("c-from").value) p.set("from", fromLocal($("c-from").value));
    if ($("c-to").value) p.set("to", fromLocal($("c-to").value));
  }
  if ($("c-agent").value) p.set("agent", $("c-agent").value);
  if (params.get("q")) p.set("q", params.get("q")); // a shared URL's id prefix is kept
  go("cost", p);
});
