#!/usr/bin/env node
// Part of `npm run build`: compiles src/worker/spawner.c, the helper that starts `--exec`
// commands with posix_spawn. Without a C compiler splitdance still works: commands then
// start with Node's own spawn, which costs about twice the CPU per task.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/native/spawner');
mkdirSync(dirname(out), { recursive: true });
rmSync(out, { force: true });
const cc = process.env.CC || 'cc';
const r = spawnSync(cc, ['-O2', '-std=c11', '-Wall', '-o', out, join(root, 'src/worker/spawner.c')], { stdio: 'inherit' });
if (r.status !== 0) {
  console.warn(`splitdance: could not build the spawner helper with ${cc} (${r.error?.message ?? `exit ${r.status}`}); --exec commands will start with Node's spawn, which is slower.`);
}
