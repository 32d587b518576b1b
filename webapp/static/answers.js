// A student's answers to a lab's questions, kept in this browser (localStorage), never on the server
// unless the student asks for a run's bundle with them. One record per lab:
// {lab, title, saved, items: [{key, label, prompt, text}]} under `fastlab-answers:<lab folder>`.

const storageKey = (lab) => `fastlab-answers:${lab}`;

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
