// The instructor's view of a class (webapp.classes.class_view), asked for again every few seconds while the
// class works: who is stuck, the class's measured figure against the theory in one plot, per lab and step
// every student's runs with their checkpoints, per answer box every student's answer. Everything a
// student typed is put in the page as text (textContent), never as markup.
import {api, errorText, largeFonts} from '/static/common.js';
import {flowColour} from '/static/charts.js';

const root = document.getElementById('class-view');
const classId = root.dataset.class;
const pollMs = 1000 * (Number(root.dataset.poll) || 5);

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}
function link(href, text) {
  const a = el('a', text);
  a.href = href;
  return a;
}
function scrollBox(child) {
  const box = el('div', undefined, 'scroll');
  box.append(child);
  return box;
}
// A section of the page emptied for a redraw; null (and a note in it) when there is nothing to draw.
function redraw(id, empty, note) {
  const box = document.getElementById(id);
  box.replaceChildren();
  if (!empty) return box;
  box.append(el('p', note, 'note'));
  return null;
}
const when = (iso) => (iso ? new Date(iso).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'}) : '');

function runChip(run) {
  const chip = el('span', undefined, 'run-chip');
  const cp = run.checkpoints;
  const verdict = run.status !== 'done' ? run.status : cp ? cp.status : run.pending ? 'evaluating' : 'done';
  chip.classList.add(`v-${verdict}`);
  chip.dataset.run = run.id;
  chip.append(link(`/runs/${encodeURIComponent(run.id)}`, `${when(run.created)} ${verdict}${run.short ? ' (short)' : ''}`));
  if (cp && cp.checks.length) {
    const passed = cp.checks.filter((c) => c.status === 'pass').length;
    chip.title = cp.checks.map((c) => `${c.status.toUpperCase()} ${c.name}: ${c.result}`).join('\n');
    chip.append(el('small', ` ${passed}/${cp.checks.length}`));
  }
  return chip;
}

function stuckList(view) {
  const box = redraw('stuck', !view.stuck.length, 'Nobody: no student\'s latest run of a step failed or was inconclusive.');
  if (!box) return;
  const ul = el('ul', undefined, 'stuck-list');
  for (const s of view.stuck) {
    const li = el('li');
    li.dataset.student = s.student_id;
    li.append(el('strong', s.student), ` — ${s.lab} step ${s.step}: `, link(`/runs/${encodeURIComponent(s.run)}`, s.why));
    ul.append(li);
  }
  box.append(ul);
}

function labSections(view) {
  const box = redraw('labs', !view.labs.length, 'No lab step run or answer yet.');
  if (!box) return;
  const students = view.students;
  for (const lab of view.labs) {
    const section = el('section', undefined, 'class-lab');
    section.dataset.lab = lab.lab;
    const h = el('h3');
    h.append(link(`/labs/${encodeURIComponent(lab.lab)}`, lab.number ? `Lab ${String(lab.number).padStart(2, '0')}: ${lab.title}` : lab.title));
    section.append(h);
    if (lab.steps.length) {
      const table = el('table', undefined, 'class-steps');
      const head = el('tr');
      head.append(el('th', 'student'));
      for (const step of lab.steps) head.append(el('th', `step ${step.label}${step.label !== step.id ? ` (${step.id})` : ''}`));
      table.append(head);
      for (const s of students) {
        const tr = el('tr');
        tr.dataset.student = s.id;
        tr.append(el('td', s.name, 'student-name'));
        for (const step of lab.steps) {
          const td = el('td');
          for (const run of step.by[s.id] || []) td.append(runChip(run));
          tr.append(td);
        }
        table.append(tr);
      }
      section.append(scrollBox(table));
    }
    for (const box of lab.answers) {
      const d = el('details', undefined, 'class-answers');
      d.open = true;
      d.dataset.key = box.key;
      const summary = el('summary');
      summary.append(el('strong', box.label), el('span', ` — ${Object.keys(box.by).length} of ${students.length} answered`, 'note'));
      d.append(summary, el('p', box.prompt, 'note prompt'));
      const ul = el('ul', undefined, 'answers-list');
      for (const s of students) {
        const a = box.by[s.id];
        if (!a) continue;
        const li = el('li');
        li.dataset.student = s.id;
        li.append(el('strong', `${s.name}: `), el('span', a.text, 'answer-text'), el('small', ` (${when(a.updated)})`, 'note'));
        ul.append(li);
      }
      d.append(ul);
      section.append(d);
    }
    box.append(section);
  }
}

function studentsTable(view) {
  const box = redraw('students', !view.students.length, `No student yet: they join on /class with the code ${view.class.code}.`);
  if (!box) return;
  const table = el('table', undefined, 'class-students');
  const head = el('tr');
  for (const h of ['student', 'joined', 'runs', 'answers']) head.append(el('th', h));
  table.append(head);
  for (const s of view.students) {
    const tr = el('tr');
    tr.dataset.student = s.id;
    tr.append(el('td', s.name), el('td', when(s.joined)),
      el('td', String(view.runs.filter((r) => r.student_id === s.id).length), 'num'),
      el('td', String(view.answers.filter((a) => a.student_id === s.id).length), 'num'));
    table.append(tr);
  }
  box.append(scrollBox(table));
}

// Theory (x) against measurement (y), one colour per student, the line where they agree.
function plot(view) {
  const names = [...new Set(view.plot.map((p) => p.student))].sort();
  const top = Math.max(10, ...view.plot.map((p) => Math.max(p.theory, p.measured))) * 1.1;
  const traces = names.map((name, i) => {
    const mine = view.plot.filter((p) => p.student === name);
    return {x: mine.map((p) => p.theory), y: mine.map((p) => p.measured), name, mode: 'markers', type: 'scatter',
      marker: {size: 11, color: flowColour(`f${i + 1}`), symbol: ['circle', 'square', 'diamond', 'triangle-up', 'x'][i % 5]},
      text: mine.map((p) => `${p.student}: ${p.lab ? `${p.lab} ${p.step}` : p.run}, ${p.link}`), hoverinfo: 'text+x+y'};
  });
  const size = largeFonts() ? 20 : 13;
  // on a phone (a plot under 480 px) the title goes on two lines: on one it ran past both edges (390 px)
  const narrow = document.getElementById('class-plot').clientWidth < 480;
  const runs = `(${view.plot.length} run${view.plot.length === 1 ? '' : 's'})`;
  Plotly.react('class-plot', traces, {
    title: {text: narrow ? `Backlog: measured<br>against theory ${runs}` : `Backlog: measured against theory ${runs}`},
    font: {size}, margin: {t: narrow ? 70 : 50, r: 20, b: 100, l: 70},
    xaxis: {title: {text: 'theory: Σα of the bottleneck (packets)'}, range: [0, top]},
    yaxis: {title: {text: 'measured mean backlog (packets)'}, range: [0, top]},
    shapes: [{type: 'line', x0: 0, y0: 0, x1: top, y1: top, line: {color: '#444', dash: 'dash', width: 1.5}}],
    annotations: [{x: top * 0.95, y: top * 0.95, xanchor: 'right', yanchor: 'bottom', showarrow: false,
      text: 'measured = theory', font: {color: '#444'}}],
    legend: {orientation: 'h', y: -0.32}}, {responsive: true, displaylogo: false});
}

async function refresh() {
  const r = await api('GET', `/api/classes/${encodeURIComponent(classId)}`);
  const updated = document.getElementById('class-updated');
  if (!r.ok) {
    updated.className = 'error';
    updated.textContent = errorText(r);
    return;
  }
  const view = r.data;
  const count = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
  document.getElementById('class-summary').textContent = `${count(view.students.length, 'student')} · `
    + `${count(view.runs.length, 'run')} · ${count(view.answers.length, 'answer')}`;
  stuckList(view);
  plot(view);
  labSections(view);
  studentsTable(view);
  updated.className = 'note';
  updated.textContent = `updated ${new Date().toLocaleTimeString()}${view.evaluating ? ` · evaluating ${view.evaluating} run(s)…` : ''} · live`;
  document.body.dataset.classLoaded = String(Number(document.body.dataset.classLoaded || 0) + 1);
}

refresh();
setInterval(() => { if (!document.hidden) refresh(); }, pollMs);
