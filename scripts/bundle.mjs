#!/usr/bin/env node
// Bundles the compiled CLI and worker entries (dist/cli/main.js, dist/worker/child-main.js)
// into dist/bundle/, the command's own files: one file per entry plus chunks shared between
// them and the commands' lazily loaded parts (code splitting keeps each command's imports
// lazy). Node 20 resolves, reads and links each ES module apart, and a command loaded about
// 140 of them: bundled, a one-task run starts about 40 ms sooner (docs/benchmarks.md).
// Packages stay external (their own files, as installed). Part of `npm run build`, after tsc.
import { build } from 'esbuild';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outdir = join(dist, 'bundle');
rmSync(outdir, { recursive: true, force: true });
const { metafile } = await build({
  absWorkingDir: root,
  entryPoints: [join(dist, 'cli/main.js'), join(dist, 'worker/child-main.js')],
  outbase: dist,
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
  metafile: true,
});
// Which compiled modules each bundle file holds: the start-up test reads it to name what a
// command loaded (test/cli/start-up-loads.test.ts). Not shipped.
writeFileSync(join(dist, 'bundle-meta.json'), JSON.stringify(metafile));
