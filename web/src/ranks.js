// The Ranks section of a data-parallel run's page: every rank side by side,
// a table of each rank's median figures (host, address, step split into
// compute, all-reduce left after backward and wait for the slowest rank,
// CPU, memory, and its GPU's figures where it has one) and one chart per figure with a line per rank, plus each
// bucket's all-reduce. From GET /api/runs/{uuid}/ranks (dist::rank_summary).
import { api, runPath } from './api.js';
import { Chart, chartBox } from './chart.js';
import { h, section, table } from './dom.js';
import { bytes, num } from './format.js';

const TITLES = {
  step_ms: 'step time (ms)', compute_ms: 'forward + backward (ms)',
  comm_ms: 'all-reduce after backward (ms)', wait_ms: 'wait for the slowest rank (ms)',
  cpu_percent: 'CPU (100 = one core)', rss_mib: 'resident memory (MiB)',
  gpu_util_percent: 'GPU utilisation (%)', gpu_power_w: 'GPU power (W)',
  gpu_mem_used_mib: 'GPU memory in use (MiB)', gpu_energy_j: 'GPU energy since the start (J)',
};

// One chart, a line per series key (the ranks' copies of one figure).
async function overlay(grid, uuid, title, keys, labels) {
  const box = chartBox({ 'data-key': title, 'data-series': String(keys.length) });
  grid.append(box);
  const chart = new Chart(box, { title, labels });
  const width = chart.width();
  const series = await Promise.all(keys.map((key) => api(runPath(uuid, 'metric'), { key, width })));
  chart.draw(series.map((d) => ({ steps: d.steps, values: d.values })));
  box.dataset.count = String(Math.min(...series.map((d) => d.count)));
}

export async function ranksSection(uuid) {
  const r = await api(runPath(uuid, 'ranks'));
  if (!r.world_size) return null;
  const grid = h('div', { class: 'grid', id: 'rank-charts' });
  const facts = `${r.world_size} ranks · ${r.backend} · rendezvous: ${r.rendezvous} · ` +
    `${r.buckets} bucket${r.buckets === 1 ? '' : 's'} · ${bytes(r.bytes_reduced)} all-reduced per step`;
  const slow = r.slowest >= 0
    ? `Slowest rank by median step: ${r.slowest}; the fastest finishes backward ` +
      `${num(r.compute_spread_ms)} ms sooner (median) and waits that long.`
    : '';
  const rows = r.ranks.map((x) => [x.rank, x.host, x.address,
    ...r.fields.map((f) => num(x.median[f]))]);
  const sec = section('Ranks', h('p', { class: 'facts' }, facts), slow && h('p', {}, slow),
    table(['rank', 'host', 'address', ...r.fields.map((f) => `${f} (median)`)], rows,
      { class: 'ranks' }),
    grid);
  const labels = r.ranks.map((x) => `rank ${x.rank}`);
  const load = async () => {
    await Promise.all(r.fields.map((f) => overlay(grid, uuid, TITLES[f] || f,
      r.ranks.map((x) => `dist/rank${x.rank}/${f}`), labels)));
    const buckets = [...Array(r.buckets).keys()];
    if (buckets.length) {
      await overlay(grid, uuid, 'all-reduce per bucket, start to finish (ms)',
        buckets.map((b) => `dist/bucket${b}/allreduce_ms`), buckets.map((b) => `bucket ${b}`));
    }
  };
  return { sec, load };
}
