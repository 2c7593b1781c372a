// #/compare/U1,U2,... — curves overlaid, params side by side, and where the
// runs part: the first differing step and the config and environment
// differences (GET /api/diff, as `trainscope diff`).
import { api, runPath } from './api.js';
import { Chart, COLORS, chartBox } from './chart.js';
import { badge, errorBox, h, render, section, table } from './dom.js';
import { isTrainingMetric, metricOrder, num } from './format.js';

const label = (r) => r.name || r.uuid.slice(0, 8);

function paramsTable(pages) {
  const keys = [...new Set(pages.flatMap((p) => Object.keys(p.params)))].sort();
  const rows = keys.map((k) => {
    const vals = pages.map((p) => p.params[k] ?? '-');
    const differs = new Set(vals).size > 1;
    return h('tr', { class: differs ? 'differs' : '' }, h('td', {}, k), vals.map((v) => h('td', {}, v)));
  });
  return h('table', { class: 'kv' },
    h('thead', {}, h('tr', {}, h('th', {}, 'param'), pages.map((p) => h('th', {}, label(p.run))))),
    h('tbody', {}, rows));
}

// Runs whose seeds differ differ from their first step, whichever
// fingerprinted step first shows it: say so, and name the seeds.
function seedsDiffer(d) {
  const seeds = d.config.filter((x) => x.group === 'seeds' || x.key.startsWith('seeds.'));
  return seeds.length ? `they differ from the start (${
    seeds.map((x) => `${x.key} ${x.a} vs ${x.b}`).join(', ')})` : null;
}

function diffSection(d, a, b) {
  const part = d.bit_identical ? 'bit-identical at every fingerprinted step'
    : seedsDiffer(d) ?? (d.first_diff_step >= 0 ? `they part at step ${d.first_diff_step}` : null)
    ?? (d.have_fingerprints
      ? 'no difference over the common steps' : 'no fingerprints recorded to compare');
  const diffs = (rows) => (rows.length ? table(['group', 'key', label(a), label(b)],
    rows.map((x) => [x.group, x.key, x.a, x.b])) : h('p', { class: 'muted' }, 'none'));
  return h('div', { class: 'diff' },
    h('h3', {}, `${label(a)} vs ${label(b)}: `, h('span', { id: 'first-divergence' }, part)),
    h('table', { class: 'kv' }, h('tbody', {}, [
      ['first differing step', d.first_diff_step >= 0 ? d.first_diff_step : '-'],
      ['common fingerprinted steps', d.common_steps],
      ['tensors differing there', d.differing_tensors.join(', ') || '-'],
      ['largest loss difference', num(d.max_loss_diff)],
      ['final accuracy', `${num(d.final_accuracy_a)} vs ${num(d.final_accuracy_b)}`],
    ].map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', {}, v))))),
    h('h4', {}, 'Config differences'), diffs(d.config),
    h('h4', {}, 'Environment differences'), diffs(d.environment));
}

async function curves(pages, grid) {
  const common = pages.map((p) => new Set(p.metrics.map((m) => m.key)))
    .reduce((a, b) => new Set([...a].filter((k) => b.has(k))));
  const keys = [...common].filter(isTrainingMetric).sort(metricOrder);
  for (const key of keys) {
    const box = chartBox({ 'data-key': key });
    grid.append(box);
    const chart = new Chart(box, { title: key, labels: pages.map((p) => label(p.run)) });
    const series = await Promise.all(pages.map((p) =>
      api(runPath(p.run.uuid, 'metric'), { key, width: chart.width() })));
    // On the global step: an epoch metric at the step its epoch ended.
    chart.draw(series.map((d) => ({ steps: d.at_step, values: d.values })));
  }
}

export async function comparePage(root, refs) {
  const pages = await Promise.all(refs.map((r) => api(runPath(r))));
  if (pages.length < 2) throw new Error('give two or more runs to compare');
  const grid = h('div', { class: 'grid' });
  const diffs = h('div', { id: 'diffs' }, h('p', { class: 'muted' }, 'comparing…'));
  render(root, 
    h('h1', {}, 'Compare ', pages.map((p, i) => h('span', { class: 'legend', style: `color:${COLORS[i % COLORS.length]}` },
      h('a', { href: `#/run/${p.run.uuid}` }, label(p.run)), ' ', badge(p.run.status)))),
    section('Where they part', diffs), section('Curves', grid), section('Params', paramsTable(pages)));
  const [a, ...rest] = pages;
  Promise.all(rest.map((b) => api('/api/diff', { a: a.run.uuid, b: b.run.uuid })
    .then((d) => diffSection(d, a.run, b.run)).catch((e) => errorBox(e.message))))
    .then((nodes) => diffs.replaceChildren(...nodes));
  await curves(pages, grid);
}
