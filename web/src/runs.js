// #/ — the runs table: filter, search, status, experiment, sort, paging,
// and a selection to compare. A study's runs are collapsed under it (the
// server groups them: filter, search and sort reach every run); its row
// expands them.
import { api } from './api.js';
import { badge, errorBox, h, render } from './dom.js';
import { duration, num, time } from './format.js';

const PAGE = 50;
const state = { filter: '', search: '', status: '', experiment: '', sort: '', offset: 0 };
const selected = new Set();
const expanded = new Set(); // studies whose runs are shown

function cell(col, row) {
  const v = row[col];
  if (col === 'name')
    return h('a', { href: `#/run/${row.uuid}` }, v === '' || v == null ? row.uuid.slice(0, 8) : v);
  if (col === 'uuid') return h('code', { title: v }, String(v).slice(0, 8));
  if (col === 'status') return badge(v);
  if (col.endsWith('time')) return time(v);
  if (col === 'duration') return duration(v);
  return typeof v === 'number' || v === null ? num(v) : String(v);
}

function header(col, reload) {
  const dir = state.sort === col ? ' ▲' : state.sort === `-${col}` ? ' ▼' : '';
  return h('th', {
    class: 'sortable',
    title: 'sort by this column',
    onclick: () => {
      state.sort = state.sort === col ? `-${col}` : col;
      state.offset = 0;
      reload();
    },
  }, col.replace(/^metrics\./, ''), dir);
}

function controls(data, reload) {
  const input = (key, placeholder, cls) => h('input', {
    class: cls, placeholder, value: state[key],
    onchange: (e) => { state[key] = e.target.value.trim(); state.offset = 0; reload(); },
  });
  const select = (key, options, label) => h('select', {
    onchange: (e) => { state[key] = e.target.value; state.offset = 0; reload(); },
  }, h('option', { value: '' }, label), options.map((o) =>
    h('option', { value: o, selected: state[key] === o }, o)));
  return h('div', { class: 'controls' },
    input('filter', "filter: metrics.test/accuracy > 0.8 and params.optimizer.name = 'adam'", 'filter'),
    input('search', 'search name or UUID', 'search'),
    select('status', ['running', 'finished', 'failed', 'killed', 'stopped', 'created'], 'any status'),
    select('experiment', data ? data.experiments : [], 'any experiment'));
}

function pager(data, reload) {
  const last = Math.min(data.offset + data.runs.length, data.total);
  const go = (offset) => { state.offset = offset; reload(); };
  return h('div', { class: 'pager' },
    h('button', { disabled: data.offset === 0, onclick: () => go(Math.max(0, data.offset - PAGE)) }, '‹ prev'),
    h('span', { id: 'runs-range' }, data.total ? `${data.offset + 1}–${last} of ${data.total}` : '0 of 0'),
    h('button', { disabled: last >= data.total, onclick: () => go(data.offset + PAGE) }, 'next ›'),
    h('button', {
      class: 'primary', id: 'compare', disabled: selected.size < 2,
      onclick: () => { location.hash = `#/compare/${[...selected].join(',')}`; },
    }, `Compare selected (${selected.size})`));
}

// The toggle of a study's row: how many of its runs match, shown or not.
// A study the filter left out is expanded: its matching runs are the point.
function toggle(r, reload) {
  if (!r.children?.length) return null;
  const open = expanded.has(r.uuid) || r.matched === false;
  return h('button', {
    class: 'expand', 'aria-expanded': String(open), title: open ? 'hide its runs' : 'show its runs',
    onclick: () => { open ? expanded.delete(r.uuid) : expanded.add(r.uuid); reload(true); },
  }, `${open ? '▾' : '▸'} ${r.children.length}${r.children_total > r.children.length ? ` of ${r.children_total}` : ''}`);
}

function runsTable(data, reload) {
  const cols = data.columns.filter((c) => c !== 'uuid');
  const check = (uuid) => h('input', {
    type: 'checkbox', checked: selected.has(uuid), 'aria-label': 'select',
    onchange: (e) => { e.target.checked ? selected.add(uuid) : selected.delete(uuid); reload(true); },
  });
  const row = (r, cls, first) => h('tr', { class: cls, 'data-uuid': r.uuid },
    h('td', {}, check(r.uuid)), cols.map((c, i) => h('td', {}, i === 0 ? first : null, cell(c, r))));
  const rows = data.runs.flatMap((r) => {
    const open = expanded.has(r.uuid) || r.matched === false;
    return [row(r, r.matched === false ? 'parent unmatched' : r.children?.length ? 'parent' : '', toggle(r, reload)),
      ...(open ? (r.children || []).map((c) => row(c, 'child', null)) : [])];
  });
  return h('table', { class: 'runs' },
    h('thead', {}, h('tr', {}, h('th', {}), cols.map((c) => header(c, reload)))),
    h('tbody', {}, rows));
}

export async function runsPage(root) {
  let data = null;
  const reload = async (keepData) => {
    let problem = null;
    if (!keepData) {
      try {
        data = await api('/api/runs', { ...state, limit: PAGE, nest: 'parent' });
      } catch (e) {
        problem = e.message;
      }
    }
    render(root, h('h1', {}, 'Runs'), controls(data, reload),
      problem ? errorBox(problem) : null,
      data ? pager(data, reload) : null, data ? runsTable(data, reload) : null);
  };
  await reload();
}
