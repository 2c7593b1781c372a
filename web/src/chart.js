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
  constructor(el, { title, labels, logY = false, height = 220, xLabel = 'step', wholeX = false }) {
    this.el = el;
    this.title = title;
    this.labels = labels;
    this.logY = logY;
    this.height = height;
    this.xLabel = xLabel;
    this.wholeX = wholeX; // ticks only at whole numbers (epochs)
    live.add(this);
  }

  // A new x axis: the next draw() builds the plot afresh.
  reset(xLabel, wholeX = false) {
    this.plot?.destroy();
    this.plot = null;
    this.xLabel = xLabel;
    this.wholeX = wholeX;
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
      axes: [{ label: this.xLabel, ...(this.wholeX ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] } : {}) },
        { size: 60 }],
      series: [{ label: this.xLabel }, ...this.labels.map((label, i) => ({
        label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true,
        // Sparse series (an evaluation per epoch) show their points.
        points: { show: data[i + 1].filter((v) => v !== null).length < 60 },
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

// The x axes a run's chart can switch between (format/axes.h on the
// server): each point comes with its global step (an epoch metric: the
// step its epoch ended), its fractional epoch and its seconds since start.
export const X_AXES = {
  step: { field: 'at_step', label: 'step' },
  epoch: { field: 'epochs', label: 'epoch' },
  time: { field: 'times', label: 'seconds since start' },
};

// The series of one run that share a chart (train/loss and test/loss, ...),
// kept current like MetricChart, on an x axis the chart's own selector
// switches. The container's data-keys lists its series, data-counts the
// stored points it holds of each (JSON), data-x the axis shown.
export class RunChart {
  constructor(el, uuid, { title, keys, x, hasEpochs }) {
    this.uuid = uuid;
    this.keys = keys;
    this.data = new Map(keys.map((k) => [k, { count: 0 }]));
    this.pick = h('select', { class: 'xaxis', 'aria-label': 'x axis', onchange: (e) => this.setX(e.target.value) },
      Object.entries(X_AXES).filter(([name]) => hasEpochs || name !== 'epoch')
        .map(([name, a]) => h('option', { value: name, selected: name === x }, a.label)));
    this.plotEl = h('div', {});
    el.append(this.pick, this.plotEl);
    this.el = el;
    this.x = x;
    this.chart = new Chart(this.plotEl, { title, labels: keys, xLabel: X_AXES[x].label, wholeX: this.wholeX() });
    el.dataset.key = title;
    el.dataset.keys = keys.join(' ');
    el.dataset.x = x;
    el.runChart = this; // for the browser test: what the chart holds
    this.mark();
  }

  // The run's first epoch ended: its charts may now show epochs.
  offerEpochs() {
    if (![...this.pick.options].some((o) => o.value === 'epoch'))
      this.pick.insertBefore(h('option', { value: 'epoch' }, X_AXES.epoch.label), this.pick.options[1] || null);
  }

  wholeX() {
    return this.x === 'epoch' && this.keys.every((k) => this.data.get(k).x === 'epoch');
  }

  get count() { return Math.max(0, ...[...this.data.values()].map((d) => d.count)); }

  mark() {
    this.el.dataset.counts = JSON.stringify(Object.fromEntries([...this.data].map(([k, d]) => [k, d.count])));
  }

  async fetch(key, after) {
    return api(runPath(this.uuid, 'metric'), { key, width: this.chart.width(), after });
  }

  async load() {
    await Promise.all(this.keys.map(async (k) => this.data.set(k, await this.fetch(k))));
    this.show();
  }

  // Appends the points of KEY stored since the chart last read it.
  async more(key) {
    const have = this.data.get(key);
    if (!have.values) return; // still loading: load() reads every point
    const d = await this.fetch(key, have.count);
    if (d.downsampled || have.values.length + d.values.length > 4 * this.chart.width()) {
      this.data.set(key, await this.fetch(key));
    } else {
      for (const f of ['at_step', 'epochs', 'times', 'values']) have[f].push(...d[f]);
      have.count = d.count;
    }
    this.show();
  }

  setX(x) {
    this.x = x;
    this.el.dataset.x = x;
    this.chart.reset(X_AXES[x].label, this.wholeX());
    this.show();
  }

  show() {
    const field = X_AXES[this.x].field;
    const series = this.keys.map((k) => {
      const d = this.data.get(k);
      return { steps: d[field] || [], values: d.values || [] };
    });
    if (this.chart.wholeX !== this.wholeX()) this.chart.reset(X_AXES[this.x].label, this.wholeX());
    this.chart.draw(series);
    this.mark();
  }
}

export function chartBox(extra = {}) {
  return h('div', { class: 'chart', ...extra });
}
