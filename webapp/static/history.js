// The runs list: filter by topology, algorithm and name/lab; tick runs to compare (a shareable
// /compare?runs=... page) or delete them (DELETE /api/runs/<id>, after a confirmation).
import {api, errorText} from '/static/common.js';

const rows = [...document.querySelectorAll('#runs tr[data-run-id]')];
const byId = (id) => document.getElementById(id);
const result = byId('history-result');

function filter() {
  const topology = byId('filter-topology').value;
  const cc = byId('filter-cc').value;
  const text = byId('filter-text').value.trim().toLowerCase();
  for (const row of rows) {
    const show = (!topology || row.dataset.topology === topology)
      && (!cc || row.dataset.ccs.split(' ').includes(cc))
      && (!text || row.dataset.text.toLowerCase().includes(text));
    row.classList.toggle('hidden', !show);
    if (!show) row.querySelector('.pick').checked = false;
  }
  update();
}

const picked = () => rows.filter((r) => r.querySelector('.pick').checked);

function update() {
  const sel = picked();
  const finished = sel.filter((r) => r.dataset.status === 'done');
  byId('compare-selected').disabled = finished.length < 2 || finished.length !== sel.length || sel.length > 8;
  byId('delete-selected').disabled = sel.length === 0;
  if (!sel.length) result.textContent = 'tick finished runs to compare or delete them';
  else if (finished.length !== sel.length) result.textContent = `${sel.length} selected: only finished (done) runs can be compared`;
  else if (sel.length > 8) result.textContent = `${sel.length} selected: compare at most 8 at once`;
  else result.textContent = `${sel.length} selected`;
}

for (const id of ['filter-topology', 'filter-cc', 'filter-text']) byId(id)?.addEventListener('input', filter);
for (const row of rows) row.querySelector('.pick').addEventListener('change', update);

byId('compare-selected')?.addEventListener('click', () => {
  window.location.href = `/compare?runs=${picked().map((r) => encodeURIComponent(r.dataset.runId)).join(',')}`;
});

byId('delete-selected')?.addEventListener('click', async () => {
  const sel = picked();
  if (!window.confirm(`Delete ${sel.length} run(s) with their traces? This cannot be undone.`)) return;
  const failed = [];
  for (const row of sel) {
    const r = await api('DELETE', `/api/runs/${encodeURIComponent(row.dataset.runId)}`);
    if (r.ok) {
      row.remove();
      rows.splice(rows.indexOf(row), 1);
    } else {
      failed.push(errorText(r));
    }
  }
  update();
  result.textContent = failed.length ? failed.join('; ') : `deleted ${sel.length} run(s)`;
});
if (byId('history-tools')) update();
document.body.dataset.ready = '1';
