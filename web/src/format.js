// Numbers, times and durations as the CLI shows them.
export function num(v) {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v; // "nan", "inf"
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}

export function duration(s) {
  if (typeof s !== 'number' || !isFinite(s) || s < 0) return '-';
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

// "2026-11-23T15:15:07.009Z" -> "2026-11-23 15:15:07"
export function time(iso) {
  return typeof iso === 'string' ? iso.replace('T', ' ').replace(/\.\d+Z$/, '') : '-';
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

export const TERMINAL = ['finished', 'failed', 'killed', 'stopped'];

// The curves people look for first; the rest follow by name.
const FIRST = ['train/loss', 'test/accuracy', 'test/loss', 'train/accuracy'];
export function metricOrder(a, b) {
  return ((FIRST.indexOf(a) + 1 || 99) - (FIRST.indexOf(b) + 1 || 99)) || a.localeCompare(b);
}

// Series with sections or pages of their own: resources (proc/, sys/,
// gpu*/, energy/), a data-parallel run's ranks (dist/) and probes; the rest
// are the training's own metrics.
const RESOURCE_KEY = /^(proc|sys|gpu\d*|energy)\//;
export const isTrainingMetric = (key) => !RESOURCE_KEY.test(key) && !key.startsWith('probe/') &&
  !key.startsWith('dist/');
