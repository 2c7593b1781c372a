// How docs/images/dashboard-*.png are made: serve a store holding two demo
// runs (configs/demo.yaml, seeds 1 and 2) and a small study, then run this
// from tests/browser (its node_modules hold puppeteer-core).
// README screenshots: the run page, compare, the runs table with a study
// collapsed/expanded, at 1280x860 as the earlier ones.
//   node readme_shots.mjs BASE RUN OTHER STUDY OUTDIR
import puppeteer from 'puppeteer-core';
const [base, run, other, study, out] = process.argv.slice(2);
const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
async function shot(route, ready, file, before) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`${file}: ${e.message}`));
  await page.setViewport({ width: 1280, height: 860 });
  await page.goto(`${base}/${route}`, { waitUntil: 'networkidle0' });
  await page.waitForFunction(ready, { timeout: 20000 });
  if (before) await before(page);
  await new Promise((r) => setTimeout(r, 300));
  await page.screenshot({ path: `${out}/${file}` });
  await page.close();
}
await shot(`#/run/${run}`, () => [...document.querySelectorAll('#metric-charts [data-keys]')].every((c) => c.runChart?.count > 0 && c.querySelector('canvas')) && document.querySelector('#metric-charts canvas'), 'dashboard-run.png');
await shot(`#/compare/${run},${other}`, () => document.querySelector('#first-divergence') && document.querySelector('[data-key="train/loss"] canvas'), 'dashboard-compare.png');
await shot('#/', () => document.querySelector('table.runs button.expand'), 'dashboard-runs.png', async (page) => {
  await page.click(`tr[data-uuid="${study}"] button.expand`);
});
await browser.close();
