import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { batchHandlerOf, callsIn, groupProject, type GroupWork } from '../helpers/group-runs.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { countBy, dbPathIn } from '../helpers/store.js';

// --timeout D with groups (SPEC §10): a group of k items has k × D, so a call that spends less
// than D per item passes even when the whole call takes longer than D. An item that hangs takes
// its groups past their limits, until it runs alone and ends TIMEOUT: a call that fails on its
// abort is split on its worker (halves, the same attempts); one that ignores it has its worker
// killed after the grace, its items given back uncharged to run in groups half as big.

const GROUP = 8;
/** Twice the group: a fresh worker has two places, and a claim deals its tasks round them (8 each). */
const TASKS = 2 * GROUP;
/** The work in groups of 8: a module's `maxItems` export (later also `--exec … -n 8`). */
const works: ((dir: string) => GroupWork)[] = [(dir) => batchHandlerOf(dir, GROUP)];

describe.each(works)('--timeout with groups of 8 (work %#)', (workIn) => {
  it('a call of 0.3 s per item passes --timeout 1s in a group of 8 (2.4 s in all: more than 1 s, less than 8 × 1 s)', async () => {
    const p = groupProject(TASKS);
    const r = await runCli(['run', 'src', ...workIn(p.dir).args, '-j', '1', '--timeout', '1s', '--retries', '0'], { cwd: p.dir, env: { ...p.env, ITEM_MS: '300' } });
    expect(r.code, r.stderr).toBe(0);
    const calls = callsIn(p.log);
    expect(calls.map((c) => [c.size, c.ended])).toEqual([[GROUP, true], [GROUP, true]]); // one call a place, never stopped nor split
    expect((await attemptsIn(dbPathIn(p.dir))).map((a) => a.outcome)).toEqual(Array(TASKS).fill('SUCCESS'));
  });

  // Each worker that holds it is killed KILL_GRACE_MS + 1 s after its group's limit (run/batch-pool.ts; --grace is the shutdown's): about 4 × 3 s here.
  it('an item that hangs forever (ignoring its abort) ends TIMEOUT alone; every other SUCCESS, none charged', async () => {
    const p = groupProject(TASKS);
    const hang = p.keys[5]!;
    const env = { ...p.env, ITEM_MS: '20', HANG_KEY: hang };
    const r = await runCli(['run', 'src', ...workIn(p.dir).args, '-j', '1', '--timeout', '200ms', '--retries', '0'], { cwd: p.dir, env });
    expect(r.code, r.stderr).toBe(1);
    const db = dbPathIn(p.dir);
    const tasks = await tasksIn(db);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', TASKS - 1], ['FAILED', 1]]));
    expect(tasks.filter((t) => t.attempts !== 1).map((t) => t.key)).toEqual([]);
    const attempts = await attemptsIn(db);
    // Only the hanging item's last attempt timed out; its groups' deaths before charged no one.
    expect(attempts.filter((a) => a.outcome === 'TIMEOUT').map((a) => a.key)).toEqual([hang]);
    expect(attempts.filter((a) => a.key === hang).at(-1)!.outcome).toBe('TIMEOUT');
    expect(new Set(attempts.map((a) => a.outcome))).toEqual(new Set(['INTERRUPTED', 'SUCCESS', 'TIMEOUT']));
    // Each worker that held it was killed: the calls that held it never ended, 8 items, then at most half as many each time, down to it alone.
    const held = callsIn(p.log).filter((c) => c.keys.includes(hang));
    expect(held.filter((c) => c.ended)).toEqual([]);
    expect(new Set(held.map((c) => c.pid)).size).toBe(held.length);
    halving(held);
  });

  it('an item that hangs until its call is aborted ends TIMEOUT alone: its timed-out groups are split on their worker, with the same attempts', async () => {
    const p = groupProject(TASKS);
    const hang = p.keys[5]!;
    const env = { ...p.env, ITEM_MS: '20', HANG_KEY: hang, HANG_ABORTS: '1' };
    const r = await runCli(['run', 'src', ...workIn(p.dir).args, '-j', '1', '--timeout', '200ms', '--retries', '0'], { cwd: p.dir, env });
    expect(r.code, r.stderr).toBe(1);
    const db = dbPathIn(p.dir);
    const tasks = await tasksIn(db);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', TASKS - 1], ['FAILED', 1]]));
    // One attempt each: a split group's halves run the same attempts; only the item alone was charged.
    const attempts = await attemptsIn(db);
    expect(attempts.map((a) => [a.key, a.outcome])).toEqual(p.keys.map((k) => [k, k === hang ? 'TIMEOUT' : 'SUCCESS']));
    const held = callsIn(p.log).filter((c) => c.keys.includes(hang));
    expect(new Set(held.map((c) => c.pid)).size).toBe(1); // one worker throughout
    halving(held);
  });
});

/** The calls that held the hanging item: the whole group, then at most half as many each time (log2(8) + 1 calls at most), down to it alone. */
function halving(held: { size: number }[]): void {
  expect(held[0]!.size).toBe(GROUP);
  expect(held.length).toBeLessThanOrEqual(Math.log2(GROUP) + 1);
  for (let i = 1; i < held.length; i++) expect(held[i]!.size).toBeLessThanOrEqual(Math.ceil(held[i - 1]!.size / 2));
  expect(held.at(-1)!.size).toBe(1);
}
