import { afterEach, describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { storedBatches } from '../helpers/json-views.js';
import { dbPathIn, logEntries, query, storedAttempts, storedTasks, type LogEntry } from '../helpers/store.js';

// SPEC §5 and RELIABILITY R23/R24: a coordinator frozen with SIGSTOP past its --lease. On this
// host it is alive, so it keeps its tasks; a remote host may take them, and once the batch is
// pruned and another started, the frozen run, woken, neither commits onto nor claims from it.

/** Per key, the [start, end] intervals of the side-effect log(s) never overlap (invariant I3). */
function expectNoOverlap(entries: LogEntry[]): void {
  const byKey = new Map<string, { start: number; end: number }[]>();
  for (const e of entries) {
    expect(e.type, JSON.stringify(e)).not.toBe('double');
    if (e.type !== 'end') continue;
    byKey.set(e.key, [...(byKey.get(e.key) ?? []), { start: e.start, end: e.end }]);
  }
  for (const [key, spans] of byKey) {
    spans.sort((a, b) => a.start - b.start);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start, `${key} ran twice at once`).toBeGreaterThanOrEqual(spans[i - 1]!.end);
  }
}

const starts = (path: string) => logEntries(path).filter((e) => e.type === 'start');

const stopped: { kill: (s: NodeJS.Signals) => boolean }[] = [];
afterEach(() => {
  for (const c of stopped.splice(0)) c.kill('SIGCONT');
});

describe('a run frozen past its lease (SQLite)', () => {
  it('keeps its tasks on this host: a second run neither takes nor repeats them, and the first commits its results', async () => {
    const p = projectWithFiles(2);
    const log = p.log;
    const env = { SIDE_EFFECT_LOG: log, SLEEP_MS: '2500' };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2', '--lease', '1s', '--retries', '0', '--quiet'];
    const first = startCli(args, { cwd: p.dir, env });
    await waitFor(() => starts(log).length === 2, 15_000, 'both attempts to start');
    first.kill('SIGSTOP');
    stopped.push(first);
    await sleep(1500); // its lease (1 s) has expired; its workers' commands still run

    const second = await runCli([...args, '--no-wait'], { cwd: p.dir, env: { ...env, SLEEP_MS: '10' } });
    expect(second.code, second.stderr).toBe(3); // nothing it could claim: both tasks are the first run's
    expect(starts(log)).toHaveLength(2);
    const db = dbPathIn(p.dir);
    expect((await storedAttempts(db)).filter((a) => a.outcome === 'LOST')).toEqual([]);

    first.kill('SIGCONT');
    const r = await first.result;
    expect(r.code, r.stderr).toBe(0);
    // With --retries 0 each task ends as its only execution did: SUCCESS, not FAILED ("LOST").
    const tasks = (await storedTasks(db)).map(({ key, status, attempts }) => ({ key, status, attempts })).sort((a, b) => (a.key < b.key ? -1 : 1));
    expect(tasks).toEqual([
      { key: 'f000.log', status: 'SUCCESS', attempts: 1 },
      { key: 'f001.log', status: 'SUCCESS', attempts: 1 },
    ]);
    expect((await storedAttempts(db)).map((a) => a.outcome)).toEqual(['SUCCESS', 'SUCCESS']);
    expect(starts(log)).toHaveLength(2);
    expectNoOverlap(logEntries(log));
  }, 40_000);

  it('woken after its batch was taken over by another host, pruned and followed by a new batch, stops without touching the new batch', async () => {
    const p = projectWithFiles(2);
    const db = dbPathIn(p.dir);
    const [log1, log2, log3] = ['1', '2', '3'].map((n) => `${p.dir}/side-effects-${n}.ndjson`);
    const run = (batch: string) => ['run', 'src', '--batch', batch, '--handler', handler('record'), '-j', '1', '--lease', '1s', '--quiet'];

    // The first run's attempt ends at once, but it is frozen before it can commit it.
    const first = startCli(run('old'), { cwd: p.dir, env: { SIDE_EFFECT_LOG: log1, SLEEP_MS: '300' } });
    await waitFor(() => starts(log1).length === 1, 15_000, 'the first attempt to start');
    first.kill('SIGSTOP');
    stopped.push(first);
    await waitFor(() => logEntries(log1).some((e) => e.type === 'end'), 5000, 'the first attempt to end');
    await sleep(1200); // past its lease

    // Another host sees only an expired lease: it takes the task over and finishes the batch.
    const remote = { SPLITDANCE_HOST_ID: 'other-host', SIDE_EFFECT_LOG: log2, SLEEP_MS: '10' };
    const second = await runCli(run('old'), { cwd: p.dir, env: remote });
    expect(second.code, second.stderr).toBe(0);
    const maxId = (table: string) => query<{ n: number }>(db, `SELECT max(id) AS n FROM ${table}`)[0]!.n;
    const old = { attempts: maxId('attempts'), tasks: maxId('tasks'), batches: maxId('batches') };
    const pruned = await pruneAll(p.dir);
    expect(pruned).toEqual(['old']);

    // A new batch runs, slowly; the frozen run wakes in the middle of it.
    const third = startCli(run('new'), { cwd: p.dir, env: { SIDE_EFFECT_LOG: log3, SLEEP_MS: '1500' } });
    await waitFor(() => starts(log3).length === 1, 15_000, 'the new batch to start');
    const woke = Date.now();
    first.kill('SIGCONT');
    const r = await first.result;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain('no longer in the store');
    expect(starts(log1).filter((e) => e.type === 'start' && e.at >= woke)).toEqual([]); // claimed nothing after waking

    const t = await third.result;
    expect(t.code, t.stderr).toBe(0);
    // The pruned batch is gone: every task and attempt left is the new batch's.
    expect((await storedBatches(db)).map((b) => b.name)).toEqual(['new']);
    expect((await storedTasks(db, 'new')).map(({ status, attempts }) => ({ status, attempts }))).toEqual([
      { status: 'SUCCESS', attempts: 1 },
      { status: 'SUCCESS', attempts: 1 },
    ]);
    // Every attempt of the new batch is its own run's, committed as it ran; no id came back.
    expect((await storedAttempts(db, 'new')).map(({ outcome, error }) => ({ outcome, error }))).toEqual([
      { outcome: 'SUCCESS', error: null },
      { outcome: 'SUCCESS', error: null },
    ]);
    const minId = (table: string) => query<{ n: number }>(db, `SELECT min(id) AS n FROM ${table}`)[0]!.n;
    for (const table of ['attempts', 'tasks', 'batches'] as const) expect(minId(table), `${table} ids`).toBeGreaterThan(old[table]);
    expect(starts(log3)).toHaveLength(2);
    expectNoOverlap([...logEntries(log1), ...logEntries(log2)]);
  }, 60_000);
});

/** `prune --older-than 1ms` until it has pruned something (the batch's last activity must be past). */
async function pruneAll(cwd: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const r = await runCli(['prune', '--older-than', '1ms', '--json'], { cwd });
    expect(r.code, r.stderr).toBe(0);
    const pruned = JSON.parse(r.stdout).batches as string[];
    if (pruned.length > 0) return pruned;
  }
  return [];
}
