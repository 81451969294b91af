// The Home view (#/home?agent=…): GET /api/overview as three panels (and GET /api/budgets as a fourth) — the runs of the last
// hour by status, the waiting questions by age, the last hour's failures by code — each
// figure a link into the runs list (filtered by status and start time) or the inbox. Asked
// again every 5 seconds while the view is open.
import { $, el, api, link, money, setStatus } from "./util.js";

const REFRESH_MS = 5000;
const STATUSES = ["running", "waiting", "completed", "failed", "cancelled"];
let timer = null;
let params = new URLSearchParams();
let seq = 0;

export async function show(r) {
  params = r.params;
  await load();
  schedule();
}

export function hide() { clearTimeout(timer); timer = null; }

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(async () => { if (document.body.dataset.view === "home") { await load(); schedule(); } }, REFRESH_MS);
}

// byCode is the runs list's filter of the failures of code: the failed runs of the hour with
// that error code, or all of them for TERMINATED and TIMED_OUT (Temporal ended those runs: the
// list's code filter takes a Kortyx code).
function byCode(code, since) {
  const f = { status: "failed", from: since };
  if (code !== "TERMINATED" && code !== "TIMED_OUT") f.code = code;
  return f;
}

// runsLink is the runs list of the overview's filters with more.
function runsLink(extra) {
  const q = new URLSearchParams();
  for (const k of ["agent", "session", "q"]) if (params.get(k)) q.set(k, params.get(k));
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return "runs?" + q.toString();
}

// budgetText says a ledger's use against its budget: "226 of 1000 tokens · 2 runs live".
function budgetText(b) {
  const parts = [];
  if (b.budget.maxTokens) parts.push(`${b.tokens} of ${b.budget.maxTokens} tokens`);
  if (b.budget.maxCost) parts.push(`${money(b.cost || 0)} of ${money(b.budget.maxCost)}`);
  if (b.overTokens) parts.push(`${b.overTokens} tokens past it by Continue`);
  parts.push(`${b.live.length} run${b.live.length === 1 ? "" : "s"} holding ${b.live.reduce((a, r) => a + r.tokens, 0)} tokens`);
  return parts.join(" · ");
}

async function load() {
  const n = ++seq;
  const q = new URLSearchParams();
  for (const k of ["agent", "session", "q"]) if (params.get(k)) q.set(k, params.get(k));
  let ov;
  try { ov = await api("/api/overview" + (q.toString() ? "?" + q.toString() : "")); } catch (e) {
    if (n === seq) { setStatus(`${e.code}: ${e.message}`); $("home-body").replaceChildren(el("div", { class: "error", role: "alert" }, `${e.code}: ${e.message}`)); }
    return;
  }
  if (n !== seq) return;
  const since = ov.since.replace(/\.\d+Z$/, "Z");
  const inbox = "interrupts"; // the inbox lists every waiting question, oldest first
  const tile = (cls, key, count, label, href) => el("li", { class: "tile " + cls, "data-key": key },
    link(href, [el("span", { class: "tile-count" }, String(count)), el("span", { class: "tile-label" }, label)], { "aria-label": `${count} ${label}` }));
  const runs = el("section", { class: "home-panel", id: "home-runs", "aria-labelledby": "home-runs-title" },
    el("h3", { id: "home-runs-title" }, "Runs started in the last hour"),
    el("ul", { class: "tiles" }, STATUSES.map((s) => tile("status-" + s, s, ov.runs[s] || 0, s, runsLink({ status: s, from: since })))));
  const waiting = el("section", { class: "home-panel", id: "home-waiting", "aria-labelledby": "home-waiting-title" },
    el("h3", { id: "home-waiting-title" }, `Waiting questions: ${ov.waitingTotal}`),
    el("ul", { class: "tiles" }, ov.waiting.map((b) => tile("age", b.label, b.count, "waiting " + b.label, inbox))));
  const failures = el("section", { class: "home-panel", id: "home-failures", "aria-labelledby": "home-failures-title" },
    el("h3", { id: "home-failures-title" }, "Failures in the last hour, by code"),
    ov.failures.length ? el("ul", { class: "tiles" }, ov.failures.map((f) => tile("failure", f.code, f.count, f.code, runsLink(byCode(f.code, since)))))
      : el("p", { class: "meta home-none" }, "No run failed in the last hour."));
  let shared = [];
  try { shared = (await api("/api/budgets")).budgets; } catch (e) { shared = []; }
  if (n !== seq) return;
  const budgets = el("section", { class: "home-panel", id: "home-budgets", "aria-labelledby": "home-budgets-title" },
    el("h3", { id: "home-budgets-title" }, "Shared budgets"),
    shared.length ? el("ul", { class: "budgets" }, shared.map((b) => el("li", { class: "budget", "data-scope": b.scope, "data-key": b.key },
      el("strong", {}, `${b.scope === "tenant" ? "Tenant" : "Agent"} ${b.key}`), b.window ? ` (${b.window})` : "", ": ", budgetText(b))))
      : el("p", { class: "meta home-none" }, "No agent or tenant budget has a ledger yet."));
  const body = $("home-body");
  body.replaceChildren(el("p", { class: "meta" }, "Since ", el("time", { datetime: since }, new Date(since).toLocaleTimeString()),
    params.get("agent") ? [" · agent ", el("strong", {}, params.get("agent"))] : null, " · updated ", new Date().toLocaleTimeString()), runs, waiting, failures, budgets);
  body.dataset.loaded = String(n);
}
