// A run's charts: one definition for the web app's run page (live, over Server-Sent Events, and a
// finished run's replay: webapp/static/live.js) and report.html (offline, every sample at once:
// fastlab/results/report.py inlines this file). Both feed the same samples -- the run's rows of flows.csv,
// links.csv and cc_events.csv with a `kind` (flow, link, event), as the engine streams them -- so the
// titles, units, colours, goodput smoothing, time origin, the theory's dashed lines
// (fastlab.results.chart_lines' list) and the markers at each change are the same on both.
//
// The page holds the chart <div>s (fastlab/templates/charts.html): a chart whose div is absent (FAST's
// charts for a run without FAST) is not drawn. Needs plotly.js loaded (window.Plotly).

// One colour per flow on every chart (f1 the first of plotly's palette, ...); links in greys.
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#bcbd22', '#17becf'];
const GREYS = ['#8c8c8c', '#b0b0b0', '#6e6e6e', '#c8c8c8'];
const BOTTLENECK_GREY = '#222222';  // a bottleneck's rate and queue: darker than any other link's
const MARK_COLOUR = '#7b3294';  // a change of the run's parameters, a reroute
const RED_AVERAGE = '#d95f02';  // RED's average queue: not a grey, so it is not read as the backlog itself
const RED_AVERAGE_REVERSE = '#e6ab02';
export function flowColour(flow) {
  const n = Number(String(flow).replace(/^f/, ''));
  return Number.isInteger(n) && n > 0 ? PALETTE[(n - 1) % PALETTE.length] : '#000000';
}
// A lighter shade of a flow's colour (FAST's target beside its cwnd): mixed half with white.
function tint(hex) {
  const n = parseInt(hex.slice(1), 16);
  const mix = (v) => Math.round(v + (255 - v) * 0.5).toString(16).padStart(2, '0');
  return `#${mix(n >> 16)}${mix((n >> 8) & 255)}${mix(n & 255)}`;
}

// chart id -> title and y axis label. Flows and links on separate charts, one unit per axis: FAST's RTT
// estimates (ms) apart from its windows (packets).
export const CHARTS = {
  'chart-goodput': {title: 'Goodput per flow', y: 'goodput (Mb/s)'},
  'chart-links': {title: 'Link rate, data direction', y: 'rate (Mb/s)'},
  'chart-cwnd': {title: 'Congestion window per flow', y: 'cwnd (packets)'},
  'chart-rtt': {title: 'Smoothed RTT per flow', y: 'RTT (ms)'},
  'chart-queue': {title: 'Bottleneck queue', y: 'backlog (packets)'},
  'chart-fast-rtt': {title: "FAST's RTT estimates", y: 'RTT (ms)'},
  'chart-fast-window': {title: "FAST's window and target", y: 'window (packets)'},
  'chart-ports': {title: 'OpenFlow switch ports, transmitted', y: 'rate (Mb/s)'},
  'chart-aqm': {title: "Queue management's drop probability (RED's p_b, PIE's p)", y: 'drop probability'},
};

// Goodput's default smoothing: a trailing moving average over SMOOTH_RTTS of each flow's own round trips
// (its base RTT from the theory's references). A window of a fixed number of samples beats against the
// RTT: FAST's packets leave in one window's burst per RTT, so a 0.25-s average of 50-ms samples on a
// ~100-ms path swung by ±3 Mb/s around 10 Mb/s while the window and the queue were flat (issue 50), and
// a student read FAST as unstable. Peak-to-peak of the average over its mean, 6-29 s of lab 02's recorded
// steady runs (40 and 80 ms): 5 samples 6.2 %/4.4 % (equilibrium), 5.9 %/3.2 % (alphas); 10 RTTs 3.6 %/2.5 %,
// 4.8 %/1.4 %; on flat stretches of single 20 Mb/s FAST flows at 100 ms (this machine, 2026-11-28) 5 samples
// 5-17 %, 10 RTTs 2-4 %. tests/webapp/test_charts_teach_browser.py holds the default to <= 5 % on the first.
export const SMOOTH_RTTS = 10;
const BASE_RTT_GAP_S = 0.001;  // FAST's baseRTT this far from the path's (or BASE_RTT_GAP_SHARE of it) is said
const BASE_RTT_GAP_SHARE = 0.05;
const AXIS_ABOVE_TOP = 1.25;
const LABEL_GAP = 0.06;  // two theory lines closer than this share of the chart's height: labels on both sides  // how far above its highest "top" theory line a chart's y axis ends
const SMOOTH_FALLBACK = 5;  // samples, for a flow the theory cannot place (no base RTT known)

// A trailing moving average over n samples (1 = the raw samples).
export function smoothed(ys, n) {
  const out = new Array(ys.length);
  let sum = 0;
  for (let i = 0; i < ys.length; i++) {
    sum += ys[i];
    if (i >= n) sum -= ys[i - n];
    out[i] = sum / Math.min(i + 1, n);
  }
  return out;
}

// Redraws are coalesced: a live stream brings up to 10 messages a second, and each plotly extend redraws a
// whole chart, so drawing every message kept a browser's main thread busy for whole seconds on a slow
// machine (measured: a headless Chromium without GPU at ~100 % of a core through a 10 s run, the page
// answering nothing until the run ended). Points wait at most DRAW_EVERY_MS to be drawn.
const DRAW_EVERY_MS = 250;

/**
 * The charts of one run.
 * opts: refs, lines, marks (the theory and the changes: fastlab.results.chart_lines / webapp.theory),
 *       sampleHz, duration (the x axis spans 0 .. duration), smoothN (goodput's moving average: 'rtt',
 *       the default, over SMOOTH_RTTS of each flow's RTT; or a number of samples),
 *       largeFonts (a function: bigger text for a projector), drawEveryMs (0: draw at once).
 * Returns {onSamples(samples) -> newest t, flush(), setReferences(refs, lines, marks), setSmoothing(n),
 *          relayout()}.
 */
export function createCharts(opts) {
  let refs = opts.refs || [];
  let lines = opts.lines || {};
  let marks = opts.marks || [];
  const eventMarks = [];  // reroutes, as they happen
  const sampleHz = Number(opts.sampleHz) || 20;
  let xMax = Number(opts.duration) || 0;
  // 'rtt' (the default: SMOOTH_RTTS of each flow's RTT) or a number of samples
  let smoothing = opts.smoothN === undefined || opts.smoothN === 'rtt' ? 'rtt' : Math.max(1, Number(opts.smoothN) || 1);
  const largeFonts = opts.largeFonts || (() => false);
  const drawEvery = opts.drawEveryMs ?? DRAW_EVERY_MS;
  const charts = {};
  for (const [id, c] of Object.entries(CHARTS)) if (document.getElementById(id)) charts[id] = {...c};
  const bottlenecks = () => new Set(refs.map((r) => r.bottleneck).filter(Boolean));

  // a flow's base RTT in seconds, from the theory's references (the first span that names it)
  function flowRtt(flow) {
    const ref = refs.find((r) => r.flow === flow && r.base_rtt_ms > 0);
    return ref ? ref.base_rtt_ms / 1000 : null;
  }
  // samples in a flow's moving average
  function smoothOf(flow) {
    if (smoothing !== 'rtt') return smoothing;
    const rtt = flowRtt(flow);
    return rtt ? Math.max(1, Math.round(SMOOTH_RTTS * rtt * sampleHz)) : SMOOTH_FALLBACK;
  }
  function goodputTitle() {
    if (smoothing === 'rtt') {
      const flows = [...new Set(refs.map((r) => r.flow).filter(Boolean))];
      const each = flows.map((f) => `${f} ${(smoothOf(f) / sampleHz).toFixed(2)} s`).join(', ');
      return `Goodput per flow — moving average over ${SMOOTH_RTTS} RTTs${each ? ` (${each})` : ''}`;
    }
    return smoothing > 1
      ? `Goodput per flow — moving average of ${smoothing} samples (${(smoothing / sampleHz).toFixed(2)} s)`
      : `Goodput per flow — raw ${sampleHz} Hz samples`;
  }
  if (charts['chart-goodput']) charts['chart-goodput'].title = goodputTitle();

  // Reference lines per chart: [y, colour, label, short label, from_s, to_s], from fastlab.results.chart_lines (merged
  // there where they coincide). The short label (the value alone) marks each span of a run whose parameters
  // changed; the full one a run-long line. A line of no one flow (a bottleneck's) is grey.
  function referenceLines(id) {
    return (lines[id.replace(/^chart-/, '')] || []).map((l) =>
      [l.y, l.flow ? flowColour(l.flow) : '#444444', l.label, l.short, l.from_s, l.to_s ?? null]);
  }
  // The y axis's end where a theory line says what matters (RED's max_th, its max_p): a little above it, so
  // the start-up's overflow (600 packets against a 417-packet max_th) does not squash the rest; null: plotly's.
  function axisTop(id) {
    const tops = (lines[id.replace(/^chart-/, '')] || []).filter((l) => l.top).map((l) => l.y);
    return tops.length ? Math.max(...tops) * AXIS_ABOVE_TOP : null;
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
    // run-long lines' labels on the right; one that would sit on the label below it (lines closer than
    // LABEL_GAP of the chart's height: RED's min_th 42 and q* 42.8) goes to the left instead
    const span = Math.max(...drawn.map((l) => l[0]), axisTop(id) || 0) || 1;
    const left = new Set();
    let below = -Infinity;
    let belowLeft = false;
    for (const i of drawn.map((_, k) => k).sort((a, b) => drawn[a][0] - drawn[b][0])) {
      const near = drawn[i][0] - below < LABEL_GAP * span;
      if (near && !belowLeft) left.add(i);
      belowLeft = near && !belowLeft;
      below = drawn[i][0];
    }
    const annotations = drawn.map(([y, colour, label, short, from], i) => (segmented
      ? {xref: 'x', x: from, xanchor: 'left', text: short}
      : {xref: 'paper', x: left.has(i) ? 0 : 1, xanchor: left.has(i) ? 'left' : 'right', text: label})).map((a, i) =>
      ({...a, y: drawn[i][0], yanchor: 'bottom', showarrow: false,
        font: {color: drawn[i][1], size: Math.round(size * 0.85)}}));
    // a marker at each change of the run's parameters (and each reroute): a dotted vertical line, what
    // changed on top
    for (const m of [...marks, ...eventMarks]) {
      shapes.push({type: 'line', xref: 'x', yref: 'paper', x0: m.at_s, x1: m.at_s, y0: 0, y1: 1,
        line: {color: MARK_COLOUR, width: 1.5, dash: 'dot'}});
      annotations.push({xref: 'x', yref: 'paper', x: m.at_s, y: 1, xanchor: 'left', yanchor: 'bottom',
        text: m.text + (m.live ? ' (live)' : ''), showarrow: false, font: {color: MARK_COLOUR, size: Math.round(size * 0.8)}});
    }
    const top = axisTop(id);
    const yaxis = {title: {text: c.y}, rangemode: 'tozero'};
    if (top !== null) {
      Object.assign(yaxis, {range: [0, top], autorange: false});
      annotations.push({xref: 'paper', yref: 'paper', x: 0, y: 1, xanchor: 'left', yanchor: 'bottom', showarrow: false,
        text: 'axis to 1.25× the top line: double-click twice for everything (the start-up spike)',
        font: {color: '#666666', size: Math.round(size * 0.75)}});
    }
    return {title: {text: c.title}, font: {size}, margin: {t: segmented || eventMarks.length || top !== null ? 70 : 50, r: 20,
      b: largeFonts() ? 150 : 100, l: 80}, xaxis, yaxis,
      legend: {orientation: 'h', y: largeFonts() ? -0.45 : -0.3}, uirevision: 'keep', shapes, annotations};
  }

  function relayout() {
    for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c, id)).then(() => Plotly.Plots.resize(id));
  }

  for (const [id, c] of Object.entries(charts)) {
    c.traces = {};
    c.raw = {};
    c.links = 0;
    Plotly.newPlot(id, [], layout(c, id), {responsive: true, displaylogo: false});
  }

  function widenTo(t) {
    if (!(xMax > 0) || !(t > xMax)) return;  // no duration known: plotly's autorange
    xMax = Math.ceil(t);
    for (const id of Object.keys(charts)) Plotly.relayout(id, {'xaxis.range': [0, xMax], 'xaxis.autorange': false});
  }

  function setSmoothing(n) {
    smoothing = n === 'rtt' ? 'rtt' : Math.max(1, Number(n) || 1);
    const c = charts['chart-goodput'];
    if (!c) return;
    c.title = goodputTitle();
    const keys = Object.keys(c.traces);
    if (keys.length) {
      Plotly.restyle('chart-goodput', {y: keys.map((k) => smoothed(c.raw[k], smoothOf(k)))}, keys.map((k) => c.traces[k]));
    }
    Plotly.relayout('chart-goodput', {'title.text': c.title});
  }

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
        if (opts?.colour) colour = opts.colour;
        Plotly.addTraces(id, {x: [], y: [], name, mode: 'lines', type: 'scatter', line: {color: colour, dash: dash || 'solid'}});
      }
      if (!groups.has(key)) groups.set(key, {x: [], y: []});
      const g = groups.get(key);
      g.x.push(x);
      if (id === 'chart-goodput') {
        const raw = c.raw[key];
        raw.push(y);
        const from = Math.max(0, raw.length - smoothOf(key));
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

  const pending = Object.fromEntries(Object.keys(CHARTS).map((id) => [id, []]));
  let pendingLatest = -Infinity;
  let drawTimer = null;
  let marksChanged = false;
  function flush() {
    if (drawTimer !== null) clearTimeout(drawTimer);
    drawTimer = null;
    widenTo(pendingLatest);
    for (const [id, p] of Object.entries(pending)) {
      if (p.length) extend(id, p.splice(0));
    }
    if (marksChanged) {
      marksChanged = false;
      for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c, id));
    }
  }

  let notesDue = false;
  const queuedReverse = new Set();
  const lastTx = {};  // link/direction -> [t, tx_bytes]
  // The samples' points for each chart; returns the newest sample time (-Infinity: none).
  function onSamples(samples) {
    const pts = pending;
    let latest = -Infinity;
    for (const s of samples) {
      if (typeof s.t === 'number') latest = Math.max(latest, s.t);
      if (s.kind === 'flow') {
        pts['chart-goodput'].push([s.flow, s.flow, s.t, s.goodput_mbps, s.flow]);
        pts['chart-cwnd'].push([s.flow, s.flow, s.t, s.cwnd_pkts, s.flow]);
        pts['chart-rtt'].push([s.flow, s.flow, s.t, s.srtt_ms, s.flow]);
      } else if (s.kind === 'link') {
        const key = `${s.link} ${s.direction}`;
        const prev = lastTx[key];
        const rate = prev && s.tx_bytes != null && s.t > prev[0] ? (s.tx_bytes - prev[1]) * 8 / 1e6 / (s.t - prev[0]) : null;
        if (s.tx_bytes != null) lastTx[key] = [s.t, s.tx_bytes];
        if (s.direction === 'port') {  // an OpenFlow switch port (the controller's port statistics)
          if (rate !== null) pts['chart-ports'].push([key, `${s.link} tx`, s.t, rate, null, null, {link: s.link}]);
          continue;
        }
        // The reverse direction carries ACKs: its queue is drawn only once it holds something.
        if (s.backlog_pkts > 0 && s.direction === 'reverse') queuedReverse.add(key);
        if (s.backlog_pkts != null && (s.direction !== 'reverse' || queuedReverse.has(key))) {
          // each direction its own style: the ACKs' queue dotted beside the data's solid one
          pts['chart-queue'].push([key, `${key} backlog`, s.t, s.backlog_pkts, null,
            s.direction === 'reverse' ? 'dot' : null, {link: s.link}]);
          // RED's average queue (its EWMA, what it drops by): its own colour, dashed, beside the queue it follows
          if (s.aqm_avg_pkts != null) {
            pts['chart-queue'].push([`${key} avg`, `${key} RED average`, s.t, s.aqm_avg_pkts, null, 'dash',
              {link: s.link, colour: s.direction === 'reverse' ? RED_AVERAGE_REVERSE : RED_AVERAGE}]);
          }
        }
        if (s.aqm_drop_prob != null) {
          pts['chart-aqm'].push([`${key} p`, `${key} drop probability`, s.t, s.aqm_drop_prob, null, null, {link: s.link}]);
        }
        // Only the data direction's rate: the reverse carries ACKs, whose rate says nothing here.
        if (rate !== null && s.direction === 'forward') {
          pts['chart-links'].push([`${key} tx`, `${s.link} link rate`, s.t, rate, null, null, {link: s.link}]);
        }
      } else if (s.kind === 'event' && s.event === 'reroute') {
        if (!eventMarks.some((m) => m.at_s === s.t && m.text.endsWith(` onto ${s.path}`))) {
          eventMarks.push({at_s: s.t, text: `${s.flow} rerouted onto ${s.path}`, live: false});
          marksChanged = true;
        }
      } else if (s.kind === 'event' && s.event === 'update') {
        if (s.flow && s.base_rtt_us > 0) {
          lastUpdate[s.flow] = s;
          notesDue = true;
        }
        pts['chart-fast-rtt'].push([`${s.flow} base`, `${s.flow} baseRTT`, s.t, s.base_rtt_us / 1000, s.flow, 'dot']);
        pts['chart-fast-rtt'].push([`${s.flow} avg`, `${s.flow} avgRTT`, s.t, s.avg_rtt_us / 1000, s.flow, 'solid']);
        pts['chart-fast-window'].push([`${s.flow} target`, `${s.flow} target window`, s.t, s.target, s.flow, 'dash',
          {tint: true}]);
        pts['chart-fast-window'].push([`${s.flow} cwnd`, `${s.flow} cwnd`, s.t, s.cwnd, s.flow, 'solid']);
      }
    }
    pendingLatest = Math.max(pendingLatest, latest);
    if (notesDue) {
      notesDue = false;
      baseRttNotes();
    }
    if (drawEvery <= 0) flush();
    else if (drawTimer === null) drawTimer = setTimeout(flush, drawEvery);
    return latest;
  }

  // FAST's baseRTT against the path's: a flow whose estimate sits above the propagation RTT the theory line
  // uses (a queue already there when it started, a route that grew) takes the difference for propagation, so it
  // keeps w·(d̂ − d)/D more packets queued than α and its window sits above the dashed αD/(D−d). Said under the
  // charts (#chart-notes) from the newest update of each flow; only where the gap is BASE_RTT_GAP or more.
  const lastUpdate = {};  // flow -> its newest FAST update event
  function baseRttNotes() {
    const box = document.getElementById('chart-notes');
    if (!box) return;
    const lines = [];
    for (const [flow, u] of Object.entries(lastUpdate)) {
      const d = flowRtt(flow);
      const dHat = u.base_rtt_us / 1e6;
      const big = u.avg_rtt_us / 1e6;
      if (!d || !(dHat > 0) || Math.abs(dHat - d) < Math.max(BASE_RTT_GAP_S, BASE_RTT_GAP_SHARE * d)) continue;
      // the packets that hides: w·(d̂ − d)/D from the update's own window and avgRTT (a trimmed recording may lack them)
      const extra = big > 0 && u.cwnd > 0 ? `about ${(u.cwnd * (dHat - d) / big).toFixed(1)} packets` : 'w·(d̂ − d)/D packets';
      lines.push(dHat > d
        ? `${flow}: FAST's baseRTT estimate is ${(dHat * 1e3).toFixed(1)} ms, ${((dHat - d) * 1e3).toFixed(1)} ms above the path's `
          + `${(d * 1e3).toFixed(1)} ms: it counts those ms as propagation, so it keeps ${extra} more queued than its α `
          + 'and its window sits that much above the dashed αD/(D−d) line.'
        : `${flow}: FAST's baseRTT estimate is ${(dHat * 1e3).toFixed(1)} ms, below the path's ${(d * 1e3).toFixed(1)} ms `
          + '(the theory line uses the configured delay): its window sits below the dashed αD/(D−d) line.');
    }
    box.replaceChildren(...lines.map((text) => {
      const p = document.createElement('p');
      p.className = 'note basertt-note';
      p.textContent = text;
      return p;
    }));
  }

  function setReferences(newRefs, newLines, newMarks) {
    refs = newRefs;
    lines = newLines;
    marks = newMarks;
    if (charts['chart-goodput']) charts['chart-goodput'].title = goodputTitle();
    for (const [id, c] of Object.entries(charts)) Plotly.relayout(id, layout(c, id));
  }

  return {onSamples, flush, setReferences, setSmoothing, relayout, get marks() { return marks; }};
}

// "Where the round trip went": one flow's RTT samples split by fastlab.measure.accounting, stacked above the
// propagation (a constant of the path, said in the title): each packet's serialization at every hop, the
// links' queueing, the emulators' lateness and what the hosts and the datapath added (the remainder; a
// sample whose remainder reads below 0 -- the parts are measured over windows, the RTT is smoothed -- is
// drawn at 0). data: fastlab.results.chart_data.round_trip's, flow -> series.
export const ROUND_TRIP_COLOURS = {serialization: '#c8c8c8', queueing: '#4c78a8', lateness: '#e45756',
  hosts: '#9467bd'};
const ROUND_TRIP_NAMES = {serialization: 'serialization', queueing: "links' queueing",
  lateness: "emulators' lateness", hosts: 'hosts and datapath'};
export function drawRoundTrip(id, data, flow, largeFonts) {
  const s = data[flow];
  if (!s || !document.getElementById(id)) return;
  const size = largeFonts && largeFonts() ? 22 : 13;
  const traces = Object.keys(ROUND_TRIP_NAMES).map((part) => ({
    x: s.t, y: s[part].map((v) => (v === null ? null : Math.max(0, v))), name: ROUND_TRIP_NAMES[part],
    type: 'scatter', mode: 'lines', stackgroup: 'rtt', line: {width: 0.5, color: ROUND_TRIP_COLOURS[part]},
    fillcolor: ROUND_TRIP_COLOURS[part]}));
  const prop = s.propagation_ms === null ? '' : `, above its ${s.propagation_ms} ms of propagation`;
  Plotly.react(id, traces, {title: {text: `Where the round trip went — ${flow}${prop}`}, font: {size},
    margin: {t: 50, r: 20, b: 100, l: 80}, xaxis: {title: {text: 'time since flows started (s)'}},
    yaxis: {title: {text: 'RTT above propagation (ms)'}, rangemode: 'tozero'},
    legend: {orientation: 'h', y: -0.3}}, {responsive: true, displaylogo: false});
}
