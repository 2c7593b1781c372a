// The dashboard: a hash router over the pages. Each navigation renders one
// page into #app; polling of the page before stops (alive() turns false).
import './style.css';
import { api } from './api.js';
import { dropCharts } from './chart.js';
import { comparePage } from './compare.js';
import { errorBox, h, render } from './dom.js';
import { probesPage } from './probes.js';
import { profilePage } from './profile.js';
import { runPage } from './run.js';
import { runsPage } from './runs.js';
import { studiesPage, studyPage } from './studies.js';

let generation = 0;

async function route() {
  const mine = ++generation;
  const alive = () => mine === generation;
  dropCharts();
  const root = document.getElementById('app');
  render(root, h('p', { class: 'muted' }, 'loading…'));
  const [, page = '', arg = ''] = decodeURIComponent(location.hash.replace(/^#/, '')).split('/');
  try {
    if (page === '' ) await runsPage(root);
    else if (page === 'run') await runPage(root, arg, alive);
    else if (page === 'compare') await comparePage(root, arg.split(',').filter(Boolean));
    else if (page === 'profile') await profilePage(root, arg);
    else if (page === 'probes') await probesPage(root, arg);
    else if (page === 'studies') await studiesPage(root);
    else if (page === 'study') await studyPage(root, arg);
    else render(root, errorBox(`no page '${page}'`));
    document.title = `trainscope · ${document.querySelector('h1')?.textContent || 'runs'}`;
  } catch (e) {
    if (alive()) render(root, errorBox(e.message));
  }
}

window.addEventListener('hashchange', route);
api('/api/info').then((i) => {
  document.getElementById('store').textContent = `${i.store} · trainscope ${i.version}`;
}).catch(() => {});
route();
