import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';

/**
 * `npm test` on a fresh clone with no service at all: every test file is collected (its top
 * level runs, as `npm test` runs it) with SPLITDANCE_PG_URL unset and PostgreSQL's programs,
 * Chromium, promtool, GNU parallel and strace out of PATH, and a file whose tests need them
 * skips, saying in one line how to run them.
 */
const HIDDEN = new Set(['chromium', 'promtool', 'parallel', 'strace', 'psql', 'pg_ctl', 'pg_ctlcluster', 'postgres', 'initdb', 'zsh', 'fish', 'man']);

/** A PATH with every program of this one except the hidden ones (symlinks in one folder). */
function pathWithoutServices(): string {
  const bin = join(tempDir(), 'bin');
  mkdirSync(bin);
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir || !existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (HIDDEN.has(name) || existsSync(join(bin, name))) continue;
      symlinkSync(join(dir, name), join(bin, name));
    }
  }
  return bin;
}

function freshCloneEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: pathWithoutServices() };
  for (const name of ['SPLITDANCE_PG_URL', 'SPLITDANCE_CHROMIUM', 'SPLITDANCE_TEST_RUN_DIR', 'CI', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID']) delete env[name];
  return env;
}

function vitest(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), ...args], { cwd: ROOT, env });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/** Every test file of the suite, relative to the root. */
function testFiles(dir = 'test'): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

describe('the suite on a machine without PostgreSQL, Chromium, promtool, GNU parallel or strace', () => {
  it('hides them: none of them is found on the PATH the suite gets', () => {
    const env = freshCloneEnv();
    for (const name of HIDDEN) expect(spawnSync('sh', ['-c', `command -v ${name}`], { env }).status, name).not.toBe(0);
    expect(spawnSync('sh', ['-c', 'command -v node'], { env }).status).toBe(0);
  });

  it('collects every test file without an error (vitest list)', { timeout: 300_000 }, async () => {
    const json = join(tempDir(), 'list.json');
    // --no-isolate: each file's top level still runs (and fails the listing if it throws), but
    // the modules they share load once, which makes this a fraction of the suite's collection.
    const r = await vitest(['list', '--no-isolate', `--json=${json}`], freshCloneEnv());
    expect(r.code, r.out).toBe(0);
    // A file whose every test is skipped is not listed; every other one is.
    const listed = new Set((JSON.parse(readFileSync(json, 'utf8')) as { file: string }[]).map((t) => t.file));
    expect(listed.size).toBeGreaterThan(testFiles().length / 2);
    expect(listed.has(join(ROOT, 'test/unit/claims-ledger.test.ts'))).toBe(true);
  });

  it('skips what needs a service, each file saying how to run it, and passes', { timeout: 120_000 }, async () => {
    const r = await vitest(['run', 'test/status/alert-rules.test.ts', 'test/store/pg-clock.test.ts'], freshCloneEnv());
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('skipping the alert-rule checks: no promtool; to run them, install promtool');
    expect(r.out).toContain('skipping the PostgreSQL tests: no postgres; to run them, set SPLITDANCE_PG_URL');
    expect(r.out).toMatch(/Tests\s+.*skipped/);
  });

  // Issue 41: `npm test` printed the PostgreSQL line once per file that asks (28 times).
  it('says each missing service once per run, however many files need it', { timeout: 120_000 }, async () => {
    const files = ['test/store/pg-clock.test.ts', 'test/store/postgres.test.ts', 'test/reliability/pg-restart.test.ts', 'test/coordinator/lease-expiry.test.ts'];
    const r = await vitest(['run', ...files, '-t', 'no test is named this'], freshCloneEnv());
    expect(r.code, r.out).toBe(0);
    expect(r.out.split('skipping the PostgreSQL tests: no postgres').length - 1, r.out).toBe(1);
  });
});
