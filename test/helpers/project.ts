import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FIXTURES, tempDir } from './cli.js';

/** A temp working directory with a `src/` of `n` small files named f000.log, f001.log, … */
export function projectWithFiles(n: number, prefix = 'sd-'): { dir: string; src: string; log: string; keys: string[] } {
  const dir = tempDir(prefix);
  const src = join(dir, 'src');
  mkdirSync(src);
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const key = `f${String(i).padStart(3, '0')}.log`;
    writeFileSync(join(src, key), `line ${i}\n`);
    keys.push(key);
  }
  return { dir, src, log: join(dir, 'side-effects.ndjson'), keys };
}

export function writeFiles(root: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
}

/**
 * A copy of the README's demo (fixtures/jobs, handlers and logs) under `root/fixtures`, so
 * `run --job fixtures/jobs/clean-logs.json` from `root` writes its outputs (relative to the
 * job file, `../../demo-output`) under `root`, as in a fresh clone, not into the repository.
 */
export function copyDemo(root: string): string {
  for (const folder of ['jobs', 'handlers', 'logs']) cpSync(join(FIXTURES, folder), join(root, 'fixtures', folder), { recursive: true });
  return join(root, 'fixtures/jobs/clean-logs.json');
}
