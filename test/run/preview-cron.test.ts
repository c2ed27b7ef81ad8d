import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, tempDir } from '../helpers/cli.js';
import { mainIn, withProcessEnv } from '../helpers/in-process-cli.js';
import { allAttempts, statusCounts, tasksJson } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, sideEffects } from '../helpers/store.js';

/** The database file's bytes (SQLite may add its empty -wal/-shm companions when it reads a WAL store). */
const shaOfStore = (dir: string) => createHash('sha256').update(readFileSync(dbPathIn(dir))).digest('hex');

describe('--dry-run', () => {
  it('prints the plan and leaves the store byte-identical (or absent)', async () => {
    const p = projectWithFiles(12);
    const fresh = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--dry-run', '--json']);
    expect(fresh.code, fresh.stderr).toBe(0);
    const plan = JSON.parse(fresh.stdout);
    expect(plan).toMatchObject({ dryRun: true, total: 12, inserted: 12, batchExists: false, firstKeys: ['f000.log', 'f001.log', 'f002.log', 'f003.log', 'f004.log'] });
    expect(() => readdirSync(join(p.dir, '.splitdance'))).toThrow();

    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'test {key} != f003.log', '--retries', '0'])).code).toBe(1);
    writeFileSync(join(p.src, 'zz-new.log'), 'new');
    const before = shaOfStore(p.dir);
    const rowsBefore = query(dbPathIn(p.dir), 'SELECT * FROM tasks ORDER BY id');
    const human = await mainIn(p.dir, ['run', 'src', '--dry-run']);
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
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--sample', '10%']);
      expect(r.code, r.stderr).toBe(0);
      return (await tasksJson(p.dir)).map((t) => t.key).sort();
    };
    const a = await keysOf();
    const b = await keysOf();
    expect(a).toEqual(b);
    expect(a.length).toBeGreaterThan(5);
    expect(a.length).toBeLessThan(40);
    const p = projectWithFiles(50);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--sample', '7'])).code).toBe(0);
    expect(await tasksJson(p.dir)).toHaveLength(7);
  });
});

describe('--rerun-changed', () => {
  it('status counts succeeded tasks whose file changed; --rerun-changed re-runs exactly those', async () => {
    const p = projectWithFiles(4);
    const env = { SIDE_EFFECT_LOG: p.log }; // read by the record handler in the worker processes
    expect((await withProcessEnv(env, () => mainIn(p.dir, ['run', 'src', '--handler', handler('record')]))).code).toBe(0);
    writeFileSync(join(p.src, 'f001.log'), 'changed content, longer than before\n');
    utimesSync(join(p.src, 'f002.log'), new Date(), new Date(Date.now() + 60_000));
    expect((await withProcessEnv(env, () => mainIn(p.dir, ['run', 'src']))).code).toBe(0);
    expect(sideEffects(p.log)).toHaveLength(4);
    const s = JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout);
    expect(s.changed).toBe(2);
    const r = await withProcessEnv(env, () => mainIn(p.dir, ['run', 'src', '--rerun-changed']));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/re-queued 2 succeeded task/);
    expect(sideEffects(p.log).slice(4).map((e) => e.key).sort()).toEqual(['f001.log', 'f002.log']);
    expect(JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout).changed).toBe(0);
  });
});

describe('cron', () => {
  it('--max-runtime 1s on a long batch exits 3 after about a second with nothing RUNNING; the next invocation finishes it', async () => {
    const p = projectWithFiles(60);
    const t0 = Date.now();
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.5', '-j', '2', '--max-runtime', '1s']);
    const took = Date.now() - t0;
    expect(r.code).toBe(3);
    expect(took).toBeLessThan(6000);
    expect(r.stderr).toMatch(/--max-runtime reached/);
    const counts = await statusCounts(p.dir);
    expect(counts.RUNNING).toBeUndefined();
    const done = counts.SUCCESS ?? 0;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(60);
    // Attempts queued behind the running ones were given back unstarted, not counted.
    const given = (await allAttempts(p.dir)).filter((a) => a.outcome !== 'SUCCESS');
    for (const a of given) expect(a.error).toBe('INTERRUPTED: taken back unstarted as the run stopped; not counted');
    expect((await tasksJson(p.dir)).filter((t) => t.attempts > 0 && t.status !== 'SUCCESS')).toEqual([]);
    const next = await mainIn(p.dir, ['run', 'src', '-j', '2']);
    expect(next.code, next.stderr).toBe(0);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 60 });
    expect((await allAttempts(p.dir)).filter((a) => a.outcome === 'SUCCESS')).toHaveLength(60);
  });

  it('the README recipe: each night names the file left retrying and the one FAILED, with their errors (also --quiet); the next night runs both again', async () => {
    const p = projectWithFiles(4); // f000.log … f003.log
    writeFileSync(join(p.src, 'bad.log'), 'bad\n');
    writeFileSync(join(p.src, 'worse.log'), 'worse\n');
    const out = join(p.dir, 'converted');
    // bad.log fails every night and is retried (exit 1); worse.log fails for good at once (exit 2).
    // The tally is kept outside src/, the folder each night runs in and splits.
    const convert = `echo {/} >> ${join(p.dir, 'runs')}; grep -q worse {} && { echo "cannot read {/}" >&2; exit 2; }; grep -q bad {} && { echo "cannot convert {/}" >&2; exit 1; }; cat {} > {out}`;
    const night = (name: string) =>
      mainIn(p.src, ['run', p.src, '--batch', name, '--exec', convert, '--output', `${out}/{rel}.json`, '--permanent-codes', '2', '--backoff', '1h', '--no-wait', '--quiet']);
    for (const name of ['nightly-2026-12-02', 'nightly-2026-12-03']) {
      const r = await night(name);
      expect(r.code).toBe(3); // a retry is due later
      expect(r.stdout).toBe('');
      const lines = r.stderr.split('\n');
      expect(lines).toContain('FAILED worse.log after 1 attempt: exit code 2: cannot read worse.log');
      expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/^retrying bad\.log after 1 attempt, next in [^:]+: exit code 1: cannot convert bad\.log$/)]));
      expect(lines).toContain(`see them: splitdance tasks --status retrying --batch ${name}`);
      for (const l of lines.filter((x) => x.startsWith('see them'))) expect(l.length, l).toBeLessThanOrEqual(80);
      const tasks = JSON.parse((await mainIn(p.src, ['tasks', '--json', '--batch', name])).stdout) as { key: string; status: string; attempts: number }[];
      expect(tasks.filter((t) => t.status !== 'SUCCESS').map((t) => [t.key, t.status, t.attempts])).toEqual([['bad.log', 'PENDING', 1], ['worse.log', 'FAILED', 1]]);
    }
    // The second night ran the two failing files again, and only them: the others were up to date.
    expect(readFileSync(join(p.dir, 'runs'), 'utf8').split('\n').slice(6).sort()).toEqual(['', 'bad.log', 'worse.log']);
  });

  it('a run that ends unfinished names its first 100 retrying tasks and counts the rest', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list'), Array.from({ length: 103 }, (_, i) => `item-${String(i).padStart(3, '0')}\n`).join(''));
    const r = await mainIn(dir, ['run', '--items', 'list', '--exec', 'echo no {} >&2; exit 1', '--backoff', '1h', '--no-wait', '--quiet']);
    expect(r.code).toBe(3);
    const retrying = r.stderr.split('\n').filter((l) => l.startsWith('retrying '));
    expect(retrying).toHaveLength(100);
    expect(retrying[0]).toMatch(/^retrying item-000 after 1 attempt, next in .*: exit code 1: no item-000$/);
    expect(r.stderr.split('\n')).toContain('… and 3 more retrying tasks');
  });
});
