// wlmap's web page: the workloads table, one workload's tree, status rules and gang groups,
// GPU totals, kept live by /api/events. Plain DOM, no build step, nothing from the internet.
// Everything shown is set with textContent or DOM attributes, never parsed as HTML: object
// names and labels are user input.
"use strict";

const PAGE_SIZE = 50;
const state = {
  rows: [], version: -1, synced: false,
  sort: { key: "namespace", dir: 1 }, page: 0,
  detail: null, // [namespace, group, kind, name] when a workload is open
};

const $ = (id) => document.getElementById(id);

// An element with attributes and children (strings become text nodes).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v; else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// `!` after a status: one of its rules could not be evaluated (the message says which).
const statusOf = (r) => (r.error ? "Error" : r.status.phase + (r.status.failures?.length ? "!" : ""));
const num = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(2));
const created = (r) => (r.created ? Date.parse(r.created) : NaN);

// kubectl's age: 45s, 12m, 3h, 5d, 2y.
function age(ts) {
  if (!ts) return "-";
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return s + "s";
  if (s < 3 * 3600) return Math.floor(s / 60) + "m";
  if (s < 2 * 86400) return Math.floor(s / 3600) + "h";
  if (s < 365 * 86400) return Math.floor(s / 86400) + "d";
  return Math.floor(s / (365 * 86400)) + "y";
}

const SORT_KEYS = {
  namespace: (r) => r.namespace, name: (r) => r.name, kind: (r) => r.kind,
  status: statusOf, pods: (r) => r.pods.desired, gpus: (r) => r.resources.gpus,
  held: (r) => r.gpusHeld, age: (r) => -created(r),
};

function compare(a, b) {
  const key = SORT_KEYS[state.sort.key];
  const x = key(a), y = key(b);
  const c = typeof x === "number" ? (x - y) || 0 : String(x).localeCompare(String(y));
  if (c !== 0) return c * state.sort.dir;
  return (a.namespace + "/" + a.kind + "/" + a.name).localeCompare(b.namespace + "/" + b.kind + "/" + b.name);
}

function filtered() {
  const q = $("q").value.trim().toLowerCase();
  const ns = $("f-namespace").value, kind = $("f-kind").value, st = $("f-status").value;
  return state.rows.filter((r) =>
    (!ns || r.namespace === ns) && (!kind || r.kind === kind) && (!st || statusOf(r) === st) &&
    (!q || [r.namespace, r.name, r.kind].some((s) => s.toLowerCase().includes(q))));
}

// Keep a select's options in step with the values present, keeping the choice.
function fillSelect(select, values) {
  const chosen = select.value;
  const want = ["", ...[...new Set(values)].sort()];
  const have = [...select.options].map((o) => o.value);
  if (want.join("\u0000") !== have.join("\u0000")) {
    select.replaceChildren(...want.map((v) => el("option", { value: v }, v || "all")));
  }
  select.value = want.includes(chosen) ? chosen : "";
}

function workloadHref(r) {
  return "#/w/" + [r.namespace, r.group, r.kind, r.name].map(encodeURIComponent).join("/");
}

function renderTotals() {
  const totals = new Map();
  for (const r of state.rows) {
    const k = r.namespace + "\u0000" + r.kind;
    totals.set(k, (totals.get(k) || 0) + r.resources.gpus);
  }
  const top = [...totals].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  const max = top.length ? top[0][1] : 1;
  const items = top.slice(0, 10).map(([k, v]) => {
    const [ns, kind] = k.split("\u0000");
    const bar = el("span", { class: "bar", "aria-hidden": "true" });
    bar.style.width = (100 * v) / max + "%";
    return el("li", { "data-namespace": ns, "data-kind": kind },
      el("span", {}, ns + " · " + kind), el("span", {}, bar), el("span", { class: "value" }, num(v)));
  });
  if (top.length > 10) items.push(el("li", {}, el("span", {}, "and " + (top.length - 10) + " more")));
  if (!items.length) items.push(el("li", {}, el("span", {}, "no GPUs requested")));
  $("totals").replaceChildren(...items);
}

function renderList() {
  fillSelect($("f-namespace"), state.rows.map((r) => r.namespace));
  fillSelect($("f-kind"), state.rows.map((r) => r.kind));
  fillSelect($("f-status"), state.rows.map(statusOf));
  renderTotals();
  const rows = filtered().sort(compare);
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  state.page = Math.min(state.page, pages - 1);
  const shown = rows.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
  // A live update redraws the rows: keep the keyboard's place on the row it was on.
  const focused = document.activeElement?.closest?.("#rows tr")?.dataset.key;
  $("rows").replaceChildren(...shown.map((r) => {
    const st = statusOf(r);
    return el("tr", { "data-key": [r.namespace, r.group, r.kind, r.name].join("/") },
      el("td", {}, r.namespace),
      el("td", {}, el("a", { href: workloadHref(r) }, r.name)),
      el("td", {}, r.kind),
      el("td", { class: "status s-" + st.replace("!", ""), title: r.error || r.status.message || r.status.reason || "" }, st),
      el("td", { class: "num" }, (r.pods.ready ?? "-") + "/" + r.pods.desired),
      el("td", { class: "num" }, num(r.resources.gpus)),
      el("td", { class: "num" }, num(r.gpusHeld)),
      el("td", { class: "num", title: r.created || "" }, age(r.created)));
  }));
  if (focused) {
    const row = [...$("rows").rows].find((tr) => tr.dataset.key === focused);
    row?.querySelector("a")?.focus();
  }
  const all = state.rows.length;
  $("count").textContent = (rows.length === all ? all : rows.length + " of " + all) +
    " workload" + (all === 1 ? "" : "s") + (state.synced ? "" : " (still listing)");
  $("page").textContent = "page " + (state.page + 1) + " of " + pages;
  $("prev").disabled = state.page === 0;
  $("next").disabled = state.page >= pages - 1;
  for (const th of document.querySelectorAll("#workloads th")) {
    const key = th.querySelector("button").dataset.sort;
    if (key === state.sort.key) th.setAttribute("aria-sort", state.sort.dir > 0 ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  document.body.dataset.version = String(state.version);
  if (!performance.getEntriesByName("wlmap-rendered").length) performance.mark("wlmap-rendered");
}

// One component of the tree, with its pods and children.
function treeNode(n) {
  let label = n.name + (n.instance ? "[" + n.instance + "]" : "");
  if (n.replica) label += " #" + n.replica;
  const ready = n.replicas.ready ?? "-";
  const meta = ready + "/" + n.desiredPods + " ready · replicas: " + n.replicas.desired + " · GPUs: " + num(n.resources.gpus) +
    (n.kind ? " · " + n.kind : "") + (n.resourceClaims && n.resourceClaims.length ? " · claims: " + n.resourceClaims.join(", ") : "");
  const pods = n.pods.map((p) => el("li", { class: "pod" },
    p.name + "  ", el("span", { class: "status s-" + (p.phase === "Running" ? "Running" : p.phase === "Failed" ? "Failed" : "Initializing") }, p.phase),
    (p.ready ? " ready" : "") + " · GPUs: " + num(p.gpus) + " · node: " + (p.node || "-")));
  const children = n.components.map(treeNode);
  const sub = pods.length || children.length ? el("ul", {}, pods, children) : null;
  const shown = n.error ? el("span", { class: "meta error" }, "unreadable: " + n.error) : el("span", { class: "meta" }, meta);
  return el("li", { class: "node" }, el("span", { class: "node-name" }, label), shown, sub);
}

function rulesTable(d) {
  const traces = d.describe.explain || [];
  const phase = d.describe.status.phase;
  const decided = traces.findIndex((t) => t.matched && t.status === phase);
  return el("table", { class: "rules" },
    el("caption", {}, "Status rules, in precedence order"),
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Status"), el("th", { scope: "col" }, "Matched"), el("th", { scope: "col" }, "Parts"))),
    el("tbody", {}, traces.map((t, i) => el("tr", { class: i === decided ? "decided" : null },
      el("td", {}, t.status + " #" + t.index), el("td", {}, i === decided ? "yes — decided" : t.matched ? "yes" : "no"),
      el("td", {}, el("ul", {}, t.parts.map((p) => el("li", {}, p))))))));
}

function gangsSection(g) {
  if (!g) return null;
  if (g.error) return el("p", { class: "error" }, "Gang groups cannot be formed: " + g.error);
  if (g.mode === "none") return el("p", {}, "This kind's definition declares no gang scheduling.");
  return el("table", { class: "gangs" },
    el("caption", {}, "Gang groups (" + g.mode + ")"),
    el("thead", {}, el("tr", {}, ["Group", "Min pods", "Sub-groups", "Members"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, g.podGroups.map((p) => el("tr", {},
      el("td", {}, p.name + (p.incomplete ? " (incomplete)" : "")), el("td", { class: "num" }, p.minMember),
      el("td", {}, (p.subGroups || []).map((s) => s.name + " ≥" + s.minMember).join(", ") || "-"),
      el("td", {}, (p.members || []).join(", ") || "-")))));
}

function renderDetail(d) {
  const r = d.row;
  const st = statusOf(r);
  document.title = r.kind + "/" + r.name + " — wlmap";
  const facts = [
    ["Namespace", r.namespace || "-"], ["Kind", r.apiVersion + " " + r.kind],
    ["Status", el("span", { class: "status s-" + st.replace("!", "") }, st)],
    ["Reason", r.error || [r.status.reason, r.status.message].filter(Boolean).join(": ") || "-"],
    ["Pods", (r.pods.ready ?? "-") + " ready of " + r.pods.desired + " desired" + (r.pods.observed != null ? " (" + r.pods.observed + " exist)" : "")],
    ["GPUs", num(r.resources.gpus) + " requested, " + num(r.gpusHeld) + " in use"],
    ["Definition", r.definition.name + " (" + r.definition.origin + ")"],
    ["Age", age(r.created)],
  ];
  // Why pods wait for the scheduler, in its own words, counted.
  const waiting = r.waiting || [];
  if (waiting.length) {
    facts.splice(4, 0, ["Waiting", el("ul", { class: "waiting" },
      waiting.map((w) => el("li", {}, w.pods + " pod(s) " + w.reason + ": " + w.message)))]);
  }
  const parts = [
    el("a", { class: "back", href: "#/" }, "← All workloads"),
    el("h2", {}, r.kind + "/" + r.name),
    el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
  ];
  if (d.describe) {
    parts.push(el("h3", {}, "Tree"), el("ul", { class: "tree" }, d.describe.components.map(treeNode)));
    if (d.describe.unattributedPods.length) {
      parts.push(el("p", {}, "Pods no component claims: " + d.describe.unattributedPods.join(", ")));
    }
    const wrap = (t) => (t && t.tagName === "TABLE" ? el("div", { class: "table-wrap" }, t) : t);
    parts.push(el("h3", {}, "Status"), wrap(rulesTable(d)), el("h3", {}, "Gang scheduling"), wrap(gangsSection(d.gangs)));
  }
  const view = $("detail-view");
  view.replaceChildren(...parts.filter(Boolean));
  view.dataset.version = String(state.version);
}

async function loadDetail() {
  const [namespace, group, kind, name] = state.detail;
  const res = await fetch("/api/workload?" + new URLSearchParams({ namespace, group, kind, name }));
  const view = $("detail-view");
  if (res.status === 404) {
    view.replaceChildren(el("a", { class: "back", href: "#/" }, "← All workloads"),
      el("p", {}, kind + "/" + name + " in " + (namespace || "the cluster") + " is not a workload (any more)."));
    view.dataset.version = String(state.version);
    return;
  }
  if (!res.ok) throw new Error("HTTP " + res.status);
  renderDetail(await res.json());
}

let fetching = false, again = false;
async function refresh() {
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    const res = await fetch("/api/workloads");
    if (!res.ok) throw new Error("HTTP " + res.status);
    const data = await res.json();
    state.rows = data.items; state.version = data.version; state.synced = data.synced;
    renderList();
    if (state.detail) await loadDetail();
  } catch (e) {
    setLive("off", "cannot read workloads: " + e.message);
  } finally {
    fetching = false;
    if (again) { again = false; refresh(); }
  }
}

function setLive(cls, text) {
  const l = $("live");
  l.className = "live " + cls;
  l.textContent = text;
}

function connect() {
  const events = new EventSource("/api/events");
  events.addEventListener("changed", (ev) => {
    setLive("on", "live");
    if (JSON.parse(ev.data).version !== state.version) refresh();
  });
  events.onerror = () => setLive("off", "reconnecting…"); // EventSource retries by itself
}

function route() {
  const m = location.hash.match(/^#\/w\/([^/]*)\/([^/]*)\/([^/]*)\/([^/]*)$/);
  state.detail = m ? m.slice(1).map(decodeURIComponent) : null;
  $("list-view").hidden = !!state.detail;
  $("detail-view").hidden = !state.detail;
  if (state.detail) {
    loadDetail().catch((e) => setLive("off", "cannot read workload: " + e.message));
    $("detail-view").focus?.();
  } else {
    document.title = "wlmap — workloads";
  }
}

function start() {
  // The search box redraws as one types; a select when its choice changes (some browsers
  // and drivers send only `change` for it). Not the box's `change`: it fires on leaving it.
  $("q").addEventListener("input", () => { state.page = 0; renderList(); });
  for (const id of ["f-namespace", "f-kind", "f-status"]) {
    for (const ev of ["input", "change"]) {
      $(id).addEventListener(ev, () => { state.page = 0; renderList(); });
    }
  }
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  for (const b of document.querySelectorAll("#workloads th button")) {
    b.addEventListener("click", () => {
      const key = b.dataset.sort;
      state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : 1 };
      renderList();
    });
  }
  $("prev").addEventListener("click", () => { state.page--; renderList(); });
  $("next").addEventListener("click", () => { state.page++; renderList(); });
  document.addEventListener("keydown", (e) => {
    const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement?.tagName);
    if (e.key === "/" && !typing) { e.preventDefault(); location.hash = "#/"; $("q").focus(); }
    if (e.key === "Escape" && state.detail) location.hash = "#/";
  });
  $("detail-view").tabIndex = -1;
  window.addEventListener("hashchange", route);
  route();
  refresh();
  connect();
}

start();
