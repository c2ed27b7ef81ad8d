import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, tempDir, waitFor, type CliResult } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, logEntries } from '../helpers/store.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';

// Issue 16 item 5 (R26): a store error in the middle of a run ends it with exit 4 and the
// error's message in every output mode; before, the progress timer kept plain and --json runs
// alive for ever after the message was printed (only --quiet, which has no timer, exited).

const MODES: [string, string[]][] = [
  ['plain', []],
  ['--json', ['--json']],
  ['--quiet', ['--quiet']],
];

/** A run that must end by itself well within `ms`: a hang shows as a SIGKILL by the helper, not code 4. */
const WITHIN_MS = 20_000;

function expectExit4(r: CliResult, mode: string, message: RegExp): void {
  expect(r.signal, `${mode} hung (killed after ${WITHIN_MS} ms): ${r.stderr}`).toBeNull();
  expect(r.code, r.stderr).toBe(4);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  if (mode === '--json') {
    const events = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { event: string; message?: string });
    expect(events.at(-1)?.event).toBe('error');
    expect(events.at(-1)?.message).toMatch(message);
  }
}

function pageCount(dbPath: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.pragma('page_count', { simple: true }) as number;
  } finally {
    db.close();
  }
}

describe('run never hangs after a store error mid-run: exit 4 in every output mode', () => {
  for (const [mode, flags] of MODES) {
    it(`the store's disk fills mid-run (${mode}): exit 4 naming the full disk, no worker left, a rerun with space completes`, async () => {
      const dir = tempDir('sd-full-');
      writeFileSync(join(dir, 'big.txt'), Array.from({ length: 3000 }, (_, i) => `line ${i}\n`).join(''));
      const args = ['run', 'big.txt', '--exec', 'true', '--lines', '1', '-j', '2', '--progress-interval', '100ms'];
      // The batch exists first, so the capped run enqueues nothing new and fills the store with attempts.
      const first = await runCli([...args, '--max-runtime', '200ms'], { cwd: dir });
      expect(first.code, first.stderr).toBe(3);
      const pages = pageCount(dbPathIn(dir)) + 4;
      const full = await runCli([...args, ...flags], { cwd: dir, env: { SPLITDANCE_FAILPOINT: `pages:${pages}` }, timeoutMs: WITHIN_MS });
      expectExit4(full, mode, /disk holding .*splitdance\.db is full/);
      expect(processesWithEnv(dir)).toEqual([]);
      const again = await runCli([...args, '--quiet'], { cwd: dir, timeoutMs: 60_000 });
      expect(again.code, again.stderr).toBe(0);
    }, 90_000);
  }

  for (const [mode, flags] of MODES) {
    it(`a write lock held past the busy timeout mid-run (${mode}): exit 4 naming the lock, no worker left`, async () => {
      const p = projectWithFiles(40, 'sd-locked-');
      const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '50', SPLITDANCE_BUSY_TIMEOUT_MS: '300' };
      const run = startCli(['run', 'src', '--handler', handler('record'), '-j', '2', '--progress-interval', '100ms', ...flags], {
        cwd: p.dir,
        env,
        timeoutMs: WITHIN_MS,
      });
      await waitFor(() => logEntries(p.log).filter((e) => e.type === 'end').length >= 4, 15_000, 'a few attempts done');
      // What a long `prune` (or any other writer) holding the lock looks like to the run.
      const foreign = new Database(dbPathIn(p.dir));
      foreign.exec('BEGIN IMMEDIATE');
      let r: CliResult;
      try {
        r = await run.result;
      } finally {
        foreign.exec('ROLLBACK');
        foreign.close();
      }
      expectExit4(r, mode, /stayed locked by another process/);
      expect(processesWithEnv(p.dir)).toEqual([]);
    }, 40_000);
  }
});

const pgSql = pgQuery;
const freshDb = pgSchemas('exit');

/** The local ports of `pid`'s connections to the server: how its backends are told from everyone else's. */
function clientPorts(pid: number): number[] {
  const out = execFileSync('ss', ['-tnpH', 'dport = :5432'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => Number(l.trim().split(/\s+/)[3]!.split(':').pop()));
}

describe.skipIf(!PG_URL)('run on PostgreSQL never hangs after a store error mid-run', () => {
  for (const [mode, flags] of MODES) {
    it(`a lock held past the lock timeout mid-run (${mode}): exit 4 naming the lock, no worker left`, async () => {
      const { db, schema } = freshDb();
      const p = projectWithFiles(40, 'sd-pglock-');
      const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '50', SPLITDANCE_BUSY_TIMEOUT_MS: '300' };
      const run = startCli(['run', 'src', '--db', db, '--handler', handler('record'), '-j', '2', '--progress-interval', '100ms', ...flags], {
        cwd: p.dir,
        env,
        timeoutMs: WITHIN_MS,
      });
      await waitFor(() => logEntries(p.log).filter((e) => e.type === 'end').length >= 4, 15_000, 'a few attempts done');
      const holder = new pg.Client({ connectionString: PG_URL });
      await holder.connect();
      let r: CliResult;
      try {
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE ${schema}.tasks IN ACCESS EXCLUSIVE MODE`);
        r = await run.result;
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
      expectExit4(r, mode, /stayed locked by another session/);
      expect(processesWithEnv(p.dir)).toEqual([]);
    }, 40_000);
  }

  for (const [mode, flags] of MODES) {
    it(`the run's server connections killed again and again (${mode}): it finishes, or exits 4 naming the server; never hangs`, async () => {
      const { db } = freshDb();
      const p = projectWithFiles(60, 'sd-pgkill-');
      const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '30' };
      const run = startCli(['run', 'src', '--db', db, '--handler', handler('record'), '-j', '2', '--progress-interval', '100ms', ...flags], {
        cwd: p.dir,
        env,
        timeoutMs: WITHIN_MS,
      });
      await waitFor(() => logEntries(p.log).filter((e) => e.type === 'end').length >= 4, 15_000, 'a few attempts done');
      // What a server restart does to the run's sessions, without touching anyone else's.
      let exited = false;
      void run.result.then(() => (exited = true));
      for (let i = 0; i < 40 && !exited; i++) {
        const ports = clientPorts(run.pid!);
        if (ports.length) await pgSql('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_port = ANY($1)', [ports]);
        await sleep(25);
      }
      const r = await run.result;
      expect(r.signal, `${mode} hung: ${r.stderr}`).toBeNull();
      if (r.code !== 0) expectExit4(r, mode, /PostgreSQL at 127\.0\.0\.1:5432/);
      expect(processesWithEnv(p.dir)).toEqual([]);
    }, 40_000);
  }
});
