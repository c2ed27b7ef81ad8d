import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, storedTasks } from '../helpers/store.js';

// SPEC §2: the schema is versioned and migrated on open (PRAGMA user_version); a store written by
// a newer version is refused, never rewritten. These tests build a store the way the first
// release wrote it (its migrations, its row shapes) and open it with this build.

const MIGRATIONS_DIR = join(ROOT, 'src/store/sqlite/migrations');
const MIGRATIONS = readdirSync(MIGRATIONS_DIR)
  .filter((f) => /^\d+_.*\.sql$/.test(f))
  .sort()
  .map((f) => ({ version: Number(f.slice(0, f.indexOf('_'))), sql: readFileSync(join(MIGRATIONS_DIR, f), 'utf8') }));
const CURRENT = Math.max(...MIGRATIONS.map((m) => m.version));

/** The default batch name of a source (its base name and a hash of its absolute path), as every release derived it. */
const derivedBatchName = (absSource: string) => `src-${createHash('sha256').update(absSource).digest('hex').slice(0, 8)}`;
const fingerprintOf = (path: string) => {
  const s = statSync(path);
  return `${s.size}:${Math.trunc(s.mtimeMs)}`;
};

interface OldTask {
  key: string;
  status: string;
  attempts: number;
  nextRunAt?: number;
  lastError?: string | null;
  lease?: { owner: string; expiresAt: number };
  /** Outcomes of its attempt rows, oldest first (null: the attempt was still running). */
  outcomes: (string | null)[];
}

/**
 * A store at schema `version` holding one batch, written row by row as release 0.1 (schema 1)
 * wrote them: the v1 job JSON, `{version, path, rel}` payloads, `size:mtime` fingerprints, owners
 * `host:pid:start`. Later schema versions' columns get what their migration would have set.
 */
function writeOldStore(dbPath: string, version: number, source: string, template: string, tasks: OldTask[]): void {
  mkdirSync(join(dbPath, '..'), { recursive: true, mode: 0o700 });
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.filter((m) => m.version <= version)) db.exec(m.sql);
  db.pragma(`user_version = ${version}`);
  const t0 = Date.now() - 60_000;
  const job = {
    version: 1,
    source,
    split: { include: [], exclude: [], chunkSize: 67108864, lines: null },
    handler: { kind: 'exec', template },
    retries: 1,
    backoffMs: 5000,
    backoffFactor: 5,
    maxBackoffMs: 3600000,
    jitter: 0.1,
    timeoutMs: null,
    permanentCodes: [],
  };
  db.prepare('INSERT INTO batches (name, source, job, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(
    derivedBatchName(source),
    source,
    JSON.stringify(job),
    t0,
    t0,
  );
  const insertTask = db.prepare(`
    INSERT INTO tasks (batch_id, task_key, stage, seq, payload, status, attempts, max_attempts, next_run_at, lease_owner,
      lease_token, lease_expires_at, worker_id, created_at, started_at, finished_at, last_error, fingerprint)
    VALUES (1, @key, '', @seq, @payload, @status, @attempts, 2, @nextRunAt, @owner, NULL, @expires, @worker, @t0, @started, @finished, @error, @fp)`);
  const insertAttempt = db.prepare(`
    INSERT INTO attempts (task_id, attempt, worker_id, host, pid, owner, started_at, ended_at, outcome, exit_code, error, duration_ms)
    VALUES (@taskId, @attempt, 'w1', 'oldhost', 4242, 'oldhost:4242:777', @started, @ended, @outcome, @exit, @error, @duration)`);
  tasks.forEach((t, i) => {
    const tried = t.attempts > 0;
    const ended = t.status === 'SUCCESS' || t.status === 'FAILED';
    const taskId = Number(
      insertTask.run({
        key: t.key,
        seq: i + 1,
        payload: JSON.stringify({ version: 1, path: join(source, t.key), rel: t.key }),
        status: t.status,
        attempts: t.attempts,
        nextRunAt: t.nextRunAt ?? 0,
        owner: t.lease?.owner ?? null,
        expires: t.lease?.expiresAt ?? null,
        worker: tried ? 'w1' : null,
        t0,
        started: tried ? t0 + 1000 : null,
        finished: ended ? t0 + 2000 : null,
        error: t.lastError ?? null,
        fp: fingerprintOf(join(source, t.key)),
      }).lastInsertRowid,
    );
    t.outcomes.forEach((outcome, k) => {
      const token = insertAttempt.run({
        taskId,
        attempt: k + 1,
        started: t0 + 1000 + k * 10,
        ended: outcome === null ? null : t0 + 1005 + k * 10,
        outcome,
        exit: outcome === null ? null : outcome === 'SUCCESS' ? 0 : 1,
        error: outcome === 'FAILED' ? 'exit code 1' : null,
        duration: outcome === null ? null : 5,
      }).lastInsertRowid;
      if (outcome === null) db.prepare('UPDATE tasks SET lease_token = ? WHERE id = ?').run(token, taskId);
    });
  });
  if (version >= 2) db.exec('UPDATE tasks SET seen_fingerprint = fingerprint');
  if (version >= 3) {
    db.exec(`UPDATE batches SET first_started_at = (SELECT min(started_at) FROM tasks),
      last_finished_at = (SELECT max(finished_at) FROM tasks)`);
  }
  db.close();
}

const userVersion = (dbPath: string) => query<{ user_version: number }>(dbPath, 'PRAGMA user_version')[0]!.user_version;

describe('upgrading an older SQLite store', () => {
  it.each([1, 3])('a store at schema %i: status and tasks read it, a resuming run finishes it, old rows intact', async (version) => {
    const p = projectWithFiles(0);
    writeFiles(p.src, ['a.log', 'c.log', 'd.log', 'e.log', 'sub/b.log']);
    const db = dbPathIn(p.dir);
    const ran = join(p.dir, 'ran.txt');
    const template = `case {key} in c.log) exit 1;; esac; echo {key} >> '${ran}'`;
    writeOldStore(db, version, p.src, template, [
      { key: 'a.log', status: 'SUCCESS', attempts: 1, outcomes: ['SUCCESS'] },
      { key: 'c.log', status: 'FAILED', attempts: 2, lastError: 'exit code 1', outcomes: ['FAILED', 'FAILED'] },
      { key: 'd.log', status: 'PENDING', attempts: 1, nextRunAt: Date.now() - 1000, lastError: 'exit code 1', outcomes: ['FAILED'] },
      // Left RUNNING by a coordinator of the old version that was killed; its lease has expired.
      { key: 'e.log', status: 'RUNNING', attempts: 1, lease: { owner: 'oldhost:4242:777', expiresAt: Date.now() - 1000 }, outcomes: [null] },
      { key: 'sub/b.log', status: 'PENDING', attempts: 0, outcomes: [] },
    ]);
    const before = {
      batch: query(db, 'SELECT id, name, source, job, created_at FROM batches'),
      tasks: query(db, 'SELECT * FROM tasks ORDER BY id'),
      attempts: query(db, 'SELECT * FROM attempts ORDER BY id'),
    };

    const status = await mainIn(p.dir, ['status', '--json']);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(3); // the verdict: not done yet
    expect(JSON.parse(status.stdout)).toMatchObject({
      batch: derivedBatchName(p.src),
      source: p.src,
      total: 5,
      succeeded: 1,
      failed: 1,
      retrying: 1,
      pending: 1,
      running: 1,
      done: false,
    });
    expect(userVersion(db)).toBe(CURRENT);
    const tasks = await mainIn(p.dir, ['tasks', '--json']);
    expect(tasks.code).toBe(0);
    expect(JSON.parse(tasks.stdout).map((t: { key: string; status: string; attempts: number }) => [t.key, t.status, t.attempts])).toEqual([
      ['a.log', 'SUCCESS', 1],
      ['c.log', 'FAILED', 2],
      ['d.log', 'PENDING', 1],
      ['e.log', 'RUNNING', 1],
      ['sub/b.log', 'PENDING', 0],
    ]);

    // No handler given: the run resumes the batch with the handler the old version stored.
    // e.log's owner was written before owners named their PID namespace, so it is judged by its
    // lease, and taken once its renewals have been seen to stop for one: a short lease keeps that short.
    const run = await mainIn(p.dir, ['run', 'src', '--lease', '3s']);
    expect(run.code).toBe(1); // c.log stays FAILED
    expect(readFileSync(ran, 'utf8').split('\n').filter(Boolean).sort()).toEqual(['d.log', 'e.log', 'sub/b.log']);
    const after = await storedTasks(db);
    expect(after.map((t) => [t.key, t.status, t.attempts])).toEqual([
      ['a.log', 'SUCCESS', 1],
      ['c.log', 'FAILED', 2],
      ['d.log', 'SUCCESS', 2],
      ['e.log', 'SUCCESS', 2],
      ['sub/b.log', 'SUCCESS', 1],
    ]);
    // The counts the upgrade took from the old rows moved with them (task_counts, migration 019).
    expect(JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout)).toMatchObject({ total: 5, succeeded: 4, failed: 1, pending: 0, retrying: 0, running: 0 });
    expect(JSON.parse((await mainIn(p.dir, ['batches', '--json'])).stdout)).toHaveLength(1);
    expect(query(db, 'SELECT id, name, source, job, created_at FROM batches')).toEqual(before.batch);
    // Finished rows are untouched, column for column (the migrations only add columns).
    const finished = query<Record<string, unknown>>(db, "SELECT * FROM tasks WHERE task_key IN ('a.log', 'c.log') ORDER BY id");
    for (const [i, old] of before.tasks.slice(0, 2).entries()) expect(finished[i]).toMatchObject(old as Record<string, unknown>);
    // The audit log only grew; the attempt that was running when the old coordinator died is now LOST.
    const attempts = query<Record<string, unknown>>(db, 'SELECT * FROM attempts ORDER BY id');
    expect(attempts.length).toBe(before.attempts.length + 3);
    for (const [i, old] of before.attempts.entries()) {
      if ((old as { outcome: string | null }).outcome === null) expect(attempts[i]).toMatchObject({ outcome: 'LOST' });
      else expect(attempts[i]).toMatchObject(old as Record<string, unknown>); // column for column, plus the ones migrations add
    }
    expect(userVersion(db)).toBe(CURRENT);
  });
});

describe('a store from a newer version', () => {
  it('is refused with exit 4 by every command and left byte-identical', async () => {
    const p = projectWithFiles(3);
    const db = dbPathIn(p.dir);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const handle = new Database(db);
    handle.pragma(`user_version = ${CURRENT + 1}`);
    handle.pragma('wal_checkpoint(TRUNCATE)');
    handle.close(); // the last connection: the WAL is folded in and removed
    expect(existsSync(`${db}-wal`)).toBe(false);
    const bytes = readFileSync(db);
    const listing = readdirSync(join(db, '..')).sort();

    for (const args of [['status'], ['tasks'], ['batches'], ['show', 'f000.log'], ['run', 'src'], ['run', 'src', '--exec', 'true'], ['retry-failed'], ['prune']]) {
      const r = await mainIn(p.dir, args);
      expect(r.code, args.join(' ')).toBe(4);
      expect(r.stderr, args.join(' ')).toContain(`schema version ${CURRENT + 1}`);
      expect(r.stderr, args.join(' ')).toContain('upgrade splitdance');
    }
    expect(readFileSync(db).equals(bytes)).toBe(true);
    expect(readdirSync(join(db, '..')).sort()).toEqual(listing);
    expect(userVersion(db)).toBe(CURRENT + 1);
  });
});

function writeFiles(root: string, keys: string[]): void {
  for (const key of keys) {
    mkdirSync(join(root, key, '..'), { recursive: true });
    writeFileSync(join(root, key), `content of ${key}\n`);
  }
}
