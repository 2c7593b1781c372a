// #/profile/UUID — where an iteration's time goes: per-layer stacked bars
// by phase, GFLOP/s and roofline share, the top operators, the trace.
import { api, runPath } from './api.js';
import { h, render, section, table } from './dom.js';
import { num } from './format.js';

const PHASES = [['forward_us', 'forward', '#1f77b4'], ['backward_us', 'backward', '#ff7f0e'],
  ['update_us', 'update', '#2ca02c']];
const NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// One row per layer: its phases' mean µs per iteration, stacked.
function bars(layers) {
  const left = 190, width = 900, row = 22;
  const total = (l) => PHASES.reduce((s, [k]) => s + l[k], 0);
  const max = Math.max(1, ...layers.map(total));
  const scale = (width - left - 80) / max;
  const out = svg('svg', { width, height: layers.length * row + 40, class: 'bars', role: 'img' });
  layers.forEach((l, i) => {
    const y = 10 + i * row;
    out.append(svg('text', { x: left - 6, y: y + 14, 'text-anchor': 'end' }, `${l.layer} (${l.type})`));
    let x = left;
    for (const [k, name, color] of PHASES) {
      const w = l[k] * scale;
      out.append(svg('rect', { x, y, width: Math.max(0, w), height: row - 6, fill: color },
        svg('title', {}, `${l.layer} ${name}: ${num(l[k])} µs`)));
      x += w;
    }
    out.append(svg('text', { x: x + 4, y: y + 14 }, `${num(total(l))} µs`));
  });
  const ly = layers.length * row + 28;
  PHASES.forEach(([, name, color], i) => {
    out.append(svg('rect', { x: left + i * 110, y: ly - 10, width: 12, height: 12, fill: color }));
    out.append(svg('text', { x: left + i * 110 + 16, y: ly }, name));
  });
  return out;
}

function layerTable(p) {
  return table(['layer', 'type', 'forward µs', 'backward µs', 'update µs', 'GFLOP/s (fwd)', 'roofline share'],
    p.layers.map((l) => [l.layer, l.type, num(l.forward_us), num(l.backward_us), num(l.update_us),
      num(l.forward_gflops_per_s),
      p.peak_gflops > 0 && l.forward_flops > 0 ? `${(100 * l.forward_gflops_per_s / p.peak_gflops).toFixed(1)}%` : '-']),
    { class: 'layers' });
}

export async function profilePage(root, uuid) {
  const [page, p] = await Promise.all([api(runPath(uuid)), api(runPath(uuid, 'profile'))]);
  const cats = Object.entries(p.categories_us).sort((a, b) => b[1] - a[1]);
  render(root, 
    h('h1', {}, 'Profile of ', h('a', { href: `#/run/${page.run.uuid}` }, page.run.name || page.run.uuid.slice(0, 8))),
    h('p', { class: 'facts' }, `${p.profiled_iterations} profiled iterations · ${num(p.wall_us / 1000)} ms per iteration · `,
      `coverage ${(100 * p.coverage_mean).toFixed(1)}% · GEMM peak ${p.peak_gflops > 0 ? num(p.peak_gflops) + ' GFLOP/s' : 'not recorded'}`,
      p.trace_url ? [' · ', h('a', { href: p.trace_url, download: '' }, 'Download Chrome trace')] : null),
    section('Time per layer and phase (µs per iteration)', bars(p.layers)),
    section('Layers', layerTable(p)),
    section('Outside the layers', table(['category', 'µs per iteration'], cats.map(([k, v]) => [k, num(v)]))),
    p.operators.length ? section('Top operators by self time', table(['operator', 'calls', 'self µs', 'self %', 'total µs'],
      p.operators.map((o) => [o.name, o.calls, num(o.self_us), `${num(o.self_percent)}%`, num(o.total_us)]))) : null);
}
