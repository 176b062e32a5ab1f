// chaoslab game day: the run's journal as server-sent events, drawn live.
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const state = {head: null, variant: "", charts: [], series: {}, faults: [], t: 0, dirty: true, lags: [], actions: [], drawn: 0};
window.chaoslab = state; // read by the end-to-end test
const palette = ["#2563eb","#dc2626","#16a34a","#d97706","#7c3aed","#0891b2","#db2777","#4b5563"];

function api(path, body) {
  return fetch(path, {method: body ? "POST" : "GET", headers: {"X-Chaoslab-Token": token, "Content-Type": "application/json"},
    body: body ? JSON.stringify(body) : undefined}).then(async (r) => {
      const txt = await r.text();
      if (!r.ok) throw new Error(txt.trim());
      return txt ? JSON.parse(txt) : null;
    });
}

function onHead(rep) {
  state.head = rep;
  if (state.training) { state.charts = (rep.charts || []).slice(0, 12); state.dirty = true; return; }
  const s = rep.scenario || {};
  $("title").textContent = (s.title || s.id || "chaoslab") + " — game day";
  $("sub").textContent = [rep.case && rep.case.id, s.id, "seed " + rep.seed, rep.backend].filter(Boolean).join(" · ");
  state.charts = (rep.charts || []).slice(0, 12);
  const tb = $("hyps").tBodies[0];
  tb.innerHTML = "";
  for (const h of (s.hypotheses || [])) {
    const tr = tb.insertRow();
    tr.id = "h-" + h.id;
    tr.insertCell().textContent = h.description || h.id;
    tr.insertCell().textContent = h.metric + " " + h.op + " " + h.threshold;
    const c = tr.insertCell(); c.textContent = "pending"; c.className = "pending";
  }
  state.dirty = true;
}

function onVariant(v) {
  state.variant = v; state.series = {}; state.faults = []; state.t = 0; state.dirty = true;
  $("phase").textContent = "variant " + v;
}

function onPoints(v, series) {
  if (v !== state.variant) return;
  for (const s of series || []) {
    const k = s.name + "\u0000" + s.source;
    const have = state.series[k] || (state.series[k] = {name: s.name, source: s.source, unit: s.unit, points: []});
    for (const p of s.points || []) {
      have.points.push(p);
      if (p.t > state.t) state.t = p.t;
    }
  }
  $("clock").textContent = "t = " + state.t.toFixed(0) + " s";
  state.dirty = true;
}

function addEvent(cls, text) {
  const li = document.createElement("li");
  li.className = cls; li.textContent = text;
  $("events").prepend(li);
}

function onDone(vr) {
  for (const c of vr.hypotheses || []) {
    const row = $("h-" + c.id);
    if (!row) continue;
    const cell = row.cells[2];
    cell.textContent = vr.name + ": " + (c.missing ? "missing" : (c.held ? "held" : "violated") + " (" + fmt(c.observed) + ")");
    cell.className = c.missing ? "pending" : c.held ? "ok" : "bad";
  }
  addEvent("control", vr.name + ": " + vr.verdict + (vr.reason ? " — " + vr.reason : ""));
}

function handle(m) {
  switch (m.type) {
    case "head": onHead(m.body); break;
    case "variant": onVariant(m.variant); break;
    case "points":
      // The latency from a measurement (journaled at its tick) to here.
      if (m.wall && m.wall[0] !== "0") state.lags.push(Date.now() - Date.parse(m.wall));
      onPoints(m.variant, m.series);
      break;
    case "event":
      if (state.training && !trainingShows(m.event)) break;
      if (m.variant === state.variant || !state.variant) addEvent(m.event.kind, fmt(m.event.t) + " s  " + m.event.kind + "  " + m.event.source + ": " + m.event.detail);
      if (m.event.kind === "action") state.actions.push(m.event);
      break;
    case "fault":
      if (m.variant === state.variant) {
        const i = state.faults.findIndex((f) => f.start === m.fault.start && f.fault === m.fault.fault && f.member === m.fault.member);
        if (i >= 0) state.faults[i] = m.fault; else state.faults.push(m.fault);
        state.dirty = true;
      }
      break;
    case "done": onDone(m.body); break;
    case "control": addEvent("control", "control: " + m.detail); refreshState(); break;
    case "end": $("phase").textContent = "run ended: report written"; break;
  }
}

function fmt(v) { return typeof v === "number" ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)) : String(v); }

function chartSeries(def) {
  const prefix = def.name.endsWith("*") ? def.name.slice(0, -1) : null;
  const out = Object.values(state.series).filter((s) => prefix ? s.name.startsWith(prefix) : s.name === def.name);
  if (!def.state || out.length === 0) return out.slice(0, 16);
  // A state chart: how many sources are in state 1 at each moment.
  const byT = new Map();
  // Sources sample at their own moments: count them per second.
  for (const s of out) {
    const seen = new Set();
    for (const p of s.points) {
      const t = Math.round(p.t);
      if (seen.has(t)) continue;
      seen.add(t);
      byT.set(t, (byT.get(t) || 0) + (p.v === 1 ? 1 : 0));
    }
  }
  return [{name: def.name, source: "in state 1", points: [...byT.entries()].sort((a, b) => a[0] - b[0]).map(([t, v]) => ({t, v}))}];
}

function draw() {
  if (!state.dirty) return;
  state.dirty = false;
  const root = $("charts");
  const W = 460, H = 180, L = 44, B = 18;
  const t1 = Math.max(state.t, 10);
  root.innerHTML = "";
  for (const def of state.charts) {
    const ss = chartSeries(def);
    if (ss.length === 0) continue;
    let vmax = 0;
    for (const s of ss) for (const p of s.points) if (typeof p.v === "number" && p.v > vmax) vmax = p.v;
    vmax = vmax || 1;
    const x = (t) => L + (W - L - 4) * t / t1, y = (v) => H - B - (H - B - 6) * v / vmax;
    let svg = `<svg viewBox="0 0 ${W} ${H}" data-chart="${def.name}">`;
    for (const f of state.faults) {
      const end = f.end > f.start ? f.end : state.t;
      const cls = (f.detail || "").startsWith("action by") ? "aw" : "fw";
      const what = state.training && cls === "fw" ? "the incident" : `${f.fault} ${f.member} ${f.detail || ""}`;
      svg += `<rect class="${cls}" x="${x(f.start)}" y="0" width="${Math.max(x(end) - x(f.start), 2)}" height="${H - B}"><title>${what}</title></rect>`;
    }
    svg += `<line x1="${L}" y1="${H - B}" x2="${W}" y2="${H - B}" stroke="#999"/><text x="2" y="12">${fmt(vmax)}</text><text x="2" y="${H - B}">0</text><text x="${W - 40}" y="${H - 4}">${fmt(t1)} s</text>`;
    ss.forEach((s, i) => {
      let d = "", pen = false;
      for (const p of s.points) {
        if (typeof p.v !== "number") { pen = false; continue; } // a gap: no data
        d += (pen ? "L" : "M") + x(p.t).toFixed(1) + " " + y(p.v).toFixed(1);
        pen = true;
      }
      svg += `<path d="${d}" fill="none" stroke="${palette[i % palette.length]}" stroke-width="1.4"><title>${s.source}</title></path>`;
    });
    svg += "</svg>";
    const div = document.createElement("div");
    div.className = "chart";
    div.innerHTML = `<h3>${def.title || def.name} <small>${def.unit || ""}</small></h3>` + svg;
    root.appendChild(div);
  }
  state.drawn++;
}

function refreshState() {
  api("/state").then((s) => {
    $("ctlstate").textContent = (s.held ? "HELD by " + s.held_by : "running") + (s.extended_s ? ", observation extended " + s.extended_s + " s" : "") + (s.ended ? ", ended" : "") + (s.stopped ? " by the emergency stop" : "");
  }).catch(() => {});
}

function control(op, seconds) {
  api("/control", {op, seconds: seconds || 0, author: $("author").value}).then(refreshState).catch((e) => { $("ctlstate").textContent = e.message; });
}

function act(req) {
  req.author = $("author").value;
  api("/act", req).then((r) => { $("actmsg").textContent = "queued: " + r.queued; }).catch((e) => { $("actmsg").textContent = e.message; });
}

const presets = [
  {label: "Force a leader election", fault: "kill-restart", target: "leader", duration: "3s"},
  {label: "Stop half the clients (30 s)", fault: "stop", target: "clients:50%", duration: "30s"},
  {label: "Pause the leader (10 s)", fault: "pause", target: "leader", duration: "10s"},
  {label: "Raise the agents' memory limit to 1 GiB", fault: "set-memory-limit", target: "agents", duration: "30m", params: {mb: 1024}},
  {label: "Remove the added capacity", fault: "remove-capacity", target: "fleet", duration: "10s"},
  {label: "Switch the clients to the paced strategy", fault: "switch-strategy", target: "clients", duration: "5s", params: {strategy: "paced", window: 8}},
  {label: "Raise the observers' initLimit to 30 ticks", fault: "raise-init-limit", target: "observers", duration: "60s", params: {ticks: 30}},
];

// showRole shows only the controls the token's role may use: a viewer
// watches; an operator acts; the facilitator also holds and ends.
function showRole() {
  api("/whoami").then((w) => {
    $("role").textContent = "You are the " + w.role + ": you may " + w.may + ".";
    document.body.dataset.role = w.role;
    if (w.role === "viewer") { $("operator").hidden = true; $("you").querySelector("label").hidden = true; }
    if (w.role !== "facilitator") $("facilitator").hidden = true;
  }).catch(() => {});
}

function setup() {
  showRole();
  for (const b of document.querySelectorAll("#facilitator button")) b.onclick = () => control(b.dataset.op, Number(b.dataset.seconds || 0));
  for (const p of presets) {
    const b = document.createElement("button");
    b.textContent = p.label;
    b.dataset.fault = p.fault;
    b.onclick = () => act({fault: p.fault, target: p.target, duration: p.duration, params: p.params});
    $("presets").appendChild(b);
  }
  $("addnote").onclick = () => {
    api("/note", {text: $("note").value, author: $("author").value})
      .then(() => { $("actmsg").textContent = "noted"; $("note").value = ""; })
      .catch((e) => { $("actmsg").textContent = e.message; });
  };
  $("act").onclick = () => {
    let params = {};
    try { params = JSON.parse($("params").value || "{}"); } catch (e) { $("actmsg").textContent = "params: " + e.message; return; }
    act({fault: $("fault").value, target: $("target").value, duration: $("duration").value, params});
  };
  api("/faults").then((names) => { for (const n of names) $("fault").add(new Option(n, n)); }).catch(() => {});
  const es = new EventSource("/events?token=" + encodeURIComponent(token));
  es.onopen = () => { $("conn").textContent = "live"; $("conn").className = "ok"; };
  es.onerror = () => { $("conn").textContent = "disconnected"; $("conn").className = "bad"; };
  es.onmessage = (e) => handle(JSON.parse(e.data));
  refreshState();
  setInterval(draw, 500);
  api("/training").then(startTraining).catch(() => {});
}

// Training (chaoslab train): symptoms, not the cause; checkpoints; a debrief.
const shown = new Set(["client-exit", "oom-kill", "client-start", "state", "action", "action-end", "action-refused", "control", "thread-limit", "steady", "capacity", "strategy", "init-limit"]);
function trainingShows(ev) { return shown.has(ev.kind); }

function startTraining(st) {
  state.training = st;
  document.body.classList.add("training");
  $("training").hidden = false;
  for (const id of ["facilitator", "hyps"]) { const e = $(id); (e.closest(".box") || e).hidden = true; }
  $("title").textContent = "chaoslab training: case " + st.case;
  $("sub").textContent = "trainee " + (st.trainee || "") + " · " + st.checkpoints + " checkpoints";
  renderForm($("tr-anyform"), {id: "anytime", diagnose: true, title: ""}, st);
  setInterval(() => api("/training").then(renderTraining).catch(() => {}), 1000);
  renderTraining(st);
}

function renderTraining(st) {
  st.open = st.open || []; st.timeline = st.timeline || [];
  state.training = st;
  const open = $("tr-open");
  const want = st.open.map((c) => c.id).join(",");
  if (open.dataset.ids !== want) {
    open.dataset.ids = want;
    open.innerHTML = "";
    for (const cp of st.open) { const d = document.createElement("div"); open.appendChild(d); renderForm(d, cp, st); }
  }
  const ol = $("tr-timeline");
  if (ol.children.length !== st.timeline.length) {
    ol.innerHTML = "";
    for (const e of st.timeline) { const li = document.createElement("li"); li.textContent = e.clock + ": " + e.event; ol.appendChild(li); }
  }
  if (st.debrief && !$("tr-debrief").firstChild) {
    const a = document.createElement("a");
    a.id = "debrief-link"; a.href = "/training/debrief?token=" + encodeURIComponent(token); a.textContent = "Read your debrief";
    $("tr-debrief").appendChild(a);
  }
}

function renderForm(div, cp, st) {
  div.className = "checkpoint"; div.id = "cp-" + cp.id;
  let h = cp.title ? `<h3>${cp.title}</h3>` : "";
  if (cp.predict) {
    h += `<label>Series <select id="series-${cp.id}">` + st.series.map((s) => `<option value="${s.name}">${s.title || s.name}</option>`).join("") + `</select></label> `;
    h += `<label>will <select id="dir-${cp.id}"><option>rise</option><option>fall</option><option>steady</option></select></label>`;
  }
  if (cp.diagnose) {
    h += `<fieldset><legend>The cause</legend>` + st.causes.map((c) => `<label class="cause"><input type="radio" name="cause-${cp.id}" value="${c.id}"> ${c.text}</label>`).join("") + `</fieldset>`;
  }
  h += `<label>Note <input id="note-${cp.id}" size="30"></label> <button id="submit-${cp.id}">Answer</button>`;
  div.innerHTML = h;
  $("submit-" + cp.id).onclick = () => {
    const a = {checkpoint: cp.id, note: $("note-" + cp.id).value};
    if (cp.predict) { a.series = $("series-" + cp.id).value; a.direction = $("dir-" + cp.id).value; }
    const c = div.querySelector(`input[name="cause-${cp.id}"]:checked`);
    if (c) a.cause = c.value;
    api("/training/answer", a).then((s) => { $("tr-msg").textContent = "answer recorded (" + cp.id + ")"; renderTraining(s); })
      .catch((e) => { $("tr-msg").textContent = e.message; });
  };
}
setup();
