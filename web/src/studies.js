// #/studies and #/study/UUID — which source makes the noise: SD per cell
// with bootstrap CIs, the tests across cells, and the full report.
import { api, enc } from './api.js';
import { badge, h, render, section, table } from './dom.js';
import { duration, num, time } from './format.js';

export async function studiesPage(root) {
  const { studies } = await api('/api/studies');
  render(root, h('h1', {}, 'Studies'), studies.length
    ? table(['study', 'status', 'runs', 'started', 'duration'], studies.map((s) => [
      h('a', { href: `#/study/${s.uuid}` }, s.name), badge(s.status), s.children, time(s.start_time),
      duration(s.duration_s)]), { class: 'runs' })
    : h('p', { class: 'muted' }, 'No studies in this store: `trainscope study run STUDY.yaml` makes one.'));
}

const NS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

// SD of the metric per cell, with its bootstrap CI as a whisker.
function sdChart(cells) {
  const rows = cells.filter((c) => typeof c.sd === 'number');
  const left = 220, width = 760, row = 26;
  const hi = Math.max(1e-12, ...rows.map((c) => (typeof c.sd_bootstrap_ci?.high === 'number' ? c.sd_bootstrap_ci.high : c.sd)));
  const x = (v) => left + (v / hi) * (width - left - 70);
  const out = svg('svg', { width, height: rows.length * row + 20, class: 'bars', role: 'img' });
  rows.forEach((c, i) => {
    const y = 8 + i * row;
    out.append(svg('text', { x: left - 6, y: y + 14, 'text-anchor': 'end' }, c.cell));
    out.append(svg('rect', { x: left, y, width: Math.max(1, x(c.sd) - left), height: row - 10, fill: '#1f77b4' }));
    const ci = c.sd_bootstrap_ci;
    if (ci && typeof ci.low === 'number')
      out.append(svg('line', { x1: x(ci.low), x2: x(ci.high), y1: y + 8, y2: y + 8, stroke: '#222', 'stroke-width': 2 }));
    out.append(svg('text', { x: x(ci?.high ?? c.sd) + 6, y: y + 14 }, num(c.sd)));
  });
  return out;
}

const ci = (lo, hi) => (lo === null || lo === undefined ? '-' : `${num(lo)} – ${num(hi)}`);

export async function studyPage(root, ref) {
  const { analysis: a, status: s } = await api(`/api/studies/${enc(ref)}`);
  const cmp = a.comparison;
  render(root, 
    h('h1', {}, 'Study ', a.study.name, ' ', badge(a.study.status)),
    h('p', { class: 'facts' }, `${a.finished} of ${a.planned} runs finished · metric ${a.metric} · `,
      `energy ${num(a.energy_kwh)} kWh (${num(a.co2_kg)} kg CO₂e)`),
    section(`SD of ${a.metric} per cell (bar) with its bootstrap CI`, sdChart(a.cells)),
    section('Cells', table(['cell', 'varies', 'runs', 'mean', 'SD', 'mean 95% CI', 'SD bootstrap CI', 'CV', 'Diff %'],
      a.cells.map((c) => [c.cell, c.varies, c.runs, num(c.mean), num(c.sd), ci(c.ci_low, c.ci_high),
        ci(c.sd_bootstrap_ci?.low, c.sd_bootstrap_ci?.high), num(c.cv), num(c.diff_percent)]), { class: 'cells' })),
    cmp ? section('Across cells', table(['test', 'statistic', 'p'], [cmp.anova, cmp.kruskal_wallis, cmp.brown_forsythe]
      .filter(Boolean).map((t) => [t.test, num(t.statistic), num(t.p_value)]))) : null,
    section('Progress', table(['cell', 'planned', 'finished', 'running', 'failed', 'pending'],
      [...s.cells, { ...s.total, cell: 'total' }].map((c) => [c.cell, c.planned, c.finished, c.running, c.failed, c.pending]))),
    a.notes.length ? section('Notes', h('ul', {}, a.notes.map((n) => h('li', {}, n)))) : null,
    section('Full report', h('iframe', { class: 'report', sandbox: '', src: `/api/studies/${enc(a.study.uuid)}/report.html`, title: 'study report' })));
}
