// Guided labs: the Run / Run short buttons of a step (under the step and in the handout where the CLI
// handout had a command: queue the step, open its live run page), the answer boxes (kept in this
// browser and, for a student of a class, on the server: answers.js; downloadable), the checkpoint
// tables of finished lab step runs in plain words (from /api/runs/<id>/checkpoints) and, on a lab step
// run's page, its bundle with the student's answers.
import {api, csrfToken, errorText} from '/static/common.js';
import * as answers from '/static/answers.js';

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

export async function showCheckpoints(box) {
  const r = await api('GET', `/api/runs/${encodeURIComponent(box.dataset.checkpointsRun)}/checkpoints`);
  box.replaceChildren();
  if (!r.ok) {
    box.append(el('p', errorText(r), 'error'));
    box.dataset.loaded = 'error';
    return;
  }
  const failed = r.data.checks.filter((c) => c.status === 'fail').length;
  if (r.data.status === 'inconclusive') {
    // an unfaithful run proves nothing either way: its figures are shown, no verdict is given
    box.append(el('p', 'Inconclusive: this run was not faithful, so its checkpoints prove nothing either way. '
      + 'Run the step again when the machine is quieter (or at a lower scale).', 'summary inconclusive'));
    box.append(el('p', r.data.inconclusive, 'note cp-note'));
  } else {
    const skipped = r.data.skipped?.length ? ` (of the ${r.data.checks.length} this short run evaluates)` : '';
    // a claim over draws is not judged on this run: counted apart
    const draws = r.data.checks.filter((c) => c.one_draw).length;
    const n = r.data.checks.length - draws;
    const apart = draws ? `; ${draws} more ${draws === 1 ? 'is a claim' : 'are claims'} over repeated runs (one draw here)` : '';
    box.append(el('p', failed ? `${failed} of ${n} checkpoint${n === 1 ? '' : 's'} failed${skipped}${apart}`
      : `${n === 1 ? 'the checkpoint' : `all ${n} checkpoints`} passed${skipped}${apart}`, `summary ${failed ? 'fail' : 'pass'}`));
  }
  if (r.data.skipped?.length) {
    // the checkpoints a short run cannot show, each with why: run the full form to judge them
    const n = r.data.skipped.length;
    const note = el('div', undefined, 'skipped');
    note.append(el('p', `Not evaluated in the short form (${n} checkpoint${n > 1 ? 's' : ''}: run the step's full form for `
      + `${n > 1 ? 'them' : 'it'}):`, 'note'));
    const ul = el('ul');
    for (const c of r.data.skipped) {
      const li = el('li');
      li.dataset.checkpoint = c.name;
      li.append(el('strong', c.name), ` — ${c.why}`);
      ul.append(li);
    }
    note.append(ul);
    box.append(note);
  }
  const table = el('table', undefined, 'checkpoint-results');
  const head = el('tr');
  for (const h of ['result', 'checkpoint', 'what was measured, against what']) head.append(el('th', h));
  table.append(head);
  for (const c of r.data.checks) {
    const tr = el('tr', undefined, c.status);
    tr.dataset.checkpoint = c.name;
    const name = el('td', undefined, 'name');
    name.append(el('strong', c.name));
    if (c.checks) name.append(el('div', c.checks, 'checks'));
    const plain = el('td', undefined, 'plain');
    // "<quantity>: measured <figure> <unit>; expected ...": the figure in a span of its own
    const result = el('div', undefined, 'result');
    if (c.quantity && c.quantity !== c.name) result.append(el('span', `${c.quantity}: `, 'quantity'));
    const shown = c.measured_text;
    const at = c.result.indexOf(shown);
    if (c.result.startsWith('measured ') && at >= 0) {
      result.append(c.result.slice(0, at), el('span', shown, 'measured'), c.result.slice(at + shown.length));
    } else {
      result.append(c.result, ' ', el('span', shown, 'measured hidden-figure'));
    }
    plain.append(result);
    // Two layers: the sentence above is what a student reads; the statistics behind the range (standard
    // errors, batch means) are folded under it, one click away.
    if (c.tolerance || c.details) {
      const why = el('details', undefined, 'why');
      why.append(el('summary', c.details ? 'details: why this range, what it reads' : 'why this range'));
      if (c.tolerance) why.append(el('div', c.tolerance, 'why-text'));
      if (c.details) why.append(el('div', `reads: ${c.details}`, 'why-text reads'));
      plain.append(why);
    }
    if (c.note) plain.append(el('div', c.note, 'note cp-note'));
    if (c.one_draw) {
      // a claim over draws (lab 04's fairness): this run is one draw of the random loss, judged with the others
      plain.append(el('div', 'One draw: this claim is judged on the share of repeated runs (each with its own '
        + 'seed) in which it holds, not on one run. This run counts as one of them.', 'note cp-draw'));
      if (c.recorded_draws) plain.append(el('div', `Recorded: ${c.recorded_draws}.`, 'note cp-draw'));
    }
    tr.append(el('td', c.one_draw ? 'ONE DRAW' : c.status.toUpperCase(), 'verdict'), name, plain);
    table.append(tr);
  }
  box.append(table);
  box.dataset.loaded = r.data.status;
}

// --- running steps ---------------------------------------------------------------------------------
const labName = document.getElementById('lab')?.dataset.lab;
// the answers typed just before a Run button: sent before the page leaves for the run's (set below)
let sendAnswers = async () => {};
for (const button of document.querySelectorAll('#lab button.run-step')) {
  button.addEventListener('click', async () => {
    const scope = button.closest('.step-ref') || button.closest('.step');
    const message = scope.querySelector('.run-message');
    const buttons = scope.querySelectorAll('button.run-step');
    for (const b of buttons) b.disabled = true;
    message.className = 'note run-message';
    message.textContent = 'queueing…';
    const r = await api('POST', `/api/labs/${encodeURIComponent(labName)}/steps/${encodeURIComponent(button.dataset.step)}/run`,
      {short: button.dataset.short === '1'});
    if (r.status === 201) {
      await sendAnswers();
      window.location = r.data.url;
      return;
    }
    message.className = 'error run-message';
    message.textContent = errorText(r);
    for (const b of buttons) b.disabled = false;
  });
}
// "Run every step" (the handout's `fastlab lab run N`): each step queued in the lab's order, then the
// first one's live page (the queue runs them one after the other).
const stepIds = JSON.parse(document.getElementById('lab')?.dataset.steps || '[]');
for (const button of document.querySelectorAll('#lab button.run-all')) {
  button.addEventListener('click', async () => {
    const message = button.closest('.step-ref').querySelector('.run-message');
    button.disabled = true;
    message.className = 'note run-message';
    const urls = [];
    for (const [i, step] of stepIds.entries()) {
      message.textContent = `queueing step ${i + 1} of ${stepIds.length}…`;
      const r = await api('POST', `/api/labs/${encodeURIComponent(labName)}/steps/${encodeURIComponent(step)}/run`,
        {short: button.dataset.short === '1'});
      if (r.status !== 201) {
        message.className = 'error run-message';
        message.textContent = `step ${step}: ${errorText(r)}` +
          (urls.length ? ` (${urls.length} step${urls.length > 1 ? 's' : ''} queued before it)` : '');
        button.disabled = false;
        return;
      }
      urls.push(r.data.url);
    }
    await sendAnswers();
    window.location = urls[0];
  });
}
for (const box of document.querySelectorAll('[data-checkpoints-run]')) showCheckpoints(box);

// A step's panel is folded until it has runs: a link to it (the handout's "details", a run page's
// "back to the lab") unfolds it.
function unfoldTarget() {
  const target = window.location.hash ? document.getElementById(decodeURIComponent(window.location.hash.slice(1))) : null;
  if (target instanceof HTMLDetailsElement && target.classList.contains('step')) {
    target.open = true;
    target.scrollIntoView();
  }
}
window.addEventListener('hashchange', unfoldTarget);
unfoldTarget();

// --- answer boxes (lab page) -------------------------------------------------------------------------
// The question a box answers: its list item's text without the box.
function promptOf(box) {
  const item = box.closest('li').cloneNode(true);
  item.querySelector('.answer')?.remove();
  for (const ref of item.querySelectorAll('.run-message')) ref.remove();
  return item.textContent.replace(/\s+/g, ' ').trim();
}

const panel = document.getElementById('answers-panel');
if (labName && panel) {
  const boxes = [...document.querySelectorAll('#handout textarea[data-answer]')];
  const status = document.getElementById('answers-saved');
  // the record: every box of the page, with what this browser holds of it (edit time, not sent yet)
  const stored = answers.load(labName);
  const before = new Map((stored ? stored.items : []).map((i) => [i.key, i]));
  const record = {lab: labName, title: panel.dataset.labTitle, saved: stored?.saved || null,
    items: boxes.map((b) => ({key: b.dataset.answer, label: b.dataset.label, prompt: promptOf(b), text: '', edited: 0,
      pending: false, ...(before.get(b.dataset.answer) ? {text: before.get(b.dataset.answer).text,
        edited: before.get(b.dataset.answer).edited || 0, pending: !!before.get(b.dataset.answer).pending} : {})}))};
  const boxOf = new Map(boxes.map((b) => [b.dataset.answer, b]));
  const show = () => {
    for (const item of record.items) {
      const box = boxOf.get(item.key);
      if (box && box !== document.activeElement && box.value !== item.text) box.value = item.text;
    }
  };
  show();
  let state = answers.student() ? 'saving' : 'local';
  const report = () => {
    const n = answers.written(record);
    const where = {saved: 'saved on the server for your class', offline: 'saved in this browser: offline, sent when it is back',
      saving: 'saving…', error: 'saved in this browser',
      local: panel.dataset.classes ? 'saved in this browser (join your class to hand them in)' : 'saved in this browser'}[state];
    status.textContent = n ? `${n} of ${boxes.length} answered · ${where}` : 'nothing written yet';
    panel.dataset.sync = state;
    document.dispatchEvent(new CustomEvent('answerschanged', {detail: record}));
  };
  let syncing = null;
  let again = false;
  async function syncNow() {
    if (syncing) { again = true; return; }
    syncing = answers.sync(labName, record);
    const r = await syncing;
    syncing = null;
    // an edit typed while the request was out is still to send: not "saved" yet
    state = r.state === 'saved' && answers.pending(record) ? 'saving' : r.state;
    if (r.state === 'error') status.title = r.error;
    else status.removeAttribute('title');
    show();
    report();
    if (again) { again = false; syncNow(); }
  }
  let timer = null;
  sendAnswers = async () => {
    clearTimeout(timer);
    while (syncing) await syncing;  // a request already out: then what is still pending
    if (answers.pending(record)) await syncNow();
  };
  for (const box of boxes) {
    box.addEventListener('input', () => {
      const item = record.items.find((i) => i.key === box.dataset.answer);
      Object.assign(item, {text: box.value, edited: Date.now(), pending: true});
      record.saved = new Date().toISOString().slice(0, 19) + 'Z';
      answers.save(labName, record);
      if (answers.student()) state = 'saving';
      report();
      clearTimeout(timer);
      timer = setTimeout(syncNow, 600);
    });
  }
  report();
  syncNow();
  window.addEventListener('online', syncNow);
  // leaving the page (a Run button opens the run's page) within the typing pause: what is not sent yet goes
  // with a request that outlives the page; whatever it misses stays pending in this browser
  window.addEventListener('pagehide', () => answers.flush(labName, record));
  setInterval(() => { if (answers.pending(record)) syncNow(); }, 15_000);
  document.getElementById('answers-download').addEventListener('click', () => {
    answers.download(new Blob([answers.markdown(record)], {type: 'text/markdown'}), `${labName}-answers.md`);
  });
  document.getElementById('answers-clear').addEventListener('click', () => {
    if (!window.confirm('Clear every answer of this lab? (For a class: on the server too.)')) return;
    for (const item of record.items) Object.assign(item, {text: '', edited: Date.now(), pending: true});
    show();
    answers.save(labName, record);
    report();
    syncNow();
  });
}

// --- a lab step run's bundle with the student's answers (run page) -----------------------------------
const withAnswers = document.getElementById('bundle-answers');
if (withAnswers) {
  const record = answers.load(withAnswers.dataset.lab);
  const n = answers.written(record);
  const note = document.getElementById('bundle-answers-note');
  if (!n) {
    withAnswers.disabled = true;
    note.textContent = `no answers to lab ${withAnswers.dataset.lab} in this browser yet (write them on the lab page)`;
  } else {
    note.textContent = `adds answers.md: your ${n} answer${n > 1 ? 's' : ''} to lab ${withAnswers.dataset.lab}`;
  }
  withAnswers.addEventListener('click', async () => {
    const run = withAnswers.dataset.run;
    withAnswers.disabled = true;
    note.textContent = 'packing…';
    const resp = await fetch(`/api/runs/${encodeURIComponent(run)}/bundle`, {method: 'POST', credentials: 'same-origin',
      headers: {'X-CSRF-Token': csrfToken(), 'Content-Type': 'application/json'},
      body: JSON.stringify({answers: answers.markdown(answers.load(withAnswers.dataset.lab))})});
    withAnswers.disabled = false;
    if (!resp.ok) {
      let error = `error ${resp.status}`;
      try { error = (await resp.json()).error || error; } catch (e) { /* not JSON */ }
      note.className = 'error';
      note.textContent = error;
      return;
    }
    answers.download(await resp.blob(), `${run}-with-answers.zip`);
    note.textContent = `downloaded ${run}-with-answers.zip (answers.md inside, in the manifest)`;
  });
}

// --- expected values (lab page): folded until the student has written the prediction they follow ----------
// webapp.handout puts each step's expected values in a hidden block naming the answer box whose prediction
// reveals them (data-after); "show them now" reveals one at once (remembered in this browser).
const revealedKey = `fastlab-revealed:${labName}`;
function revealedByHand() {
  try { return new Set(JSON.parse(localStorage.getItem(revealedKey) || '[]')); } catch (e) { return new Set(); }
}
function showExpected(record) {
  const typed = new Set((record?.items || []).filter((i) => i.text.trim() !== '').map((i) => i.key));
  const byHand = revealedByHand();
  for (const block of document.querySelectorAll('#handout .expected')) {
    const open = byHand.has(block.dataset.item) || (block.dataset.after && typed.has(block.dataset.after));
    block.querySelector('.expected-values').hidden = !open;
    block.querySelector('.expected-lock').hidden = open;
    block.dataset.shown = open ? '1' : '0';
  }
}
if (labName) {
  for (const button of document.querySelectorAll('#handout .reveal-expected')) {
    button.addEventListener('click', () => {
      const byHand = revealedByHand();
      byHand.add(button.closest('.expected').dataset.item);
      localStorage.setItem(revealedKey, JSON.stringify([...byHand]));
      showExpected(answers.load(labName));
    });
  }
  document.addEventListener('answerschanged', (ev) => showExpected(ev.detail));
  showExpected(answers.load(labName));
}

// --- a model's calculator (lab page): the handout's Python for a terminal, computed by the app ----------
const SUPERSCRIPT = {'-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹'};
function scientific(v) {  // 2.42·10⁻³, as the handout writes it
  const [m, e] = v.toExponential(2).split('e');
  return Number(e) === 0 ? m : `${m}·10${[...String(Number(e))].map((c) => SUPERSCRIPT[c]).join('')}`;
}
const CALC_COLUMNS = [['n_flows', 'N′', (v) => String(v)], ['window_pkts', 'W* (packets)', (v) => v.toFixed(1)],
  ['drop_rate', 'p*', (v) => scientific(v)], ['queue_pkts', 'q* (packets)', (v) => v.toFixed(1)],
  ['queue_ms', 'q* (ms)', (v) => v.toFixed(1)], ['rtt_ms', 'R* (ms)', (v) => v.toFixed(1)],
  ['loop_gain', 'loop gain', (v) => v.toPrecision(3)], ['hmtg_holds', 'HMTG condition', (v) => (v ? 'holds' : 'fails')],
  ['gain_margin', 'exact gain margin', (v) => v.toPrecision(3)], ['stable', 'model says', (v) => (v ? 'stable' : 'unstable')]];
for (const form of document.querySelectorAll('form.calculator')) {
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const error = form.querySelector('.calc-error');
    const out = form.querySelector('.calc-result');
    const body = {};
    for (const input of form.querySelectorAll('input[name]')) {
      const values = input.value.split(',').map((v) => v.trim()).filter((v) => v !== '').map(Number);
      body[input.name] = input.name === 'flows' ? values : (values.length === 1 ? values[0] : input.value);
    }
    const r = await api('POST', `/api/theory/${encodeURIComponent(form.dataset.model)}`, body);
    error.textContent = r.ok ? '' : errorText(r);
    out.replaceChildren();
    if (!r.ok) return;
    const table = el('table', undefined, 'calc-table');
    const head = el('tr');
    for (const [, label] of CALC_COLUMNS) head.append(el('th', label));
    table.append(head);
    for (const row of r.data.rows) {
      const tr = el('tr');
      for (const [key, , shown] of CALC_COLUMNS) tr.append(el('td', shown(row[key]), 'num'));
      table.append(tr);
    }
    out.append(table, el('p', `C′ = ${r.data.capacity_pps.toFixed(1)} packets/s`, 'note'));
    form.dataset.computed = String(r.data.rows.length);
  });
}
