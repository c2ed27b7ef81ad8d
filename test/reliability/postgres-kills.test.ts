import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { statusCounts } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, logEntries, sideEffects, storedAttempts } from '../helpers/store.js';

// Kills on a shared PostgreSQL store (docs/reliability.md): a worker among two SIGKILLed (R3/R10),
// random coordinator SIGKILLs (R1), a dead remote host simulated with a second host identity.
// Every coordinator is a CLI process of its own, to be killed; the store is read through its verbs.

/** A fresh schema on the test server for one test. */
const freshDb = pgSchemas('cli');

/**
 * Keys whose side effect happened more than once although no attempt of theirs was LOST by the
 * killed owner, or more than twice. A kill repeats the attempts it held: the running ones, the
 * queued ones, and the finished ones not committed yet (SPEC §5), all of which it loses.
 */
async function repeatsNotLost(log: string, db: string, killedOwner: string, slots: number, sleepMs: number): Promise<string[]> {
  const lost = (await storedAttempts(db)).filter((a) => a.outcome === 'LOST' && a.owner.includes(killedOwner));
  const lostKeys = new Set(lost.map((l) => l.key));
  // Each slot held a running and a queued attempt, plus up to 100 ms of finished ones (SPEC §5).
  expect(lost.length).toBeLessThanOrEqual(slots * (2 + Math.ceil(100 / sleepMs)));
  return [...countBy(sideEffects(log), (e) => e.key)].filter(([k, n]) => n > 2 || (n === 2 && !lostKeys.has(k))).map(([k]) => k);
}

describe.skipIf(!PG_URL)('the CLI on a shared PostgreSQL store', () => {
  it('run enqueues, two workers finish 300 tasks with every task once; SIGKILL of a worker loses nothing', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(300);
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '15', CANARY_DIR: canaries };
    const first = await runCli(['run', 'src', '--db', db, '--handler', handler('record'), '--max-runtime', '1ms', '-j', '1'], { cwd: p.dir, env });
    expect(first.code, first.stderr).toBe(3);
    const a = startCli(['worker', '--db', db, '-j', '2'], { cwd: p.dir, env });
    const b = startCli(['worker', '--db', db, '-j', '2'], { cwd: p.dir, env });
    await waitFor(() => sideEffects(p.log).length >= 60, 30_000, '60 tasks done');
    a.kill('SIGKILL');
    const rb = await b.result;
    expect(rb.code, rb.stderr).toBe(0);
    await a.result;
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 300 });
    const effects = sideEffects(p.log);
    expect(new Set(effects.map((e) => e.key)).size).toBe(300);
    // At most the attempts in flight at the kill: each of its 2 slots' running one and the one
    // it may have finished just before (its outcome not yet committed), SPEC §5.
    expect(effects.length - 300).toBeLessThanOrEqual(2 * 2);
    expect(await repeatsNotLost(p.log, db, `:${a.pid}:`, 2, 15)).toEqual([]);
    expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
  });

  it('random coordinator SIGKILLs (R1 on PostgreSQL): nothing lost, repeats only of killed attempts, no double runs', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(150);
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '10', CANARY_DIR: canaries };
    const args = ['run', 'src', '--db', db, '--handler', handler('record'), '-j', '2', '--retries', '1000', '--backoff', '10ms', '--quiet'];
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let kills = 0;
    for (let k = 0; k < 15; k++) {
      const child = startCli(args, { cwd: p.dir, env });
      const r = await Promise.race([child.result, new Promise<null>((res) => setTimeout(() => res(null), 200 + rand() * 800))]);
      if (r) break;
      child.kill('SIGKILL');
      await child.result;
      kills++;
    }
    const final = await runCli(args, { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 150 });
    // A LOST attempt has no end, but an outcome: none is left open.
    expect((await storedAttempts(db)).filter((a) => a.outcome === null)).toEqual([]);
    const effects = sideEffects(p.log);
    expect(new Set(effects.map((e) => e.key)).size).toBe(150);
    expect(effects.length - 150).toBeLessThanOrEqual(2 * 2 * kills); // per kill: 2 slots × (running + one finished, not yet committed)
    expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
  });

  it('two simulated hosts: a dead remote host is recovered only after its lease, every task once apart from the killed', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(80);
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '40', CANARY_DIR: canaries };
    expect((await runCli(['run', 'src', '--db', db, '--handler', handler('record'), '--max-runtime', '1ms', '-j', '1'], { cwd: p.dir, env })).code).toBe(3);
    const hostA = startCli(['worker', '--db', db, '-j', '2', '--lease', '2s'], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-a' } });
    const hostB = startCli(['worker', '--db', db, '-j', '2', '--lease', '2s'], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-b' } });
    await waitFor(() => sideEffects(p.log).length >= 20, 30_000, '20 tasks done');
    const killedAt = Date.now();
    hostA.kill('SIGKILL');
    expect((await hostB.result).code).toBe(0);
    // Each LOST attempt with the start of its task's next attempt (host B's, after the takeover).
    const attempts = await storedAttempts(db);
    const lost = attempts.filter((a) => a.outcome === 'LOST');
    expect(lost.length).toBeGreaterThan(0); // host A held tasks when it died
    for (const l of lost) {
      expect(l.host).toBe('host-a');
      expect(l.error).toMatch(/lease .* expired/);
      expect([l.endedAt, l.durationMs]).toEqual([null, null]); // its end is unknown, not the takeover time
      const next = attempts.filter((n) => n.key === l.key && n.id > l.id).map((n) => n.startedAt);
      expect(next.length, `a next attempt of ${l.key}`).toBeGreaterThan(0);
      expect(Math.min(...next) - killedAt).toBeGreaterThanOrEqual(1000); // not reclaimed at once: a remote pid cannot be checked
    }
    const effects = sideEffects(p.log);
    expect(new Set(effects.map((e) => e.key)).size).toBe(80);
    expect(effects.length - 80).toBeLessThanOrEqual(2 * 2); // host A's 2 slots × (running + one finished, not yet committed)
    expect(await repeatsNotLost(p.log, db, 'host-a/', 2, 40)).toEqual([]);
    expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
  });
});
