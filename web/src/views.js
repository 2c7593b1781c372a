// The capabilities' views of a run (store/views.h on the server): each a
// chart (one line per series, when the view has a chart) and its table.
// A capability added to trainscope shows here without a line of this file.
import { api, enc, runPath } from './api.js';
import { Chart, chartBox } from './chart.js';
import { errorBox, h, section, table } from './dom.js';
import { num } from './format.js';

const MAX_ROWS = 500; // rows shown in the table; the chart draws them all

function cell(v) {
  if (v === null || v === undefined) return '-';
  return typeof v === 'number' ? num(v) : v;
}

// Rows grouped into one {steps, values} per series, in order of first appearance.
function seriesOf(view) {
  const { series, x, y, log_y: logY } = view.chart;
  const col = (name) => view.columns.indexOf(name);
  const [s, xi, yi] = [series ? col(series) : -1, col(x), col(y)];
  const out = new Map();
  for (const row of view.rows) {
    const name = s < 0 ? y : String(row[s]);
    if (!out.has(name)) out.set(name, { steps: [], values: [] });
    const v = typeof row[yi] === 'number' ? row[yi] : null;
    out.get(name).steps.push(row[xi]);
    out.get(name).values.push(logY && !(v > 0) ? null : v);
  }
  return out;
}

function viewBox(uuid, v) {
  const box = h('div', { class: 'view', 'data-view': v.name }, h('p', { class: 'muted' }, 'loading…'));
  api(runPath(uuid, `views/${enc(v.name)}`)).then((view) => {
    const shown = view.rows.slice(0, MAX_ROWS);
    const more = view.sampled || view.rows.length > MAX_ROWS
      ? h('p', { class: 'muted' }, `${Math.min(MAX_ROWS, view.rows.length)} of ${view.total_rows} rows${view.sampled ? ' (a sample: every k-th row)' : ''}; `,
        h('code', {}, `trainscope runs view ${uuid.slice(0, 8)} ${view.name} --format csv`), ' prints them all')
      : null;
    const rows = table(view.columns, shown.map((r) => r.map(cell)), { class: 'view-table' });
    if (!view.chart) return box.replaceChildren(rows, more);
    const chartEl = chartBox({ 'data-key': view.name });
    box.replaceChildren(chartEl, h('details', {}, h('summary', {}, `Table (${view.rows.length} rows)`), rows, more));
    const series = seriesOf(view);
    const chart = new Chart(chartEl, { title: view.title, labels: [...series.keys()], logY: view.chart.log_y, xLabel: view.chart.x });
    chart.draw([...series.values()]);
  }).catch((e) => box.replaceChildren(errorBox(e.message)));
  return section(v.title, box);
}

// One section per view the run holds, or nothing.
export function viewsSections(uuid, views) {
  return (views || []).map((v) => viewBox(uuid, v));
}
