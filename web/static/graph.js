// The Workflows view (#/workflows?agent=<id>&run=<run id>): each agent's graph from GET
// /api/workflows drawn as SVG in layers (a node's layer is its longest path from the start,
// back edges aside); conditional edges dashed with their condition. With a run, the nodes it
// went through (its trace's nodes) and the edges between them are highlighted, and the node
// where it waits now is marked.
import { $, el, api, go, shortId, statusBadge, link, json } from "./util.js";

const W = 150, H = 40, GAPX = 40, GAPY = 70, PAD = 20;
let graphs = null;

export async function show(r) {
  const body = $("workflows-body");
  if (!graphs) {
    try { graphs = await api("/api/workflows"); } catch (e) { body.replaceChildren(el("div", { class: "error", role: "alert" }, `${e.code}: ${e.message}`)); return; }
  }
  const runId = r.params.get("run") || "";
  let tl = null;
  if (runId) { try { tl = await api(`/api/runs/${encodeURIComponent(runId)}`); } catch (_) { tl = null; } }
  const agent = r.params.get("agent") || (tl && tl.workflow) || (graphs[0] && graphs[0].id) || "";
  const g = graphs.find((x) => x.id === agent);
  const pick = el("select", { id: "wf-agent", "aria-label": "Agent" }, graphs.map((x) => el("option", { value: x.id, selected: x.id === agent }, x.id)));
  pick.addEventListener("change", () => go("workflows", new URLSearchParams({ agent: pick.value })));
  const runForm = el("form", { class: "inline-form", id: "wf-run-form" }, el("label", { for: "wf-run" }, "Run"), el("input", { id: "wf-run", value: runId, autocomplete: "off", placeholder: "a run id to highlight" }),
    el("button", { type: "submit" }, "Show"));
  runForm.addEventListener("submit", (ev) => { ev.preventDefault(); go("workflows", new URLSearchParams({ agent: pick.value, run: $("wf-run").value.trim() })); });
  const list = el("ul", { class: "agent-list" }, graphs.map((x) => el("li", {}, link(`workflows?agent=${encodeURIComponent(x.id)}`, x.id, { "aria-current": x.id === agent ? "true" : null }),
    x.description ? el("span", { class: "meta" }, " — " + x.description) : null)));
  body.replaceChildren(el("div", { class: "toolbar" }, el("label", { for: "wf-agent" }, "Agent "), pick, runForm), list,
    g ? draw(g, tl) : el("p", { class: "meta" }, "No agent is registered on this worker."));
}

function layers(g) {
  const out = new Map(g.edges.map((e) => [e.from, []]));
  for (const e of g.edges) out.get(e.from).push(e.to);
  const layer = new Map([["__start__", 0]]);
  // Longest path over a DFS tree: edges to a node on the current path (loops) are left out.
  const onPath = new Set();
  const visit = (n, d) => {
    if ((layer.get(n) ?? -1) >= d && n !== "__start__") return;
    layer.set(n, d);
    onPath.add(n);
    for (const m of out.get(n) || []) if (!onPath.has(m)) visit(m, d + 1);
    onPath.delete(n);
  };
  visit("__start__", 0);
  let max = 0;
  for (const v of layer.values()) max = Math.max(max, v);
  for (const n of g.nodes) if (!layer.has(n.id)) layer.set(n.id, n.id === "__end__" ? max + 1 : max);
  if (g.nodes.some((n) => n.id === "__end__") && !g.edges.some((e) => e.to === "__end__")) layer.set("__end__", max + 1);
  return layer;
}

// implicitEnd: a node with no outgoing edge ends the run.
function edgesOf(g) {
  const edges = g.edges.slice();
  const from = new Set(g.edges.map((e) => e.from));
  for (const n of g.nodes) if (n.kind !== "start" && n.kind !== "end" && !from.has(n.id)) edges.push({ from: n.id, to: "__end__", implicit: true });
  return edges;
}

function draw(g0, tl) {
  const g = Object.assign({}, g0, { edges: edgesOf(g0) });
  const layer = layers(g);
  const rows = [];
  for (const n of g.nodes) {
    const l = layer.get(n.id);
    (rows[l] = rows[l] || []).push(n);
    // A node's declared child workflows are drawn beside it, in its row.
    for (const c of n.children || []) rows[l].push({ id: childKey(n.id, c), child: c, parent: n.id, kind: "child" });
  }
  const widest = Math.max(...rows.filter(Boolean).map((r) => r.length));
  const width = PAD * 2 + widest * W + (widest - 1) * GAPX;
  const pos = new Map();
  rows.forEach((r, l) => {
    if (!r) return;
    const rw = r.length * W + (r.length - 1) * GAPX;
    r.forEach((n, i) => pos.set(n.id, { x: (width - rw) / 2 + i * (W + GAPX), y: PAD + l * (H + GAPY) }));
  });
  const height = PAD * 2 + rows.length * H + (rows.length - 1) * GAPY;
  // The run's path: start → its nodes in order (→ end once it completed).
  const path = [];
  let waitingAt = "";
  if (tl) {
    path.push("__start__", ...tl.nodes);
    if (tl.status === "completed") path.push("__end__");
    const answered = new Set(tl.entries.filter((e) => e.kind === "answer").map((e) => e.requestId));
    const open = tl.entries.filter((e) => e.kind === "question" && !answered.has(e.requestId)).at(-1);
    // The trace's node (where an open run is now), else its open question's, else its last.
    if (tl.status === "waiting") waitingAt = tl.node || (open && open.node) || tl.nodes.at(-1) || "";
  }
  const visited = new Set(path);
  const walked = new Set(path.slice(1).map((n, i) => path[i] + "→" + n));
  const svg = el("svg", { class: "graph", "data-agent": g.id, viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `Graph of ${g.id}` },
    el("defs", {}, el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "9", markerHeight: "9", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head" }))));
  for (const e of g.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
    const back = b.y <= a.y;
    const d = back ? `M${a.x + W},${a.y + H / 2} C${a.x + W + 60},${a.y + H / 2} ${b.x + W + 60},${b.y + H / 2} ${b.x + W},${b.y + H / 2}`
      : `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
    const cls = "edge" + (e.when ? " conditional" : "") + (e.implicit ? " implicit" : "") + (walked.has(e.from + "→" + e.to) ? " walked" : "");
    svg.append(el("g", { class: cls, "data-from": e.from, "data-to": e.to }, el("path", { d, "marker-end": "url(#arrow)" }),
      e.when ? el("text", { x: (x1 + x2) / 2 + 6, y: (y1 + y2) / 2, class: "edge-label" }, e.when) : null));
  }
  for (const n of g.nodes) for (const c of n.children || []) {
    const a = pos.get(n.id), b = pos.get(childKey(n.id, c));
    svg.append(el("g", { class: "edge spawn", "data-from": n.id, "data-child": c },
      el("path", { d: `M${a.x + W},${a.y + H / 2} L${b.x},${b.y + H / 2}`, "marker-end": "url(#arrow)" }),
      el("text", { x: (a.x + W + b.x) / 2, y: a.y + H / 2 - 6, "text-anchor": "middle", class: "edge-label" }, "starts")));
    const box = el("g", { class: "node kind-child", "data-child": c, "data-parent": n.id, transform: `translate(${b.x},${b.y})`, tabindex: "0", role: "link",
      "aria-label": `Child workflow ${c}, started by ${n.id} (open its graph)` },
    el("title", {}, `child workflow ${c} (started by ${n.id})`),
    el("rect", { width: W, height: H, rx: 6 }),
    el("text", { x: W / 2, y: 17, "text-anchor": "middle", class: "node-label" }, c),
    el("text", { x: W / 2, y: 32, "text-anchor": "middle", class: "node-run" }, "child workflow"));
    const open = () => go("workflows", new URLSearchParams({ agent: c }));
    box.addEventListener("click", open);
    box.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } });
    svg.append(box);
  }
  const details = el("div", { class: "node-details", id: "node-details", "aria-live": "polite" }, el("p", { class: "meta" }, "Click a node for its details."));
  for (const n of g.nodes) {
    const p = pos.get(n.id);
    const cls = `node kind-${n.kind}${visited.has(n.id) ? " visited" : ""}${n.id === waitingAt ? " waiting" : ""}`;
    const box = el("g", { class: cls, "data-node": n.id, transform: `translate(${p.x},${p.y})`, tabindex: "0", role: "button", "aria-label": `Node ${n.id}: show its details` },
      el("title", {}, `${n.id} (${n.kind}${n.run ? ": " + n.run : ""})${n.id === waitingAt ? " — the run waits here" : ""}`),
      el("rect", { width: W, height: H, rx: n.kind === "start" || n.kind === "end" ? 20 : 6 }),
      el("text", { x: W / 2, y: n.run ? 17 : H / 2 + 5, "text-anchor": "middle", class: "node-label" }, n.id === "__start__" ? "start" : n.id === "__end__" ? "end" : n.id),
      n.run ? el("text", { x: W / 2, y: 32, "text-anchor": "middle", class: "node-run" }, n.run) : null,
      n.id === waitingAt ? el("circle", { cx: W - 8, cy: 8, r: 5, class: "waiting-dot" }) : null);
    const open = () => {
      for (const o of svg.querySelectorAll(".node.selected")) o.classList.remove("selected");
      box.classList.add("selected");
      details.replaceChildren(nodeDetails(n, g));
    };
    box.addEventListener("click", open);
    box.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } });
    svg.append(box);
  }
  const legend = el("p", { class: "meta legend" }, "Solid: always; dashed: conditional (its condition beside it); dotted: a node without an outgoing edge ends the run; beside a node, the child workflows it starts.",
    tl ? [" Highlighted: run ", shortId(tl.runId), " ", statusBadge(tl.status), waitingAt ? [" — waits at ", el("strong", { class: "waiting-node" }, waitingAt)] : null, " ", link("runs/" + encodeURIComponent(tl.runId), "trace")] : null);
  return el("div", { class: "graph-box" }, el("h3", {}, g.id, " ", el("span", { class: "meta" }, `v${g.version}`)), g.description ? el("p", { class: "meta" }, g.description) : null,
    el("div", { class: "graph-scroll", tabindex: "0", "aria-label": "Graph (scrolls)" }, svg), legend, details);
}

function childKey(node, child) { return `child:${node}:${child}`; }

// nodeDetails lists what the definition says of a node: its kind and function, for a
// kortyx.reason node its model, prompt, tools and approval policy, then its params, retry,
// version, child workflows, metadata and edges.
function nodeDetails(n, g) {
  const p = n.params || {};
  const rows = [["Kind", n.kind], ["Runs", n.run || (n.kind === "go" ? "a Go function of the definition" : "—")]];
  if (n.kind === "reason") {
    rows.push(["Model", p.model || "the worker's default"], ["Prompt", p.system ? el("pre", { class: "payload-value" }, p.system) : "—"],
      ["Tools", (p.tools || []).length ? p.tools.join(", ") : "none"], ["Approval", p.approval === undefined ? "none" : el("pre", { class: "payload-value" }, json(p.approval))]);
  }
  if (Object.keys(p).length) rows.push(["Params", el("pre", { class: "payload-value" }, json(p))]);
  if (n.retry) rows.push(["Retry", `${n.retry.maxAttempts} attempts${n.retry.delayMs ? `, ${n.retry.delayMs} ms apart` : ""}`]);
  if (n.version) rows.push(["Version", n.version]);
  if ((n.children || []).length) rows.push(["Child workflows", n.children.map((c, i) => [i ? ", " : "", link(`workflows?agent=${encodeURIComponent(c)}`, c)])]);
  if (n.metadata) rows.push(["Metadata", el("pre", { class: "payload-value" }, json(n.metadata))]);
  const out = g.edges.filter((e) => e.from === n.id).map((e) => e.to + (e.when ? ` (when ${e.when})` : ""));
  const into = g.edges.filter((e) => e.to === n.id).map((e) => e.from + (e.when ? ` (when ${e.when})` : ""));
  rows.push(["Comes from", into.length ? into.join(", ") : "—"], ["Goes to", out.length ? out.join(", ") : "—"]);
  return el("div", { "data-node": n.id }, el("h4", {}, "Node ", el("code", {}, n.id)),
    el("dl", { class: "node-fields" }, rows.map(([k, v]) => [el("dt", {}, k), el("dd", { "data-field": k }, v)])));
}
