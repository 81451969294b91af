// The studio (the entry module): one page, its views on hash routes (#/home, #/chat, #/runs?…, #/runs/<id>,
// #/sessions, #/sessions/<id>, #/interrupts, #/workflows?agent=…&run=…, #/cost?range=…). Each view module draws itself
// from the JSON routes when its route is shown and stops its refresh when it is left.
import { $, api, studio, hashRoute } from "./util.js";
import * as chat from "./chat.js";
import * as runs from "./runs.js";
import * as sessions from "./sessions.js";
import * as inbox from "./inbox.js";
import * as trace from "./trace.js";
import * as graph from "./graph.js";
import * as home from "./home.js";
import * as cost from "./cost.js";

const views = { chat, runs, sessions, interrupts: inbox, trace, workflows: graph, home, cost };
let current = null;

// route shows the view of the location's hash.
async function route() {
  const r = hashRoute();
  let name = r.parts[0] || "chat";
  if (name === "runs" && r.parts.length > 1) name = "trace";
  if (!views[name]) name = "chat";
  if (current && current !== views[name] && current.hide) current.hide();
  current = views[name];
  for (const s of document.querySelectorAll("section.view")) s.hidden = s.dataset.view !== name;
  const navName = name === "trace" ? "runs" : name;
  for (const a of document.querySelectorAll("#views a")) {
    if (a.dataset.view === navName) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  document.body.dataset.view = name;
  if (current.show) await current.show(r);
}

// The theme: system (prefers-color-scheme), light or dark, kept in localStorage.
const themes = ["system", "light", "dark"];
function showTheme() {
  const t = document.documentElement.dataset.theme || "system";
  $("theme").textContent = "Theme: " + t;
  $("theme").setAttribute("aria-label", "Theme: " + t + " (change)");
}
$("theme").addEventListener("click", () => {
  const t = themes[(themes.indexOf(document.documentElement.dataset.theme || "system") + 1) % themes.length];
  if (t === "system") delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = t;
  try { localStorage.setItem("kortyx.theme", t); } catch (_) { /* private mode */ }
  showTheme();
});

// countInbox shows how many questions wait, in the navigation (one request at a time: the
// inbox asks each waiting run, which can take long).
let counting = false;
async function countInbox() {
  if (counting || document.body.dataset.view === "interrupts") return; // the inbox view counts itself
  counting = true;
  try { const list = await api("/api/interrupts"); $("inbox-count").textContent = list.length ? String(list.length) : ""; } catch (_) { /* not shown */ }
  counting = false;
}

(async function init() {
  try { studio.config = await api("/api/config"); } catch (_) { /* defaults */ }
  showTheme();
  chat.init();
  window.addEventListener("hashchange", route);
  await route();
  countInbox();
  setInterval(countInbox, 5000);
  document.body.dataset.ready = "true";
})();

// The skip link moves the focus to the content (its href is not a route).
document.querySelector(".skip-link").addEventListener("click", (ev) => { ev.preventDefault(); $("content").focus(); });
