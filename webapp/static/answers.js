// A student's answers to a lab's questions. Kept in this browser (localStorage) at every keystroke, so they
// survive a reload and an offline spell; for a student of a class (the page's fastlab-student meta) also
// saved on the server (webapp.classes: POST /api/class/answers/<lab>), box by box, the later edit winning,
// and sent again whenever the browser is back online. One record per lab (and student):
// {lab, title, saved, items: [{key, label, prompt, text, edited (ms), pending (not on the server yet)}]}
// under `fastlab-answers:[<student>:]<lab folder>`.
import {csrfToken} from '/static/common.js';

export const student = () => document.querySelector('meta[name="fastlab-student"]')?.content || '';
const storageKey = (lab) => (student() ? `fastlab-answers:${student()}:${lab}` : `fastlab-answers:${lab}`);

export function load(lab) {
  try {
    const record = JSON.parse(localStorage.getItem(storageKey(lab)) || 'null');
    return record && Array.isArray(record.items) ? record : null;
  } catch (e) {
    return null;
  }
}

export function save(lab, record) {
  localStorage.setItem(storageKey(lab), JSON.stringify(record));
}

export function clear(lab) {
  localStorage.removeItem(storageKey(lab));
}

export const written = (record) => (record ? record.items.filter((i) => i.text.trim() !== '').length : 0);
export const pending = (record) => (record ? record.items.filter((i) => i.pending).length : 0);

// The server's boxes into the record: a box the server holds a later edit of replaces the browser's; a box
// edited here since (pending) stays, to be sent. Returns the keys whose text changed.
export function merge(record, serverItems) {
  const changed = [];
  for (const s of serverItems) {
    const mine = record.items.find((i) => i.key === s.key);
    if (!mine) {
      record.items.push({key: s.key, label: s.label, prompt: s.prompt, text: s.text, edited: s.edited, pending: false});
      changed.push(s.key);
    } else if (!(mine.edited > s.edited)) {
      if (mine.text !== s.text) changed.push(s.key);
      Object.assign(mine, {text: s.text, edited: s.edited, pending: false});
    } else {
      mine.pending = true;  // typed here later than the server's copy: to be sent
    }
  }
  return changed;
}

async function send(method, url, body) {
  const opts = {method, credentials: 'same-origin', headers: {'X-CSRF-Token': csrfToken()}};
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(url, opts);  // throws when the network is down
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  return {ok: resp.ok, status: resp.status, data};
}

// Send the record's pending boxes (or, with none, fetch the server's) and merge the answer. Resolves to
// {state: 'saved' | 'offline' | 'local' | 'error', changed: [keys], error}: 'local' is a browser without
// a class (nothing to send to), 'offline' a network that did not answer (the boxes stay pending).
export async function sync(lab, record) {
  if (!student()) return {state: 'local', changed: []};
  const url = `/api/class/answers/${encodeURIComponent(lab)}`;
  const out = record.items.filter((i) => i.pending);
  let r;
  try {
    r = out.length
      ? await send('POST', url, {items: out.map(({key, label, prompt, text, edited}) => ({key, label, prompt, text, edited}))})
      : await send('GET', url);
  } catch (e) {
    return {state: 'offline', changed: []};
  }
  if (!r.ok) return {state: r.status === 401 ? 'local' : 'error', changed: [], error: (r.data && r.data.error) || `error ${r.status}`};
  const sent = new Map(out.map((i) => [i.key, i.edited]));
  const changed = merge(record, r.data.items);
  for (const i of record.items) if (sent.has(i.key) && i.edited === sent.get(i.key)) i.pending = false;
  save(lab, record);
  return {state: 'saved', changed};
}

// The pending boxes sent with a request that outlives the page (fetch keepalive: it carries the CSRF header,
// which a beacon cannot); the record keeps them pending, so the next page's sync sends them again if needed.
export function flush(lab, record) {
  const out = record.items.filter((i) => i.pending);
  if (!student() || !out.length) return;
  try {
    fetch(`/api/class/answers/${encodeURIComponent(lab)}`, {method: 'POST', keepalive: true, credentials: 'same-origin',
      headers: {'X-CSRF-Token': csrfToken(), 'Content-Type': 'application/json'},
      body: JSON.stringify({items: out.map(({key, label, prompt, text, edited}) => ({key, label, prompt, text, edited}))})});
  } catch (e) { /* offline: it stays pending */ }
}

// The answers as a Markdown document: each question (quoted) and the student's answer under it.
export function markdown(record) {
  const lines = [`# ${record.title || record.lab}: my answers`, '', `Saved ${record.saved || 'never'} (lab folder ${record.lab}).`, ''];
  for (const item of record.items) {
    lines.push(`## ${item.label}`, '');
    for (const line of (item.prompt || '').split('\n')) lines.push(`> ${line}`);
    lines.push('', item.text.trim() === '' ? '_(no answer)_' : item.text.trim(), '');
  }
  return lines.join('\n');
}

// Offer a Blob as a file download (an anchor with a blob: URL, which the app's CSP allows).
export function download(blob, filename) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}
