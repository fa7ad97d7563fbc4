// asymflow serve: sorting, filtering, picking rows to compare, live updates, and charts.
// Every page works without this script; it only adds interaction on top of server HTML.
"use strict";

(function theme() {
  const root = document.documentElement;
  const saved = localStorage.getItem("asymflow-theme");
  if (saved === "light" || saved === "dark") root.dataset.theme = saved;
  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("theme");
    if (!button) return;
    button.addEventListener("click", () => {
      const dark = root.dataset.theme
        ? root.dataset.theme === "dark"
        : window.matchMedia("(prefers-color-scheme: dark)").matches;
      root.dataset.theme = dark ? "light" : "dark";
      localStorage.setItem("asymflow-theme", root.dataset.theme);
    });
  });
})();

function cellValue(td) {
  if (!td) return "";
  return td.dataset.v !== undefined ? td.dataset.v : td.textContent.trim();
}

function asNumber(text) {
  if (text === "" || text === null || text === undefined) return NaN;
  return Number(text);
}

// One filter box: text (case-insensitive substring), `=text` (exact), or a comparison on
// numbers (`>0.5`, `<=3`, `!=2`).
function makeTest(raw) {
  const text = raw.trim();
  if (text === "") return null;
  const m = text.match(/^(<=|>=|!=|<|>|=)\s*(.+)$/);
  if (m) {
    const [, op, rhs] = m;
    const n = Number(rhs);
    if (!Number.isNaN(n) && rhs.trim() !== "") {
      return (td) => {
        const v = asNumber(cellValue(td));
        if (Number.isNaN(v)) return false;
        switch (op) {
          case "<": return v < n;
          case "<=": return v <= n;
          case ">": return v > n;
          case ">=": return v >= n;
          case "=": return v === n;
          default: return v !== n;
        }
      };
    }
    if (op === "=") {
      const want = rhs.trim().toLowerCase();
      return (td) => td.textContent.trim().toLowerCase() === want;
    }
    if (op === "!=") {
      const want = rhs.trim().toLowerCase();
      return (td) => td.textContent.trim().toLowerCase() !== want;
    }
  }
  const needle = text.toLowerCase();
  return (td) => td.textContent.toLowerCase().includes(needle);
}

function setupGrid(table) {
  if (table.dataset.server) { setupServerGrid(table); return; }
  const tbody = table.tBodies[0];
  const heads = Array.from(table.tHead.rows[0].cells);
  const filters = Array.from(table.querySelectorAll("input.filter"));
  const shown = document.querySelector(`.shown[data-for="${table.id}"]`);
  const clear = document.querySelector(`.clear-filters[data-for="${table.id}"]`);
  const total = tbody.rows.length;

  function applyFilters() {
    const tests = filters
      .map((input) => [Number(input.dataset.col), makeTest(input.value)])
      .filter(([, t]) => t);
    let count = 0;
    for (const row of tbody.rows) {
      const ok = tests.every(([col, test]) => test(row.cells[col]));
      row.hidden = !ok;
      if (ok) count++;
    }
    if (shown) shown.textContent = count === total ? `${total} rows` : `${count} of ${total} rows`;
  }
  filters.forEach((input) => input.addEventListener("input", applyFilters));
  if (clear) clear.addEventListener("click", () => {
    filters.forEach((input) => { input.value = ""; });
    applyFilters();
  });
  table.applyFilters = applyFilters;
  table.setFilter = (col, value) => {
    const input = filters.find((f) => Number(f.dataset.col) === col);
    if (input) { input.value = value; applyFilters(); }
  };

  heads.forEach((th, col) => {
    const button = th.querySelector("button.sort");
    if (!button) return;
    button.addEventListener("click", () => {
      const dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", dir);
      const sign = dir === "ascending" ? 1 : -1;
      const rows = Array.from(tbody.rows).map((row, i) => {
        const raw = cellValue(row.cells[col]);
        return { row, raw, num: asNumber(raw), i };
      });
      const numeric = rows.every((r) => r.raw === "" || !Number.isNaN(r.num));
      rows.sort((a, b) => {
        // Empty cells go last in both directions.
        if (a.raw === "" && b.raw !== "") return 1;
        if (b.raw === "" && a.raw !== "") return -1;
        let c = numeric ? a.num - b.num : a.raw.localeCompare(b.raw, undefined, { numeric: true });
        if (c === 0) c = a.i - b.i;
        return sign * c;
      });
      const fragment = document.createDocumentFragment();
      rows.forEach((r) => fragment.appendChild(r.row));
      tbody.appendChild(fragment);
    });
  });
}

// The instance table of a pipeline page is sorted, filtered and paged by the server: every
// change rewrites the page's query and swaps in the table the server sends for it.
let tableSection = null;
const picked = new Set();

function currentQuery() {
  return new URLSearchParams(window.location.search);
}

async function loadTable(query) {
  if (!tableSection) return;
  const text = query.toString();
  const response = await fetch(`${tableSection.dataset.table}${text ? "?" + text : ""}`, { cache: "no-store" });
  if (!response.ok) return;
  const html = await response.text();
  const active = document.activeElement;
  const focus = active && active.matches && active.matches("#table-section input.filter")
    ? { name: active.dataset.name, at: active.selectionStart } : null;
  const open = !!document.querySelector("#metric-columns[open]");
  tableSection.innerHTML = html;
  history.replaceState(null, "", `${tableSection.dataset.page}${text ? "?" + text : ""}`);
  bindTableSection();
  if (open) { const d = document.getElementById("metric-columns"); if (d) d.open = true; }
  if (focus) {
    const input = [...tableSection.querySelectorAll("input.filter")].find((i) => i.dataset.name === focus.name);
    if (input) { input.focus(); try { input.setSelectionRange(focus.at, focus.at); } catch (e) { /* search inputs */ } }
  }
  tableSection.dataset.loads = String(Number(tableSection.dataset.loads || 0) + 1);
}

function setupServerGrid(table) {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th) => {
    const button = th.querySelector("button.sort");
    if (!button) return;
    button.addEventListener("click", () => {
      const q = currentQuery();
      q.set("sort", button.textContent);
      if (th.getAttribute("aria-sort") === "ascending") q.set("dir", "desc"); else q.delete("dir");
      q.delete("page");
      loadTable(q);
    });
  });
  let timer = null;
  const filters = Array.from(table.querySelectorAll("input.filter"));
  const apply = () => {
    const q = currentQuery();
    for (const input of filters) {
      const key = `f.${input.dataset.name}`;
      if (input.value.trim() === "") q.delete(key); else q.set(key, input.value);
    }
    q.delete("page");
    loadTable(q);
  };
  filters.forEach((input) => input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 250);
  }));
  table.setFilter = (col, value) => {
    const input = filters.find((f) => Number(f.dataset.col) === col);
    if (input) { input.value = value; apply(); }
  };
  const clear = document.querySelector(`.clear-filters[data-for="${table.id}"]`);
  if (clear) clear.addEventListener("click", () => {
    filters.forEach((input) => { input.value = ""; });
    apply();
  });
  table.querySelectorAll("input.pick").forEach((box) => { box.checked = picked.has(box.value); });
}

function bindTableSection() {
  if (!tableSection) return;
  tableSection.querySelectorAll("table.grid").forEach((t) => { if (t.tHead && t.querySelector("input.filter")) setupGrid(t); });
  tableSection.querySelectorAll("a[data-query]").forEach((a) => a.addEventListener("click", (e) => {
    e.preventDefault();
    loadTable(new URL(a.href).searchParams);
  }));
  const boxes = [...tableSection.querySelectorAll("input.metric-choice")];
  boxes.forEach((box) => box.addEventListener("change", () => {
    const q = currentQuery();
    const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
    if (chosen.length === boxes.length) q.delete("metrics"); else q.set("metrics", chosen.join(","));
    q.delete("page");
    loadTable(q);
  }));
  setupCompare();
  setupDag();
}

function setupTableSection() {
  tableSection = document.getElementById("table-section");
  if (!tableSection) return false;
  document.addEventListener("change", (e) => {
    if (e.target.classList && e.target.classList.contains("pick")) {
      if (e.target.checked) picked.add(e.target.value); else picked.delete(e.target.value);
      updatePickButtons();
    }
  });
  bindTableSection();
  return true;
}

function updatePickButtons() {
  const compare = document.getElementById("compare");
  const overlay = document.getElementById("overlay");
  if (compare) {
    compare.disabled = picked.size < 2;
    compare.textContent = `Compare selected (${picked.size})`;
  }
  if (overlay) {
    overlay.disabled = picked.size < 1;
    overlay.textContent = `Overlay loss curves (${picked.size})`;
  }
}

function setupCompare() {
  const compare = document.getElementById("compare");
  const overlay = document.getElementById("overlay");
  const ids = () => [...picked].sort((a, b) => Number(a) - Number(b)).join(",");
  const page = tableSection ? tableSection.dataset.page : window.location.pathname;
  if (compare) compare.addEventListener("click", () => {
    if (picked.size >= 2) window.location.href = `${page}/compare?ids=${ids()}`;
  });
  if (overlay) overlay.addEventListener("click", () => {
    if (picked.size >= 1) window.location.href = `${page}/curves?ids=${ids()}`;
  });
  updatePickButtons();
}

function setupOnlyDiff() {
  const box = document.getElementById("only-diff");
  const table = document.getElementById("compare-table");
  if (!box || !table) return;
  box.addEventListener("change", () => table.classList.toggle("only-diff", box.checked));
}

function setupDag() {
  document.querySelectorAll("svg.dag .node").forEach((node) => {
    if (node.dataset.bound) return;
    node.dataset.bound = "1";
    const pick = () => {
      const table = document.getElementById("instances") || document.getElementById("aggregated");
      if (!table) return;
      const heads = Array.from(table.tHead.rows[0].cells);
      const stageCol = heads.findIndex((th) => th.classList.contains("stage"));
      const already = node.classList.contains("active");
      document.querySelectorAll("svg.dag .node.active").forEach((n) => n.classList.remove("active"));
      if (stageCol >= 0 && table.setFilter) {
        table.setFilter(stageCol, already ? "" : `=${node.dataset.name}`);
      }
      if (!already) node.classList.add("active");
    };
    node.addEventListener("click", pick);
    node.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(); });
  });
}

function fmt(v) {
  if (v === null || v === undefined) return "";
  if (Number.isInteger(v)) return String(v);
  const t = Math.abs(v) >= 1000 ? v.toFixed(1) : v.toFixed(4);
  return t.replace(/0+$/, "").replace(/\.$/, "");
}

function progressText(p) {
  return p ? `${p.pos}/${p.len} ${p.unit}` : "";
}

let lastCounts = null;

function applyPipelineStatus(doc) {
  // A result that arrived (or a run that started or failed) can bring metric columns, clear a
  // "why it runs" and move rows between pages: fetch the table again. So does the first answer
  // to a page whose rows alone were planned (`data-partial`): its metric columns were those of
  // its rows only.
  const counts = JSON.stringify(doc.counts);
  const partial = tableSection && tableSection.dataset.partial;
  if (tableSection && (partial || (lastCounts !== null && counts !== lastCounts))) loadTable(currentQuery());
  if (partial) {
    delete tableSection.dataset.partial;
    const counting = document.getElementById("counting");
    if (counting) counting.remove();
  }
  lastCounts = counts;
  for (const [name, value] of Object.entries(doc.counts)) {
    const el = document.querySelector(`[data-count="${name}"]`);
    if (el) el.textContent = value;
  }
  for (const s of doc.stages) {
    const node = document.querySelector(`svg.dag .node[data-stage="${s.stage}"]`);
    if (!node) continue;
    node.classList.remove("st-cached", "st-to-run", "st-running", "st-failed");
    node.classList.add(`st-${s.status}`);
    const total = s.counts.cached + s.counts.to_run + s.counts.running + s.counts.failed;
    const count = node.querySelector("text.count");
    if (count) count.textContent = `${s.counts.cached}/${total} cached`;
  }
  for (const inst of doc.instances) {
    const td = document.querySelector(`td[data-status-of="${inst.id}"]`);
    if (!td) continue;
    td.textContent = inst.status;
    td.dataset.v = inst.status;
    td.className = td.className.replace(/\bst-[a-z-]+/g, "").trim() + ` st-${inst.status}`;
    const prog = document.querySelector(`td[data-progress-of="${inst.id}"]`);
    if (prog) prog.textContent = progressText(inst.progress);
    if (inst.metrics) {
      const row = td.parentElement;
      for (const cell of row.querySelectorAll("td[data-metric]")) {
        const v = inst.metrics[cell.dataset.metric];
        if (v !== undefined) { cell.textContent = fmt(v); cell.dataset.v = String(v); }
      }
    }
  }
  const table = document.getElementById("instances");
  if (table && table.applyFilters) table.applyFilters();
  return doc.counts.running > 0;
}

function applyInstanceStatus(doc) {
  const status = document.getElementById("status");
  const before = status ? status.textContent.trim() : "";
  if (status) status.innerHTML = "";
  if (status) {
    const badge = document.createElement("span");
    badge.className = `badge st-${doc.status}`;
    badge.textContent = doc.status;
    status.appendChild(badge);
  }
  const progress = document.getElementById("progress");
  if (progress) progress.textContent = progressText(doc.progress);
  const live = document.getElementById("live-loss");
  if (live && live.setSeries && Array.isArray(doc.loss)) live.setSeries([{ name: "loss", points: doc.loss }]);
  const log = document.getElementById("log");
  if (log && typeof doc.log === "string" && log.textContent !== doc.log) {
    log.textContent = doc.log;
    log.classList.remove("muted", "error");
  } else if (log && typeof doc.log_error === "string") {
    const text = `The log cannot be shown: ${doc.log_error}`;
    if (log.textContent !== text) log.textContent = text;
    log.classList.remove("muted");
    log.classList.add("error");
  }
  // A stage that just finished has outputs, metrics and provenance to show: reload once.
  if (before && before !== doc.status && doc.status === "cached") window.location.reload();
  return doc.status === "running";
}

function setupLive() {
  const url = document.body.dataset.live;
  if (!url) return;
  let busy = false;
  async function poll() {
    if (busy) return;
    busy = true;
    let active = false;
    try {
      let target = url;
      const rows = document.querySelectorAll("#instances tbody tr[data-id]");
      if (tableSection && rows.length) target = `${url}?ids=${[...rows].map((r) => r.dataset.id).join(",")}`;
      const response = await fetch(target, { cache: "no-store" });
      if (response.ok) {
        const doc = await response.json();
        active = doc.instances ? applyPipelineStatus(doc) : applyInstanceStatus(doc);
        document.body.dataset.polled = String(Number(document.body.dataset.polled || 0) + 1);
      }
    } catch (e) {
      active = false;
    } finally {
      busy = false;
      setTimeout(poll, active ? 1000 : 2000);
    }
  }
  // A page whose rows alone were planned asks for the whole state at once.
  setTimeout(poll, tableSection && tableSection.dataset.partial ? 0 : 1000);
}

// A line chart of [{name, points: [[x, y], ...]}] with axes, a legend that toggles series,
// and a tooltip with the values at the epoch under the pointer.
function drawChart(div) {
  const source = document.getElementById(div.dataset.src);
  if (!source) return;
  let series = JSON.parse(source.textContent);
  const NS = "http://www.w3.org/2000/svg";
  const longest = Math.max(0, ...series.map((s) => String(s.name).length));
  const R = Math.max(150, Math.min(420, 7 * longest + 40));
  const W = 610 + R, H = 340, L = 60, T = 14, B = 40;
  const colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const hidden = new Set();
  const el = (tag, attrs, parent) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  };
  const ticks = (lo, hi, n, integers) => {
    if (!(hi > lo)) return [lo];
    const step0 = (hi - lo) / n;
    const mag = Math.pow(10, Math.floor(Math.log10(step0)));
    let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0 * 0.999) || step0;
    if (integers) step = Math.max(1, Math.round(step));
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  };
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${div.dataset.y || "loss"} chart` });
  div.appendChild(svg);
  const tip = document.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  div.appendChild(tip);

  function render() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const visible = series.filter((s) => !hidden.has(s.name));
    const all = (visible.length ? visible : series).flatMap((s) => s.points);
    div.dataset.points = String(series.reduce((n, s) => n + s.points.length, 0));
    if (!all.length) {
      el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, svg).textContent = "waiting for the first epoch";
      return;
    }
    let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
    let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= 1; y1 += 1; }
    const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    const axis = el("g", { class: "axis" }, svg);
    for (const t of ticks(y0, y1, 6, false)) {
      el("line", { class: "grid-line", x1: L, x2: W - R, y1: sy(t), y2: sy(t) }, axis);
      el("text", { x: L - 6, y: sy(t) + 4, "text-anchor": "end" }, axis).textContent = fmt(t);
    }
    for (const t of ticks(x0, x1, 8, all.every((p) => Number.isInteger(p[0])))) {
      el("line", { x1: sx(t), x2: sx(t), y1: H - B, y2: H - B + 4 }, axis);
      el("text", { x: sx(t), y: H - B + 16, "text-anchor": "middle" }, axis).textContent = fmt(t);
    }
    el("path", { d: `M${L},${T}V${H - B}H${W - R}`, fill: "none" }, axis);
    el("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, axis).textContent = div.dataset.x || "x";
    el("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 14 ${(T + H - B) / 2})` }, axis)
      .textContent = div.dataset.y || "y";
    series.forEach((s, i) => {
      if (hidden.has(s.name)) return;
      const d = s.points.map((p, j) => `${j ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join("");
      el("path", { class: "series", d, stroke: colours[i % colours.length], "data-name": s.name }, svg);
    });
    const legend = el("g", { class: "legend" }, svg);
    series.forEach((s, i) => {
      const g = el("g", { class: hidden.has(s.name) ? "off" : "", "data-name": s.name, transform: `translate(${W - R + 14},${T + 8 + i * 18})` }, legend);
      el("rect", { width: 12, height: 12, y: -10, fill: colours[i % colours.length] }, g);
      el("text", { x: 18 }, g).textContent = s.name;
      g.addEventListener("click", () => {
        if (hidden.has(s.name)) hidden.delete(s.name); else hidden.add(s.name);
        render();
      });
    });
    const cursor = el("line", { class: "cursor", y1: T, y2: H - B, visibility: "hidden" }, svg);
    const hit = el("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent" }, svg);
    hit.addEventListener("mousemove", (e) => {
      const box = svg.getBoundingClientRect();
      const x = x0 + ((e.clientX - box.left) * (W / box.width) - L) / (W - L - R) * (x1 - x0);
      const xs = all.map((p) => p[0]);
      const near = xs.reduce((a, b) => (Math.abs(b - x) < Math.abs(a - x) ? b : a), xs[0]);
      cursor.setAttribute("x1", sx(near)); cursor.setAttribute("x2", sx(near));
      cursor.setAttribute("visibility", "visible");
      const lines = visible.map((s) => {
        const p = s.points.find((q) => q[0] === near);
        return p ? `${s.name}: ${fmt(p[1])}` : null;
      }).filter(Boolean);
      tip.textContent = `${div.dataset.x || "x"} ${fmt(near)} · ${lines.join(" · ")}`;
      tip.hidden = false;
      tip.style.left = `${(sx(near) / W) * box.width + 12}px`;
      tip.style.top = `${(e.clientY - box.top) + 8}px`;
    });
    hit.addEventListener("mouseleave", () => { tip.hidden = true; cursor.setAttribute("visibility", "hidden"); });
  }
  div.setSeries = (next) => { series = next; render(); };
  render();
}

// The sweep page's choices take effect as they are picked.
function setupAutosubmit() {
  document.querySelectorAll("select.autosubmit").forEach((select) => {
    select.addEventListener("change", () => {
      const form = select.form;
      // A new stage has other metrics and parameters: let the server choose them again.
      if (select.name === "stage") form.querySelectorAll("select:not([name=stage])").forEach((s) => { s.disabled = true; });
      form.submit();
    });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  if (!setupTableSection()) {
    document.querySelectorAll("table.grid").forEach((t) => { if (t.tHead && t.querySelector("input.filter")) setupGrid(t); });
    setupDag();
  }
  setupOnlyDiff();
  setupAutosubmit();
  document.querySelectorAll(".chart[data-src]").forEach(drawChart);
  setupLive();
  document.body.dataset.ready = "1";
});
