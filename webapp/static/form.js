// The experiment form, generated from /api/schema (spec schema, topology catalogue, usable CCs).
import {api, csrfToken, errorText} from '/static/common.js';

let S = null;            // the schema bundle
let hosts = [];          // hosts of the chosen topology (for its current arguments)
let shaped = [];         // its shaped links
const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = v; else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};

// Labels and one-line explanations come from the server's models (pydantic Field title/description,
// the CC registry's Param unit/help): a title pydantic made up from the key ("Rate Mbps") gives way
// to the key with its unit suffix spelled out.
const UNITS = [['_mbps', ' (Mb/s)'], ['_ms', ' (ms)'], ['_s', ' (s)'], ['_bdp', ' (× BDP)'], ['_pct', ' (%)'], ['_us', ' (µs)']];
const madeUp = (key) => key.split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
function labelOf(key, prop) {
  if (prop.title && prop.title !== madeUp(key)) return prop.title;
  for (const [suffix, unit] of UNITS) if (key.endsWith(suffix)) return key.slice(0, -suffix.length).replaceAll('_', ' ') + unit;
  return prop.title || key.replaceAll('_', ' ');
}
function helpLine(text) {
  return el('small', {class: 'help', text: text || ''});
}

// A scalar JSON-schema property -> an input (or a select for enums), named by data-key.
function numberSchema(prop) {
  if (prop.anyOf) return prop.anyOf.find((p) => p.type === 'number' || p.type === 'integer') || null;
  return (prop.type === 'number' || prop.type === 'integer') ? prop : null;
}
function field(key, prop, label = labelOf(key, prop)) {
  const wrap = el('label', {class: 'field'}, el('span', {class: 'label', text: label}), ' ');
  let input;
  if (prop.type === 'boolean') {  // on/off (an AQM's gentle, ecn): the default said, then yes or no
    input = el('select', {'data-key': key});
    input.append(el('option', {value: '', text: `(default ${prop.default ? 'yes' : 'no'})`}),
      el('option', {value: 'true', text: 'yes'}), el('option', {value: 'false', text: 'no'}));
    input.dataset.kind = 'boolean';
  } else if (prop.enum) {
    input = el('select', {'data-key': key});
    input.append(el('option', {value: '', text: `(default ${prop.default ?? ''})`}));
    for (const v of prop.enum) input.append(el('option', {value: v, text: v}));
  } else {
    const n = numberSchema(prop);
    if (!n) return null;
    input = el('input', {'data-key': key, type: 'number', step: n.type === 'integer' ? '1' : 'any',
      min: n.minimum ?? n.exclusiveMinimum, max: n.maximum, placeholder: prop.default ?? ''});
    input.dataset.kind = n.type;
  }
  input.name = key;
  wrap.append(input);
  if (prop.description) wrap.append(helpLine(prop.description));
  return wrap;
}
function readFields(container) {
  const out = {};
  for (const input of container.querySelectorAll(':scope [data-key]')) {
    const v = input.value.trim();
    if (v === '') continue;
    if (input.dataset.kind === 'boolean') { out[input.dataset.key] = v === 'true'; continue; }
    out[input.dataset.key] = input.dataset.kind === 'number' || input.dataset.kind === 'integer' || input.dataset.kind === 'int' || input.dataset.kind === 'float' ? Number(v) : v;
  }
  return out;
}
function setFields(container, values) {
  for (const [k, v] of Object.entries(values || {})) {
    const input = container.querySelector(`[data-key="${CSS.escape(k)}"]`);
    if (input) input.value = typeof v === 'boolean' ? String(v) : v;
  }
}

// --- topology ---------------------------------------------------------------------------------
const topo = () => S.topologies.find((t) => t.name === $('f-topology').value);

function renderTopologyArgs() {
  const t = topo();
  $('topology-description').textContent = t.description + (t.takes_scale ? ' — scale divides capacities' : '');
  const box = $('topology-args');
  box.replaceChildren();
  box.dataset.scope = 'topology';
  for (const [key, prop] of Object.entries(t.args_schema.properties)) {
    const f = field(key, prop);
    if (f) box.append(f);
  }
}

async function refreshPlan() {
  const args = readFields($('topology-args'));
  const r = await api('GET', `/api/topologies/${encodeURIComponent($('f-topology').value)}?args=${encodeURIComponent(JSON.stringify(args))}`);
  if (r.ok) { hosts = r.data.hosts; shaped = r.data.shaped_links; }
  for (const row of document.querySelectorAll('.flow')) fillHosts(row);
  for (const row of document.querySelectorAll('.cc-change')) fillChangeHosts(row);
  renderLinks();
}

// --- flows ------------------------------------------------------------------------------------
function fillHosts(row) {
  for (const end of ['src', 'dst']) {
    const sel = row.querySelector(`[data-flow="${end}"]`);
    const keep = sel.value;
    sel.replaceChildren(...hosts.map((h) => el('option', {value: h, text: h})));
    if (hosts.includes(keep)) sel.value = keep;
    else sel.value = hosts[end === 'src' ? 0 : Math.min(1, hosts.length - 1)] || '';
  }
}

// 'mi_threshold_us' with unit 'us' -> 'fast mi threshold (us)'
const paramLabel = (cc, p) => `${cc.name} ${(p.unit && p.name.endsWith(`_${p.unit}`) ? p.name.slice(0, -p.unit.length - 1) : p.name)
  .replaceAll('_', ' ')}${p.unit ? ` (${p.unit})` : ''}`;

function renderParams(row, selector = '[data-flow="cc"]') {
  const cc = S.ccs.find((c) => c.name === row.querySelector(selector).value);
  const box = row.querySelector('.params');
  box.replaceChildren();
  for (const p of (cc ? cc.params : [])) {
    const attrs = {'data-key': p.name, placeholder: p.kind === 'str' ? 'default' : p.default, title: p.help};
    if (p.kind !== 'str') Object.assign(attrs, {type: 'number', step: p.kind === 'int' ? '1' : 'any', min: p.minimum, max: p.maximum});
    // An enumeration (pattern ^(a|b)$) is a dropdown; a free form keeps its named choices as suggestions.
    const choices = (p.pattern.match(/^\^\(((?:[a-z0-9]+\|)*[a-z0-9]+)\)\$$/) || [])[1];
    const named = (p.pattern.match(/^\^\(((?:[a-z0-9]+\|)+)/) || [])[1];
    let input;
    if (choices) {
      input = el('select', {'data-key': p.name, title: p.help});
      input.append(el('option', {value: '', text: '(default)'}));
      for (const c of choices.split('|')) input.append(el('option', {value: c, text: c}));
    } else {
      input = el('input', attrs);
      if (named) {
        const list = el('datalist', {id: `${cc.name}-${p.name}-choices`});
        for (const c of named.split('|').filter(Boolean)) list.append(el('option', {value: c}));
        input.setAttribute('list', list.id);
        box.append(list);
      }
    }
    input.dataset.kind = p.kind;
    input.name = `${cc.name}-${p.name}`;
    box.append(el('label', {class: 'field'}, el('span', {class: 'label', text: paramLabel(cc, p)}), ' ', input,
      helpLine(p.help)));
  }
}

function addFlow(values = {}) {
  const row = el('div', {class: 'flow', 'data-scope': 'flow'});
  const count = el('input', {type: 'number', min: 1, max: 64, step: 1, 'data-flow': 'count', placeholder: 1, name: 'count'});
  const src = el('select', {'data-flow': 'src', name: 'src'});
  const dst = el('select', {'data-flow': 'dst', name: 'dst'});
  const cc = el('select', {'data-flow': 'cc', name: 'cc'});
  for (const c of S.ccs) cc.append(el('option', {value: c.name, text: `${c.name} — ${c.description}`}));
  const start = el('input', {type: 'number', min: 0, step: 'any', 'data-flow': 'start_s', placeholder: 0, name: 'start_s'});
  const remove = el('button', {type: 'button', text: 'remove'});
  row.append(el('label', {}, 'Count ', count), el('label', {}, 'From ', src), el('label', {}, 'To ', dst),
    el('label', {}, 'Algorithm ', cc), el('label', {}, 'Start (s) ', start), remove, el('div', {class: 'params'}));
  $('flows').append(row);
  fillHosts(row);
  if (values.cc) cc.value = values.cc; else if (S.ccs.some((c) => c.name === 'cubic')) cc.value = 'cubic';
  if (values.src) src.value = values.src;
  if (values.dst) dst.value = values.dst;
  if (values.count) count.value = values.count;
  if (values.start_s) start.value = values.start_s;
  renderParams(row);
  setFields(row.querySelector('.params'), values.cc_args);
  cc.addEventListener('change', () => { renderParams(row); changed(); });
  remove.addEventListener('click', () => { row.remove(); changed(); });
}

function readFlow(row) {
  const f = {src: row.querySelector('[data-flow="src"]').value, dst: row.querySelector('[data-flow="dst"]').value,
    cc: row.querySelector('[data-flow="cc"]').value};
  const count = row.querySelector('[data-flow="count"]').value;
  if (count !== '') f.count = Number(count);
  const start = row.querySelector('[data-flow="start_s"]').value;
  if (start !== '') f.start_s = Number(start);
  const args = {};
  for (const input of row.querySelectorAll('.params [data-key]')) {
    const v = input.value.trim();
    if (v !== '') args[input.dataset.key] = input.dataset.kind === 'str' ? v : Number(v);
  }
  if (Object.keys(args).length) f.cc_args = args;
  return f;
}

// --- shaped links: loss model, AQM, rate, buffer ---------------------------------------------------
// The models a link field offers (`loss`, `aqm`), each with its parameters, from the spec's own schema.
function modelsOf(key) {
  const defs = S.spec_schema.$defs;
  const mapping = defs.LinkSpec.properties[key].anyOf.find((a) => a.discriminator).discriminator.mapping;
  return Object.entries(mapping).map(([model, ref]) => ({model, schema: defs[ref.split('/').pop()]}));
}
const lossModels = () => modelsOf('loss');
const MODEL_KEYS = {loss: 'no loss', aqm: 'drop-tail (no AQM)'};  // a link's model fields and their "none"

function renderLinks() {
  const box = $('links');
  const old = readLinks();
  const traceLabels = Object.fromEntries([...document.querySelectorAll('.link')].map((r) => [r.dataset.link, r.dataset.traceLabel]));
  box.replaceChildren();
  const props = S.spec_schema.$defs.LinkSpec.properties;
  for (const id of shaped) {
    const row = el('div', {class: 'link', 'data-link': id});
    const model = el('select', {'data-loss': 'model', name: `${id}-loss-model`});
    model.append(el('option', {value: '', text: 'no loss'}));
    for (const m of lossModels()) model.append(el('option', {value: m.model, text: m.model}));
    const lossBox = el('span', {class: 'loss-params'});
    const aqm = el('select', {'data-aqm': 'model', name: `${id}-aqm-model`,
      title: 'active queue management in front of the buffer (RED, CoDel, PIE: the papers\' defaults)'});
    aqm.append(el('option', {value: '', text: MODEL_KEYS.aqm}));
    for (const m of modelsOf('aqm')) aqm.append(el('option', {value: m.model, text: m.model}));
    const aqmBox = el('span', {class: 'aqm-params'});
    const buffer = el('input', {'data-link-key': 'buffer', name: `${id}-buffer`, size: 10,
      placeholder: 'e.g. 100, 150KB, 50ms, 1.5bdp', title: 'queue size; empty = the topology default'});
    row.append(el('strong', {text: `${id}: `}), el('label', {}, 'loss model ', model), lossBox,
      el('label', {}, 'queue ', aqm), aqmBox, el('label', {}, 'buffer ', buffer));
    for (const key of ['rate_mbps', 'delay_ms', 'jitter_ms']) {
      const f = field(key, props[key]);
      f.querySelector('input').placeholder = 'topology';
      f.querySelector('input').name = `${id}-${key}`;
      row.append(f);
    }
    row.append(traceBox(row));
    const steps = el('div', {class: 'schedule-steps'});
    const addStep = el('button', {type: 'button', 'data-schedule': 'add', text: 'add a step',
      title: 'change the rate, delay or loss at a time after the flows start (emulator)'});
    row.append(el('div', {class: 'schedule'}, el('span', {class: 'label', text: 'schedule '}), steps, addStep));
    addStep.addEventListener('click', () => { addScheduleStep(row); changed(); });
    model.addEventListener('change', () => { renderLoss(row); changed(); });
    aqm.addEventListener('change', () => { renderModel(row, 'aqm'); changed(); });
    box.append(row);
    const prev = old[id];
    if (prev) {
      if (prev.loss) { model.value = prev.loss.model; renderLoss(row); setFields(lossBox, prev.loss); }
      if (prev.aqm) { aqm.value = prev.aqm.model; renderModel(row, 'aqm'); setFields(aqmBox, prev.aqm); }
      if (prev.buffer) buffer.value = prev.buffer;
      for (const key of ['rate_mbps', 'delay_ms', 'jitter_ms']) if (prev[key] !== undefined) row.querySelector(`[data-key="${key}"]`).value = prev[key];
      for (const step of prev.schedule || []) addScheduleStep(row, step);
      if (traceLabels[id]) row.dataset.traceLabel = traceLabels[id];
      setTrace(row, prev);
    }
  }
}

// A link's mahimahi trace (links.X.trace, links.X.reverse.trace): the student picks a file, the server
// checks it with the CLI's parser and keeps it under its own name (POST /api/traces); the spec then
// carries the answer's reference (upload:<sha256>), never a path. A bad file: the server's one line beside
// the field, and the link keeps the trace it had.
const TRACE_DIRECTIONS = {forward: 'this direction (a → b)', reverse: 'the reverse direction (b → a)', both: 'both directions'};
function traceBox(row) {
  const id = row.dataset.link;
  const file = el('input', {type: 'file', name: `${id}-trace`, 'data-trace': 'file', accept: '.txt,.trace,.up,.down,text/plain',
    title: 'a mahimahi packet-delivery trace: one line per 1504-byte delivery opportunity, its millisecond'});
  const where = el('select', {'data-trace': 'where', name: `${id}-trace-where`});
  for (const [value, text] of Object.entries(TRACE_DIRECTIONS)) where.append(el('option', {value, text}));
  const shown = el('span', {class: 'trace-name', 'data-trace': 'shown'});
  const clear = el('button', {type: 'button', 'data-trace': 'clear', text: 'remove the trace', hidden: ''});
  const box = el('div', {class: 'field trace'}, el('span', {class: 'label', text: 'trace (mahimahi)'}), ' ', file, ' for ', where,
    el('div', {class: 'trace-current'}, shown, ' ', clear), helpLine(`sets the link's departures in place of a rate (the emulator); at most ${(S.limits.trace_max_bytes / 2 ** 20).toFixed(0)} MiB`));
  file.addEventListener('change', () => uploadTrace(row));
  where.addEventListener('change', changed);
  clear.addEventListener('click', (ev) => { ev.preventDefault(); setTrace(row, {}); file.value = ''; changed(); });
  return box;
}

function traceNote(row, text) {
  row.querySelector('.trace-error')?.remove();
  const file = row.querySelector('[data-trace="file"]');
  file.removeAttribute('aria-invalid');
  if (!text) return;
  file.setAttribute('aria-invalid', 'true');
  row.querySelector('[data-trace="where"]').after(el('span', {class: 'field-error trace-error', role: 'alert', text}));
}

async function uploadTrace(row) {
  const file = row.querySelector('[data-trace="file"]').files[0];
  traceNote(row, '');
  if (!file) return;
  const field = `links.${row.dataset.link}.trace`;
  if (file.size > S.limits.trace_max_bytes) {  // the server refuses it too: say so before sending it
    traceNote(row, `${file.name}: larger than ${S.limits.trace_max_bytes.toLocaleString('en')} bytes`);
    return;
  }
  const resp = await fetch(`/api/traces?field=${encodeURIComponent(field)}&name=${encodeURIComponent(file.name)}`, {
    method: 'POST', credentials: 'same-origin', body: file,
    headers: {'X-CSRF-Token': csrfToken(), 'Content-Type': 'application/octet-stream'}});
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (resp.status !== 201) {
    traceNote(row, (data && data.error ? data.error.replace(`${field}: `, '') : `error ${resp.status}`));
    return;
  }
  row.dataset.trace = data.trace;
  row.dataset.traceLabel = `${data.name}: ${data.lines.toLocaleString('en')} opportunities per ${data.period_ms.toLocaleString('en')} ms, mean ${data.mean_rate_mbps} Mb/s`;
  showTrace(row);
  changed();
}

function showTrace(row) {
  const ref = row.dataset.trace || '';
  row.querySelector('[data-trace="shown"]').textContent = ref ? `${row.dataset.traceLabel || ref}` : '';
  row.querySelector('[data-trace="shown"]').title = ref;
  row.querySelector('[data-trace="clear"]').hidden = !ref;
}

// A spec's trace fields back into the row (a reference: what the form itself sent).
function setTrace(row, link) {
  const fwd = link.trace, rev = link.reverse && link.reverse.trace;
  row.dataset.trace = fwd || rev || '';
  if (!row.dataset.trace) delete row.dataset.traceLabel;
  else if (!row.dataset.traceLabel) row.dataset.traceLabel = `uploaded trace ${row.dataset.trace.slice(7, 19)}…`;
  row.querySelector('[data-trace="where"]').value = fwd && rev ? 'both' : rev ? 'reverse' : 'forward';
  showTrace(row);
}

// A step of a link's schedule (links.X.schedule): at a time after the flows start, the rate, delay and/or
// loss from then on; its inputs labelled from the spec's ScheduleStep, read back in order.
function addScheduleStep(row, values = {}) {
  const props = S.spec_schema.$defs.ScheduleStep.properties;
  const step = el('div', {class: 'schedule-step'});
  for (const key of ['at_s', 'rate_mbps', 'delay_ms', 'loss']) {
    const f = field(key, props[key]);
    f.querySelector('input').name = `${row.dataset.link}-schedule-${key}`;
    step.append(f);
  }
  const remove = el('button', {type: 'button', text: 'remove'});
  remove.addEventListener('click', () => { step.remove(); changed(); });
  step.append(remove);
  row.querySelector('.schedule-steps').append(step);
  setFields(step, values);
}
const scheduleSteps = (row) => [...row.querySelectorAll('.schedule-step')];

// A link's model field (`loss`, `aqm`): the chosen model's parameters, each with its label and range.
function renderModel(row, kind) {
  const model = row.querySelector(`[data-${kind}="model"]`).value;
  const box = row.querySelector(`.${kind}-params`);
  box.replaceChildren();
  const m = modelsOf(kind).find((x) => x.model === model);
  if (!m) return;
  for (const [key, prop] of Object.entries(m.schema.properties)) {
    if (key === 'model') continue;
    const f = field(key, prop);
    if (!f) continue;  // a parameter the form has no input for: the spec's default holds
    f.querySelector('input, select').name = `${row.dataset.link}-${kind}-${key}`;
    box.append(f);
  }
}
const renderLoss = (row) => renderModel(row, 'loss');

function readLinks() {
  const out = {};
  for (const row of document.querySelectorAll('.link')) {
    const link = {};
    for (const kind of Object.keys(MODEL_KEYS)) {
      const model = row.querySelector(`[data-${kind}="model"]`).value;
      if (model) link[kind] = {model, ...readFields(row.querySelector(`.${kind}-params`))};
    }
    const buffer = row.querySelector('[data-link-key="buffer"]').value.trim();
    if (buffer) link.buffer = /^[0-9.]+$/.test(buffer) ? Number(buffer) : buffer;
    for (const key of ['rate_mbps', 'delay_ms', 'jitter_ms']) {
      const v = row.querySelector(`[data-key="${key}"]`).value;
      if (v !== '') link[key] = Number(v);
    }
    const steps = scheduleSteps(row).map(readFields);
    if (steps.length) link.schedule = steps;
    if (row.dataset.trace) {
      const where = row.querySelector('[data-trace="where"]').value;
      if (where !== 'reverse') link.trace = row.dataset.trace;
      if (where !== 'forward') link.reverse = {trace: row.dataset.trace};
    }
    if (Object.keys(link).length) out[row.dataset.link] = link;
  }
  return out;
}

// --- scheduled changes (cc_changes): at a time, a host's algorithm gets new parameters -------------
function changeSchema() { return S.spec_schema.$defs.CcChange.properties; }

function addChange(values = {}) {
  const props = changeSchema();
  const row = el('div', {class: 'cc-change', 'data-scope': 'change'});
  const at = el('input', {type: 'number', min: 0, step: 'any', 'data-change': 'at_s', name: 'change-at_s', required: ''});
  const host = el('select', {'data-change': 'host', name: 'change-host'});
  const cc = el('select', {'data-change': 'cc', name: 'change-cc'});
  for (const c of S.ccs.filter((x) => x.params.length)) cc.append(el('option', {value: c.name, text: c.name}));
  const remove = el('button', {type: 'button', text: 'remove'});
  const labelled = (key, input) => el('label', {class: 'field'}, el('span', {class: 'label', text: labelOf(key, props[key])}),
    ' ', input, helpLine(props[key].description));
  row.append(labelled('at_s', at), labelled('host', host), labelled('cc', cc), remove,
    el('div', {class: 'params'}));
  $('cc-changes').append(row);
  fillChangeHosts(row);
  if (values.at_s !== undefined) at.value = values.at_s;
  if (values.host) host.value = values.host;
  if (values.cc) cc.value = values.cc; else if (S.ccs.some((c) => c.name === 'fast')) cc.value = 'fast';
  renderParams(row, '[data-change="cc"]');
  setFields(row.querySelector('.params'), values.args);
  cc.addEventListener('change', () => { renderParams(row, '[data-change="cc"]'); changed(); });
  remove.addEventListener('click', () => { row.remove(); changed(); });
}

function fillChangeHosts(row) {
  const sel = row.querySelector('[data-change="host"]');
  const keep = sel.value;
  sel.replaceChildren(...hosts.map((h) => el('option', {value: h, text: h})));
  if (hosts.includes(keep)) sel.value = keep;
}

function readChange(row) {
  const at = row.querySelector('[data-change="at_s"]').value.trim();
  const args = {};
  for (const input of row.querySelectorAll('.params [data-key]')) {
    const v = input.value.trim();
    if (v !== '') args[input.dataset.key] = input.dataset.kind === 'str' ? v : Number(v);
  }
  return {at_s: at === '' ? null : Number(at), host: row.querySelector('[data-change="host"]').value,
    cc: row.querySelector('[data-change="cc"]').value, args};
}

// --- the spec, validation, presets, submit ----------------------------------------------------------
function buildSpec() {
  const spec = {name: $('f-name').value.trim(), topology: $('f-topology').value};
  for (const key of ['duration_s', 'seed', 'repeat', 'sample_hz', 'mtu']) {
    const v = $(`f-${key}`).value;
    if (v !== '') spec[key] = Number(v);
  }
  const args = readFields($('topology-args'));
  if (Object.keys(args).length) spec.topology_args = args;
  spec.flows = [...document.querySelectorAll('.flow')].map(readFlow);
  const links = readLinks();
  if (Object.keys(links).length) spec.links = links;
  const changes = [...document.querySelectorAll('.cc-change')].map(readChange);
  if (changes.length) spec.cc_changes = changes;
  return spec;
}

let timer = null;
let seq = 0;
function changed() {
  clearTimeout(timer);
  timer = setTimeout(() => { validate(); refreshSweepParams(); }, 250);
}

// The sweep's parameter list for the spec on the form (POST /api/sweeps/parameters: each flow's
// algorithm parameters with their units, loss rates, the topology's arguments), kept on the choice
// made; "other" takes any spec field path, as `fastlab run --set` does.
const OTHER = '__other__';
async function refreshSweepParams() {
  const select = $('sweep-param');
  const r = await api('POST', '/api/sweeps/parameters', {spec: buildSpec()});
  if (!r.ok) return;
  const was = select.value;
  select.replaceChildren(...r.data.map((p) => el('option', {value: p.path,
    text: `${p.label}${p.unit ? ` (${p.unit})` : ''}`})), el('option', {value: OTHER, text: 'other: a spec field path…'}));
  select.value = r.data.some((p) => p.path === was) || was === OTHER ? was : r.data[0]?.path ?? OTHER;
  $('sweep-path').hidden = select.value !== OTHER;
}
const sweepParam = () => ($('sweep-param').value === OTHER ? $('sweep-path').value.trim() : $('sweep-param').value);

// --- errors at the field -------------------------------------------------------------------------
// The engine's errors start with the field's path ("flows[0].cc_args: alpha=0 is out of range ...",
// "links.bottleneck.loss.rate: ..."): find the input it names, mark it and say why beside it.
function fieldFor(path, message) {
  const top = {name: 'f-name', duration_s: 'f-duration_s', seed: 'f-seed', repeat: 'f-repeat', sample_hz: 'f-sample_hz', mtu: 'f-mtu',
    topology: 'f-topology'};
  if (top[path]) return $(top[path]);
  let m = path.match(/^topology_args\.(\w+)/);
  if (m) return $('topology-args').querySelector(`[data-key="${CSS.escape(m[1])}"]`) || $('f-topology');
  m = path.match(/^flows(?:\[(\d+)\]|\.(\d+))(?:\.(\w+))?/);
  if (m) {
    const row = document.querySelectorAll('.flow')[Number(m[1] ?? m[2])];
    if (!row) return null;
    if (m[3] === 'cc_args') {  // "alpha=0 is out of range": the parameter's own input
      const param = (message.match(/^(\w+)(?:=| must)/) || [])[1];
      return (param && row.querySelector(`.params [data-key="${CSS.escape(param)}"]`)) || row.querySelector('[data-flow="cc"]');
    }
    return row.querySelector(`[data-flow="${CSS.escape(m[3] || 'src')}"]`) || row.querySelector('[data-flow="cc"]');
  }
  m = path.match(/^cc_changes(?:\[(\d+)\]|\.(\d+))(?:\.(\w+))?/);
  if (m) {
    const row = document.querySelectorAll('.cc-change')[Number(m[1] ?? m[2])];
    if (!row) return $('add-change');
    if (m[3] === 'args') {
      const param = (message.match(/^(\w+)(?:=| must)/) || [])[1];
      return (param && row.querySelector(`.params [data-key="${CSS.escape(param)}"]`)) || row.querySelector('[data-change="cc"]');
    }
    return row.querySelector(`[data-change="${CSS.escape(m[3] || 'at_s')}"]`) || row.querySelector('[data-change="at_s"]');
  }
  m = path.match(/^links\.([^.]+)(?:\.(\w+))?(?:\.(\w+))?/);
  if (m) {
    const row = document.querySelector(`.link[data-link="${CSS.escape(m[1])}"]`);
    if (!row) return null;
    if (m[2] === 'loss') return row.querySelector(m[3] && m[3] !== 'model' ? `.loss-params [data-key="${CSS.escape(m[3])}"]` : '[data-loss="model"]');
    if (m[2] === 'aqm') {  // links.X.aqm.<model>.<param>: the parameter's input, else the model's select
      const param = path.split('.')[4];
      return (param && row.querySelector(`.aqm-params [data-key="${CSS.escape(param)}"]`)) || row.querySelector('[data-aqm="model"]');
    }
    if (m[2] === 'buffer') return row.querySelector('[data-link-key="buffer"]');
    if (m[2] === 'trace' || (m[2] === 'reverse' && m[3] === 'trace')) return row.querySelector('[data-trace="file"]');
    // links.X.schedule[i].key, or links.X: schedule[i].key ... (a check across the steps): the step's input
    const s = (m[2] === 'schedule' ? path : m[2] ? '' : message).match(/schedule\[(\d+)\](?:\.(\w+))?/);
    if (s || m[2] === 'schedule') {
      const step = s && scheduleSteps(row)[Number(s[1])];
      return (step && step.querySelector(`[data-key="${CSS.escape(s[2] || 'at_s')}"]`)) || row.querySelector('[data-schedule="add"]');
    }
    return m[2] ? row.querySelector(`[data-key="${CSS.escape(m[2])}"]`) : null;
  }
  return null;
}

// Only the notes showFieldError put beside a field: the page's own error spans (the sweep's) stay.
function clearFieldErrors() {
  for (const input of document.querySelectorAll('[aria-invalid="true"]')) input.removeAttribute('aria-invalid');
  for (const note of document.querySelectorAll('.field-note')) note.remove();
}

// `error` is the engine's line (it names the field's path: it finds the input); `words` what the student
// reads beside it (webapp.words: the field in words, no pattern, no spec path), the line as its tooltip.
function showFieldError(error, words) {
  clearFieldErrors();
  const m = (error || '').match(/^([\w.[\]-]+): (.*)$/s);
  const input = m && fieldFor(m[1], m[2]);
  if (!input) return null;
  input.setAttribute('aria-invalid', 'true');
  const note = el('span', {class: 'field-error field-note', role: 'alert', text: words || m[2], title: error});
  // inside the field's label, on a line of its own under the input: the row keeps its layout (a note
  // beside the field pushed the next fields sideways); a field without a label gets it after it
  const label = input.closest('label.field');
  if (label) input.after(note);
  else (input.closest('label') || input).after(note);
  return input;
}

// how a link is shaped, as a student reads it (the spec's `backend` words are the engine's)
const BACKEND_WORDS = {emulator: "fastlab's link emulator", tc: "the kernel's traffic control (tc)",
  netem: "the kernel's netem", auto: 'the best the machine offers'};

function showResult(r) {
  const box = $('validation');
  $('start').disabled = !r.ok && r.status === 422;  // invalid: fix the named field first
  showYaml(r);
  if (r.ok) {
    clearFieldErrors();
    box.removeAttribute('title');  // an earlier refusal's line no longer applies
    box.className = r.data.warning ? 'valid warning' : 'valid';
    // what shapes each link, in words; the engine's word and its reason are the tooltip
    const shaped = Object.entries(r.data.links).map(([k, v]) => `${k} by ${BACKEND_WORDS[v.backend] || v.backend}`);
    box.textContent = `valid: ready to start${shaped.length ? ` · links shaped: ${shaped.join(', ')}` : ''}`;
    box.title = Object.entries(r.data.links).map(([k, v]) => `${k}: ${v.backend} (${v.why})`).join('\n');
    if (r.data.warning) {
      const warn = el('strong', {class: 'cost-warning', text: ` — warning: ${r.data.warning}`});
      box.append(warn);
    }
  } else {
    const error = (r.data && r.data.error) || `error ${r.status}`;
    const words = (r.data && r.data.message) || error;
    box.className = 'invalid';
    box.textContent = words;
    box.title = error;  // the engine's own line, as the command line prints it
    showFieldError(error, words);
  }
}

// The spec as YAML and as a `fastlab run` command, as the server validated it (webapp.cli_text); while it
// is invalid, the spec being built as it would be sent.
let command = '';
function showYaml(r) {
  command = r.ok ? r.data.command : '';
  $('spec-yaml').textContent = r.ok ? r.data.yaml : JSON.stringify(buildSpec(), null, 1);
  $('spec-command').textContent = command;
  $('yaml-state').textContent = r.ok ? '(validated: defaults filled in)' : '(not valid yet: shown as it would be sent, in JSON)';
  $('copy-command').disabled = !r.ok;
  $('copy-result').textContent = '';
}

async function copyCommand() {
  try {
    await navigator.clipboard.writeText(command);
    $('copy-result').textContent = 'copied: paste it into a shell on the lab machine';
  } catch (e) {  // no clipboard (a plain-http page off loopback): select the text instead
    $('spec-command').closest('details').open = true;
    window.getSelection().selectAllChildren($('spec-command'));
    $('copy-result').textContent = 'selected: copy it with Ctrl+C';
  }
}

async function validate() {
  const mine = ++seq;
  const r = await api('POST', '/api/validate', buildSpec());
  if (mine !== seq) return r;
  showResult(r);
  return r;
}

async function fillForm(spec) {
  $('f-name').value = spec.name || '';
  $('f-duration_s').value = spec.duration_s ?? '';
  $('f-seed').value = spec.seed ?? '';
  $('f-repeat').value = spec.repeat ?? '';
  $('f-sample_hz').value = spec.sample_hz ?? '';
  $('f-mtu').value = spec.mtu ?? '';
  $('f-topology').value = spec.topology;
  renderTopologyArgs();
  setFields($('topology-args'), spec.topology_args);
  $('links').replaceChildren();
  await refreshPlan();
  $('flows').replaceChildren();
  for (const f of spec.flows || []) addFlow(f);
  $('cc-changes').replaceChildren();
  for (const c of spec.cc_changes || []) addChange(c);
  for (const [id, link] of Object.entries(spec.links || {})) {
    const row = document.querySelector(`.link[data-link="${CSS.escape(id)}"]`);
    if (!row) continue;
    if (link.loss) { row.querySelector('[data-loss="model"]').value = link.loss.model; renderLoss(row); setFields(row.querySelector('.loss-params'), link.loss); }
    if (link.aqm) { row.querySelector('[data-aqm="model"]').value = link.aqm.model; renderModel(row, 'aqm'); setFields(row.querySelector('.aqm-params'), link.aqm); }
    if (link.buffer !== undefined) row.querySelector('[data-link-key="buffer"]').value = link.buffer;
    for (const key of ['rate_mbps', 'delay_ms', 'jitter_ms']) if (link[key] !== undefined) row.querySelector(`[data-key="${key}"]`).value = link[key];
    setTrace(row, link);
  }
  changed();
}

// A capacity sweep that scales a flows row's count (fastlab.sweep.scaling.FlowScaling): the row (1-based here) and
// the reference, N flows at C Mb/s; an empty field is sent as null, which the server refuses in one line.
const numberOrNull = (id) => ($(id).value.trim() === '' ? null : Number($(id).value));
function scaleFlows() {
  const row = numberOrNull('sweep-scale-flow');
  return {flow: row === null ? null : row - 1, reference_flows: numberOrNull('sweep-scale-n'),
    reference_capacity_mbps: numberOrNull('sweep-scale-c')};
}
// The reference starts as the form's own point: the row's count at the topology's capacity.
function fillScaleDefaults() {
  const row = document.querySelectorAll('.flow')[Number($('sweep-scale-flow').value || 1) - 1];
  if ($('sweep-scale-n').value === '') $('sweep-scale-n').value = (row && row.querySelector('[data-flow="count"]').value) || 1;
  const rate = $('topology-args').querySelector('[data-key="rate_mbps"]');
  if ($('sweep-scale-c').value === '' && rate) $('sweep-scale-c').value = rate.value || rate.placeholder;
}

// A sweep: the form's spec, one field path and its values (numbers where they read as numbers).
async function startSweep() {
  const values = $('sweep-values').value.split(',').map((v) => v.trim()).filter((v) => v !== '')
    .map((v) => (/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(v) ? Number(v) : v));
  const body = {spec: buildSpec(), param: sweepParam(), values, repeat: Number($('sweep-repeat').value)};
  if ($('sweep-scale').checked) body.scale_flows = scaleFlows();
  const r = await api('POST', '/api/sweeps', body);
  if (r.status === 201) { window.location = r.data.url; return; }
  $('sweep-error').textContent = errorText(r);
}

async function init() {
  S = (await api('GET', '/api/schema')).data;
  for (const t of S.topologies) $('f-topology').append(el('option', {value: t.name, text: t.name}));
  for (const p of S.presets) $('preset').append(el('option', {value: p.id, text: p.label}));
  $('f-duration_s').max = S.limits.max_duration_s;
  for (const label of document.querySelectorAll('[data-spec-key]')) {
    const prop = S.spec_schema.properties[label.dataset.specKey];
    label.querySelector('.label').textContent = labelOf(label.dataset.specKey, prop);
    label.append(helpLine(prop.description));
  }
  for (const key of ['seed', 'repeat', 'sample_hz', 'mtu']) $(`f-${key}`).placeholder = S.spec_schema.properties[key].default;
  // HTML patterns are compiled with the `v` flag, where a '-' inside [...] must be escaped.
  $('f-name').pattern = S.spec_schema.properties.name.pattern.replace(/^\^/, '').replace(/\$$/, '')
    .replace(/-\]/g, '\\-]');
  $('f-topology').addEventListener('change', async () => { renderTopologyArgs(); await refreshPlan(); changed(); });
  $('topology-args').addEventListener('change', async () => { await refreshPlan(); changed(); });
  $('experiment').addEventListener('input', changed);
  $('experiment').addEventListener('change', changed);
  $('add-flow').addEventListener('click', () => { addFlow(); changed(); });
  $('add-change').addEventListener('click', () => { addChange(); changed(); });
  $('copy-command').addEventListener('click', copyCommand);
  $('load-preset').addEventListener('click', () => fillForm(S.presets.find((p) => p.id === $('preset').value).spec));
  $('experiment').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const r = await api('POST', '/api/runs', buildSpec());
    if (r.status === 201) { window.location = r.data.url; return; }
    showResult(r);
  });
  $('start-sweep').addEventListener('click', startSweep);
  $('sweep-scale').addEventListener('change', () => {
    $('sweep-scale-fields').hidden = !$('sweep-scale').checked;
    if ($('sweep-scale').checked) fillScaleDefaults();
    $('sweep-error').textContent = '';
  });
  $('sweep-param').addEventListener('change', () => { $('sweep-path').hidden = $('sweep-param').value !== OTHER; });
  for (const id of ['sweep-param', 'sweep-path', 'sweep-values', 'sweep-repeat', 'sweep-scale-flow', 'sweep-scale-n', 'sweep-scale-c']) {  // an edit answers the last error
    $(id).addEventListener('input', () => { $('sweep-error').textContent = ''; });
  }
  // a lab handout's link fills the form with one of its specs (data-prefill, built by the server)
  const prefill = $('experiment').dataset.prefill;
  await fillForm(prefill ? JSON.parse(prefill) : S.presets[0].spec);
  document.body.dataset.ready = '1';
}

init();
