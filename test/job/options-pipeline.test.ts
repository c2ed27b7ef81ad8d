import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, handler } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';
import { allAttempts, statusCounts, storedBatches, tasksJson } from '../helpers/json-views.js';
import { mainIn, mainInEnv } from '../helpers/in-process-cli.js';

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
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--max-failures', 'abc']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-failures expects a count or a percentage/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('a retry count too big for any store is a usage error, not an unexpected one, and creates nothing', async () => {
    const p = projectWithFiles(2);
    for (const retries of ['99999999999999999999', '1000001']) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--retries', retries]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/--retries expects a whole number from 0 to 1000000/);
      expect(r.stderr).not.toMatch(/unexpected/);
    }
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', retries: 1e20 }));
    const j = await mainIn(p.dir, ['run']);
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
      const r = await mainIn(p.dir, ['run', 'src', '--batch', 'old', ...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(query<{ user_version: number }>(path, 'PRAGMA user_version')[0]!.user_version).toBe(4);
      expect(sha(path)).toBe(before);
      expect(storeFilesIn(p.dir).filter((f) => f.endsWith('-wal') && readFileSync(join(p.dir, '.splitdance', f)).length > 0)).toEqual([]);
    }
    // And a valid run upgrades it and resumes the stored handler.
    const ok = await mainIn(p.dir, ['run', 'src', '--batch', 'old']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(await statusCounts(p.dir, ['--batch', 'old'])).toEqual({ SUCCESS: 2 });
  });
});

describe('retry-failed --run', () => {
  async function failedBatch() {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--batch', 'b', '--exec', 'test -e flag', '--retries', '0']);
    expect(r.code).toBe(1);
    const failed = async () => (await statusCounts(p.dir)).FAILED ?? 0;
    expect(await failed()).toBe(2);
    return { p, failed };
  }

  it('-j abc is exit 2 with the failed tasks left FAILED (nothing reset)', async () => {
    const { p, failed } = await failedBatch();
    const r = await mainIn(p.dir, ['retry-failed', '--run', '-j', 'abc']);
    expect(r.code).toBe(2);
    expect(await failed()).toBe(2);
  });

  it('an empty --key, --error or --cluster is exit 2, never "every task"', async () => {
    const { p, failed } = await failedBatch();
    for (const flag of ['--key', '--error', '--cluster']) {
      const r = await mainIn(p.dir, ['retry-failed', flag, '']);
      expect(r.code, flag).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`${flag} is empty`));
      expect(r.stderr).not.toMatch(/unexpected/);
      expect(await failed()).toBe(2);
    }
  });

  it('runs the batch\'s stored definition and ignores an unrelated ./splitdance.json', async () => {
    const { p } = await failedBatch();
    const jobBefore = (await storedBatches(dbPathIn(p.dir)))[0]!.job;
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'touch hijacked', retries: 9 }));
    writeFileSync(join(p.dir, 'flag'), '');
    const r = await mainIn(p.dir, ['retry-failed', '--run']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(p.dir, 'hijacked'))).toBe(false);
    expect(existsSync(join(p.src, 'hijacked'))).toBe(false);
    expect(existsSync(join(process.cwd(), 'hijacked'))).toBe(false); // nor in this process's folder
    expect((await storedBatches(dbPathIn(p.dir)))[0]!.job).toEqual(jobBefore);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 2 });
  });
});

describe('the job file holds every run option', () => {
  it('accepts lease, progressInterval, sample, rerunChanged and historyWarn, and applies them', async () => {
    const p = projectWithFiles(6);
    const job = { source: 'src', exec: 'true', lease: '1m', progressInterval: '1s', sample: 2, rerunChanged: true, historyWarn: 1 };
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify(job));
    const r = await mainIn(p.dir, ['run']);
    expect(r.code, r.stderr).toBe(0);
    expect(await tasksJson(p.dir)).toHaveLength(2); // sample: 2
    const again = await mainIn(p.dir, ['run']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/the store holds 2 attempts of history/); // historyWarn: 1
  });

  it('refuses a zero timeout or lease and a mistyped new field, naming it', async () => {
    const p = projectWithFiles(1);
    for (const [field, value] of [['lease', '0s'], ['timeout', '0ms'], ['progressInterval', 'soon'], ['sample', 'half'], ['historyWarn', -1]] as const) {
      writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', [field]: value }));
      const r = await mainIn(p.dir, ['run']);
      expect(r.code, `${field}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`field "${field}"`);
    }
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });
});

describe('the pool and the source', () => {
  it('-j 50 for one task starts one worker', async () => {
    const p = projectWithFiles(1);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '-j', '50', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const start = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'start');
    expect(start.workers).toBe(1);
    const m = await mainIn(p.dir, ['run', 'src', '--batch', 'm', '--handler', handler('ok'), '-j', '8', '--json']);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'start').workers).toBe(1);
  });

  it('keys are claimed in bytewise order of the whole key ({#} follows it)', async () => {
    const p = projectWithFiles(0);
    for (const rel of ['a/z', 'a-b', 'a.c']) {
      mkdirSync(join(p.src, rel, '..'), { recursive: true });
      writeFileSync(join(p.src, rel), rel);
    }
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'echo {#}', '-j', '1']);
    expect(r.code, r.stderr).toBe(0);
    // Each command printed its {#}, the task's sequence number.
    const seqs = (await allAttempts(p.dir)).map((a) => ({ key: a.key, seq: Number(a.outputTail) }));
    expect(seqs.sort((x, y) => x.seq - y.seq).map((t) => t.key)).toEqual(['a-b', 'a.c', 'a/z']);
  });

  it('the store\'s own files are never tasks when the source is reached through a symlink', async () => {
    const p = projectWithFiles(2);
    symlinkSync(p.src, join(p.dir, 'via'));
    for (let i = 0; i < 2; i++) {
      const r = await mainIn(p.dir, ['run', 'via', '--db', 'src/store.db', '--exec', 'true']);
      expect(r.code, r.stderr).toBe(0);
    }
    const keys = (await tasksJson(p.dir, ['--db', 'src/store.db'])).map((t) => t.key).sort();
    expect(keys).toEqual(['f000.log', 'f001.log']);
  });
});

describe('empty values are refused, never taken as "everything" or "here"', () => {
  it("--db '', --include '' and --exclude '' are exit 2; an empty SPLITDANCE_DB is unset", async () => {
    const p = projectWithFiles(2);
    for (const args of [['--db', ''], ['--include', ''], ['--exclude', ' ']]) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', ...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`${args[0]} is empty`));
    }
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', include: [''] }));
    const j = await mainIn(p.dir, ['run']);
    expect(j.code, j.stderr).toBe(2);
    expect(j.stderr).toMatch(/field "include.0": expected a non-empty glob/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
    rmSync(join(p.dir, 'splitdance.json'));
    const env = await mainInEnv(p.dir, ['run', 'src', '--exec', 'true'], { SPLITDANCE_DB: '' });
    expect(env.code, env.stderr).toBe(0);
    expect(existsSync(dbPathIn(p.dir))).toBe(true); // the default store
  });
});
