#!/usr/bin/env node
// Compiles src/worker/spawner.c, the helper that starts `--exec` commands with vfork,
// into dist/native/spawner. Part of `npm run build`, and the package's install script with
// --if-needed: an installed package keeps the binary it shipped with only if that binary
// runs here and speaks this version's protocol; otherwise it is built from the shipped
// source. Without a C compiler splitdance still works: commands then start with Node's own
// spawn, which costs about twice the CPU per task.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src/worker/spawner.c');
const out = join(root, 'dist/native/spawner');
const protocol = /#define PROTOCOL "([^"]+)"/.exec(readFileSync(source, 'utf8'))?.[1];

// Written beside the binary once it has run here and said its protocol: a worker that finds it
// still describing the same file trusts that instead of running `--check` itself (a spawn of a
// few ms at every start). Any other file at the path (rebuilt, replaced, copied) does not match.
const stamp = `${out}.checked`;
const writeStamp = () => {
  const { size, mtimeMs, ino, dev } = statSync(out);
  writeFileSync(stamp, `${JSON.stringify({ protocol, size, mtimeMs, ino, dev })}\n`);
};
const speaks = () => {
  const check = spawnSync(out, ['--check'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return check.status === 0 && check.stdout.trim() === protocol;
};
if (process.argv.includes('--if-needed') && speaks()) {
  writeStamp();
  process.exit(0);
}
rmSync(stamp, { force: true });

mkdirSync(dirname(out), { recursive: true });
const tmp = `${out}.${process.pid}.tmp`;
const cc = process.env.CC || 'cc';
const r = spawnSync(cc, ['-O2', '-std=c11', '-Wall', '-o', tmp, source], { stdio: 'inherit' });
if (r.status === 0) {
  renameSync(tmp, out); // a worker starting meanwhile sees the old binary or the new one, whole
  if (speaks()) writeStamp();
} else {
  rmSync(tmp, { force: true });
  rmSync(out, { force: true }); // a binary of another protocol must not stay behind
  console.warn(`splitdance: could not build the spawner helper with ${cc} (${r.error?.message ?? `exit ${r.status}`}); --exec commands will start with Node's spawn, which is slower.`);
}
