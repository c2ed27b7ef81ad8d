import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
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

/** The CLI as a plain process on this host (no simulated host identity inherited from the runner). */
function cliEnv(): { cleanEnv: true; env: NodeJS.ProcessEnv } {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.SPLITDANCE_HOST_ID;
  return { cleanEnv: true, env };
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
  const opts = { cwd: p.dir, ...cliEnv() };
  // One retry, so the lost attempt (which counts) leaves the task a second one.
  expect((await runCli(['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--retries', '1', '--backoff', '10ms'], opts)).code).toBe(1);
  expect((await runCli(['retry-failed'], opts)).code).toBe(0);
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
const taskRow = (db: string, key: string) =>
  query<{ status: string; attempts: number; lease_owner: string | null; lease_token: number | null }>(
    db,
    'SELECT status, attempts, lease_owner, lease_token FROM tasks WHERE task_key = ?',
    key,
  )[0]!;
const attemptsOf = (db: string, key: string) =>
  query<{ id: number; outcome: string | null; error: string | null; started_at: number; ended_at: number | null }>(
    db,
    'SELECT a.id, a.outcome, a.error, a.started_at, a.ended_at FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.task_key = ? ORDER BY a.id',
    key,
  );

describe('lease expiry through the CLI (SQLite)', () => {
  it('a task held by another host is not taken while its lease is valid, and is taken back (LOST) once it expired', async () => {
    const f = await batchWithForeignClaim(REMOTE, Date.now() + 10 * 60_000);
    const opts = { cwd: f.dir, ...cliEnv() };

    const held = await runCli(['run', 'src', '--exec', EXEC(f.ran), '--no-wait'], opts);
    expect(held.code).toBe(3); // f000 is still someone else's
    expect(ranKeys(f.ran)).toEqual(['f001.log']);
    expect(taskRow(f.db, 'f000.log')).toEqual({ status: 'RUNNING', attempts: 1, lease_owner: REMOTE, lease_token: f.token });
    expect(attemptsOf(f.db, 'f000.log').at(-1)).toMatchObject({ id: f.token, outcome: null, ended_at: null });

    // The remote coordinator stopped heartbeating a while ago.
    const db = new Database(f.db);
    db.prepare("UPDATE tasks SET lease_expires_at = ? WHERE task_key = 'f000.log'").run(Date.now() - 1000);
    db.close();
    // It is taken once its renewals are seen to stop for a lease (R39): a --no-wait run stays for that.
    const taken = await runCli(['run', 'src', '--no-wait', '--lease', '3s'], opts);
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toContain('recovered 1 task');
    expect(ranKeys(f.ran)).toEqual(['f001.log', 'f000.log']);
    expect(taskRow(f.db, 'f000.log')).toEqual({ status: 'SUCCESS', attempts: 2, lease_owner: null, lease_token: null });
    const attempts = attemptsOf(f.db, 'f000.log');
    expect(attempts.slice(-2).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    expect(attempts.at(-2)).toMatchObject({ id: f.token });
    expect(attempts.at(-2)!.error).toContain('expired');
  });

  it('a waiting run takes the task back when the lease runs out, not a moment before', async () => {
    const expiresAt = Date.now() + 1500;
    const f = await batchWithForeignClaim(REMOTE, expiresAt);
    // Once expired, the silent owner is watched for a lease (R39): a short one keeps that short.
    const r = await runCli(['run', 'src', '--exec', EXEC(f.ran), '--lease', '3s'], { cwd: f.dir, ...cliEnv() });
    expect(r.code).toBe(0);
    expect(ranKeys(f.ran).sort()).toEqual(['f000.log', 'f001.log']);
    const [lost, success] = attemptsOf(f.db, 'f000.log').slice(-2);
    // Its end is unknown (the remote owner never reported): NULL, not the takeover time.
    expect(lost).toMatchObject({ id: f.token, outcome: 'LOST', ended_at: null });
    expect(success!.outcome).toBe('SUCCESS');
    expect(success!.started_at).toBeGreaterThanOrEqual(expiresAt);
  });

  it.each([
    ['whose process has exited', async () => deadPid()],
    ['whose pid now belongs to a later process', async () => ({ pid: process.pid, start: String(Number(startTicks(process.pid)) - 1) })],
  ])('an owner on this host %s is taken back at once, whatever its lease', async (_what, victim) => {
    const { pid, start } = await victim();
    const owner = `${MACHINE}:${pid}:${start}`;
    const f = await batchWithForeignClaim(owner, Date.now() + 60 * 60_000);
    const started = Date.now();
    const r = await runCli(['run', 'src', '--exec', EXEC(f.ran), '--no-wait'], { cwd: f.dir, ...cliEnv() });
    expect(r.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(ranKeys(f.ran).sort()).toEqual(['f000.log', 'f001.log']);
    const attempts = attemptsOf(f.db, 'f000.log');
    expect(attempts.slice(-2).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    expect(attempts.at(-2)!.error).toContain('died');
  });

  // SPEC §5, RELIABILITY R23: such an owner (e.g. a coordinator stopped with SIGSTOP past its
  // lease) keeps its tasks; recovery passes the live local owners to the store, which skips them.
  it('an owner on this host whose process is alive keeps its task, even past its lease', async () => {
    const owner = `${MACHINE}:${process.pid}:${startTicks(process.pid)}`;
    const f = await batchWithForeignClaim(owner, Date.now() - 60_000);
    const r = await runCli(['run', 'src', '--exec', EXEC(f.ran), '--no-wait'], { cwd: f.dir, ...cliEnv() });
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
  const opts = { cwd: p.dir, ...cliEnv() };
  expect((await runCli(['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--retries', '1', '--backoff', '10ms', ...db], opts)).code).toBe(1);
  expect((await runCli(['retry-failed', ...db], opts)).code).toBe(0);
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
    const r = await runCli(['run', 'src', '--exec', EXEC(f.ran), '--no-wait', ...f.db], { cwd: f.dir, ...cliEnv() });
    expect(r.code, r.stderr).toBe(0);
    expect(ranKeys(f.ran).sort()).toEqual(['f000.log', 'f001.log']);
    const outcomes = await pgQuery<{ outcome: string }>(
      `SELECT a.outcome FROM ${f.schema}.attempts a JOIN ${f.schema}.tasks t ON t.id = a.task_id WHERE t.task_key = 'f000.log' ORDER BY a.id`,
    );
    expect(outcomes.slice(-2).map((o) => o.outcome)).toEqual(['LOST', 'SUCCESS']);
  });

  // As on SQLite: a live owner on this host keeps its tasks past its lease (SPEC §5, R23).
  it('an owner on this host whose process is alive keeps its task, even past its lease', async () => {
    const owner = `${MACHINE}:${process.pid}:${startTicks(process.pid)}`;
    const f = await pgBatchWithForeignClaim(owner, Date.now() - 60_000);
    const r = await runCli(['run', 'src', '--exec', EXEC(f.ran), '--no-wait', ...f.db], { cwd: f.dir, ...cliEnv() });
    expect(ranKeys(f.ran)).toEqual(['f001.log']);
    const [row] = await pgQuery<{ status: string; lease_owner: string }>(`SELECT status, lease_owner FROM ${f.schema}.tasks WHERE task_key = 'f000.log'`);
    expect(row).toEqual({ status: 'RUNNING', lease_owner: owner });
    expect(r.code).toBe(3);
  });
});
