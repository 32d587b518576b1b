// Shared helpers: the JSON API (with the CSRF header) and the large-fonts toggle.
export const csrfToken = () => document.querySelector('meta[name="csrf-token"]').content;

export async function api(method, url, body) {
  const opts = {method, headers: {'X-CSRF-Token': csrfToken()}, credentials: 'same-origin'};
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(url, opts);
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  return {ok: resp.ok, status: resp.status, data};
}

// What a refused request says to a person: the words for students of a refused input (422's `message`,
// webapp.words), else the server's one line.
export const errorText = (r) => (r.data && (r.data.message || r.data.error)) || `error ${r.status}`;

export const largeFonts = () => document.body.classList.contains('large');

function applyFonts(on) {
  document.body.classList.toggle('large', on);
  const b = document.getElementById('font-toggle');
  if (b) b.textContent = on ? 'normal fonts' : 'large fonts';
  document.dispatchEvent(new CustomEvent('fontschanged', {detail: on}));
}

document.addEventListener('DOMContentLoaded', () => {
  applyFonts(localStorage.getItem('fastlab-large') === '1');
  document.getElementById('font-toggle')?.addEventListener('click', () => {
    const on = !largeFonts();
    localStorage.setItem('fastlab-large', on ? '1' : '0');
    applyFonts(on);
  });
});
if (document.readyState !== 'loading') applyFonts(localStorage.getItem('fastlab-large') === '1');
