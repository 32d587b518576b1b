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

function traces(c) {
  const out = [];
  data.series.forEach((s, i) => {
    Object.keys(s[c.kind]).sort().forEach((name, j) => {
      const tr = s[c.kind][name];
      if (!tr[c.key]) return;
      out.push({x: tr.t, y: tr[c.key], type: 'scatter', mode: 'lines', name: `${letter(i)} ${data.runs[i].name} · ${name}`,
        line: {color: RUN_COLOURS[i % RUN_COLOURS.length], dash: DASHES[j % DASHES.length], width: 1.5}});
    });
  });
  return out;
}

function layout(c) {
  const size = largeFonts() ? 22 : 13;
  return {title: {text: c.title}, font: {size}, margin: {t: 50, r: 20, b: largeFonts() ? 150 : 100, l: 80},
    xaxis: {title: {text: 'time since flows started (s)'}, rangemode: 'tozero'},
    yaxis: {title: {text: c.y}, rangemode: 'tozero'}, legend: {orientation: 'h', y: largeFonts() ? -0.45 : -0.3}};
}

for (const [id, c] of Object.entries(charts)) Plotly.newPlot(id, traces(c), layout(c), {responsive: true, displaylogo: false});
document.addEventListener('fontschanged', () => {
  for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c)).then(() => Plotly.Plots.resize(id));
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
