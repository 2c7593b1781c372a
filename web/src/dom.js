// DOM building without innerHTML: every string from the API becomes a text
// node, so a run named <script>...</script> is shown, never run.

// h('a', {href: '#/', class: 'x', onclick: f, 'data-key': k}, 'text', child...)
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// A table from header names and rows of cells (strings, numbers or nodes).
export function table(headers, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

// A key/value table of an object, sorted by key.
export function kvTable(obj, empty = 'none recorded') {
  const keys = Object.keys(obj || {}).sort();
  if (!keys.length) return h('p', { class: 'muted' }, empty);
  return table(['key', 'value'], keys.map((k) => [k, display(obj[k])]), { class: 'kv' });
}

// Replaces root's content; null, undefined and false children are skipped.
export function render(root, ...children) {
  root.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

export function section(title, ...children) {
  return h('section', {}, h('h2', {}, title), ...children);
}

export function badge(status, id) {
  return h('span', { class: `badge ${status}`, id }, status);
}

export function errorBox(message) {
  return h('div', { class: 'error', role: 'alert' }, message);
}

export function display(v) {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
