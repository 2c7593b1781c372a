// #/run/UUID — one run: metric curves (live while it trains), resources,
// params, tags, environment, artifacts, events.
import { api, runPath } from './api.js';
import { MetricChart, chartBox } from './chart.js';
import { badge, errorBox, h, kvTable, render, section, table } from './dom.js';
import { bytes, duration, isTrainingMetric, metricOrder, num, time, TERMINAL } from './format.js';
import { ranksSection } from './ranks.js';


function headerOf(page) {
  const r = page.run;
  const links = [
    page.has_profile && h('a', { href: `#/profile/${r.uuid}` }, 'Profile'),
    page.has_probes && h('a', { href: `#/probes/${r.uuid}` }, 'Probes'),
    page.is_study && h('a', { href: `#/study/${r.uuid}` }, 'Study report'),
    r.parent && h('a', { href: `#/study/${r.parent}` }, 'Its study'),
  ].filter(Boolean);
  return h('div', { class: 'runhead' },
    h('h1', { id: 'run-name' }, r.name || r.uuid.slice(0, 8), ' ', badge(r.status, 'run-status')),
    h('p', { class: 'facts' },
      h('code', {}, r.uuid), ` · experiment ${r.experiment} · host ${r.host} · started `,
      time(r.start_time), ' · ', h('span', { id: 'run-duration' }, duration(r.duration_s))),
    links.length ? h('p', { class: 'links' }, links) : null);
}

function environmentSection(uuid) {
  const box = h('div', {}, h('p', { class: 'muted' }, 'loading…'));
  api(runPath(uuid, 'environment')).then(({ entries }) => {
    const rows = Object.keys(entries).sort().map((k) => h('tr', {}, h('td', {}, k), h('td', {}, entries[k])));
    const filter = h('input', {
      class: 'search', placeholder: `filter ${rows.length} entries`,
      oninput: (e) => {
        const q = e.target.value.toLowerCase();
        for (const r of rows) r.hidden = q && !r.textContent.toLowerCase().includes(q);
      },
    });
    box.replaceChildren(filter, h('table', { class: 'kv' }, h('tbody', {}, rows)));
  }).catch((e) => box.replaceChildren(errorBox(e.message)));
  return h('details', {}, h('summary', {}, 'Environment manifest'), box);
}

function artifactsSection(page) {
  if (!page.artifacts.length) return section('Artifacts', h('p', { class: 'muted' }, 'none'));
  return section('Artifacts', table(['name', 'kind', 'size', 'SHA-256', 'created'],
    page.artifacts.map((a) => [h('a', { href: a.url, download: '' }, a.name), a.kind, bytes(a.size),
      h('code', { title: a.sha256 }, a.sha256.slice(0, 12)), time(a.created_time)])));
}

function eventsSection(page) {
  if (!page.events.length) return null;
  return section('Alerts and events', table(['step', 'kind', 'name', 'source', 'message'],
    page.events.map((e) => [e.step, e.kind, e.name, e.source, e.message]), { class: 'events' }));
}

async function resourcesSection(uuid) {
  const res = await api(runPath(uuid, 'resources'));
  if (!res.keys.length) return null;
  const grid = h('div', { class: 'grid' });
  const sec = section('Resources and energy', grid, h('details', {}, h('summary', {}, 'Statistics'),
    table(['series', 'n', 'mean', 'p50', 'p95', 'max'],
      res.stats.map((s) => [s.key, s.n, num(s.mean), num(s.p50), num(s.p95), num(s.max)]))));
  return { sec, grid, keys: res.keys };
}

export async function runPage(root, uuid, alive) {
  const page = await api(runPath(uuid));
  uuid = page.run.uuid;
  const charts = new Map();
  const grid = h('div', { class: 'grid', id: 'metric-charts' });
  const keys = page.metrics.filter((m) => m.count >= 1 && isTrainingMetric(m.key))
    .map((m) => m.key).sort(metricOrder);
  const resources = await resourcesSection(uuid).catch(() => null);
  const ranks = page.tags['dist.world_size'] ? await ranksSection(uuid) : null;
  render(root, headerOf(page),
    section('Metrics', grid, keys.length ? null : h('p', { class: 'muted' }, 'no metrics yet')),
    ranks?.sec, resources?.sec, section('Params', kvTable(page.params)), section('Tags', kvTable(page.tags)),
    eventsSection(page), artifactsSection(page), environmentSection(uuid),
    h('details', {}, h('summary', {}, 'Config'), h('pre', { class: 'config' }, page.run.config || '(none)')));
  const add = (parent, key) => {
    const box = chartBox();
    parent.append(box);
    const c = new MetricChart(box, uuid, key);
    charts.set(key, c);
    return c.load();
  };
  await Promise.all([...keys.map((k) => add(grid, k)), ranks?.load(),
    ...(resources ? resources.keys.map((k) => add(resources.grid, k)) : [])]);
  if (!TERMINAL.includes(page.run.status)) follow(uuid, charts, grid, alive, add);
}

// While the run trains: poll its summary every 500 ms; fetch only the new
// points of keys that grew; add charts for new keys; stop once it ended.
async function follow(uuid, charts, grid, alive, add) {
  while (alive()) {
    await new Promise((r) => setTimeout(r, 500));
    if (!alive()) return;
    let live;
    try {
      live = await api(runPath(uuid, 'live'));
    } catch {
      continue; // a missed poll; the next one catches up
    }
    const status = document.getElementById('run-status');
    if (status && status.textContent !== live.status) {
      status.textContent = live.status;
      status.className = `badge ${live.status}`;
    }
    const dur = document.getElementById('run-duration');
    if (dur) dur.textContent = duration(live.duration_s);
    const work = [];
    for (const m of live.metrics) {
      const c = charts.get(m.key);
      if (c && m.count > c.count) work.push(c.more());
      else if (!c && isTrainingMetric(m.key)) work.push(add(grid, m.key));
    }
    await Promise.allSettled(work);
    if (TERMINAL.includes(live.status)) return;
  }
}

