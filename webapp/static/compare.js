// The compare page: every run's traces overlaid, one colour per run, one dash style per flow.
import {largeFonts} from '/static/common.js';

export const RUN_COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const DASHES = ['solid', 'dash', 'dot', 'dashdot', 'longdash'];
const root = document.getElementById('compare');
const data = JSON.parse(root.dataset.compare);
const letter = (i) => 'ABCDEFGH'[i];

const charts = {
  'compare-goodput': {title: 'Throughput (goodput) per flow', y: 'goodput (Mb/s)', kind: 'flows', key: 'goodput_mbps'},
  'compare-cwnd': {title: 'Congestion window per flow', y: 'cwnd (packets)', kind: 'flows', key: 'cwnd_pkts'},
  'compare-rtt': {title: 'Smoothed RTT per flow', y: 'RTT (ms)', kind: 'flows', key: 'srtt_ms'},
  'compare-queue': {title: 'Queue per link (forward direction)', y: 'backlog (packets)', kind: 'links', key: 'backlog_pkts'},
};

// Goodput smoothing, as on a run's page: a trailing moving average over N samples (1 = the samples).
const smoothSel = document.getElementById('compare-smooth');
let smoothN = smoothSel ? Math.max(1, Number(smoothSel.value) || 1) : 1;
function smoothed(ys, n) {
  const out = new Array(ys.length);
  let sum = 0;
  let count = 0;
  for (let i = 0; i < ys.length; i++) {
    if (ys[i] !== null) { sum += ys[i]; count += 1; }
    if (i >= n && ys[i - n] !== null) { sum -= ys[i - n]; count -= 1; }
    out[i] = count ? sum / count : null;
  }
  return out;
}

function traces(c) {
  const out = [];
  data.series.forEach((s, i) => {
    Object.keys(s[c.kind]).sort().forEach((name, j) => {
      const tr = s[c.kind][name];
      if (!tr[c.key]) return;
      const y = c.key === 'goodput_mbps' && smoothN > 1 ? smoothed(tr[c.key], smoothN) : tr[c.key];
      out.push({x: tr.t, y, type: 'scatter', mode: 'lines', name: `${letter(i)} ${data.runs[i].name} · ${name}`,
        line: {color: RUN_COLOURS[i % RUN_COLOURS.length], dash: DASHES[j % DASHES.length], width: 1.5}});
    });
  });
  return out;
}

// The theory beside the traces, in each run's colour: its bottlenecks' capacity on the goodput chart,
// FAST's equilibrium queue (Σα, per part of a run whose α changed) on the queue chart; a line shared
// by several runs is drawn once, labelled with their letters. A dotted line marks each change of a run.
function referenceLines(id) {
  const lines = new Map();
  (data.refs || []).forEach((refs, i) => {
    const seen = new Set();
    for (const r of refs) {
      let y = null;
      let what = '';
      if (id === 'compare-goodput' && r.capacity_mbps) { y = r.capacity_mbps; what = `capacity ${y} Mb/s`; }
      if (id === 'compare-queue' && r.fast_queue_pkts) { y = r.fast_queue_pkts; what = `Σα = ${y}`; }
      if (y === null) continue;
      const from = r.from_s ?? 0;
      const to = r.to_s ?? null;
      const key = `${y} ${from} ${to}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const line = lines.get(key) || {y, from, to, what, runs: []};
      line.runs.push(i);
      lines.set(key, line);
    }
  });
  return [...lines.values()];
}

function layout(c, id) {
  const size = largeFonts() ? 22 : 13;
  const shapes = [];
  const annotations = [];
  for (const line of referenceLines(id)) {
    const colour = line.runs.length === 1 ? RUN_COLOURS[line.runs[0] % RUN_COLOURS.length] : '#444444';
    const whole = line.from === 0 && line.to === null;
    shapes.push({type: 'line', xref: whole ? 'paper' : 'x', x0: whole ? 0 : line.from, x1: whole ? 1 : (line.to ?? line.from + 1),
      y0: line.y, y1: line.y, line: {color: colour, width: 1.5, dash: 'dash'}});
    annotations.push({xref: whole ? 'paper' : 'x', x: whole ? 1 : line.from, xanchor: whole ? 'right' : 'left', y: line.y,
      yanchor: 'bottom', showarrow: false, text: `${line.runs.map(letter).join(', ')}: ${line.what}`,
      font: {color: colour, size: Math.round(size * 0.85)}});
  }
  (data.marks || []).forEach((marks, i) => {
    for (const m of marks) {
      const colour = RUN_COLOURS[i % RUN_COLOURS.length];
      shapes.push({type: 'line', xref: 'x', yref: 'paper', x0: m.at_s, x1: m.at_s, y0: 0, y1: 1,
        line: {color: colour, width: 1.5, dash: 'dot'}});
      annotations.push({xref: 'x', yref: 'paper', x: m.at_s, y: 1, xanchor: 'left', yanchor: 'bottom', showarrow: false,
        text: `${letter(i)}: ${m.text}${m.live ? ' (live)' : ''}`, font: {color: colour, size: Math.round(size * 0.8)}});
    }
  });
  const title = c.key === 'goodput_mbps' && smoothN > 1 ? `${c.title} — moving average of ${smoothN} samples` : c.title;
  return {title: {text: title}, font: {size}, margin: {t: 70, r: 20, b: largeFonts() ? 150 : 100, l: 80},
    xaxis: {title: {text: 'time since flows started (s)'}, rangemode: 'tozero'},
    yaxis: {title: {text: c.y}, rangemode: 'tozero'}, legend: {orientation: 'h', y: largeFonts() ? -0.45 : -0.3},
    shapes, annotations};
}

for (const [id, c] of Object.entries(charts)) Plotly.newPlot(id, traces(c), layout(c, id), {responsive: true, displaylogo: false});
document.addEventListener('fontschanged', () => {
  for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c, id)).then(() => Plotly.Plots.resize(id));
});
smoothSel?.addEventListener('change', () => {
  smoothN = Math.max(1, Number(smoothSel.value) || 1);
  Plotly.react('compare-goodput', traces(charts['compare-goodput']), layout(charts['compare-goodput'], 'compare-goodput'));
});

document.getElementById('copy-link').addEventListener('click', async () => {
  const out = document.getElementById('copy-result');
  const url = document.getElementById('share-link').href;
  try {
    await navigator.clipboard.writeText(url);
    out.textContent = 'copied';
  } catch (e) {
    out.textContent = 'select the address above to copy it';
  }
});
document.body.dataset.ready = '1';
