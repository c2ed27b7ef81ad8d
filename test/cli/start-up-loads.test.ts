/** What a command's start-up loads: only what the command needs, so a start-up gain cannot silently regress. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, runCli, tempDir } from '../helpers/cli.js';

const TRACE = join(ROOT, 'test/helpers/trace-imports.mjs');

/** The modules `splitdance ARGS` loaded in `cwd`: packages by name, and our own files under dist/. */
function loadedBy(args: string[], cwd: string): { packages: Set<string>; own: string[] } {
  const out = join(cwd, `trace-${args.join('-').replace(/\W+/g, '_')}.txt`);
  rmSync(out, { force: true });
  execFileSync(process.execPath, ['--import', TRACE, BIN, ...args], { cwd, env: { ...process.env, SPLITDANCE_TRACE_IMPORTS: out }, stdio: 'ignore' });
  const files = readFileSync(out, 'utf8').split('\n').filter(Boolean).map((url) => fileURLToPath(url));
  const packages = new Set(files.flatMap((f) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f)?.[1] ?? []));
  const own = files.filter((f) => f.startsWith(join(ROOT, 'dist'))).map((f) => relative(join(ROOT, 'dist'), f));
  return { packages, own };
}

/** What no read-only command needs: the runner, the job file's schema, the report, PostgreSQL, Prometheus. */
const NOT_FOR_READING = {
  packages: ['zod', 'pg', 'prom-client', 'cli-progress', 'tsx', 'playwright-core'],
  folders: ['run/', 'coordinator/', 'pool/', 'worker/', 'report/', 'split/', 'template/', 'store/postgres/pg-store.js', 'job/job-file.js', 'job/plan-run.js'],
};

describe('start-up loads only what the command needs', () => {
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('sd-startup-');
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'a.txt'), 'a\n');
    const r = await runCli(['run', 'src', '--exec', 'true', '--quiet'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
  });

  it('sees what it traces: `run` loads the store, the runner and the coordinator', () => {
    // Guards the tracer: a trace that saw nothing would pass every check below.
    const { packages, own } = loadedBy(['run', 'src', '--exec', 'true', '--quiet'], dir);
    expect(packages).toContain('better-sqlite3');
    expect(own).toContain(join('coordinator', 'coordinator.js'));
    expect(own).toContain(join('run', 'start-run.js'));
  });

  for (const args of [['status'], ['status', '--json'], ['tasks'], ['show', 'a.txt'], ['batches']]) {
    it(`${args.join(' ')} loads no runner, no job-file schema, no report, no PostgreSQL and no Prometheus`, () => {
      const { packages, own } = loadedBy(args, dir);
      expect([...packages].filter((p) => NOT_FOR_READING.packages.includes(p))).toEqual([]);
      expect(own.filter((f) => NOT_FOR_READING.folders.some((x) => f.startsWith(x)))).toEqual([]);
      expect(packages).toContain('better-sqlite3'); // it did read the store
    });
  }

  it('--version loads commander and the CLI shell only: no store, no command, no colours or units', () => {
    const { packages, own } = loadedBy(['--version'], dir);
    expect([...packages]).toEqual(['commander']);
    expect(own.filter((f) => f.startsWith('cli/commands/') || f.startsWith('store/sqlite/') || NOT_FOR_READING.folders.some((x) => f.startsWith(x)))).toEqual([]);
  });
});
