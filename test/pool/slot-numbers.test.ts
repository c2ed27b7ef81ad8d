import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freeSlot } from '../../src/pool/slots.js';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

/**
 * Issue 41, item 13: `{%}` is the slot an attempt runs in, 1…`-j`, as GNU parallel's `{%}`
 * (job slot): two attempts running at the same time never share one. Each command holds a
 * lock named by its slot (`flock -n`, which fails at once if another holds it) while it runs.
 */
const ITEMS = Array.from({ length: 12 }, (_, i) => `item-${i + 1}`);

/** The command: take the slot's lock or fail; while holding it, write down the slot and stay a while. */
const command = (dir: string, slot: string) => `flock -n ${dir}/slot-${slot} sh -c 'echo "$1" >> ${dir}/seen; sleep 0.3' _ ${slot}`;

const seen = (dir: string) => readFileSync(join(dir, 'seen'), 'utf8').split('\n').filter(Boolean);

describe('{%}', () => {
  it('with -j 3, commands running at once see distinct slots in 1..3, as under parallel -j 3', async () => {
    const dir = tempDir('sd-slot-');
    writeFileSync(join(dir, 'list.txt'), ITEMS.join('\n') + '\n');
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '-j', '3', '--retries', '0', '--exec', command(dir, '{%}'), '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(seen(dir)).toHaveLength(12);
    expect(new Set(seen(dir))).toEqual(new Set(['1', '2', '3']));

    const theirs = tempDir('sd-slot-');
    execFileSync('parallel', ['--will-cite', '-j', '3', command(theirs, '{%}'), ':::', ...ITEMS]);
    expect(seen(theirs)).toHaveLength(12);
    expect(new Set(seen(theirs))).toEqual(new Set(['1', '2', '3']));
  }, 60_000);

  it('stays in 1..-j while workers are replaced (a worker recycled after every task)', async () => {
    const dir = tempDir('sd-slot-');
    writeFileSync(join(dir, 'list.txt'), ITEMS.join('\n') + '\n');
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '-j', '2', '--max-tasks-per-worker', '1', '--retries', '0', '--exec', command(dir, '{%}'), '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(seen(dir)).toHaveLength(12);
    expect(new Set(seen(dir))).toEqual(new Set(['1', '2']));
  }, 60_000);

  it('a handler module reads it as ctx.slot', async () => {
    const dir = tempDir('sd-slot-');
    writeFileSync(join(dir, 'list.txt'), ITEMS.join('\n') + '\n');
    writeFileSync(join(dir, 'slot.mjs'), 'export default async (task, ctx) => { await new Promise((r) => setTimeout(r, 50)); return { slot: ctx.slot }; };\n');
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '-j', '2', '--handler', join(dir, 'slot.mjs'), '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    const slots = (await tasksIn(dbPathIn(dir))).map((t) => (JSON.parse(t.result!) as { slot: number }).slot);
    expect(slots).toHaveLength(12);
    for (const s of slots) expect([1, 2]).toContain(s);
  }, 60_000);

  it('a new worker takes the lowest number no live worker holds', () => {
    expect(freeSlot([])).toBe(1);
    expect(freeSlot([{ slot: 1 }, { slot: 3 }])).toBe(2);
    expect(freeSlot([{ slot: 2 }, { slot: 1 }])).toBe(3);
  });

  it('--output cannot use {%}: an output path is the same for every attempt', async () => {
    const dir = tempDir('sd-slot-');
    writeFileSync(join(dir, 'list.txt'), 'a\n');
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--output', 'out/{%}/{}', '--exec', 'echo {} > {out}']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--output cannot use {%}: a task's output path must be the same for every attempt");
  });
});
