// Live traces of one run over Server-Sent Events: history first (replay), then live batches.
import {api, largeFonts, errorText} from '/static/common.js';

const root = document.getElementById('run');
const runId = root.dataset.runId;
const initialStatus = root.dataset.status;
// The theory's lines (fastlab.fast_theory, per flow): capacity, base RTT, FAST's equilibrium; each
// over its span [from_s, to_s] between the run's parameter changes (fastlab.segments), whose markers
// (`marks`: when, what) are drawn on every chart. A running run's are fetched again at each change.
// `lines` (chart -> its lines) is fastlab.chart_lines' list, the one report.html draws too.
let refs = JSON.parse(root.dataset.refs || '[]');
let lines = JSON.parse(root.dataset.lines || '{}');
let marks = JSON.parse(root.dataset.marks || '[]');

// One colour per flow on every chart (f1 the first of plotly's palette, ...); links in greys.
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#bcbd22', '#17becf'];
const GREYS = ['#8c8c8c', '#b0b0b0', '#6e6e6e', '#c8c8c8'];
const BOTTLENECK_GREY = '#222222';  // a bottleneck's rate and queue: darker than any other link's
function flowColour(flow) {
  const n = Number(String(flow).replace(/^f/, ''));
  return Number.isInteger(n) && n > 0 ? PALETTE[(n - 1) % PALETTE.length] : '#000000';
}
// A lighter shade of a flow's colour (FAST's target beside its cwnd): mixed half with white.
function tint(hex) {
  const n = parseInt(hex.slice(1), 16);
  const mix = (v) => Math.round(v + (255 - v) * 0.5).toString(16).padStart(2, '0');
  return `#${mix(n >> 16)}${mix((n >> 8) & 255)}${mix(n & 255)}`;
}
const bottlenecks = () => new Set(refs.map((r) => r.bottleneck).filter(Boolean));

// chart id -> {title, y axis label, traces: key -> index}. Flows and links on separate charts, one
// unit per axis: FAST's RTT estimates (ms) apart from its windows (packets).
const charts = {
  'chart-goodput': {title: 'Goodput per flow', y: 'goodput (Mb/s)'},
  'chart-links': {title: 'Link rate, data direction', y: 'rate (Mb/s)'},
  'chart-cwnd': {title: 'Congestion window per flow', y: 'cwnd (packets)'},
  'chart-rtt': {title: 'Smoothed RTT per flow', y: 'RTT (ms)'},
  'chart-queue': {title: 'Bottleneck queue', y: 'backlog (packets)'},
  'chart-fast-rtt': {title: "FAST's RTT estimates", y: 'RTT (ms)'},
  'chart-fast-window': {title: "FAST's window and target", y: 'window (packets)'},
};
for (const id of Object.keys(charts)) if (!document.getElementById(id)) delete charts[id];

// The x axis spans the run from the start: 0 .. duration_s (further only if samples come later).
const sampleHz = Number(root.dataset.sampleHz) || 20;
let xMax = Number(root.dataset.duration) || 0;

// Goodput smoothing: a trailing moving average over N samples (1 = the raw samples), said in the title.
const smoothSel = document.getElementById('smooth');
let smoothN = smoothSel ? Math.max(1, Number(smoothSel.value) || 1) : 1;
function goodputTitle() {
  return smoothN > 1
    ? `Goodput per flow — moving average of ${smoothN} samples (${(smoothN / sampleHz).toFixed(2)} s)`
    : `Goodput per flow — raw ${sampleHz} Hz samples`;
}
charts['chart-goodput'].title = goodputTitle();
function smoothed(ys, n) {
  const out = new Array(ys.length);
  let sum = 0;
  for (let i = 0; i < ys.length; i++) {
    sum += ys[i];
    if (i >= n) sum -= ys[i - n];
    out[i] = sum / Math.min(i + 1, n);
  }
  return out;
}

// Reference lines per chart: [y, colour, label, short label, from_s, to_s], from fastlab.chart_lines (merged
// there where they coincide). The short label (the value alone) marks each span of a run whose parameters
// changed; the full one a run-long line. A line of no one flow (a bottleneck's) is grey.
function referenceLines(id) {
  return (lines[id.replace(/^chart-/, '')] || []).map((l) =>
    [l.y, l.flow ? flowColour(l.flow) : '#444444', l.label, l.short, l.from_s, l.to_s ?? null]);
}

function layout(c, id) {
  const size = largeFonts() ? 22 : 13;
  const drawn = referenceLines(id);
  const segmented = drawn.some((l) => l[4] > 0) || marks.length > 0;
  const end = xMax > 0 ? xMax : null;
  const xaxis = {title: {text: 'time since flows started (s)'}};
  if (xMax > 0) Object.assign(xaxis, {range: [0, xMax], autorange: false});
  const shapes = drawn.map(([y, colour, , , from, to]) => (segmented
    ? {type: 'line', xref: 'x', x0: from, x1: to ?? end ?? from + 1, y0: y, y1: y}
    : {type: 'line', xref: 'paper', x0: 0, x1: 1, y0: y, y1: y})).map((shape, i) =>
    ({...shape, line: {color: drawn[i][1], width: 1.5, dash: 'dash'}}));
  const annotations = drawn.map(([y, colour, label, short, from]) => (segmented
    ? {xref: 'x', x: from, xanchor: 'left', text: short}
    : {xref: 'paper', x: 1, xanchor: 'right', text: label})).map((a, i) =>
    ({...a, y: drawn[i][0], yanchor: 'bottom', showarrow: false,
      font: {color: drawn[i][1], size: Math.round(size * 0.85)}}));
  // a marker at each change of the run's parameters: a dotted vertical line, what changed on top
  for (const m of marks) {
    shapes.push({type: 'line', xref: 'x', yref: 'paper', x0: m.at_s, x1: m.at_s, y0: 0, y1: 1,
      line: {color: '#7b3294', width: 1.5, dash: 'dot'}});
    annotations.push({xref: 'x', yref: 'paper', x: m.at_s, y: 1, xanchor: 'left', yanchor: 'bottom',
      text: m.text + (m.live ? ' (live)' : ''), showarrow: false, font: {color: '#7b3294', size: Math.round(size * 0.8)}});
  }
  return {title: {text: c.title}, font: {size}, margin: {t: segmented ? 70 : 50, r: 20, b: largeFonts() ? 150 : 100, l: 80},
    xaxis, yaxis: {title: {text: c.y}, rangemode: 'tozero'},
    legend: {orientation: 'h', y: largeFonts() ? -0.45 : -0.3}, uirevision: 'keep', shapes, annotations};
}

// A running run's parameters changed (a cc_set event): its theory lines and markers as they stand now.
let refreshTimer = null;
function refreshReferences() {
  if (refreshTimer !== null) return;
  refreshTimer = setTimeout(async () => {
    refreshTimer = null;
    const r = await api('GET', `/api/runs/${encodeURIComponent(runId)}/references`);
    if (!r.ok) return;
    refs = r.data.refs;
    lines = r.data.lines;
    marks = r.data.changes;
    for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c, id));
    document.body.dataset.marks = String(marks.length);
  }, 300);
}

for (const [id, c] of Object.entries(charts)) {
  c.traces = {};
  c.raw = {};
  c.links = 0;
  Plotly.newPlot(id, [], layout(c, id), {responsive: true, displaylogo: false});
}
document.addEventListener('fontschanged', () => {
  for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c, id)).then(() => Plotly.Plots.resize(id));
});
function widenTo(t) {
  if (!(xMax > 0) || !(t > xMax)) return;  // no duration known: plotly's autorange
  xMax = Math.ceil(t);
  for (const id of Object.keys(charts)) Plotly.relayout(id, {'xaxis.range': [0, xMax], 'xaxis.autorange': false});
}

smoothSel?.addEventListener('change', () => {
  smoothN = Math.max(1, Number(smoothSel.value) || 1);
  const c = charts['chart-goodput'];
  c.title = goodputTitle();
  const keys = Object.keys(c.traces);
  if (keys.length) {
    Plotly.restyle('chart-goodput', {y: keys.map((k) => smoothed(c.raw[k], smoothN))}, keys.map((k) => c.traces[k]));
  }
  Plotly.relayout('chart-goodput', {'title.text': c.title});
});

// Append points (grouped per trace) to a chart, creating traces as new keys appear. The goodput
// chart keeps each flow's raw samples and plots their moving average.
function extend(id, points) {
  const c = charts[id];
  if (!c) return;
  const groups = new Map();
  for (const [key, name, x, y, flow, dash, opts] of points) {
    if (y === null || y === undefined || Number.isNaN(y)) continue;
    if (!(key in c.traces)) {
      // a link's trace appears once it carries or queues something: an idle access link adds a flat 0
      if (opts?.link && !(y > 0)) continue;
      c.traces[key] = Object.keys(c.traces).length;
      c.raw[key] = [];
      let colour = flow ? flowColour(flow) : GREYS[c.links++ % GREYS.length];
      if (opts?.link && bottlenecks().has(opts.link)) colour = BOTTLENECK_GREY;
      if (flow && opts?.tint) colour = tint(colour);
      Plotly.addTraces(id, {x: [], y: [], name, mode: 'lines', type: 'scatter', line: {color: colour, dash: dash || 'solid'}});
    }
    if (!groups.has(key)) groups.set(key, {x: [], y: []});
    const g = groups.get(key);
    g.x.push(x);
    if (id === 'chart-goodput') {
      const raw = c.raw[key];
      raw.push(y);
      const from = Math.max(0, raw.length - smoothN);
      let sum = 0;
      for (let i = from; i < raw.length; i++) sum += raw[i];
      g.y.push(sum / (raw.length - from));
    } else {
      g.y.push(y);
    }
  }
  if (!groups.size) return;
  const keys = [...groups.keys()];
  Plotly.extendTraces(id, {x: keys.map((k) => groups.get(k).x), y: keys.map((k) => groups.get(k).y)},
    keys.map((k) => c.traces[k]));
}

// Elapsed / total of a live run, from the newest sample's time since the flows started.
const progress = document.getElementById('progress');
const progressText = document.getElementById('progress-text');
function showProgress(t) {
  if (!progress || !(t > progress.value)) return;
  const total = Number(progress.max);
  progress.value = Math.min(t, total);
  progressText.textContent = `${progress.value.toFixed(1)} / ${total} s of the run's flows (${Math.floor(100 * progress.value / total)}%)`;
}

// Redraws are coalesced: the stream brings up to 10 messages a second, and each plotly extend redraws
// a whole chart, so drawing every message kept a browser's main thread busy for whole seconds on a
// slow machine (measured: a headless Chromium without GPU at ~100 % of a core through a 10 s run,
// the page answering nothing until the run ended). Points wait at most DRAW_EVERY_MS to be drawn.
const DRAW_EVERY_MS = 250;
const pending = Object.fromEntries(Object.keys(charts).map((id) => [id, []]));
let pendingLatest = -Infinity;
let drawTimer = null;
function draw() {
  drawTimer = null;
  widenTo(pendingLatest);
  for (const [id, p] of Object.entries(pending)) {
    if (p.length) extend(id, p.splice(0));
  }
}

const queuedReverse = new Set();
const lastTx = {};  // link/direction -> [t, tx_bytes]
function onSamples(samples) {
  const pts = pending;
  let latest = -Infinity;
  for (const s of samples) {
    if (typeof s.t === 'number') { showProgress(s.t); latest = Math.max(latest, s.t); }
    if (s.kind === 'flow') {
      pts['chart-goodput'].push([s.flow, s.flow, s.t, s.goodput_mbps, s.flow]);
      pts['chart-cwnd'].push([s.flow, s.flow, s.t, s.cwnd_pkts, s.flow]);
      pts['chart-rtt'].push([s.flow, s.flow, s.t, s.srtt_ms, s.flow]);
    } else if (s.kind === 'link') {
      const key = `${s.link} ${s.direction}`;
      // The reverse direction carries ACKs: its queue is drawn only once it holds something.
      if (s.backlog_pkts > 0 && s.direction === 'reverse') queuedReverse.add(key);
      if (s.backlog_pkts != null && (s.direction !== 'reverse' || queuedReverse.has(key))) {
        pts['chart-queue'].push([key, `${key} backlog`, s.t, s.backlog_pkts, null, null, {link: s.link}]);
      }
      const prev = lastTx[key];
      // Only the data direction's rate: the reverse carries ACKs, whose rate says nothing here.
      if (prev && s.tx_bytes != null && s.t > prev[0] && s.direction === 'forward') {
        pts['chart-links'].push([`${key} tx`, `${s.link} link rate`, s.t, (s.tx_bytes - prev[1]) * 8 / 1e6 / (s.t - prev[0]),
          null, null, {link: s.link}]);
      }
      if (s.tx_bytes != null) lastTx[key] = [s.t, s.tx_bytes];
    } else if (s.kind === 'event' && s.event === 'reroute') {
      document.getElementById('log').textContent = `${s.t.toFixed(2)} s: ${s.flow} rerouted onto ${s.path}`;
    } else if (s.kind === 'event' && s.event === 'cc_set') {
      if (initialStatus === 'queued' || initialStatus === 'running') refreshReferences();
    } else if (s.kind === 'event' && s.event === 'update') {
      pts['chart-fast-rtt']?.push([`${s.flow} base`, `${s.flow} baseRTT`, s.t, s.base_rtt_us / 1000, s.flow, 'dot']);
      pts['chart-fast-rtt']?.push([`${s.flow} avg`, `${s.flow} avgRTT`, s.t, s.avg_rtt_us / 1000, s.flow, 'solid']);
      pts['chart-fast-window']?.push([`${s.flow} target`, `${s.flow} target window`, s.t, s.target, s.flow, 'dash',
        {tint: true}]);
      pts['chart-fast-window']?.push([`${s.flow} cwnd`, `${s.flow} cwnd`, s.t, s.cwnd, s.flow, 'solid']);
    }
  }
  pendingLatest = Math.max(pendingLatest, latest);
  if (drawTimer === null) drawTimer = setTimeout(draw, DRAW_EVERY_MS);
  window.fastlabUpdates = (window.fastlabUpdates || 0) + 1;
}

const statusEl = document.getElementById('status');
const source = new EventSource(`/api/runs/${encodeURIComponent(runId)}/events`);
source.addEventListener('samples', (ev) => onSamples(JSON.parse(ev.data)));
source.addEventListener('log', (ev) => { document.getElementById('log').textContent = JSON.parse(ev.data).msg; });
source.addEventListener('status', (ev) => {
  const s = JSON.parse(ev.data);
  statusEl.textContent = s.status + (s.position ? ` — position ${s.position} in the queue` : '');
});
// After `end` the server closes the stream: close ours when it has (the `error` that follows), so that
// the response completes instead of being aborted, and before EventSource would reconnect (retry 3 s).
let ended = false;
source.addEventListener('error', () => { if (ended) source.close(); });
source.addEventListener('end', (ev) => {
  ended = true;
  if (drawTimer !== null) { clearTimeout(drawTimer); draw(); }
  setTimeout(() => source.close(), 2500);
  const s = JSON.parse(ev.data);
  statusEl.textContent = s.status;
  document.body.dataset.streamEnded = s.status;
  // A run that was live when the page opened: reload to show its results (summary, bundle).
  if (initialStatus === 'queued' || initialStatus === 'running') window.location.reload();
});

// Live control: FAST's alpha of one host, now (POST /api/runs/<id>/cc); the engine records a cc_set event.
for (const form of document.querySelectorAll('form.live-cc')) {
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = form.querySelector('[name="alpha"]');
    const out = form.querySelector('.live-result');
    const r = await api('POST', `/api/runs/${encodeURIComponent(runId)}/cc`,
      {host: form.dataset.host, cc: 'fast', args: {alpha: Number(input.value)}});
    out.className = r.ok ? 'live-result valid' : 'live-result invalid';
    out.textContent = r.ok ? `α ${r.data.args.alpha} from ${r.data.at_s.toFixed(1)} s` : errorText(r);
    if (r.ok) refreshReferences();
  });
}
source.addEventListener('end', () => {
  for (const b of document.querySelectorAll('form.live-cc button')) b.disabled = true;
});

document.getElementById('cancel')?.addEventListener('click', async () => {
  const r = await api('POST', `/api/runs/${encodeURIComponent(runId)}/cancel`);
  statusEl.textContent = r.ok ? r.data.status : errorText(r);
  if (r.ok) window.location.reload();
});
