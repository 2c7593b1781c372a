// Bundles the dashboard: src/main.js (with uPlot and its CSS) into
// OUTDIR/app.js and OUTDIR/app.css, and copies src/index.html. CMake runs it
// at build time and compiles the three files into the binary.
//   node web/build.mjs --outdir DIR [--node-modules DIR]
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const outdir = option('--outdir');
if (!outdir) {
  console.error('build.mjs: give --outdir DIR');
  process.exit(2);
}
const nodeModules = resolve(option('--node-modules', join(here, 'node_modules')));
try {
  // esbuild comes from the node_modules given, which CMake keeps in the
  // build tree rather than beside this file.
  const { build } = createRequire(join(nodeModules, '..', 'noop.js'))('esbuild');
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: { app: join(here, 'src', 'main.js') },
    bundle: true,
    minify: true,
    target: 'es2020',
    format: 'iife',
    outdir,
    nodePaths: [nodeModules],
    logLevel: 'warning',
  });
  copyFileSync(join(here, 'src', 'index.html'), join(outdir, 'index.html'));
} catch (e) {
  console.error(`build.mjs: ${String(e.message).split('\n')[0]}`);
  process.exit(1);
}
