// Times dashboard pages in Debian's headless Chromium, from navigation start
// to the content being on screen, each page loaded afresh N times:
//   node dashboard_bench.mjs RUNS_BASE_URL LONG_BASE_URL [ROUNDS]
// RUNS_BASE_URL serves a store of 10,000 runs: time until the runs table
// shows its first page. LONG_BASE_URL serves a store whose run "million"
// has a 1M-point train/loss: time until its chart has drawn, and how many
// points reached the browser. Run by bench/dashboard_bench.sh.
import puppeteer from 'puppeteer-core';

const [runsBase, longBase, roundsArg = '7'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
         '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});

// Loads `url` in a new page and returns ms from navigation start until
// `ready()` (evaluated in the page) is true.
async function time(url, ready, extra) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  let points = 0;
  page.on('response', async (r) => {
    if (r.url().includes('/metric?')) points += (await r.json()).steps.length;
  });
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(ready, { timeout: 30000, polling: 'raf' });
  const ms = await page.evaluate(() => performance.now());
  const out = { ms, points, extra: extra ? await page.evaluate(extra) : null };
  await page.close();
  return out;
}

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const cases = [
  { label: 'runs table, first page of 10,000 runs', url: `${runsBase}/#/`,
    ready: () => document.querySelectorAll('table tbody tr').length >= 50 },
  { label: 'run page, 1M-point train/loss chart drawn', url: `${longBase}/#/run/million`,
    ready: () => { const c = document.querySelector('[data-keys~="train/loss"]');
                   return c && JSON.parse(c.dataset.counts)['train/loss'] > 0 && c.querySelector('canvas'); } },
];
for (const c of cases) { c.ms = []; await time(c.url, c.ready); }  // warm-up
for (let r = 0; r < rounds; ++r)
  for (let k = 0; k < cases.length; ++k) {
    const c = cases[(k + r) % cases.length];
    const t = await time(c.url, c.ready);
    c.ms.push(t.ms);
    c.points = t.points;
  }
await browser.close();
console.log(`${rounds} rounds, interleaved, each a fresh page load`);
for (const c of cases)
  console.log(`${c.label.padEnd(48)} ${median(c.ms).toFixed(0).padStart(6)} ms ` +
              `[${Math.min(...c.ms).toFixed(0)}..${Math.max(...c.ms).toFixed(0)}]` +
              (c.points ? `  ${c.points} points received` : ''));
