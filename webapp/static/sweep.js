// A sweep's page: follows its runs (GET /api/sweeps/<id> every second until all have finished) and
// draws the aggregate: per value the mean of the finished runs with min..max bars, and the theory dashed;
// of a spec's repetitions (no parameter), fills in each figure's median and 95 % interval over the faithful runs.
import {api, largeFonts} from '/static/common.js';

const root = document.getElementById('sweep');
const sweepId = root.dataset.sweepId;
const metric = document.getElementById('sweep-metric');
let state = null;

const fmt = (v) => Number(v.toPrecision(4)).toString();  // as the server's '%.4g' for the figures met here

function drawFigures() {  // a spec's repetitions: the table of figures over the faithful runs
  const row = state.aggregate[0];
  document.getElementById('repeat-faithful').textContent = `${row.faithful} of the ${row.done} finished`;
  for (const tr of document.querySelectorAll('#repeat-figures tr[data-metric]')) {
    const f = row.metrics[tr.dataset.metric];
    tr.querySelector('.median').textContent = f.median == null ? '–' : fmt(f.median);
    tr.querySelector('.interval').textContent = f.ci_low != null ? `${fmt(f.ci_low)} to ${fmt(f.ci_high)}`
      : (f.median != null ? 'needs two faithful runs' : '–');
  }
}

function draw() {
  if (!metric) { drawFigures(); return; }
  const m = metric.value;
  const info = state.metrics[m];
  const rows = state.aggregate;
  const xs = rows.map((r) => r.value);
  const mean = rows.map((r) => r.metrics[m].mean);
  const measured = {x: xs, y: mean, type: 'scatter', mode: 'lines+markers', name: `measured (mean of ${state.repeat})`,
    line: {color: '#1f77b4'}, error_y: {type: 'data', symmetric: false, color: '#1f77b4',
      array: rows.map((r) => (r.metrics[m].max ?? r.metrics[m].mean) - r.metrics[m].mean || 0),
      arrayminus: rows.map((r) => r.metrics[m].mean - (r.metrics[m].min ?? r.metrics[m].mean) || 0)}};
  const traces = [measured];
  if (rows.some((r) => r.metrics[m].theory != null)) {
    traces.push({x: xs, y: rows.map((r) => r.metrics[m].theory), type: 'scatter', mode: 'lines', name: 'theory',
      line: {color: '#444444', dash: 'dash'}});
  }
  const size = largeFonts() ? 22 : 13;
  const p = state.param_label;
  const axis = p.unit ? `${p.label} (${p.unit})` : p.label;
  Plotly.react('sweep-chart', traces, {title: {text: `${info.label} against ${p.label}`}, font: {size},
    xaxis: {title: {text: axis}, type: xs.every((v) => typeof v === 'number') ? 'linear' : 'category'},
    yaxis: {title: {text: `${info.label} (${info.unit})`}, rangemode: 'tozero'},
    margin: {t: 50, r: 20, b: 80, l: 80}, legend: {orientation: 'h', y: -0.25}}, {responsive: true, displaylogo: false});
}

async function poll() {
  const r = await api('GET', `/api/sweeps/${encodeURIComponent(sweepId)}`);
  if (!r.ok) return;
  state = r.data;
  const bar = document.getElementById('sweep-progress');
  bar.value = state.finished;
  document.getElementById('sweep-progress-text').textContent =
    `${state.finished} of ${state.total} runs finished` + (state.done < state.finished ? ` (${state.finished - state.done} not done)` : '');
  for (const p of state.points) {
    const cell = document.querySelector(`#sweep-points tr[data-run="${CSS.escape(p.run)}"] .point-status`);
    if (cell) cell.textContent = p.status;
  }
  draw();
  if (state.finished < state.total) setTimeout(poll, 1000);
  else document.body.dataset.sweepFinished = '1';
}

if (metric) metric.addEventListener('change', () => state && draw());
document.addEventListener('fontschanged', () => state && draw());
poll();
