// Helpers shared by the studio's views: element building, the JSON API, ids, times and
// payloads. Plain ES module, no dependencies.

export const $ = (id) => document.getElementById(id);

// el builds an element: attributes (on* are listeners, false/null/undefined are left out) and
// children (nodes or text).
export function el(tag, attrs, ...kids) {
  const e = tag === "svg" || SVG_TAGS.has(tag) ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat(Infinity)) if (k !== undefined && k !== null && k !== false) e.append(k instanceof Node ? k : String(k));
  return e;
}
const SVG_TAGS = new Set(["g", "rect", "path", "line", "text", "marker", "defs", "title", "polygon", "circle"]);

export const json = (v) => JSON.stringify(v, null, 2);

// api GETs path, or POSTs body as JSON; a refused request throws an Error with the failure's
// code and issues.
export async function api(path, body) {
  const res = await fetch(path, body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw apiError(res.status, data);
  return data;
}
export function apiError(status, data) {
  const f = (data && data.failure) || {};
  const e = new Error((data && data.error) || "HTTP " + status);
  e.code = f.code || "HTTP_" + status;
  e.issues = f.issues || [];
  return e;
}

// shortId shows an id shortened (the whole id in data-id and the title); a click copies it.
export function shortId(id, cls) {
  const s = String(id || "");
  const text = s.length > 18 ? s.slice(0, 10) + "…" + s.slice(-6) : s;
  const b = el("button", { type: "button", class: "id" + (cls ? " " + cls : ""), "data-id": s, title: s + " (click to copy)", "aria-label": "Copy id " + s }, text);
  b.addEventListener("click", async (ev) => {
    ev.stopPropagation();
    ev.preventDefault();
    try { await navigator.clipboard.writeText(s); b.dataset.copied = "true"; } catch (_) { b.dataset.copied = "false"; }
    setTimeout(() => delete b.dataset.copied, 1200);
  });
  return b;
}

// ms is a duration for people: 850 ms, 2.4 s, 3 min 5 s, 2 h 10 min. Each form rounds the
// whole duration to its last unit first, so 119.6 s is 2 min 0 s (not 1 min 60 s).
export function ms(n) {
  if (n === undefined || n === null) return "—";
  if (n < 999.5) return `${Math.round(n)} ms`;
  if (n < 59950) return `${(n / 1000).toFixed(1)} s`;
  const s = Math.round(n / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const m = Math.round(n / 60000);
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// plural is a count with its noun: 1 signal, 2 signals, 0 signals (many: the plural when it is
// not the noun and an s).
export function plural(n, one, many) { return `${n} ${n === 1 ? one : many || one + "s"}`; }

// money is a cost in the price table's currency (the route's, else /api/config's, else USD),
// with up to 4 significant digits and never in exponent notation: $0.000088, 0.25 EUR; a cost
// under a millionth is "< $0.000001".
export function money(v, currency) {
  if (v === undefined || v === null) return "—";
  const cur = currency || studio.config.currency || "USD";
  const n = Number(v);
  if (n !== 0 && Math.abs(n) < 1e-6) return "< " + withCurrency("0.000001", cur);
  return withCurrency(n.toLocaleString("en-US", { maximumSignificantDigits: 4, useGrouping: false }), cur);
}
function withCurrency(s, cur) { return cur === "USD" ? "$" + s : `${s} ${cur}`; }

// when is a time as lists show it: the time of day today, else the date and time.
export function when(t) {
  if (!t) return "—";
  const d = new Date(t);
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return d.toDateString() === new Date().toDateString() ? time : d.toLocaleDateString() + " " + time;
}

export function timeEl(t) { return el("time", { datetime: t }, when(t)); }

// statusBadge draws a run or session status.
export function statusBadge(s) { return el("span", { class: "badge status-" + (s || "unknown"), "data-status": s || "" }, s || "unknown"); }

// FOLD is the size above which the payload viewer folds a value.
const FOLD = 400;

// payload shows a value (any JSON, or a string that may hold JSON) pretty-printed, folded in a
// <details> when it is large.
export function payload(label, v) {
  let value = v;
  if (typeof v === "string") { try { const p = JSON.parse(v); if (p !== null && typeof p === "object") value = p; } catch (_) { /* plain text */ } }
  const text = typeof value === "string" ? value : json(value);
  const pre = el("pre", { class: "payload-value" }, text);
  if (text.length <= FOLD) return el("div", { class: "payload", "data-label": label }, el("span", { class: "payload-label" }, label), pre);
  return el("details", { class: "payload folded", "data-label": label }, el("summary", {}, `${label} (${text.length} characters)`), pre);
}

// hashRoute parses location.hash: #/runs/abc?x=1 → {parts: ["runs", "abc"], params}.
export function hashRoute() {
  const h = location.hash.replace(/^#\/?/, "");
  const [path, query] = h.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}

// go navigates to a hash route (a history entry, so back and forward work).
export function go(path, params) {
  const q = params ? new URLSearchParams([...params].filter(([, v]) => v !== "" && v !== null && v !== undefined)).toString() : "";
  const h = "#/" + path + (q ? "?" + q : "");
  if (location.hash !== h) location.hash = h;
}

// link is an in-page link to a hash route.
export function link(path, text, attrs) { return el("a", Object.assign({ href: "#/" + path }, attrs || {}), text); }

// studio holds what the views share: the configuration (/api/config) and the status line.
export const studio = { config: { temporalUiUrl: "", namespace: "default", agents: [] } };

export function setStatus(text) { $("status").textContent = text; }

export function temporalLink(runId) {
  const c = studio.config;
  if (!c.temporalUiUrl) return null;
  const href = `${c.temporalUiUrl}/namespaces/${encodeURIComponent(c.namespace)}/workflows/${encodeURIComponent(runId)}`;
  return el("a", { href, target: "_blank", rel: "noopener", class: "temporal-link" }, "Temporal UI");
}

// confirmAction asks the operator to confirm what a button would do, in the page's own dialog
// (#confirm-dialog): a title, what it discards, the button that does it and the one that keeps
// things as they are. It resolves true only for that first button.
export function confirmAction(title, text, okLabel, keepLabel) {
  let d = $("confirm-dialog");
  if (!d) {
    d = el("dialog", { id: "confirm-dialog", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-text" });
    document.body.append(d);
  }
  if (d.open) return Promise.resolve(false); // one question at a time
  return new Promise((resolve) => {
    const close = (ok) => { d.returnValue = ok ? "ok" : "keep"; d.close(); };
    const ok = el("button", { type: "button", class: "confirm-ok danger", onclick: () => close(true) }, okLabel);
    const keep = el("button", { type: "button", class: "confirm-keep secondary", onclick: () => close(false) }, keepLabel || "Keep");
    d.replaceChildren(el("h2", { id: "confirm-title" }, title), el("p", { id: "confirm-text" }, text), el("div", { class: "confirm-buttons" }, keep, " ", ok));
    d.returnValue = "";
    d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true });
    d.showModal();
    keep.focus(); // Enter keeps: the safe choice is the default
  });
}

// toLocal is an RFC 3339 time as a datetime-local value (the browser's time zone); fromLocal
// the way back (the routes' from/to are RFC 3339).
export function toLocal(t) {
  const d = new Date(t);
  if (isNaN(d)) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
export function fromLocal(v) {
  const d = new Date(v);
  return isNaN(d) ? "" : d.toISOString().replace(/\.\d{3}Z$/, "Z");
}
