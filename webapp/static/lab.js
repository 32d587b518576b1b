// Guided labs: a step's Run / Run short buttons (queue the step, open its live run page) and the
// checkpoint tables of finished lab step runs (from /api/runs/<id>/checkpoints).
import {api} from '/static/common.js';

// Measured values as the CLI prints them (4 significant digits, no trailing zeros).
const fmt = (v) => (v === null || v === undefined ? 'n/a' : typeof v === 'number' ? String(Number(v.toPrecision(4))) : String(v));

function cell(tag, text, cls) {
  const td = document.createElement(tag);
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

export async function showCheckpoints(box) {
  const r = await api('GET', `/api/runs/${encodeURIComponent(box.dataset.checkpointsRun)}/checkpoints`);
  box.replaceChildren();
  if (!r.ok) {
    box.append(cell('p', (r.data && r.data.error) || `error ${r.status}`, 'error'));
    box.dataset.loaded = 'error';
    return;
  }
  const failed = r.data.checks.filter((c) => !c.passed).length;
  box.append(cell('p', failed ? `${failed} of ${r.data.checks.length} checkpoints failed`
    : `all ${r.data.checks.length} checkpoints passed`, failed ? 'fail' : 'pass'));
  const table = document.createElement('table');
  table.className = 'checkpoint-results';
  const head = document.createElement('tr');
  for (const h of ['result', 'checkpoint', 'measured', 'expected', 'why this range']) head.append(cell('th', h));
  table.append(head);
  for (const c of r.data.checks) {
    const tr = document.createElement('tr');
    tr.className = c.passed ? 'pass' : 'fail';
    tr.dataset.checkpoint = c.name;
    tr.append(cell('td', c.passed ? 'PASS' : 'FAIL', 'verdict'), cell('td', c.name),
      cell('td', fmt(c.measured), 'num measured'), cell('td', c.expected),
      cell('td', c.tolerance + (c.note ? ` (${c.note})` : ''), 'why'));
    table.append(tr);
  }
  box.append(table);
  box.dataset.loaded = failed ? 'fail' : 'pass';
}

const lab = document.getElementById('lab')?.dataset.lab;
for (const button of document.querySelectorAll('button.run-step')) {
  button.addEventListener('click', async () => {
    const section = button.closest('.step');
    const message = section.querySelector('.run-message');
    const buttons = section.querySelectorAll('button.run-step');
    for (const b of buttons) b.disabled = true;
    message.className = 'note run-message';
    message.textContent = 'queueing…';
    const r = await api('POST', `/api/labs/${encodeURIComponent(lab)}/steps/${encodeURIComponent(section.dataset.step)}/run`,
      {short: button.dataset.short === '1'});
    if (r.status === 201) { window.location = r.data.url; return; }
    message.className = 'error run-message';
    message.textContent = (r.data && r.data.error) || `error ${r.status}`;
    for (const b of buttons) b.disabled = false;
  });
}
for (const box of document.querySelectorAll('[data-checkpoints-run]')) showCheckpoints(box);
