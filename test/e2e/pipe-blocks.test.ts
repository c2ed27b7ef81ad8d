import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sleep, startCli, tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';
import { dbPathIn, storedAttempts, storedTasks } from '../helpers/store.js';

/** `run - --pipe --block SIZE`: stdin cut into line-aligned blocks, each a stored task (GNU parallel's --pipe). */

const seq = (n: number): Buffer => execFileSync('seq', ['1', String(n)], { maxBuffer: 64 * 1024 * 1024 });
const sum = (text: string): number => text.trim().split('\n').reduce((s, l) => s + Number(l), 0);

/** The batch's tasks in the order stdin was cut (seq). */
const tasks = async (dir: string) => (await storedTasks(dbPathIn(dir))).sort((a, b) => a.seq - b.seq);

/** Each task with a successful attempt: how many it had, and the greatest output tail of them. */
async function successes(dir: string): Promise<{ key: string; n: number; tail: string }[]> {
  const byKey = new Map<string, { key: string; n: number; tail: string }>();
  for (const a of (await storedAttempts(dbPathIn(dir))).filter((x) => x.outcome === 'SUCCESS')) {
    const s = byKey.get(a.key) ?? { key: a.key, n: 0, tail: a.outputTail! };
    byKey.set(a.key, { key: a.key, n: s.n + 1, tail: a.outputTail! > s.tail ? a.outputTail! : s.tail });
  }
  return [...byKey.values()];
}

describe('run - --pipe', () => {
  it.skipIf(missing('parallel', 'the side-by-side test of --pipe --block'))(
    "cuts 2,000,000 lines into 1 MiB blocks whose `wc -l` sum to 2,000,000, as many as parallel's; a second run runs nothing",
    async () => {
      const dir = tempDir();
      const input = seq(2_000_000);
      const r = await runCli(['run', '-', '--pipe', '--block', '1M', '--exec', 'wc -l', '--print'], { cwd: dir, input, timeoutMs: 120_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(sum(r.stdout)).toBe(2_000_000);
      const ours = r.stdout.trim().split('\n').length;
      const theirs = execFileSync('parallel', ['--will-cite', '--pipe', '--block', '1M', 'wc', '-l'], { input, encoding: 'utf8' });
      expect(sum(theirs)).toBe(2_000_000);
      expect(Math.abs(ours - theirs.trim().split('\n').length)).toBeLessThanOrEqual(1);
      expect(ours).toBeGreaterThan(10); // 14.2 MiB in blocks of about 1 MiB, not one task per line

      const again = await runCli(['run', '-', '--pipe', '--block', '1M', '--exec', 'wc -l', '--print'], { cwd: dir, input, timeoutMs: 120_000 });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe('');
      expect(again.stderr).toMatch(new RegExp(`${ours} tasks \\(0 new\\)`));
      expect(again.stderr).toMatch(new RegExp(`nothing ran: all ${ours} tasks of batch stdin-[0-9a-f]{8} were already done`));
      expect((await successes(dir)).every((s) => s.n === 1)).toBe(true);
    },
    150_000,
  );

  it('killed mid-run, the same command resumes: finished blocks do not run again, no block is added or lost', async () => {
    const dir = tempDir();
    const input = seq(200_000); // 1.2 MiB: about 20 blocks of 64 KiB
    const args = ['run', '-', '--pipe', '--block', '64K', '-j', '2', '--exec', 'sh -c "wc -l; sleep 0.4"'];
    const first = startCli(args, { cwd: dir, input, timeoutMs: 60_000 });
    const succeeded = async () => {
      try {
        return (await tasks(dir)).filter((t) => t.status === 'SUCCESS').length;
      } catch {
        return 0; // the store is still being made
      }
    };
    for (let i = 0; i < 600 && (await succeeded()) < 4; i++) await sleep(50);
    first.kill('SIGKILL');
    await first.result;
    const before = await tasks(dir);
    const done = before.filter((t) => t.status === 'SUCCESS');
    expect(done.length).toBeGreaterThanOrEqual(4);
    expect(done.length).toBeLessThan(before.length);

    const r = await runCli(args, { cwd: dir, input, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`${before.length} tasks \\(0 new\\)`));
    const after = await tasks(dir);
    expect(after.map((t) => t.key)).toEqual(before.map((t) => t.key));
    expect(after.every((t) => t.status === 'SUCCESS')).toBe(true);
    for (const t of done) expect(after.find((a) => a.key === t.key)!.attempts).toBe(t.attempts);
    const ok = await successes(dir);
    expect(ok).toHaveLength(before.length);
    expect(ok.every((s) => s.n === 1)).toBe(true);
    expect(ok.reduce((s, t) => s + Number(t.tail.trim()), 0)).toBe(200_000);
  }, 90_000);

  it('an edited stream runs only the blocks whose bytes changed; the block is what the command reads', async () => {
    const dir = tempDir();
    const lines = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(9, '0')}\n`); // 10 bytes a line
    const args = ['run', '-', '--pipe', '--block', '1000', '--exec', 'md5sum', '--print'];
    const r = await runCli(args, { cwd: dir, input: lines.join('') });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(10);
    lines[512] = 'edited...\n';
    const e = await runCli(args, { cwd: dir, input: lines.join('') });
    expect(e.code, e.stderr).toBe(0);
    expect(e.stderr).toMatch(/11 tasks \(1 new\)/);
    const block = lines.slice(500, 600).join('');
    expect(e.stdout).toBe(execFileSync('md5sum', { input: block, encoding: 'utf8' }));
  });

  it('--chunk-size or --block on a list is exit 2 saying what cuts what; nothing is written', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), '1\n2\n');
    const r = await runCli(['run', '-', '--chunk-size', '1M', '--exec', 'wc -l'], { cwd: dir, input: '1\n2\n' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--chunk-size cuts stdin into blocks only with --pipe: a list on stdin is one task per line; add --pipe/);
    const b = await runCli(['run', '--items', '-', '--pipe', '--block', '1M', '--exec', 'wc -l'], { cwd: dir, input: '1\n2\n' });
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/--block cuts stdin into blocks as `run - --pipe`; --items - reads a list, one task per item: give stdin as the source/);
    const f = await runCli(['run', '--items', 'list.txt', '--lines', '2', '--exec', 'wc -l'], { cwd: dir });
    expect(f.code).toBe(2);
    expect(f.stderr).toMatch(/--lines cuts a file into chunks; --items reads a list, one task per item: leave --lines out/);
    const big = await runCli(['run', '-', '--pipe', '--block', '64M', '--exec', 'wc -l'], { cwd: dir, input: '1\n2\n' });
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(/--block 64M: a block of stdin is stored with its task, at most 16 MiB/);
    const dry = await runCli(['run', '-', '--pipe', '--block', '100K', '--exec', 'wc -l', '--dry-run'], { cwd: dir, input: seq(100_000) });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/source {3}stdin \(blocks, 100 KB per block\)\n.*\ntasks {4}6; first items: stdin:00000:[0-9a-f]{16}, /);
    expect(existsSync(join(dir, '.splitdance'))).toBe(false);
  });
});
