// Opens an HTML report in Debian's headless Chromium: fails on any console
// error or failed request, checks that tables and SVG plots rendered with a
// size, and saves a screenshot.
//   node check_report.mjs REPORT.html SCREENSHOT.png [MIN_TABLES] [MIN_SVGS] [LINES]
// LINES: the exact number of line series (unfilled paths) the plots draw.
import puppeteer from 'puppeteer-core';
import { pathToFileURL } from 'node:url';

const [report, shot, minTables = '1', minSvgs = '1', lines = ''] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const problems = [];
try {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  page.on('request', (r) => {
    if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) problems.push(`network: ${r.url()}`);
  });
  await page.setViewport({ width: 1400, height: 900 });
  await page.goto(pathToFileURL(report).href, { waitUntil: 'load' });
  const seen = await page.evaluate(() => {
    const sized = (el) => { const b = el.getBoundingClientRect(); return b.width > 50 && b.height > 50; };
    return {
      tables: [...document.querySelectorAll('table')].filter((t) => t.rows.length > 1).length,
      svgs: [...document.querySelectorAll('svg')].filter(sized).length,
      marks: document.querySelectorAll('svg circle, svg path, svg polyline, svg line').length,
      lines: [...document.querySelectorAll('svg path[fill="none"], svg polyline')]
        .filter((p) => p.getTotalLength() > 10).length,
    };
  });
  if (seen.tables < Number(minTables)) problems.push(`tables with rows: ${seen.tables} < ${minTables}`);
  if (seen.svgs < Number(minSvgs)) problems.push(`rendered SVG plots: ${seen.svgs} < ${minSvgs}`);
  if (seen.marks === 0) problems.push('the plots draw nothing');
  if (lines !== '' && seen.lines !== Number(lines)) problems.push(`line series: ${seen.lines} != ${lines}`);
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`tables ${seen.tables}, plots ${seen.svgs}, marks ${seen.marks}, lines ${seen.lines}, screenshot ${shot}`);
} finally {
  await browser.close();
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
