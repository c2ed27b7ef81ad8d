import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

// Audit 4, item 5: `cancel --key '!urgent.log'` read the `!` as negation and cancelled all 6
// tasks for good; a key holding `[…]` could not be named. A key given as it is matches that key
// alone; other text is a glob that never negates.
const FILES = ['!urgent.log', 'urgent.log', 'a[1].log', 'a1.log', 'b.log', 'c.log'];

async function batchOfFiles(): Promise<string> {
  const dir = tempDir('sd-keyfilter-');
  mkdirSync(join(dir, 'src'));
  for (const f of FILES) writeFileSync(join(dir, 'src', f), 'x\n');
  // Each task fails once and waits an hour for its retry: all six PENDING.
  const r = await mainIn(dir, ['run', 'src', '--exec', 'false {}', '--retries', '1', '--retry-quiet', '--backoff', '1h', '--no-wait', '--quiet']);
  expect(r.code, r.stderr).toBe(3);
  return dir;
}

const keysOf = async (dir: string, args: string[]) => {
  const r = await mainIn(dir, ['tasks', '--json', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { key: string; status: string }[]).map((t) => `${t.key}=${t.status}`).sort();
};

describe('--key', () => {
  it("cancel --key '!urgent.log' cancels that task alone, never every other one", async () => {
    const dir = await batchOfFiles();
    const r = await mainIn(dir, ['cancel', '--key', '!urgent.log']);
    expect(r.code, r.stderr).toBe(0);
    expect(await keysOf(dir, ['--status', 'CANCELLED'])).toEqual(['!urgent.log=CANCELLED']);
  });

  it('a key holding brackets, given as it is, matches that key alone', async () => {
    const dir = await batchOfFiles();
    expect(await keysOf(dir, ['--key', 'a[1].log'])).toEqual(['a[1].log=PENDING']);
  });

  it('other text is a glob, and a leading ! in it is a character, not a negation', async () => {
    const dir = await batchOfFiles();
    expect(await keysOf(dir, ['--key', '?.log'])).toEqual(['b.log=PENDING', 'c.log=PENDING']);
    expect(await keysOf(dir, ['--key', '!*'])).toEqual(['!urgent.log=PENDING']);
    expect(await keysOf(dir, ['--key', '!b.log'])).toEqual([]);
  });

  it('a cancel whose glob matches every unfinished task of the batch asks for --all, and cancels nothing without it', async () => {
    const dir = await batchOfFiles();
    // One task finished already: a glob that matches every other task still means them all.
    expect((await mainIn(dir, ['cancel', '--key', 'c.log'])).code).toBe(0);
    const r = await mainIn(dir, ['cancel', '--key', '[!c]*']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--key matches every one of the 5 unfinished tasks of batch');
    expect(r.stderr).toMatch(/to cancel them all: splitdance cancel --key '\[!c\]\*' --all --batch \S+/);
    expect(await keysOf(dir, ['--status', 'CANCELLED'])).toEqual(['c.log=CANCELLED']);
    expect((await mainIn(dir, ['cancel', '--key', '*'])).code).toBe(2);
    const all = await mainIn(dir, ['cancel', '--key', '*', '--all']);
    expect(all.code, all.stderr).toBe(0);
    expect(await keysOf(dir, ['--status', 'CANCELLED'])).toHaveLength(6);
  });

  it('a glob that leaves one unfinished task out needs no --all', async () => {
    const dir = await batchOfFiles();
    const r = await mainIn(dir, ['cancel', '--key', '[!c]*']);
    expect(r.code, r.stderr).toBe(0);
    expect(await keysOf(dir, ['--status', 'PENDING'])).toEqual(['c.log=PENDING']);
  });
});
