import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import type { BatchAttempt } from '../../src/store/records.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, storedAttempts } from '../helpers/store.js';

// Two coordinator processes (each its own pid in the lease owner, its own environment and
// module cache), so the runs are CLI processes; what is asked of the store afterwards runs here.
//
// Issue 16 item 7 (SPEC §5): two `run`s of one batch with different handlers. The second
// stores its definition (a new job version); the first, still running, lets its running
// attempt finish and follows it: no attempt starts with the old handler after the update,
// and each attempt records the version (handler) it ran.

/**
 * An --exec handler named `name` that logs its start and end, with the time, to `log`: the
 * side-effect log says which handler really ran each attempt.
 */
const handlerCmd = (name: string, log: string, sleepS: number) =>
  `echo start ${name} {key} {attempt} $(date +%s%3N) >> '${log}'; sleep ${sleepS}; echo end ${name} {key} {attempt} $(date +%s%3N) >> '${log}'`;

interface Entry {
  type: 'start' | 'end';
  handler: string;
  key: string;
  attempt: number;
  at: number;
}

function entries(log: string): Entry[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [type, handler, key, attempt, at] = l.split(' ');
      return { type: type as Entry['type'], handler: handler!, key: key!, attempt: Number(attempt), at: Number(at) };
    });
}

interface StoreAccess {
  args: string[];
  attempts(): Promise<BatchAttempt[]>;
  version(): Promise<number | null>;
}

/** The store at `db` (a SQLite path, or a PostgreSQL URL given to the runs with `--db`), read through its verbs: batch b's attempts oldest first, and its job version. */
function storeAt(db: string, args: string[]): StoreAccess {
  return {
    args,
    attempts: () => storedAttempts(db, 'b'),
    version: async () => {
      // Opened read-only without a single write; null while the store or batch b is not created yet.
      const store = await openStore(db, 'existing', { readonly: true }).catch(() => null);
      if (!store) return null;
      try {
        return (await store.findBatch('b'))?.jobVersion ?? null;
      } catch {
        return null; // not created (or not migrated) yet
      } finally {
        await store.close();
      }
    },
  };
}

async function waitForAsync(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function definitionChangeSuite(name: string, access: () => { dir: string; log: string; store: StoreAccess }) {
  describe(`a running run follows a newer definition stored by another run (${name})`, () => {
    it('every attempt claimed after the second run stored handler B runs B, and records the version it ran', async () => {
      const { dir, log, store } = access();
      const opts = { cwd: dir, timeoutMs: 60_000 };
      const common = ['--batch', 'b', '-j', '1', ...store.args];
      const first = startCli(['run', 'src', '--exec', handlerCmd('A', log, 0.5), ...common], opts);
      // The first run is running an attempt with A.
      await waitFor(() => entries(log).some((e) => e.type === 'start' && e.handler === 'A'), 20_000, 'the first run to start an attempt with A');
      // The second run stores B (version 2) and runs a little of the batch itself.
      const second = startCli(['run', 'src', '--exec', handlerCmd('B', log, 0.2), '--max-runtime', '500ms', ...common], opts);
      await waitForAsync(async () => (await store.version()) === 2, 20_000, 'the second run to store its definition');
      const updated = Date.now();
      const [r1, r2] = await Promise.all([first.result, second.result]);
      expect(r2.stdout + r2.stderr).toContain('handler now --exec');
      expect([0, 3]).toContain(r2.code);
      expect(r1.code, r1.stderr).toBe(0);

      const effects = entries(log);
      // Attempts queued behind a running one when a run stopped (the second's --max-runtime)
      // were given back unstarted (SPEC §5): INTERRUPTED, never run. Every other one succeeded.
      const all = await store.attempts();
      const attempts = all.filter((a) => a.outcome !== 'INTERRUPTED');
      expect(attempts.every((a) => a.outcome === 'SUCCESS')).toBe(true);
      // The side-effect log and the attempts' versions agree: A is version 1, B version 2.
      const started = effects.filter((e) => e.type === 'start');
      expect(started).toHaveLength(attempts.length);
      for (const a of attempts) {
        const ran = started.find((e) => e.key === a.key && e.attempt === a.attempt);
        expect(ran, `${a.key} #${a.attempt} in the side-effect log`).toBeDefined();
        expect({ key: a.key, handler: ran!.handler, version: a.jobVersion }).toEqual({ key: a.key, handler: a.jobVersion === 1 ? 'A' : 'B', version: a.jobVersion });
      }
      // Nothing claimed once B was stored ran A: only the attempt queued on the first run's one
      // slot when B was stored (claimed under A, SPEC §5) may start after that, and it ran A.
      expect(attempts.filter((a) => a.startedAt > updated && a.jobVersion !== 2).length).toBeLessThanOrEqual(1);
      expect(started.filter((e) => e.at > updated && e.handler !== 'B').length).toBeLessThanOrEqual(1);
      // The first run itself went on with B (the test would prove nothing if the second ran them all).
      const firstPid = `:${first.pid}:`;
      expect(attempts.filter((a) => a.owner.includes(firstPid) && a.jobVersion === 2).length).toBeGreaterThan(0);
      // Every task ran exactly once, and no two attempts overlapped (-j 1 each, two runs: at most 2 at once, never one key twice).
      expect(new Set(attempts.map((a) => a.key)).size).toBe(attempts.length);

      // It said so.
      expect(r1.stdout + r1.stderr).toMatch(/batch b: handler changed to --exec "echo start B .* by another run; following it/);

      // `show` says which definition each attempt ran.
      const followed = attempts.find((a) => a.owner.includes(firstPid) && a.jobVersion === 2)!;
      const shown = await mainIn(dir, ['show', followed.key, '--batch', 'b', '--json', ...store.args]);
      expect(JSON.parse(shown.stdout).attempts.filter((a: { outcome: string }) => a.outcome !== 'INTERRUPTED').map((a: { jobVersion: number }) => a.jobVersion)).toEqual([2]);
      const human = await mainIn(dir, ['show', followed.key, '--batch', 'b', ...store.args]);
      expect(human.stdout).toMatch(/#1 .* job v2/);
    }, 90_000);

    it('a newer handler that does not load here stops the first run with exit 2, leaving the rest PENDING', async () => {
      const { dir, log, store } = access();
      const opts = { cwd: dir, timeoutMs: 60_000 };
      // A module that loads only where LOAD_OK is set: in the second run, not in the first.
      const picky = join(dir, 'picky.mjs');
      writeFileSync(picky, "if (!process.env.LOAD_OK) throw new Error('cannot load here');\nexport default async () => ({ ok: true });\n");
      const common = ['--batch', 'b', '-j', '1', ...store.args];
      const first = startCli(['run', 'src', '--exec', handlerCmd('A', log, 0.5), ...common], opts);
      await waitFor(() => entries(log).some((e) => e.type === 'start' && e.handler === 'A'), 20_000, 'the first run to start an attempt with A');
      // The second run stores the new handler and stops claiming almost at once (--max-runtime).
      const second = await runCli(['run', 'src', '--handler', picky, '--max-runtime', '1ms', ...common], { ...opts, env: { LOAD_OK: '1' } });
      expect(second.stdout + second.stderr).toContain('handler now --handler');
      const r1 = await first.result;
      expect(r1.code, r1.stdout + r1.stderr).toBe(2);
      expect(r1.stderr).toMatch(/another run changed the handler to --handler .*picky\.mjs, which does not load here: .*cannot load here/);
      // A ran only before the update; nothing ran after (an attempt claimed queued behind the
      // running one, seen at the run's next look, is given back unstarted: INTERRUPTED); the rest
      // waits, PENDING and unattempted.
      const attempts = await store.attempts();
      expect(attempts.filter((a) => a.jobVersion === 1).every((a) => a.outcome === 'SUCCESS' || a.outcome === 'INTERRUPTED')).toBe(true);
      expect(attempts.some((a) => a.jobVersion === 1 && a.outcome === 'SUCCESS')).toBe(true);
      const status = await mainIn(dir, ['status', '--batch', 'b', '--json', ...store.args]);
      const counts = JSON.parse(status.stdout);
      expect(counts.running).toBe(0);
      expect(counts.pending).toBeGreaterThan(0);
    }, 90_000);
  });
}

// Enough tasks that the second run (stopped by --max-runtime after 500 ms, each of its slots
// holding a queued attempt) leaves some for the first to run with B.
const TASKS = 12;

definitionChangeSuite('SQLite', () => {
  const p = projectWithFiles(TASKS);
  return { dir: p.dir, log: p.log, store: storeAt(dbPathIn(p.dir), []) };
});

const schemas = pgSchemas('sd_defchange');
describe.skipIf(!PG_URL)('PostgreSQL', () => {
  definitionChangeSuite('PostgreSQL', () => {
    const p = projectWithFiles(TASKS);
    const { db } = schemas();
    return { dir: p.dir, log: p.log, store: storeAt(db, ['--db', db]) };
  });
});
