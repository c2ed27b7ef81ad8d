import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { taskWithAttempts } from '../helpers/read-store.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';

// SPEC §5 recovery: a RUNNING task whose owner is on another host is taken back once its lease
// expired, never before; one whose owner is a dead process on this host is taken back at once;
// one whose owner on this host is alive is not taken, whatever its lease says. Owners are
// forged in the row format of src/lease-owner.ts: `host/boot/pidns:pid:start`.

/** This machine as owner.ts names it: host name, the first 8 characters of the boot id, the PID namespace's inode. */
const MACHINE = `${hostname()}/${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8)}/${/\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1]}`;
const startTicks = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};
const REMOTE = 'elsewhere.example/0badc0de:4242:123456';

/**
 * A live process on this host other than this one (the run, in-process, is this process: its
 * own pid would name the run itself as the owner), with its start time; killed after the test.
 */
const alive: ChildProcess[] = [];
afterEach(() => {
  for (const c of alive.splice(0)) c.kill('SIGKILL');
});
function livePid(): { pid: number; start: string } {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  alive.push(child);
  return { pid: child.pid!, start: startTicks(child.pid!) };
}

interface Forged {
  dir: string;
  db: string;
  ran: string;
  token: number;
}

/**
 * Two tasks, f000 and f001, PENDING with a fresh budget (run once failing, then retry-failed);
 * then f000 is made RUNNING under `owner` until `expiresAt`, with its attempt row, exactly as a
 * claim writes them (the lease token is the attempt's id).
 */
async function batchWithForeignClaim(owner: string, expiresAt: number): Promise<Forged> {
  const p = projectWithFiles(2);
  // One retry, so the lost attempt (which counts) leaves the task a second one.
  expect((await mainIn(p.dir, ['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--retries', '1', '--backoff', '10ms'])).code).toBe(1);
  expect((await mainIn(p.dir, ['retry-failed'])).code).toBe(0);
  const dbPath = dbPathIn(p.dir);
  const db = new Database(dbPath);
  const now = Date.now();
  const token = db.transaction(() => {
    const { id } = db.prepare("SELECT id FROM tasks WHERE task_key = 'f000.log'").get() as { id: number };
    const host = owner.slice(0, owner.indexOf('/'));
    const pid = Number(owner.split(':').at(-2));
    const t = Number(
      db
        .prepare("INSERT INTO attempts (task_id, attempt, worker_id, host, pid, owner, started_at) VALUES (?, 1, 'remote.w1', ?, ?, ?, ?)")
        .run(id, host, pid, owner, now).lastInsertRowid,
    );
    db.prepare(
      `UPDATE tasks SET status = 'RUNNING', attempts = 1, lease_owner = ?, lease_token = ?, lease_expires_at = ?,
         worker_id = 'remote.w1', started_at = ?, finished_at = NULL WHERE id = ?`,
    ).run(owner, t, expiresAt, now, id);
    return t;
  })();
  db.close();
  return { dir: p.dir, db: dbPath, ran: join(p.dir, 'ran.txt'), token };
}

const EXEC = (ran: string) => `echo {key} >> '${ran}'`;
const ranKeys = (ran: string) => (existsSync(ran) ? readFileSync(ran, 'utf8').split('\n').filter(Boolean) : []);
/** The task's lease columns as stored (its fencing token is a column no command shows). */
const taskRow = (db: string, key: string) =>
  query<{ status: string; attempts: number; lease_owner: string | null; lease_token: number | null }>(
    db,
    'SELECT status, attempts, lease_owner, lease_token FROM tasks WHERE task_key = ?',
    key,
  )[0]!;
const attemptsOf = async (db: string, key: string) =>
  (await taskWithAttempts(db, key)).attempts.map((a) => ({ id: a.id, outcome: a.outcome, error: a.error, started_at: a.startedAt, ended_at: a.endedAt }));

describe('lease expiry through the CLI (SQLite)', () => {
  it('a task held by another host is not taken while its lease is valid, and is taken back (LOST) once it expired', async () => {
    const f = await batchWithForeignClaim(REMOTE, Date.now() + 10 * 60_000);

    const held = await mainIn(f.dir, ['run', 'src', '--exec', EXEC(f.ran), '--no-wait']);
    expect(held.code).toBe(3); // f000 is still someone else's
    expect(ranKeys(f.ran)).toEqual(['f001.log']);
    expect(taskRow(f.db, 'f000.log')).toEqual({ status: 'RUNNING', attempts: 1, lease_owner: REMOTE, lease_token: f.token });
    expect((await attemptsOf(f.db, 'f000.log')).at(-1)).toMatchObject({ id: f.token, outcome: null, ended_at: null });

    // The remote coordinator stopped heartbeating a while ago.
    const db = new Database(f.db);
    db.prepare("UPDATE tasks SET lease_expires_at = ? WHERE task_key = 'f000.log'").run(Date.now() - 1000);
    db.close();
    // It is taken once its renewals are seen to stop for a lease (R39): a --no-wait run stays for that.
    const taken = await mainIn(f.dir, ['run', 'src', '--no-wait', '--lease', '3s']);
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toContain('recovered 1 task');
    expect(ranKeys(f.ran)).toEqual(['f001.log', 'f000.log']);
    expect(taskRow(f.db, 'f000.log')).toEqual({ status: 'SUCCESS', attempts: 2, lease_owner: null, lease_token: null });
    const attempts = await attemptsOf(f.db, 'f000.log');
    expect(attempts.slice(-2).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    expect(attempts.at(-2)).toMatchObject({ id: f.token });
    expect(attempts.at(-2)!.error).toContain('expired');
  });

  it('a waiting run takes the task back when the lease runs out, not a moment before', async () => {
    const expiresAt = Date.now() + 1500;
    const f = await batchWithForeignClaim(REMOTE, expiresAt);
    // Once expired, the silent owner is watched for a lease (R39): a short one keeps that short.
    const r = await mainIn(f.dir, ['run', 'src', '--exec', EXEC(f.ran), '--lease', '3s']);
    expect(r.code).toBe(0);
    expect(ranKeys(f.ran).sort()).toEqual(['f000.log', 'f001.log']);
    const [lost, success] = (await attemptsOf(f.db, 'f000.log')).slice(-2);
    // Its end is unknown (the remote owner never reported): NULL, not the takeover time.
    expect(lost).toMatchObject({ id: f.token, outcome: 'LOST', ended_at: null });
    expect(success!.outcome).toBe('SUCCESS');
    expect(success!.started_at).toBeGreaterThanOrEqual(expiresAt);
  });

  it.each([
    ['whose process has exited', async () => deadPid()],
    ['whose pid now belongs to a later process', async () => {
      const { pid, start } = livePid();
      return { pid, start: String(Number(start) - 1) };
    }],
  ])('an owner on this host %s is taken back at once, whatever its lease', async (_what, victim) => {
    const { pid, start } = await victim();
    const owner = `${MACHINE}:${pid}:${start}`;
    const f = await batchWithForeignClaim(owner, Date.now() + 60 * 60_000);
    const started = Date.now();
    const r = await mainIn(f.dir, ['run', 'src', '--exec', EXEC(f.ran), '--no-wait']);
    expect(r.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(ranKeys(f.ran).sort()).toEqual(['f000.log', 'f001.log']);
    const attempts = await attemptsOf(f.db, 'f000.log');
    expect(attempts.slice(-2).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    expect(attempts.at(-2)!.error).toContain('died');
  });

  // SPEC §5, RELIABILITY R23: such an owner (e.g. a coordinator stopped with SIGSTOP past its
  // lease) keeps its tasks; recovery passes the live local owners to the store, which skips them.
  it('an owner on this host whose process is alive keeps its task, even past its lease', async () => {
    const { pid, start } = livePid();
    const owner = `${MACHINE}:${pid}:${start}`;
    const f = await batchWithForeignClaim(owner, Date.now() - 60_000);
    const r = await mainIn(f.dir, ['run', 'src', '--exec', EXEC(f.ran), '--no-wait']);
    expect(ranKeys(f.ran)).toEqual(['f001.log']);
    expect(taskRow(f.db, 'f000.log')).toEqual({ status: 'RUNNING', attempts: 1, lease_owner: owner, lease_token: f.token });
    expect(r.code).toBe(3);
  });
});

/** A pid and start time of a process that has exited (and been reaped). */
async function deadPid(): Promise<{ pid: number; start: string }> {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const start = startTicks(child.pid!);
  const gone = new Promise((r) => child.on('exit', r));
  child.kill('SIGKILL');
  await gone;
  return { pid: child.pid!, start };
}

const freshSchema = pgSchemas('lease');

/** `batchWithForeignClaim` on a fresh schema of the PostgreSQL test server. */
async function pgBatchWithForeignClaim(owner: string, expiresAt: number): Promise<{ dir: string; db: string[]; ran: string; schema: string }> {
  const fresh = freshSchema();
  const schema = fresh.schema;
  const db = ['--db', fresh.db];
  const p = projectWithFiles(2);
  expect((await mainIn(p.dir, ['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--retries', '1', '--backoff', '10ms', ...db])).code).toBe(1);
  expect((await mainIn(p.dir, ['retry-failed', ...db])).code).toBe(0);
  const now = Date.now();
  const [{ id }] = await pgQuery<{ id: string }>(`SELECT id FROM ${schema}.tasks WHERE task_key = 'f000.log'`);
  const [{ id: token }] = await pgQuery<{ id: string }>(
    `INSERT INTO ${schema}.attempts (task_id, attempt, worker_id, host, pid, owner, started_at)
     VALUES ($1, 1, 'remote.w1', $2, $3, $4, $5) RETURNING id`,
    [id, owner.slice(0, owner.indexOf('/')), Number(owner.split(':').at(-2)), owner, now],
  );
  await pgQuery(
    `UPDATE ${schema}.tasks SET status = 'RUNNING', attempts = 1, lease_owner = $1, lease_token = $2, lease_expires_at = $3,
       worker_id = 'remote.w1', started_at = $4, finished_at = NULL WHERE id = $5`,
    [owner, token, expiresAt, now, id],
  );
  return { dir: p.dir, db, ran: join(p.dir, 'ran.txt'), schema };
}

describe.skipIf(!PG_URL)('lease expiry through the CLI (PostgreSQL)', () => {
  it('an owner on this host whose process has exited is taken back at once, whatever its lease', async () => {
    const { pid, start } = await deadPid();
    const f = await pgBatchWithForeignClaim(`${MACHINE}:${pid}:${start}`, Date.now() + 60 * 60_000);
    const r = await mainIn(f.dir, ['run', 'src', '--exec', EXEC(f.ran), '--no-wait', ...f.db]);
    expect(r.code, r.stderr).toBe(0);
    expect(ranKeys(f.ran).sort()).toEqual(['f000.log', 'f001.log']);
    const outcomes = (await taskWithAttempts(f.db[1]!, 'f000.log')).attempts;
    expect(outcomes.slice(-2).map((o) => o.outcome)).toEqual(['LOST', 'SUCCESS']);
  });

  // As on SQLite: a live owner on this host keeps its tasks past its lease (SPEC §5, R23).
  it('an owner on this host whose process is alive keeps its task, even past its lease', async () => {
    const { pid, start } = livePid();
    const owner = `${MACHINE}:${pid}:${start}`;
    const f = await pgBatchWithForeignClaim(owner, Date.now() - 60_000);
    const r = await mainIn(f.dir, ['run', 'src', '--exec', EXEC(f.ran), '--no-wait', ...f.db]);
    expect(ranKeys(f.ran)).toEqual(['f001.log']);
    const { task } = await taskWithAttempts(f.db[1]!, 'f000.log');
    expect({ status: task.status, lease_owner: task.leaseOwner }).toEqual({ status: 'RUNNING', lease_owner: owner });
    expect(r.code).toBe(3);
  });
});
