// Line charts (uPlot, canvas): one or more series over steps. The server
// has already downsampled long series to the chart's width.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, runPath } from './api.js';
import { h } from './dom.js';

export const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b',
  '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

const live = new Set(); // charts on the current page, resized with the window
window.addEventListener('resize', () => {
  for (const c of live) c.plot?.setSize({ width: c.width(), height: c.height });
});
export function dropCharts() {
  for (const c of live) c.plot?.destroy();
  live.clear();
}

// Several series on one step axis: the union of their steps, gaps as null.
function align(series) {
  if (series.length === 1) return [series[0].steps, series[0].values];
  const steps = [...new Set(series.flatMap((s) => s.steps))].sort((a, b) => a - b);
  const at = new Map(steps.map((x, i) => [x, i]));
  return [steps, ...series.map((s) => {
    const col = new Array(steps.length).fill(null);
    s.steps.forEach((x, i) => { col[at.get(x)] = s.values[i]; });
    return col;
  })];
}

export class Chart {
  // el: the container (in the document); labels: one per series.
  constructor(el, { title, labels, logY = false, height = 220 }) {
    this.el = el;
    this.title = title;
    this.labels = labels;
    this.logY = logY;
    this.height = height;
    live.add(this);
  }

  width() { return Math.max(260, this.el.clientWidth - 4); }

  draw(series) {
    const data = align(series);
    if (this.plot) return this.plot.setData(data);
    this.plot = new uPlot({
      title: this.title,
      width: this.width(),
      height: this.height,
      scales: { x: { time: false }, y: this.logY ? { distr: 3 } : {} },
      axes: [{ label: 'step' }, { size: 60 }],
      series: [{ label: 'step' }, ...this.labels.map((label, i) => ({
        label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true,
        points: { show: data[0].length < 60 },
      }))],
      legend: { live: true },
    }, data, this.el);
  }
}

// One metric of one run, kept current: load() reads it downsampled to the
// chart's width; more() appends only the points stored since. The
// container's data-count is the number of stored points the chart holds.
export class MetricChart {
  constructor(el, uuid, key, opts = {}) {
    this.el = el;
    this.uuid = uuid;
    this.key = key;
    this.chart = new Chart(el, { title: key, labels: [key], ...opts });
    el.dataset.key = key;
    el.dataset.count = '0';
  }

  async load() {
    const d = await api(runPath(this.uuid, 'metric'), { key: this.key, width: this.chart.width() });
    this.steps = d.steps;
    this.values = d.values;
    this.show(d.count);
  }

  async more() {
    const width = this.chart.width();
    const d = await api(runPath(this.uuid, 'metric'), { key: this.key, width, after: this.count });
    if (d.downsampled || this.steps.length + d.steps.length > 4 * width) return this.load();
    this.steps.push(...d.steps);
    this.values.push(...d.values);
    this.show(d.count);
  }

  show(count) {
    this.count = count;
    this.chart.draw([{ steps: this.steps, values: this.values }]);
    this.el.dataset.count = String(count);
  }
}

export function chartBox(extra = {}) {
  return h('div', { class: 'chart', ...extra });
}
