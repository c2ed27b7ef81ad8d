#!/usr/bin/env node
// npm runs `prepare` after `npm ci`, before `npm pack`, and once more when `npx splitdance` in a
// clone first installs the project as its own package. Building again there took 17 s before a
// demo batch of 79 ms, so `prepare` builds only when the build is missing or older than what it
// is built from; `npm run build` always builds.
import { execSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the build reads, and what it writes last of each step (relative to the root). */
export const INPUTS = ['src', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json'];
export const OUTPUTS = ['dist/index.js', 'dist/bundle/cli/main.mjs', 'splitdance.1'];

/** The newest mtime under `path` (a file or a folder, walked), or 0 when it is absent. */
function newest(path) {
  let st;
  try {
    st = statSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), st.mtimeMs);
}

/** Whether the build in `root` is there and newer than every input. */
export function buildIsFresh(root) {
  const outputs = OUTPUTS.map((p) => newest(join(root, p)));
  if (outputs.some((t) => t === 0)) return false;
  return Math.min(...outputs) >= Math.max(...INPUTS.map((p) => newest(join(root, p))));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = dirname(dirname(fileURLToPath(import.meta.url)));
  if (buildIsFresh(root)) console.error('splitdance: the build is up to date (npm run build rebuilds)');
  else execSync('npm run build', { cwd: root, stdio: 'inherit' });
}
