import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, handler, runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

/**
 * One validated options pipeline: every flag and job-file field is parsed once, before
 * anything is written — data or schema — and `retry-failed --run` runs the batch's stored
 * definition, whatever job file lies in the current folder.
 */

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const storeFilesIn = (dir: string) => (existsSync(join(dir, '.splitdance')) ? readdirSync(join(dir, '.splitdance')) : []);

/** A store as schema version 4 wrote it (before stages): one batch, its tasks all SUCCESS. */
function olderStore(dir: string, src: string): string {
  const path = dbPathIn(dir);
  mkdirSync(join(dir, '.splitdance'), { recursive: true, mode: 0o700 });
  const db = new Database(path);
  for (const f of ['001_init.sql', '002_seen_fingerprint.sql', '003_batch_activity.sql', '004_running_index.sql']) {
    db.exec(readFileSync(join(ROOT, 'src/store/sqlite/migrations', f), 'utf8'));
  }
  db.pragma('user_version = 4');
  db.pragma('journal_mode = WAL');
  const job = { version: 1, source: src, split: { include: [], exclude: [], chunkSize: 67108864, lines: null }, handler: { kind: 'exec', template: 'true' }, retries: 3, backoffMs: 5000, backoffFactor: 5, maxBackoffMs: 3600000, jitter: 0.1, timeoutMs: null, permanentCodes: [] };
  db.prepare('INSERT INTO batches (name, source, job, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run('old', src, JSON.stringify(job), Date.now(), Date.now());
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return path;
}

describe('nothing is written before every input is validated', () => {
  it('--max-failures abc is exit 2 before the batch is enqueued (no store is created)', async () => {
    const p = projectWithFiles(3);
    const r = await runCli(['run', 'src', '--exec', 'true', '--max-failures', 'abc'], { cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-failures expects a count or a percentage/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('a retry count too big for any store is a usage error, not an unexpected one, and creates nothing', async () => {
    const p = projectWithFiles(2);
    for (const retries of ['99999999999999999999', '1000001']) {
      const r = await runCli(['run', 'src', '--exec', 'true', '--retries', retries], { cwd: p.dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/--retries expects a whole number from 0 to 1000000/);
      expect(r.stderr).not.toMatch(/unexpected/);
    }
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', retries: 1e20 }));
    const j = await runCli(['run'], { cwd: p.dir });
    expect(j.code, j.stderr).toBe(2);
    expect(j.stderr).toMatch(/field "retries"/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('a bad flag or a handler that does not load leaves an older store\'s schema and bytes as they were', async () => {
    const p = projectWithFiles(2);
    const path = olderStore(p.dir, p.src);
    const before = sha(path);
    for (const args of [
      ['-j', 'abc'],
      ['--max-failures', '5x'],
      ['--handler', handler('no-default')],
      ['--handler', join(p.dir, 'missing.mjs')],
    ]) {
      const r = await runCli(['run', 'src', '--batch', 'old', ...args], { cwd: p.dir });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(query<{ user_version: number }>(path, 'PRAGMA user_version')[0]!.user_version).toBe(4);
      expect(sha(path)).toBe(before);
      expect(storeFilesIn(p.dir).filter((f) => f.endsWith('-wal') && readFileSync(join(p.dir, '.splitdance', f)).length > 0)).toEqual([]);
    }
    // And a valid run upgrades it and resumes the stored handler.
    const ok = await runCli(['run', 'src', '--batch', 'old'], { cwd: p.dir });
    expect(ok.code, ok.stderr).toBe(0);
    expect(query<{ n: number }>(path, "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n).toBe(2);
  });
});

describe('retry-failed --run', () => {
  async function failedBatch() {
    const p = projectWithFiles(2);
    const r = await runCli(['run', 'src', '--batch', 'b', '--exec', `test -e ${join(p.dir, 'flag')}`, '--retries', '0'], { cwd: p.dir });
    expect(r.code).toBe(1);
    const failed = () => query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'FAILED'")[0]!.n;
    expect(failed()).toBe(2);
    return { p, failed };
  }

  it('-j abc is exit 2 with the failed tasks left FAILED (nothing reset)', async () => {
    const { p, failed } = await failedBatch();
    const r = await runCli(['retry-failed', '--run', '-j', 'abc'], { cwd: p.dir });
    expect(r.code).toBe(2);
    expect(failed()).toBe(2);
  });

  it('an empty --key, --error or --cluster is exit 2, never "every task"', async () => {
    const { p, failed } = await failedBatch();
    for (const flag of ['--key', '--error', '--cluster']) {
      const r = await runCli(['retry-failed', flag, ''], { cwd: p.dir });
      expect(r.code, flag).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`${flag} is empty`));
      expect(r.stderr).not.toMatch(/unexpected/);
      expect(failed()).toBe(2);
    }
  });

  it('runs the batch\'s stored definition and ignores an unrelated ./splitdance.json', async () => {
    const { p } = await failedBatch();
    const jobBefore = query<{ job: string }>(dbPathIn(p.dir), 'SELECT job FROM batches')[0]!.job;
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'touch hijacked', retries: 9 }));
    writeFileSync(join(p.dir, 'flag'), '');
    const r = await runCli(['retry-failed', '--run'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(p.dir, 'hijacked'))).toBe(false);
    expect(existsSync(join(p.src, 'hijacked'))).toBe(false);
    expect(query<{ job: string }>(dbPathIn(p.dir), 'SELECT job FROM batches')[0]!.job).toBe(jobBefore);
    expect(query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n).toBe(2);
  });
});

describe('the job file holds every run option', () => {
  it('accepts lease, progressInterval, sample, rerunChanged and historyWarn, and applies them', async () => {
    const p = projectWithFiles(6);
    const job = { source: 'src', exec: 'true', lease: '1m', progressInterval: '1s', sample: 2, rerunChanged: true, historyWarn: 1 };
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify(job));
    const r = await runCli(['run'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(query<{ n: number }>(dbPathIn(p.dir), 'SELECT count(*) AS n FROM tasks')[0]!.n).toBe(2); // sample: 2
    const again = await runCli(['run'], { cwd: p.dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/the store holds 2 attempts of history/); // historyWarn: 1
  });

  it('refuses a zero timeout or lease and a mistyped new field, naming it', async () => {
    const p = projectWithFiles(1);
    for (const [field, value] of [['lease', '0s'], ['timeout', '0ms'], ['progressInterval', 'soon'], ['sample', 'half'], ['historyWarn', -1]] as const) {
      writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', [field]: value }));
      const r = await runCli(['run'], { cwd: p.dir });
      expect(r.code, `${field}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`field "${field}"`);
    }
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });
});

describe('the pool and the source', () => {
  it('-j 50 for one task starts one worker', async () => {
    const p = projectWithFiles(1);
    const r = await runCli(['run', 'src', '--exec', 'true', '-j', '50', '--json'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    const start = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'start');
    expect(start.workers).toBe(1);
    const m = await runCli(['run', 'src', '--batch', 'm', '--handler', handler('ok'), '-j', '8', '--json'], { cwd: p.dir });
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'start').workers).toBe(1);
  });

  it('keys are claimed in bytewise order of the whole key ({#} follows it)', async () => {
    const p = projectWithFiles(0);
    for (const rel of ['a/z', 'a-b', 'a.c']) {
      mkdirSync(join(p.src, rel, '..'), { recursive: true });
      writeFileSync(join(p.src, rel), rel);
    }
    const r = await runCli(['run', 'src', '--exec', 'echo {#}', '-j', '1'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    const rows = query<{ task_key: string; seq: number }>(dbPathIn(p.dir), 'SELECT task_key, seq FROM tasks ORDER BY seq');
    expect(rows.map((t) => t.task_key)).toEqual(['a-b', 'a.c', 'a/z']);
  });

  it('the store\'s own files are never tasks when the source is reached through a symlink', async () => {
    const p = projectWithFiles(2);
    symlinkSync(p.src, join(p.dir, 'via'));
    for (let i = 0; i < 2; i++) {
      const r = await runCli(['run', 'via', '--db', 'src/store.db', '--exec', 'true'], { cwd: p.dir });
      expect(r.code, r.stderr).toBe(0);
    }
    const keys = query<{ task_key: string }>(join(p.src, 'store.db'), 'SELECT task_key FROM tasks ORDER BY task_key').map((t) => t.task_key);
    expect(keys).toEqual(['f000.log', 'f001.log']);
  });
});

describe('empty values are refused, never taken as "everything" or "here"', () => {
  it("--db '', --include '' and --exclude '' are exit 2; an empty SPLITDANCE_DB is unset", async () => {
    const p = projectWithFiles(2);
    for (const args of [['--db', ''], ['--include', ''], ['--exclude', ' ']]) {
      const r = await runCli(['run', 'src', '--exec', 'true', ...args], { cwd: p.dir });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`${args[0]} is empty`));
    }
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', include: [''] }));
    const j = await runCli(['run'], { cwd: p.dir });
    expect(j.code, j.stderr).toBe(2);
    expect(j.stderr).toMatch(/field "include.0": expected a non-empty glob/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
    rmSync(join(p.dir, 'splitdance.json'));
    const env = await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir, env: { SPLITDANCE_DB: '' } });
    expect(env.code, env.stderr).toBe(0);
    expect(existsSync(dbPathIn(p.dir))).toBe(true); // the default store
  });
});
