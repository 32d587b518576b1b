// Live traces of one run over Server-Sent Events: history first (replay), then live batches, drawn by the
// charts report.html draws too (/static/charts.js: fastlab/templates/charts.js).
import {api, largeFonts, errorText} from '/static/common.js';
import {createCharts, drawRoundTrip} from '/static/charts.js';

const root = document.getElementById('run');
const runId = root.dataset.runId;
const initialStatus = root.dataset.status;
// The theory's lines (fastlab.theory.fast, per flow): capacity, base RTT, FAST's equilibrium; each
// over its span [from_s, to_s] between the run's parameter changes (fastlab.theory.segments), whose markers
// (`marks`: when, what) are drawn on every chart. A running run's are fetched again at each change.
// `lines` (chart -> its lines) is fastlab.results.chart_lines' list, the one report.html draws too.
let refs = JSON.parse(root.dataset.refs || '[]');
let lines = JSON.parse(root.dataset.lines || '{}');
let marks = JSON.parse(root.dataset.marks || '[]');

const smoothSel = document.getElementById('smooth');
const charts = createCharts({refs, lines, marks, sampleHz: root.dataset.sampleHz, duration: root.dataset.duration,
  smoothN: smoothSel ? smoothSel.value : 1, largeFonts});
document.addEventListener('fontschanged', () => charts.relayout());
smoothSel?.addEventListener('change', () => charts.setSmoothing(smoothSel.value));

// A finished run's "where the round trip went" (its flows' delay accounting, in the page: one flow at a time).
const roundTripData = document.getElementById('round-trip-data');
if (roundTripData) {
  const data = JSON.parse(roundTripData.textContent);
  const pick = document.getElementById('round-trip-flow');
  const draw = () => drawRoundTrip('chart-round-trip', data, pick ? pick.value : Object.keys(data)[0], largeFonts);
  draw();
  pick?.addEventListener('change', draw);
  document.addEventListener('fontschanged', draw);
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
    charts.setReferences(refs, lines, marks);
    document.body.dataset.marks = String(marks.length);
  }, 300);
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

// The charts draw the samples (fastlab/templates/charts.js); the page says what else they tell.
function onSamples(samples) {
  showProgress(charts.onSamples(samples));
  for (const s of samples) {
    if (s.kind === 'event' && s.event === 'reroute') {
      document.getElementById('log').textContent = `${s.t.toFixed(2)} s: ${s.flow} rerouted onto ${s.path}`;
    } else if (s.kind === 'event' && s.event === 'cc_set') {
      if (initialStatus === 'queued' || initialStatus === 'running') refreshReferences();
    }
  }
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
  charts.flush();
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
