// #/probes/UUID — per-layer probe series (one chart per kind and stat, one
// line per layer), histograms over steps as heat maps, alerts.
import { api, enc, runPath } from './api.js';
import { Chart, chartBox } from './chart.js';
import { h, render, section, table } from './dom.js';

function groups(series) {
  const out = new Map();
  for (const s of series) {
    const name = s.stat ? `${s.kind} · ${s.stat}` : s.kind;
    if (!out.has(name)) out.set(name, []);
    out.get(name).push(s);
  }
  return out;
}

function heatmap(uuid, keys) {
  if (!keys.length) return h('p', { class: 'muted' }, 'no histograms recorded');
  const src = (k) => `${runPath(uuid, 'histogram.svg')}?key=${enc(k)}`;
  const img = h('img', { class: 'heatmap', src: src(keys[0]), alt: `histogram of ${keys[0]}` });
  const pick = h('select', { onchange: (e) => { img.src = src(e.target.value); img.alt = `histogram of ${e.target.value}`; } },
    keys.map((k) => h('option', { value: k }, k)));
  return h('div', {}, pick, h('div', {}, img));
}

export async function probesPage(root, uuid) {
  const page = await api(runPath(uuid));
  uuid = page.run.uuid;
  const p = await api(runPath(uuid, 'probes'));
  const grid = h('div', { class: 'grid' });
  render(root, 
    h('h1', {}, 'Probes of ', h('a', { href: `#/run/${uuid}` }, page.run.name || uuid.slice(0, 8))),
    section('Alerts', p.alerts.length ? table(['step', 'alert', 'source', 'message'],
      p.alerts.map((a) => [a.step, a.name, a.source, a.message]), { class: 'events' })
      : h('p', { class: 'muted' }, 'none raised')),
    section('Histograms over steps', heatmap(uuid, p.histograms)),
    section('Series per layer', grid));
  for (const [name, series] of groups(p.series)) {
    const box = chartBox({ 'data-key': name });
    grid.append(box);
    const logY = /l2|norm|ratio|max/.test(name);
    const chart = new Chart(box, { title: name, labels: series.map((s) => s.layer || s.kind), logY });
    const data = await Promise.all(series.map((s) => api(runPath(uuid, 'metric'), { key: s.key, width: chart.width() })));
    if (logY) for (const d of data) d.values = d.values.map((v) => (v > 0 ? v : null));
    chart.draw(data);
  }
}
