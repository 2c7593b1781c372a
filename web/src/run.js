// #/run/UUID — one run: metric curves (live while it trains), resources,
// params, tags, environment, artifacts, events.
import { api, runPath } from './api.js';
import { MetricChart, RunChart, chartBox } from './chart.js';
import { badge, errorBox, h, kvTable, render, section, table } from './dom.js';
import { bytes, duration, isTrainingMetric, metricOrder, num, time, TERMINAL } from './format.js';
import { ranksSection } from './ranks.js';
import { viewsSections } from './views.js';


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

// The run's training series by chart (format/axes.h on the server): the
// learning curves, train and test of a quantity overlaid; the bookkeeping
// series (epoch, lr, timings) apart, each on its own chart.
function chartsOf(metrics) {
  const charts = new Map();
  for (const m of metrics) {
    if (m.count < 1 || !isTrainingMetric(m.key)) continue;
    const c = charts.get(m.chart) || { title: m.chart, group: m.group, keys: [], x: new Set() };
    c.keys.push(m.key);
    c.x.add(m.x);
    charts.set(m.chart, c);
  }
  for (const c of charts.values()) c.keys.sort(metricOrder);
  const order = (a, b) => metricOrder(a.keys[0], b.keys[0]);
  const all = [...charts.values()];
  return {
    learning: all.filter((c) => c.group !== 'bookkeeping').sort(order),
    bookkeeping: all.filter((c) => c.group === 'bookkeeping').sort(order),
  };
}

export async function runPage(root, uuid, alive) {
  const page = await api(runPath(uuid));
  uuid = page.run.uuid;
  const axes = { hasEpochs: page.epoch_ends.length > 0 };
  const charts = new Map(); // series key -> its chart
  const grid = h('div', { class: 'grid', id: 'metric-charts' });
  const books = h('div', { class: 'grid', id: 'bookkeeping-charts' });
  const { learning, bookkeeping } = chartsOf(page.metrics);
  const resources = await resourcesSection(uuid).catch(() => null);
  const ranks = page.tags['dist.world_size'] ? await ranksSection(uuid) : null;
  render(root, headerOf(page),
    section('Learning curves', grid, learning.length ? null : h('p', { class: 'muted' }, 'no metrics yet')),
    section('Bookkeeping', books),
    ranks?.sec, resources?.sec, viewsSections(uuid, page.views), section('Params', kvTable(page.params)), section('Tags', kvTable(page.tags)),
    eventsSection(page), artifactsSection(page), environmentSection(uuid),
    h('details', {}, h('summary', {}, 'Config'), h('pre', { class: 'config' }, page.run.config || '(none)')));
  // A chart of step series starts on steps; one of epoch series only, on epochs.
  const addRun = (parent, c, before = null) => {
    const box = chartBox();
    parent.insertBefore(box, before);
    const x = axes.hasEpochs && !c.x.has('step') ? 'epoch' : 'step';
    const chart = new RunChart(box, uuid, { title: c.title, keys: c.keys, x, hasEpochs: axes.hasEpochs });
    for (const k of c.keys) charts.set(k, chart);
    return chart.load();
  };
  const addResource = (key) => {
    const box = chartBox();
    resources.grid.append(box);
    const c = new MetricChart(box, uuid, key);
    charts.set(key, c);
    return c.load();
  };
  await Promise.all([...learning.map((c) => addRun(grid, c)), ...bookkeeping.map((c) => addRun(books, c)),
    ranks?.load(), ...(resources ? resources.keys.map(addResource) : [])]);
  if (!TERMINAL.includes(page.run.status)) follow(uuid, charts, { grid, books, axes }, alive, addRun);
}

// While the run trains: poll its summary every 500 ms; fetch only the new
// points of keys that grew; a new key gets a chart, or joins its chart by
// reloading it; stop once the run ended and its last points are drawn.
async function follow(uuid, charts, grids, alive, addRun) {
  let retries = 0;
  while (alive()) {
    await new Promise((r) => setTimeout(r, 500));
    if (!alive()) return;
    let live;
    try {
      live = await api(runPath(uuid, 'live'));
    } catch {
      continue; // a missed poll; the next one catches up
    }
    const work = [];
    if (!grids.axes.hasEpochs && live.metrics.some((m) => m.key === 'epoch')) {
      grids.axes.hasEpochs = true; // the first epoch ended: charts may switch to epochs
      for (const c of new Set(charts.values())) if (c instanceof RunChart) c.offerEpochs();
    }
    const fresh = live.metrics.filter((m) => !charts.has(m.key) && m.count > 0 && isTrainingMetric(m.key));
    for (const m of live.metrics) {
      const c = charts.get(m.key);
      if (!c) continue;
      const held = c instanceof RunChart ? c.data.get(m.key).count : c.count;
      if (m.count > held) work.push(c instanceof RunChart ? c.more(m.key) : c.more());
    }
    if (fresh.length) {
      // New keys: a chart of their own, or the chart they share rebuilt with them.
      const byChart = new Map();
      for (const c of new Set(charts.values())) if (c instanceof RunChart) byChart.set(c.chart.title, c);
      const groups = new Map();
      for (const m of fresh) groups.set(m.chart, [...(groups.get(m.chart) || []), m]);
      for (const [title, keys] of groups) {
        const old = byChart.get(title);
        const known = old ? old.keys.map((k) => ({ key: k, chart: title, group: keys[0].group, x: old.data.get(k).x || 'step', count: 1 })) : [];
        const { learning, bookkeeping } = chartsOf([...known, ...keys]);
        const spec = learning[0] || bookkeeping[0];
        const parent = spec.group === 'bookkeeping' ? grids.books : grids.grid;
        work.push(addRun(parent, spec, old?.el));
        if (old) {
          old.chart.plot?.destroy();
          old.el.remove();
        }
      }
    }
    const done = await Promise.allSettled(work);
    // The status shows once the points it covers are drawn: "finished" never
    // sits beside a curve still missing its last points.
    showStatus(live);
    // A run that ended is followed until one poll fetched everything: a
    // failed fetch is retried (a few times) rather than leaving a gap.
    if (TERMINAL.includes(live.status) && (done.every((d) => d.status === 'fulfilled') || ++retries > 10)) return;
  }
}

function showStatus(live) {
  const status = document.getElementById('run-status');
  if (status && status.textContent !== live.status) {
    status.textContent = live.status;
    status.className = `badge ${live.status}`;
  }
  const dur = document.getElementById('run-duration');
  if (dur) dur.textContent = duration(live.duration_s);
}
