#!/usr/bin/env node
// Compiles src/worker/spawner.c, the helper that starts `--exec` commands with posix_spawn,
// into dist/native/spawner. Part of `npm run build`, and the package's install script with
// --if-needed: an installed package keeps the binary it shipped with only if that binary
// runs here and speaks this version's protocol; otherwise it is built from the shipped
// source. Without a C compiler splitdance still works: commands then start with Node's own
// spawn, which costs about twice the CPU per task.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src/worker/spawner.c');
const out = join(root, 'dist/native/spawner');
const protocol = /#define PROTOCOL "([^"]+)"/.exec(readFileSync(source, 'utf8'))?.[1];

const check = spawnSync(out, ['--check'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
if (process.argv.includes('--if-needed') && check.status === 0 && check.stdout.trim() === protocol) process.exit(0);

mkdirSync(dirname(out), { recursive: true });
const tmp = `${out}.${process.pid}.tmp`;
const cc = process.env.CC || 'cc';
const r = spawnSync(cc, ['-O2', '-std=c11', '-Wall', '-o', tmp, source], { stdio: 'inherit' });
if (r.status === 0) {
  renameSync(tmp, out); // a worker starting meanwhile sees the old binary or the new one, whole
} else {
  rmSync(tmp, { force: true });
  rmSync(out, { force: true }); // a binary of another protocol must not stay behind
  console.warn(`splitdance: could not build the spawner helper with ${cc} (${r.error?.message ?? `exit ${r.status}`}); --exec commands will start with Node's spawn, which is slower.`);
}
