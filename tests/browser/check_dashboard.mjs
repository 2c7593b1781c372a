// Opens every page of `trainscope serve` in Debian's headless Chromium and
// checks what a user would see; trains a run meanwhile and measures how
// soon its new points reach the open run page. Fails on any console error,
// page error, failed request or request leaving the server.
//   node check_dashboard.mjs SCENARIO.json   (written by dashboard_test.py)
import puppeteer from 'puppeteer-core';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const s = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const problems = [];
const fail = (what) => problems.push(what);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--no-first-run', '--disable-sync'],
});

// A fresh page at ROUTE (#/...) watched for errors; waits until `ready`
// (a function evaluated in the page) holds.
async function open(name, route, ready, waitUntil = 'networkidle0') {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') fail(`${name}: console: ${m.text()}`); });
  page.on('pageerror', (e) => fail(`${name}: page error: ${e.message}`));
  page.on('requestfailed', (r) => fail(`${name}: request failed: ${r.url()}`));
  page.on('request', (r) => { if (!r.url().startsWith(s.base)) fail(`${name}: left the server: ${r.url()}`); });
  await page.setViewport({ width: 1400, height: 900 });
  await page.goto(`${s.base}/${route}`, { waitUntil });
  try {
    await page.waitForFunction(ready, { timeout: 20000 });
  } catch {
    fail(`${name}: did not show its content (${ready.toString().slice(0, 120)})`);
  }
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: `${s.shots}/${name}.png`, fullPage: name !== 'run' && name !== 'compare' });
}

const text = (page) => page.evaluate(() => document.body.innerText);

async function runsTable() {
  const page = await open('runs', '#/', () => document.querySelectorAll('table.runs tbody tr').length > 0);
  const seen = await page.evaluate(() => ({
    rows: document.querySelectorAll('table.runs tbody tr').length,
    range: document.getElementById('runs-range')?.textContent,
  }));
  if (!seen.range?.endsWith(`of ${s.runs_total}`)) fail(`runs: range '${seen.range}', want 'of ${s.runs_total}'`);
  if (seen.rows !== Math.min(50, s.runs_total)) fail(`runs: ${seen.rows} rows`);
  await shot(page, 'runs');
  // Select two runs and compare them from the table.
  await page.evaluate(() => {
    const boxes = document.querySelectorAll('table.runs tbody input[type=checkbox]');
    boxes[0].click();
    document.querySelectorAll('table.runs tbody input[type=checkbox]')[1].click();
  });
  await page.click('#compare');
  await page.waitForFunction(() => location.hash.startsWith('#/compare/'), { timeout: 5000 })
    .catch(() => fail('runs: "Compare selected" did not open the compare page'));
  console.log(`runs: ${seen.rows} rows, ${seen.range}`);
  await page.close();
  await studyCollapsed();
}

// A study's runs collapse under it: its row has an expand control, its
// runs are hidden until it is used; a filter or a sort still reaches them.
async function studyCollapsed() {
  const api = async (q) => (await fetch(`${s.base}/api/runs?limit=1000&${q}`)).json();
  const children = (await api(`filter=${encodeURIComponent(`parent = '${s.study}'`)}`)).runs.map((r) => r.uuid).sort();
  const page = await open('runs-study', '#/', () => document.querySelector('table.runs button.expand'));
  const rows = () => page.evaluate((study) => ({
    study: !!document.querySelector(`tr[data-uuid="${study}"] button.expand`),
    label: document.querySelector(`tr[data-uuid="${study}"] button.expand`)?.textContent,
    children: [...document.querySelectorAll('table.runs tr.child')].map((r) => r.dataset.uuid).sort(),
    all: [...document.querySelectorAll('table.runs tbody tr')].map((r) => r.dataset.uuid),
  }), s.study);
  let seen = await rows();
  if (children.length < 2) fail(`runs-study: the study has ${children.length} runs`);
  if (!seen.study) fail('runs-study: the study row has no expand control');
  if (seen.children.length || children.some((c) => seen.all.includes(c)))
    fail(`runs-study: ${seen.children.length} of the study's runs shown before expanding`);
  await page.click(`tr[data-uuid="${s.study}"] button.expand`);
  await page.waitForFunction(() => document.querySelectorAll('table.runs tr.child').length > 0, { timeout: 5000 }).catch(() => {});
  seen = await rows();
  if (seen.children.join() !== children.join()) fail(`runs-study: expanded shows ${seen.children.length} runs, want ${children.length}`);
  const under = seen.all.indexOf(s.study);
  if (seen.all.slice(under + 1, under + 1 + children.length).sort().join() !== children.join())
    fail('runs-study: the expanded runs are not right under the study');
  // Sorted by test/accuracy, best first: the runs under the expanded study are in that order.
  for (const arrow of ['▲', '▼']) {
    await page.evaluate(() => [...document.querySelectorAll('table.runs th')]
      .find((th) => th.textContent.startsWith('test/accuracy')).click());
    await page.waitForFunction((a) => [...document.querySelectorAll('table.runs th')]
      .some((th) => th.textContent.startsWith('test/accuracy') && th.textContent.endsWith(a)), { timeout: 5000 }, arrow)
      .catch(() => fail(`runs-study: the sort arrow ${arrow} never showed`));
  }
  const acc = await page.evaluate(() => {
    const col = [...document.querySelectorAll('table.runs th')].findIndex((th) => th.textContent.startsWith('test/accuracy'));
    return [...document.querySelectorAll('table.runs tr.child')].map((r) => Number(r.cells[col].textContent));
  });
  const sorted = [...acc].sort((a, b) => b - a);
  if (acc.length !== children.length || acc.join() !== sorted.join()) fail(`runs-study: sorted runs ${acc}`);
  // A filter that only the study's SGD runs match: the study is shown (its
  // runs expanded) with exactly them.
  const sgd = (await api(`filter=${encodeURIComponent(`parent = '${s.study}' and params.optimizer.name = 'sgd'`)}`))
    .runs.map((r) => r.uuid).sort();
  await page.$eval('input.filter', (el) => {
    el.value = "params.optimizer.name = 'sgd'";
    el.dispatchEvent(new Event('change'));
  });
  await page.waitForFunction((n, u) => document.querySelectorAll('table.runs tr.child').length === n &&
    document.querySelector(`tr[data-uuid="${u}"]`)?.classList.contains('unmatched'), { timeout: 5000 }, sgd.length, s.study)
    .catch(() => {});
  seen = await rows();
  const under2 = seen.all.indexOf(s.study);
  if (!sgd.length || seen.children.join() !== sgd.join() ||
      seen.all.slice(under2 + 1, under2 + 1 + sgd.length).sort().join() !== sgd.join())
    fail(`runs-study: filtered to sgd: ${seen.children.length} runs under the study, want ${sgd.length}`);
  await page.$eval('input.filter', (el) => { el.value = ''; el.dispatchEvent(new Event('change')); });
  await page.waitForFunction((u) => document.querySelector(`tr[data-uuid="${u}"]`) &&
    document.querySelectorAll('table.runs tr.child').length > 0, { timeout: 5000 }, s.study).catch(() => {});
  await shot(page, 'runs-study');
  console.log(`runs-study: ${children.length} runs collapsed under the study, expanded in place; ` +
    `sorted by test/accuracy ${acc.join(' ')}; filtered to ${sgd.length} sgd runs under it`);
  await page.close();
}

async function runPage() {
  const page = await open('run', `#/run/${s.run}`,
    () => {
      const boxes = [...document.querySelectorAll('#metric-charts [data-keys], #bookkeeping-charts [data-keys]')];
      return boxes.length > 0 && boxes.every((c) => c.runChart?.count > 0 && c.querySelector('canvas'));
    });
  const seen = await page.evaluate(() => ({
    name: document.getElementById('run-name')?.textContent,
    charts: document.querySelectorAll('#metric-charts [data-key] canvas').length,
    loss: JSON.parse(document.querySelector('#metric-charts [data-keys~="train/loss"]')?.dataset.counts || '{}')['train/loss'],
    params: document.querySelectorAll('table.kv tbody tr').length,
    status: document.getElementById('run-status')?.textContent,
  }));
  if (!seen.name?.startsWith('seed-one')) fail(`run: name '${seen.name}'`);
  if (seen.charts < 3 || !(seen.loss > 0)) fail(`run: ${seen.charts} charts, train/loss count ${seen.loss}`);
  if (seen.params < 10) fail(`run: ${seen.params} param rows`);
  if (seen.status !== 'finished') fail(`run: status '${seen.status}'`);
  await shot(page, 'run');
  console.log(`run: ${seen.charts} metric charts, train/loss ${seen.loss} points, ${seen.params} params`);
  await checkAxes(page);
  await page.close();
}

// Where the run page puts its series: train and test loss in one chart,
// test metrics at the steps their epochs ended (from the run's own "epoch"
// series) or on an axis labelled epoch, bookkeeping apart.
async function checkAxes(page) {
  const ends = (await (await fetch(`${s.base}/api/runs/${s.run}/metric?key=epoch`)).json()).steps;
  const chart = (key) => page.evaluate((k) => {
    const box = document.querySelector(`#metric-charts [data-key="${k}"]`);
    const c = box?.runChart;
    if (!c?.chart.plot) return null;
    const d = c.chart.plot.data;
    return {
      keys: box.dataset.keys.split(' '), x: box.dataset.x,
      xLabel: box.querySelector('.u-axis:first-of-type')?.textContent || c.chart.xLabel,
      axis: c.chart.xLabel,
      series: c.keys.map((key, i) => ({ key, x: d[0].filter((_, j) => d[i + 1][j] !== null) })),
      lines: box.querySelectorAll('.u-legend .u-series').length - 1,
    };
  }, key);
  const loss = await chart('loss');
  const test = loss?.series.find((x) => x.key === 'test/loss');
  const train = loss?.series.find((x) => x.key === 'train/loss');
  if (!loss || !test || !train || loss.lines < 2) fail(`run: no chart overlaying train/loss and test/loss: ${JSON.stringify(loss?.keys)}`);
  else {
    if (ends.length < 2) fail(`run: ${ends.length} epoch ends recorded, want 2`);
    if (test.x.join() !== ends.join()) fail(`run: test/loss at steps ${test.x}, want the epoch ends ${ends}`);
    if (!(Math.max(...train.x) >= Math.max(...ends))) fail(`run: train/loss ends at ${Math.max(...train.x)}`);
    if (loss.axis !== 'step') fail(`run: loss chart on '${loss.axis}'`);
  }
  const acc = await chart('accuracy');
  const testAcc = acc?.series.find((x) => x.key === 'test/accuracy');
  if (!testAcc || !acc.keys.includes('train/accuracy') || testAcc.x.join() !== (acc.axis === 'step' ? ends : ends.map((_, i) => i + 1)).join())
    fail(`run: accuracy chart ${JSON.stringify(acc)}`);
  // Switched to epochs: test/loss at 1, 2, ...; train/loss between them.
  await page.select('#metric-charts [data-key="loss"] select.xaxis', 'epoch');
  const byEpoch = await chart('loss');
  const t = byEpoch?.series.find((x) => x.key === 'test/loss');
  if (byEpoch?.axis !== 'epoch' || t?.x.join() !== ends.map((_, i) => i + 1).join())
    fail(`run: on the epoch axis test/loss at ${t?.x} ('${byEpoch?.axis}')`);
  await page.select('#metric-charts [data-key="loss"] select.xaxis', 'time');
  const byTime = await chart('loss');
  if (byTime?.axis !== 'seconds since start' || !(Math.max(...byTime.series[0].x) > 0))
    fail(`run: the time axis: ${byTime?.axis}`);
  await page.select('#metric-charts [data-key="loss"] select.xaxis', 'step');
  const placed = await page.evaluate(() => ({
    learning: [...document.querySelectorAll('#metric-charts [data-keys]')].flatMap((b) => b.dataset.keys.split(' ')),
    books: [...document.querySelectorAll('#bookkeeping-charts [data-keys]')].flatMap((b) => b.dataset.keys.split(' ')),
  }));
  const BOOKS = ['epoch', 'epoch_time_s', 'eval_time_s', 'lr', 'train/step_ms'];
  for (const k of BOOKS) {
    if (placed.learning.includes(k)) fail(`run: bookkeeping '${k}' among the learning curves`);
    if (!placed.books.includes(k)) fail(`run: '${k}' not under Bookkeeping (${placed.books})`);
  }
  console.log(`run: loss chart ${loss?.keys.join(' + ')}; test/loss at steps ${test?.x} (epoch ends ${ends}); ` +
    `on epochs ${t?.x}; bookkeeping ${placed.books.join(', ')}`);
}

// A data-parallel run: its ranks side by side, a table row and a line in
// each chart per rank, the buckets' chart; none of dist/* among Metrics.
async function ranksPage() {
  const page = await open('ranks', `#/run/${s.ranks}`,
    () => document.querySelectorAll('table.ranks tbody tr').length > 0 &&
      [...document.querySelectorAll('#rank-charts [data-key]')].filter((c) => c.querySelector('canvas')).length >= 7);
  const seen = await page.evaluate(() => ({
    rows: [...document.querySelectorAll('table.ranks tbody tr')].map((r) => r.cells[0].textContent),
    charts: [...document.querySelectorAll('#rank-charts [data-key]')].map((c) => ({
      key: c.dataset.key, lines: c.querySelectorAll('.u-legend .u-series').length - 1,
      count: Number(c.dataset.count),
    })),
    distInMetrics: [...document.querySelectorAll('#metric-charts [data-key]')]
      .filter((c) => c.dataset.key.startsWith('dist/')).length,
    facts: document.querySelector('table.ranks')?.closest('section')?.querySelector('.facts')?.textContent,
  }));
  if (seen.rows.join(',') !== '0,1') fail(`ranks: table rows ${seen.rows}`);
  const step = seen.charts.find((c) => c.key === 'step time (ms)');
  if (!step || step.lines !== 2 || !(step.count > 0)) fail(`ranks: step chart ${JSON.stringify(step)}`);
  const buckets = seen.charts.find((c) => c.key.startsWith('all-reduce per bucket'));
  if (!buckets || buckets.lines !== 3) fail(`ranks: bucket chart ${JSON.stringify(buckets)}`);
  if (seen.distInMetrics) fail(`ranks: ${seen.distInMetrics} dist/ charts among Metrics`);
  if (!seen.facts?.startsWith('2 ranks · gloo')) fail(`ranks: facts '${seen.facts}'`);
  await shot(page, 'ranks');
  console.log(`ranks: ${seen.rows.length} ranks, ${seen.charts.length} charts; ${seen.facts}`);
  await page.close();
}

async function comparePage() {
  const page = await open('compare', `#/compare/${s.compare.join(',')}`,
    () => document.querySelector('#first-divergence') && document.querySelector('[data-key="train/loss"] canvas'));
  const seen = await page.evaluate(() => ({
    part: document.getElementById('first-divergence')?.textContent,
    legends: document.querySelectorAll('[data-key="train/loss"] .u-legend .u-series').length,
    differs: document.querySelectorAll('tr.differs').length,
  }));
  // The two runs' master seeds differ: they differ from the start, and the
  // page names the seeds (not the first fingerprint that shows it).
  if (!/differ from the start \(.*seeds\.master (\d+ vs 2|2 vs \d+)/.test(seen.part || ''))
    fail(`compare: divergence '${seen.part}'`);
  if (seen.legends !== 3) fail(`compare: ${seen.legends - 1} series in the loss chart, want 2`);
  if (seen.differs < 1) fail('compare: no differing param highlighted (seeds.master differs)');
  await shot(page, 'compare');
  console.log(`compare: ${seen.part}; ${seen.differs} differing params`);
  await page.close();
}

async function profilePage() {
  const page = await open('profile', `#/profile/${s.profile}`,
    () => document.querySelectorAll('table.layers tbody tr').length > 0);
  const seen = await page.evaluate(() => ({
    layers: document.querySelectorAll('table.layers tbody tr').length,
    bars: document.querySelectorAll('svg.bars rect').length,
    trace: !!document.querySelector('a[href$="profile_trace.json"]'),
  }));
  if (seen.layers < 4 || seen.bars < seen.layers * 3) fail(`profile: ${seen.layers} layers, ${seen.bars} bars`);
  if (!seen.trace) fail('profile: no Chrome trace link');
  await shot(page, 'profile');
  console.log(`profile: ${seen.layers} layers, ${seen.bars} bar segments, trace link`);
  await page.close();
}

async function probesPage() {
  const page = await open('probes', `#/probes/${s.probes}`,
    () => document.querySelector('.grid [data-key] canvas') && document.querySelector('img.heatmap')?.complete);
  const seen = await page.evaluate(() => ({
    charts: document.querySelectorAll('.grid [data-key] canvas').length,
    heat: document.querySelector('img.heatmap')?.naturalWidth,
    alerts: document.querySelectorAll('table.events tbody tr').length,
  }));
  if (seen.charts < 2 || !(seen.heat > 0)) fail(`probes: ${seen.charts} charts, heat map width ${seen.heat}`);
  if (seen.alerts < 1) fail('probes: the lr_too_high alert is not shown');
  await shot(page, 'probes');
  console.log(`probes: ${seen.charts} charts, heat map ${seen.heat}px, ${seen.alerts} alerts`);
  await page.close();
}

// A capability's view (src/drift) on the run page: its chart, one line per
// weight tensor, and its table; no line of the front end names it.
async function viewsSection() {
  const page = await open('views', `#/run/${s.views}`,
    () => document.querySelector('[data-view="drift"] canvas'));
  const seen = await page.evaluate(() => ({
    title: [...document.querySelectorAll('section h2')].some((e) => e.textContent === 'Distance from the initial weights'),
    series: document.querySelectorAll('[data-view="drift"] .u-legend .u-series').length,
    rows: document.querySelectorAll('[data-view="drift"] table.view-table tbody tr').length,
  }));
  // uPlot's legend: the x axis and one entry per tensor (4 weight tensors).
  if (!seen.title || seen.series !== 5 || seen.rows < 4) fail(`views: ${JSON.stringify(seen)}`);
  await shot(page, 'views');
  console.log(`views: drift drawn with ${seen.series - 1} series, ${seen.rows} table rows`);
  await page.close();
}

async function studyPages() {
  let page = await open('studies', '#/studies', () => document.querySelectorAll('table tbody tr').length > 0);
  await shot(page, 'studies');
  await page.close();
  page = await open('study', `#/study/${s.study}`, () => document.querySelectorAll('table.cells tbody tr').length > 0);
  const seen = await page.evaluate(() => ({
    cells: document.querySelectorAll('table.cells tbody tr').length,
    bars: document.querySelectorAll('svg.bars rect').length,
    report: document.querySelector('iframe.report')?.getAttribute('sandbox') === '',
  }));
  if (seen.cells !== 2 || seen.bars !== 2) fail(`study: ${seen.cells} cells, ${seen.bars} SD bars`);
  if (!seen.report) fail('study: no sandboxed report frame');
  await shot(page, 'study');
  console.log(`study: ${seen.cells} cells, SD bars ${seen.bars}`);
  await page.close();
}

// A name holding a script tag shows as text and never runs.
async function xss() {
  for (const [name, route] of [['xss-run', `#/run/${s.xss_run}`], ['xss-runs', '#/']]) {
    const page = await open(name, route, () => document.querySelector('h1') && document.body.innerText.length > 100);
    const seen = await page.evaluate((n) => ({
      shown: document.body.innerText.includes(n),
      scripts: document.scripts.length,
      ran: window.__xss === 1,
    }), s.xss_name);
    if (!seen.shown || seen.scripts !== 1 || seen.ran) fail(`${name}: ${JSON.stringify(seen)}`);
    await page.close();
  }
  console.log('xss: the name renders as text, no script ran');
}

// Trains a run and watches its page: for every point count the store
// reaches, how long until the page holds it.
async function live() {
  const get = async (path) => (await fetch(`${s.base}${path}`)).json();
  const named = async () => (await get(`/api/runs?search=${encodeURIComponent(s.live.name)}`)).runs;
  const before = new Set((await named()).map((r) => r.uuid));
  const child = spawn(s.live.argv[0], s.live.argv.slice(1), { stdio: 'ignore' });
  let exited = false;
  child.on('exit', () => { exited = true; });
  let uuid = null;
  for (let i = 0; i < 2400 && !uuid && !exited; ++i) {
    uuid = (await named()).find((r) => !before.has(r.uuid))?.uuid;
    if (!uuid) await new Promise((r) => setTimeout(r, 50));
  }
  if (!uuid) return fail('live: the training never appeared in the store');
  // A live page never goes network-idle while it polls: wait for load only.
  const page = await open('live', `#/run/${uuid}`, () => document.getElementById('run-status'), 'load');
  const storeSeen = new Map(); // count -> when the store first had it
  const pageSeen = [];         // [time, count shown]
  const tick = async () => {
    const now = Date.now();
    const l = await get(`/api/runs/${uuid}/live`);
    const m = l.metrics.find((x) => x.key === s.live.key);
    if (m && !storeSeen.has(m.count)) storeSeen.set(m.count, now);
    const shown = await page.evaluate((k) => ({
      count: Number(JSON.parse(document.querySelector(`#metric-charts [data-keys~="${k}"]`)?.dataset.counts || '{}')[k] || 0),
      status: document.getElementById('run-status')?.textContent,
    }), s.live.key);
    pageSeen.push([Date.now(), shown.count, shown.status]);
    return l.status;
  };
  while (!exited) {
    await tick();
    await new Promise((r) => setTimeout(r, 50));
  }
  // Up to 3 s more for the page to show the end: the status and every point.
  // The store's last count is re-read every tick: the final flush may land
  // after the last tick before the exit, and a target taken before this loop
  // would end it with that flush never compared.
  let status = '';
  const final = () => Math.max(...storeSeen.keys());
  for (let i = 0; i < 60 && (status !== 'finished' || pageSeen.at(-1)[1] < final()); ++i) {
    await tick();
    status = pageSeen.at(-1)[2];
    await new Promise((r) => setTimeout(r, 50));
  }
  const latencies = [];
  for (const [count, t] of storeSeen) {
    if (count === 0) continue;
    const shown = pageSeen.find(([tp, c]) => tp >= t && c >= count);
    latencies.push(shown ? shown[0] - t : Infinity);
  }
  latencies.sort((a, b) => a - b);
  const max = latencies.at(-1), median = latencies[Math.floor(latencies.length / 2)];
  console.log(`live: ${latencies.length} increments, max latency ${max} ms, median ${median} ms; final status ${status}`);
  if (latencies.length < 3) fail(`live: only ${latencies.length} increments observed`);
  // Every point the store took must reach the page while it is open; how
  // fast is printed above, not judged (no timing thresholds in tests: the
  // machine is shared, and 1181 ms was seen on a loaded CI run).
  if (!Number.isFinite(max)) {
    const missed = [...storeSeen.keys()].filter((c) => c > 0 && !pageSeen.some(([, n]) => n >= c));
    fail(`live: points the store holds never showed on the page: counts ${missed.join(', ')}; ` +
         `the page last held ${pageSeen.at(-1)[1]} of ${final()}`);
  }
  if (status !== 'finished') fail(`live: the page shows status '${status}' after the run finished`);
  await shot(page, 'live');
  await page.close();
}

try {
  await runsTable();
  await runPage();
  await ranksPage();
  await comparePage();
  await profilePage();
  await probesPage();
  await viewsSection();
  await studyPages();
  await xss();
  await live();
} finally {
  await browser.close();
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`every page rendered; screenshots in ${s.shots}`);
