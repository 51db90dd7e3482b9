// The DSE coordinator dashboard: reads the view from the server-sent event stream (api/events) and draws it with
// plain DOM and SVG. No dependencies; everything it needs is served with the page.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2f6fdf", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#0b7285", "#5f3dc4", "#e67700"];
  const HISTORY_MS = 120000;
  const TOKEN_KEY = "dse-dashboard-token";

  const history = [];          // { t, committed: Map(id -> version) }, oldest first
  const barrierSeen = new Map(); // participant id -> { arrival, counts, latest }: its barrier waits as last seen
  let operator = null;         // the authenticated operator's name, or null (read-only)
  let last = null;             // the latest view

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, text) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function color(index) { return COLORS[index % COLORS.length]; }

  function age(ms) {
    if (ms < 1000) return ms + " ms";
    if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
    return Math.round(ms / 60000) + " min";
  }

  function ms(value) {
    return value >= 1000 ? value / 1000 + " s" : value + " ms";
  }

  // A quantile's bucket bound: "-" when nothing waited; null with waits means above the last bound.
  function quantile(waits, value) {
    if (waits.total === 0 || (value === null && waits.upperBoundsMs.length === 0)) return "-";
    if (value === null) return "> " + ms(waits.upperBoundsMs[waits.upperBoundsMs.length - 1]);
    return "\u2264 " + ms(value);
  }

  // The waits per bucket that arrived with the participant's heartbeats since the previous one the page saw (null
  // until the page has seen two). A heartbeat is new when the statistics' arrival time moved; counts that went down
  // mean the participant restarted, and then all its counts are new.
  function latestWaits(view, p) {
    const s = p.statistics;
    if (!s) { barrierSeen.delete(p.id); return null; }
    const arrival = view.time - s.ageMs;
    const counts = s.barrierWaits.counts;
    const seen = barrierSeen.get(p.id);
    if (!seen) { barrierSeen.set(p.id, { arrival, counts, latest: null }); return null; }
    if (Math.abs(arrival - seen.arrival) <= 50) return seen.latest;
    let latest = counts.map((c, i) => c - (seen.counts[i] || 0));
    if (seen.counts.length !== counts.length || latest.some((d) => d < 0)) latest = counts.slice();
    barrierSeen.set(p.id, { arrival, counts, latest });
    return latest;
  }

  function renderStatus(view) {
    $("incarnation").textContent = view.incarnation;
    $("epoch").textContent = view.epoch;
    $("world-line").textContent = view.worldLine;
    const state = view.fault ? "stopped: " + view.fault : view.recovering ? "recovering" : "serving";
    $("coordinator-state").textContent = state;
  }

  function renderParticipants(view) {
    const body = $("participants").tBodies[0];
    body.replaceChildren();
    for (const th of document.querySelectorAll(".operator-only")) th.hidden = !operator;
    for (const p of view.participants) {
      const row = el("tr", { "data-participant": p.id });
      if (p.removed) row.classList.add("removed");
      row.append(
        el("td", { class: "id" }, p.id),
        el("td", { class: "state", title: p.removedBecause }, p.removed ? "removed" : "active"),
        el("td", { class: "world-line" }, p.worldLine),
        el("td", { class: "own-world-line" }, p.statistics ? p.statistics.worldLine : "-"),
        el("td", { class: "current" }, p.statistics ? p.statistics.currentVersion : "-"),
        el("td", { class: "persisted" }, p.persisted),
        el("td", { class: "committed" }, p.committed),
        el("td", { class: "uncommitted" }, p.uncommittedCount));
      const heard = el("td", { class: "heard" }, age(p.sinceHeardMs) + " ago");
      if (p.sinceHeardMs > 3000) heard.classList.add("stale");
      const reported = el("td", { class: "statistics-age" }, p.statistics ? age(p.statistics.ageMs) + " ago" : "-");
      if (p.statistics && p.statistics.ageMs > 3000) reported.classList.add("stale");
      row.append(heard, reported);
      if (operator) {
        const cell = el("td", { class: "action" });
        if (!p.removed) {
          const button = el("button", { type: "button", class: "remove", "data-remove": p.id }, "Remove");
          button.addEventListener("click", () => remove(p.id));
          cell.append(button);
        }
        row.append(cell);
      }
      body.append(row);
    }
  }

  // Bars per bucket, all on the scale of the fullest bucket: the whole bar counts every wait since the participant
  // started, its dark part the latest ones.
  function histogram(waits, latest) {
    const W = 180, H = 44, base = 30;
    const n = waits.counts.length, step = W / n;
    const max = Math.max(1, ...waits.counts);
    const svg = el("svg:svg", { class: "histogram", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "barrier waits per bucket" });
    svg.append(el("svg:line", { x1: 0, y1: base + 0.5, x2: W, y2: base + 0.5, stroke: "#d5dae3" }));
    waits.counts.forEach((count, i) => {
      const label = i < waits.upperBoundsMs.length ? "\u2264 " + ms(waits.upperBoundsMs[i]) : n > 1 ? "> " + ms(waits.upperBoundsMs[n - 2]) : "all";
      const recent = latest ? Math.min(count, latest[i]) : 0;
      const height = (c) => c === 0 ? 0 : Math.max(1, (base - 2) * c / max);
      const bar = el("svg:g", { "data-bucket": i });
      bar.append(el("svg:title", {}, label + ": " + count + (latest ? " (" + recent + " latest)" : "")));
      bar.append(el("svg:rect", { x: i * step + 1, y: base - height(count), width: step - 2, height: height(count), fill: "#a5c0ef" }));
      if (recent > 0) bar.append(el("svg:rect", { x: i * step + 1, y: base - height(recent), width: step - 2, height: height(recent), fill: "#2f6fdf" }));
      svg.append(bar);
    });
    if (n > 1) {
      svg.append(el("svg:text", { x: 0, y: H - 3 }, waits.upperBoundsMs[0]));
      svg.append(el("svg:text", { x: W, y: H - 3, "text-anchor": "end" }, ">" + waits.upperBoundsMs[n - 2]));
    }
    return svg;
  }

  function renderBarrierWaits(view) {
    const body = $("barrier-waits").tBodies[0];
    body.replaceChildren();
    for (const p of view.participants) {
      const row = el("tr", { "data-participant": p.id });
      if (p.removed) row.classList.add("removed");
      const latest = latestWaits(view, p);
      if (!p.statistics) {
        row.append(el("td", { class: "id" }, p.id), el("td", { class: "count" }, "-"), el("td", { class: "latest" }, "-"),
          el("td", { class: "p50" }, "-"), el("td", { class: "p99" }, "-"), el("td", { class: "chart" }, "-"));
      } else {
        const waits = p.statistics.barrierWaits;
        const chart = el("td", { class: "chart" });
        chart.append(histogram(waits, latest));
        row.append(el("td", { class: "id" }, p.id), el("td", { class: "count" }, waits.total),
          el("td", { class: "latest" }, latest ? latest.reduce((a, b) => a + b, 0) : "\u2026"),
          el("td", { class: "p50" }, quantile(waits, waits.p50Ms)), el("td", { class: "p99" }, quantile(waits, waits.p99Ms)), chart);
      }
      body.append(row);
    }
  }

  function renderQueues(view) {
    const body = $("queues").tBodies[0];
    body.replaceChildren();
    for (const p of view.participants) {
      const rows = [];
      if (!p.statistics) {
        rows.push(el("tr", { "data-participant": p.id }));
        rows[0].append(el("td", { class: "id" }, p.id), el("td", { class: "queue" }, "-"), el("td", { class: "unconsumed" }, "-"),
          el("td", { class: "in-spilled" }, "-"), el("td", { class: "out-pending" }, "-"));
      } else if (p.statistics.queues.length === 0) {
        rows.push(el("tr", { "data-participant": p.id }));
        rows[0].append(el("td", { class: "id" }, p.id), el("td", { class: "queue note", colspan: 4 }, "no queue registered"));
      } else {
        for (const q of p.statistics.queues) {
          const row = el("tr", { "data-participant": p.id, "data-queue": p.id + ":" + q.name });
          row.append(el("td", { class: "id" }, p.id), el("td", { class: "queue" }, q.name), el("td", { class: "unconsumed" }, q.unconsumed),
            el("td", { class: "in-spilled" }, q.inSpilled), el("td", { class: "out-pending" }, q.outPending));
          rows.push(row);
        }
      }
      for (const row of rows) {
        if (p.removed) row.classList.add("removed");
        body.append(row);
      }
    }
  }

  function renderBoundary(view) {
    $("boundary").textContent = view.participants.length === 0 ? "no participants"
      : view.participants.map((p) => p.id + ": " + p.committed).join("   ");
    const committed = new Map(view.participants.map((p) => [p.id, p.committed]));
    history.push({ t: view.time, committed });
    while (history.length > 0 && history[0].t < view.time - HISTORY_MS) history.shift();

    const svg = $("boundary-chart");
    svg.replaceChildren();
    const W = 640, H = 220, L = 48, R = 90, T = 10, B = 24;
    const ids = view.participants.map((p) => p.id);
    let max = 1, min = Infinity;
    for (const h of history) for (const v of h.committed.values()) { max = Math.max(max, v); min = Math.min(min, v); }
    if (!isFinite(min) || min === max) min = 0;
    // The window grows with the history, up to HISTORY_MS, so that a young page still fills the chart.
    const span = Math.max(1000, Math.min(HISTORY_MS, view.time - history[0].t));
    const t0 = view.time - span;
    const x = (t) => L + (W - L - R) * (t - t0) / span;
    const y = (v) => T + (H - T - B) * (1 - (v - min) / (max - min));
    svg.append(el("svg:line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#d5dae3" }));
    svg.append(el("svg:line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#d5dae3" }));
    svg.append(el("svg:text", { x: 4, y: T + 10 }, max));
    svg.append(el("svg:text", { x: 4, y: H - B }, min));
    svg.append(el("svg:text", { x: L, y: H - 6 }, "-" + Math.round(span / 1000) + " s"));
    svg.append(el("svg:text", { x: W - R - 24, y: H - 6 }, "now"));
    ids.forEach((id, i) => {
      const points = history.filter((h) => h.committed.has(id)).map((h) => x(h.t).toFixed(1) + "," + y(h.committed.get(id)).toFixed(1));
      if (points.length > 0) {
        svg.append(el("svg:polyline", { points: points.join(" "), fill: "none", stroke: color(i), "stroke-width": 2, "data-series": id }));
      }
      svg.append(el("svg:text", { x: W - R + 8, y: T + 14 + i * 16, fill: color(i) }, "participant " + id));
    });
  }

  function renderGraph(view) {
    const svg = $("graph");
    svg.replaceChildren();
    const live = view.participants;
    if (live.length === 0) return;
    const W = 640, H = 300, top = 24, bottom = 28, rowH = 16;
    const colW = W / live.length;
    const index = new Map(live.map((p, i) => [p.id, i]));
    const pos = new Map();    // "id:version" -> {x, y}
    const cx = (i) => colW * i + colW / 2;
    live.forEach((p, i) => {
      svg.append(el("svg:text", { x: cx(i) - 20, y: 14, fill: color(i) }, "participant " + p.id));
      const committedY = H - bottom;
      pos.set(p.id + ":c", { x: cx(i), y: committedY });
      svg.append(el("svg:rect", { x: cx(i) - 6, y: committedY - 6, width: 12, height: 12, fill: "#adb5bd" }));
      svg.append(el("svg:text", { x: cx(i) + 10, y: committedY + 4 }, p.committed));
      p.uncommitted.forEach((v, k) => {
        const vy = committedY - 26 - k * rowH;
        if (vy < top) return;
        pos.set(p.id + ":" + v.version, { x: cx(i), y: vy });
      });
    });
    // Edges first, so that nodes draw over them.
    for (const p of live) {
      for (const v of p.uncommitted) {
        const from = pos.get(p.id + ":" + v.version);
        if (!from) continue;
        for (const d of v.dependencies) {
          if (d.id === p.id || !index.has(d.id)) continue;
          const target = live[index.get(d.id)];
          let to = pos.get(d.id + ":" + d.version), cls = "open";
          if (!to && d.version <= target.committed) { to = pos.get(d.id + ":c"); cls = "committed"; }
          if (!to) { to = { x: cx(index.get(d.id)), y: top }; cls = "dangling"; }
          // A curve above both ends, so that an edge between distant columns does not run through the ones between.
          const lift = Math.min(from.y, to.y) - 20 - Math.abs(to.x - from.x) * 0.25;
          svg.append(el("svg:path", {
            d: "M" + from.x + " " + from.y + " Q" + (from.x + to.x) / 2 + " " + Math.max(top, lift) + " " + to.x + " " + to.y,
            fill: "none", "data-edge": cls,
            stroke: cls === "dangling" ? "#c92a2a" : cls === "committed" ? "#ced4da" : "#868e96",
            "stroke-dasharray": cls === "committed" ? "3 3" : "none", "stroke-width": 1.2,
          }));
        }
      }
    }
    live.forEach((p, i) => {
      for (const v of p.uncommitted) {
        const at = pos.get(p.id + ":" + v.version);
        if (!at) continue;
        const node = el("svg:circle", { cx: at.x, cy: at.y, r: 6, fill: color(i), "data-node": p.id + ":" + v.version });
        node.append(el("svg:title", {}, "participant " + p.id + " version " + v.version + " (world-line " + v.worldLine + ")"));
        svg.append(node, el("svg:text", { x: at.x + 10, y: at.y + 4 }, v.version));
      }
    });
  }

  function renderDecisions(view) {
    const body = $("decisions").tBodies[0];
    body.replaceChildren();
    $("no-decisions").hidden = view.decisions.length > 0;
    for (const d of [...view.decisions].reverse()) {
      const row = el("tr", { "data-world-line": d.worldLine });
      const cause = d.reason === "Restart" ? "restart" : d.reason === "Removed" ? "removal" : "cold start";
      const cut = el("td", { class: "cut" });
      for (const c of d.cut) {
        const item = el("div", { "data-cut": c.id }, c.id + " \u2192 " + c.version);
        if (c.lostThrough > 0) {
          item.append(el("span", { class: "loss" }, "  lost " + (c.version + 1) + (c.lostThrough > c.version + 1 ? "\u2013" + c.lostThrough : "")));
        }
        cut.append(item);
      }
      if (!d.lossKnown) cut.append(el("div", { class: "note" }, "losses unknown (decided by an earlier coordinator incarnation)"));
      row.append(el("td", {}, d.worldLine), el("td", { class: "cause" }, cause),
        el("td", { class: "failed" }, d.failed === -1 ? "all" : d.failed), cut);
      body.append(row);
    }
  }

  function render(view) {
    last = view;
    renderStatus(view);
    renderParticipants(view);
    renderBoundary(view);
    renderGraph(view);
    renderDecisions(view);
    renderBarrierWaits(view);
    renderQueues(view);
  }

  function authHeaders() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { Authorization: "Bearer " + token } : {};
  }

  function setOperatorStatus(text, cls) {
    const status = $("operator-status");
    status.textContent = text;
    status.className = cls || "";
  }

  // Sign-ins may overlap (a second token entered before the first answer came back): only the latest one's answer
  // counts, so that an earlier, slower answer cannot undo a later sign-in.
  let signInSequence = 0;

  async function signIn() {
    const sequence = ++signInSequence;
    const headers = authHeaders();
    if (!headers.Authorization) { operator = null; setOperatorStatus("read-only"); return; }
    try {
      const response = await fetch("api/snapshot", { headers, cache: "no-store" });
      const view = await response.json();
      if (sequence !== signInSequence) return;
      operator = view.operator;
      if (operator) {
        setOperatorStatus("operator " + operator, "operator");
      } else {
        setOperatorStatus(view.remote ? "the coordinator runs elsewhere: read-only"
          : view.removalAvailable ? "not an operator's token: read-only" : "the coordinator has no participants file: read-only", "error");
      }
      $("sign-out").hidden = false;
      render(view);
    } catch (e) {
      if (sequence === signInSequence) setOperatorStatus("sign-in failed: " + e.message, "error");
    }
  }

  async function remove(id) {
    if (!window.confirm("Remove participant " + id + " from the cluster? Whatever depends on its unreported versions rolls back, and it must restart to rejoin.")) return;
    try {
      const response = await fetch("api/participants/" + id + "/remove?confirm=" + id, { method: "POST", headers: authHeaders() });
      const body = await response.json();
      setOperatorStatus(response.ok ? (body.removed ? "removed participant " + id : "participant " + id + " was already removed") : body.error,
        response.ok ? "operator" : "error");
    } catch (e) {
      setOperatorStatus("removal failed: " + e.message, "error");
    }
  }

  function connect() {
    const source = new EventSource("api/events");
    source.onopen = () => { $("connection").textContent = "live"; $("connection").className = "live"; };
    source.onerror = () => { $("connection").textContent = "reconnecting"; $("connection").className = "lost"; };
    source.onmessage = (event) => {
      const view = JSON.parse(event.data);
      view.operator = operator;
      render(view);
    };
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("operator-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const token = $("token").value.trim();
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      $("token").value = "";
      signIn();
    });
    $("sign-out").addEventListener("click", () => {
      signInSequence++;
      sessionStorage.removeItem(TOKEN_KEY);
      operator = null;
      $("sign-out").hidden = true;
      setOperatorStatus("read-only");
      if (last) render(last);
    });
    signIn();
    connect();
  });
})();
