// Live traces of one run over Server-Sent Events: history first (replay), then live batches.
import {api, largeFonts} from '/static/common.js';

const root = document.getElementById('run');
const runId = root.dataset.runId;
const initialStatus = root.dataset.status;

// chart id -> {title, y axis label, traces: key -> index}
const charts = {
  'chart-goodput': {title: 'Throughput (goodput) per flow', y: 'goodput (Mb/s)'},
  'chart-cwnd': {title: 'Congestion window per flow', y: 'cwnd (packets)'},
  'chart-rtt': {title: 'Smoothed RTT per flow', y: 'RTT (ms)'},
  'chart-queue': {title: 'Bottleneck queue', y: 'backlog (packets)'},
  'chart-fast': {title: "FAST internal state", y: 'RTT (ms) / window (packets)'},
};

function layout(c) {
  const size = largeFonts() ? 22 : 13;
  return {title: {text: c.title}, font: {size}, margin: {t: 50, r: 20, b: largeFonts() ? 150 : 100, l: 80},
    xaxis: {title: {text: 'time since flows started (s)'}}, yaxis: {title: {text: c.y}, rangemode: 'tozero'},
    legend: {orientation: 'h', y: largeFonts() ? -0.45 : -0.3}, uirevision: 'keep'};
}

for (const [id, c] of Object.entries(charts)) {
  c.traces = {};
  Plotly.newPlot(id, [], layout(c), {responsive: true, displaylogo: false});
}
document.addEventListener('fontschanged', () => {
  for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c)).then(() => Plotly.Plots.resize(id));
});

// Append points (grouped per trace) to a chart, creating traces as new keys appear.
function extend(id, points) {
  const c = charts[id];
  const groups = new Map();
  for (const [key, name, x, y] of points) {
    if (y === null || y === undefined || Number.isNaN(y)) continue;
    if (!(key in c.traces)) {
      c.traces[key] = Object.keys(c.traces).length;
      Plotly.addTraces(id, {x: [], y: [], name, mode: 'lines', type: 'scatter'});
    }
    if (!groups.has(key)) groups.set(key, {x: [], y: []});
    groups.get(key).x.push(x);
    groups.get(key).y.push(y);
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

const lastTx = {};  // link/direction -> [t, tx_bytes]
function onSamples(samples) {
  const pts = {'chart-goodput': [], 'chart-cwnd': [], 'chart-rtt': [], 'chart-queue': [], 'chart-fast': []};
  for (const s of samples) {
    if (typeof s.t === 'number') showProgress(s.t);
    if (s.kind === 'flow') {
      pts['chart-goodput'].push([s.flow, s.flow, s.t, s.goodput_mbps]);
      pts['chart-cwnd'].push([s.flow, s.flow, s.t, s.cwnd_pkts]);
      pts['chart-rtt'].push([s.flow, s.flow, s.t, s.srtt_ms]);
    } else if (s.kind === 'link') {
      const key = `${s.link} ${s.direction}`;
      if (s.backlog_pkts != null) pts['chart-queue'].push([key, `${key} backlog`, s.t, s.backlog_pkts]);
      const prev = lastTx[key];
      if (prev && s.tx_bytes != null && s.t > prev[0]) {
        pts['chart-goodput'].push([`${key} tx`, `${key} link rate`, s.t, (s.tx_bytes - prev[1]) * 8 / 1e6 / (s.t - prev[0])]);
      }
      if (s.tx_bytes != null) lastTx[key] = [s.t, s.tx_bytes];
    } else if (s.kind === 'event' && s.event === 'reroute') {
      document.getElementById('log').textContent = `${s.t.toFixed(2)} s: ${s.flow} rerouted onto ${s.path}`;
    } else if (s.kind === 'event' && s.event === 'update') {
      pts['chart-fast'].push([`${s.flow} base`, `${s.flow} baseRTT (ms)`, s.t, s.base_rtt_us / 1000]);
      pts['chart-fast'].push([`${s.flow} avg`, `${s.flow} avgRTT (ms)`, s.t, s.avg_rtt_us / 1000]);
      pts['chart-fast'].push([`${s.flow} target`, `${s.flow} target window (pkts)`, s.t, s.target]);
      pts['chart-fast'].push([`${s.flow} cwnd`, `${s.flow} cwnd (pkts)`, s.t, s.cwnd]);
    }
  }
  for (const [id, p] of Object.entries(pts)) extend(id, p);
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
source.addEventListener('end', (ev) => {
  source.close();
  const s = JSON.parse(ev.data);
  statusEl.textContent = s.status;
  document.body.dataset.streamEnded = s.status;
  // A run that was live when the page opened: reload to show its results (summary, bundle).
  if (initialStatus === 'queued' || initialStatus === 'running') window.location.reload();
});

document.getElementById('cancel')?.addEventListener('click', async () => {
  const r = await api('POST', `/api/runs/${encodeURIComponent(runId)}/cancel`);
  statusEl.textContent = r.ok ? r.data.status : (r.data && r.data.error) || `error ${r.status}`;
  if (r.ok) window.location.reload();
});
