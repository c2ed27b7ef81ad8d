import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, sideEffects } from '../helpers/store.js';

/** The database file's bytes (SQLite may add its empty -wal/-shm companions when it reads a WAL store). */
const shaOfStore = (dir: string) => createHash('sha256').update(readFileSync(dbPathIn(dir))).digest('hex');

describe('--dry-run', () => {
  it('prints the plan and leaves the store byte-identical (or absent)', async () => {
    const p = projectWithFiles(12);
    const fresh = await runCli(['run', 'src', '--exec', 'true', '--dry-run', '--json'], { cwd: p.dir });
    expect(fresh.code, fresh.stderr).toBe(0);
    const plan = JSON.parse(fresh.stdout);
    expect(plan).toMatchObject({ dryRun: true, total: 12, inserted: 12, batchExists: false, firstKeys: ['f000.log', 'f001.log', 'f002.log', 'f003.log', 'f004.log'] });
    expect(() => readdirSync(join(p.dir, '.splitdance'))).toThrow();

    expect((await runCli(['run', 'src', '--exec', 'test {key} != f003.log', '--retries', '0'], { cwd: p.dir })).code).toBe(1);
    writeFileSync(join(p.src, 'zz-new.log'), 'new');
    const before = shaOfStore(p.dir);
    const rowsBefore = query(dbPathIn(p.dir), 'SELECT * FROM tasks ORDER BY id');
    const human = await runCli(['run', 'src', '--dry-run'], { cwd: p.dir });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/tasks +13, 1 new/);
    expect(human.stdout).toMatch(/11 already succeeded, 1 failed/);
    expect(shaOfStore(p.dir)).toBe(before);
    expect(query(dbPathIn(p.dir), 'SELECT * FROM tasks ORDER BY id')).toEqual(rowsBefore);
  });
});

describe('--sample', () => {
  it('runs the same keys on two fresh stores', async () => {
    const keysOf = async () => {
      const p = projectWithFiles(200);
      const r = await runCli(['run', 'src', '--exec', 'true', '--sample', '10%'], { cwd: p.dir });
      expect(r.code, r.stderr).toBe(0);
      return query<{ task_key: string }>(dbPathIn(p.dir), 'SELECT task_key FROM tasks ORDER BY task_key').map((t) => t.task_key);
    };
    const a = await keysOf();
    const b = await keysOf();
    expect(a).toEqual(b);
    expect(a.length).toBeGreaterThan(5);
    expect(a.length).toBeLessThan(40);
    const p = projectWithFiles(50);
    expect((await runCli(['run', 'src', '--exec', 'true', '--sample', '7'], { cwd: p.dir })).code).toBe(0);
    expect(query(dbPathIn(p.dir), 'SELECT 1 FROM tasks')).toHaveLength(7);
  });
});

describe('--rerun-changed', () => {
  it('status counts succeeded tasks whose file changed; --rerun-changed re-runs exactly those', async () => {
    const p = projectWithFiles(4);
    const env = { SIDE_EFFECT_LOG: p.log };
    expect((await runCli(['run', 'src', '--handler', handler('record')], { cwd: p.dir, env })).code).toBe(0);
    writeFileSync(join(p.src, 'f001.log'), 'changed content, longer than before\n');
    utimesSync(join(p.src, 'f002.log'), new Date(), new Date(Date.now() + 60_000));
    expect((await runCli(['run', 'src'], { cwd: p.dir, env })).code).toBe(0);
    expect(sideEffects(p.log)).toHaveLength(4);
    const s = JSON.parse((await runCli(['status', '--json'], { cwd: p.dir })).stdout);
    expect(s.changed).toBe(2);
    const r = await runCli(['run', 'src', '--rerun-changed'], { cwd: p.dir, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/re-queued 2 succeeded task/);
    expect(sideEffects(p.log).slice(4).map((e) => e.key).sort()).toEqual(['f001.log', 'f002.log']);
    expect(JSON.parse((await runCli(['status', '--json'], { cwd: p.dir })).stdout).changed).toBe(0);
  });
});

describe('cron', () => {
  it('--max-runtime 1s on a long batch exits 3 after about a second with nothing RUNNING; the next invocation finishes it', async () => {
    const p = projectWithFiles(60);
    const t0 = Date.now();
    const r = await runCli(['run', 'src', '--exec', 'sleep 0.5', '-j', '2', '--max-runtime', '1s'], { cwd: p.dir });
    const took = Date.now() - t0;
    expect(r.code).toBe(3);
    expect(took).toBeLessThan(6000);
    expect(r.stderr).toMatch(/--max-runtime reached/);
    expect(query(dbPathIn(p.dir), "SELECT 1 FROM tasks WHERE status = 'RUNNING'")).toEqual([]);
    const done = query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(60);
    // Attempts queued behind the running ones were given back unstarted, not counted.
    const given = query<{ error: string }>(dbPathIn(p.dir), "SELECT error FROM attempts WHERE outcome != 'SUCCESS'");
    for (const a of given) expect(a.error).toBe('INTERRUPTED: taken back unstarted as the run stopped; not counted');
    expect(query(dbPathIn(p.dir), 'SELECT 1 FROM tasks WHERE attempts > 0 AND status != \'SUCCESS\'')).toEqual([]);
    const next = await runCli(['run', 'src', '-j', '2'], { cwd: p.dir });
    expect(next.code, next.stderr).toBe(0);
    expect(query(dbPathIn(p.dir), "SELECT 1 FROM tasks WHERE status != 'SUCCESS'")).toEqual([]);
    expect(query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM attempts WHERE outcome = 'SUCCESS'")[0]!.n).toBe(60);
  });

  it('the README recipe: each night names the file left retrying and the one FAILED, with their errors (also --quiet); the next night runs both again', async () => {
    const p = projectWithFiles(4); // f000.log … f003.log
    writeFileSync(join(p.src, 'bad.log'), 'bad\n');
    writeFileSync(join(p.src, 'worse.log'), 'worse\n');
    const out = join(p.dir, 'converted');
    // bad.log fails every night and is retried (exit 1); worse.log fails for good at once (exit 2).
    const convert = 'echo {/} >> ../runs; grep -q worse {} && { echo "cannot read {/}" >&2; exit 2; }; grep -q bad {} && { echo "cannot convert {/}" >&2; exit 1; }; cat {} > {out}';
    const night = (name: string) =>
      runCli(['run', p.src, '--batch', name, '--exec', convert, '--output', `${out}/{rel}.json`, '--permanent-codes', '2', '--backoff', '1h', '--no-wait', '--quiet'], { cwd: p.src });
    for (const name of ['nightly-2026-12-02', 'nightly-2026-12-03']) {
      const r = await night(name);
      expect(r.code).toBe(3); // a retry is due later
      expect(r.stdout).toBe('');
      const lines = r.stderr.split('\n');
      expect(lines).toContain('FAILED worse.log after 1 attempt: exit code 2: cannot read worse.log');
      expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/^retrying bad\.log after 1 attempt, next in [^:]+: exit code 1: cannot convert bad\.log$/)]));
      expect(lines).toContain(`see them: splitdance tasks --status retrying --batch ${name}`);
      for (const l of lines.filter((x) => x.startsWith('see them'))) expect(l.length, l).toBeLessThanOrEqual(80);
      const tasks = JSON.parse((await runCli(['tasks', '--json', '--batch', name], { cwd: p.src })).stdout) as { key: string; status: string; attempts: number }[];
      expect(tasks.filter((t) => t.status !== 'SUCCESS').map((t) => [t.key, t.status, t.attempts])).toEqual([['bad.log', 'PENDING', 1], ['worse.log', 'FAILED', 1]]);
    }
    // The second night ran the two failing files again, and only them: the others were up to date.
    expect(readFileSync(join(p.dir, 'runs'), 'utf8').split('\n').slice(6).sort()).toEqual(['', 'bad.log', 'worse.log']);
  });

  it('a run that ends unfinished names its first 100 retrying tasks and counts the rest', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list'), Array.from({ length: 103 }, (_, i) => `item-${String(i).padStart(3, '0')}\n`).join(''));
    const r = await runCli(['run', '--items', 'list', '--exec', 'echo no {} >&2; exit 1', '--backoff', '1h', '--no-wait', '--quiet'], { cwd: dir });
    expect(r.code).toBe(3);
    const retrying = r.stderr.split('\n').filter((l) => l.startsWith('retrying '));
    expect(retrying).toHaveLength(100);
    expect(retrying[0]).toMatch(/^retrying item-000 after 1 attempt, next in .*: exit code 1: no item-000$/);
    expect(r.stderr.split('\n')).toContain('… and 3 more retrying tasks');
  });

  it('runs as cron would (no TTY, env -i, another cwd, absolute --db) through two nights', async () => {
    const p = projectWithFiles(30);
    const state = tempDir('sd-state-');
    const db = join(state, 'splitdance.db');
    const cronDir = tempDir('sd-home-');
    const args = ['run', p.src, '--db', db, '--batch', 'nightly-{date}', '--exec', 'sleep 0.2', '-j', '2', '--no-wait', '--quiet'];
    const env = { PATH: '/usr/bin:/bin', HOME: cronDir };
    const night1 = await runCli([...args, '--max-runtime', '1s'], { cwd: cronDir, cleanEnv: true, env });
    expect(night1.code).toBe(3);
    expect(night1.stdout).toBe('');
    expect(night1.stderr).not.toMatch(/[\u001b\r]/);
    const night2 = await runCli(args, { cwd: cronDir, cleanEnv: true, env });
    expect(night2.code, night2.stderr).toBe(0);
    expect(night2.stdout + night2.stderr).toBe(''); // --quiet: nothing for cron to mail
    expect(query<{ n: number }>(db, "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n).toBe(30);
    expect(readdirSync(cronDir)).toEqual([]); // nothing written into the cron working directory
  });
});
