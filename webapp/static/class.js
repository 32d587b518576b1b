// A class: a student joins (a code and a display name) or leaves on this browser; the instructor signs in
// with their token and creates classes. Every request goes through the JSON API (webapp.classes).
import {api, errorText} from '/static/common.js';

function onSubmit(id, action) {
  const form = document.getElementById(id);
  form?.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await action(form);
  });
}

function say(id, r, okText) {
  const out = document.getElementById(id);
  out.className = r.ok ? 'note' : 'error';
  out.textContent = r.ok ? okText : errorText(r);
}

onSubmit('join-form', async () => {
  const r = await api('POST', '/api/class/join', {code: document.getElementById('join-code').value.trim(),
    name: document.getElementById('join-name').value});
  say('join-result', r, 'joined');
  if (r.ok) window.location.reload();
});

document.getElementById('leave')?.addEventListener('click', async () => {
  if (!window.confirm('Leave the class on this browser? Your runs and answers stay with the class; '
    + 'you would join again under another name.')) return;
  const r = await api('POST', '/api/class/leave');
  say('leave-result', r, 'left');
  if (r.ok) window.location.reload();
});

onSubmit('instructor-form', async () => {
  const r = await api('POST', '/api/instructor/session', {token: document.getElementById('instructor-token').value});
  say('sign-in-result', r, 'signed in');
  if (r.ok) window.location.reload();
});

onSubmit('new-class', async () => {
  const code = document.getElementById('class-code').value.trim();
  const r = await api('POST', '/api/classes', {name: document.getElementById('class-name').value,
    ...(code ? {code} : {})});
  say('create-result', r, r.ok ? `created: join code ${r.data.code}` : '');
  if (r.ok) window.location = r.data.url;
});
