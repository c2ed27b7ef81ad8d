import { appendFileSync, closeSync, existsSync, ftruncateSync, openSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AttemptPrinter } from '../../src/run/attempt-printer.js';
import type { RunObserver } from '../../src/coordinator/run-types.js';
import type { ClaimedTask, Settlement } from '../../src/store/task-store.js';
import { sleep, waitFor } from '../helpers/cli.js';

// `--line-buffer` reads the copies of running attempts as they grow. A line of 50 MB is never
// held whole (it goes out in pieces of at most 1 MiB), and while it is cut no other attempt's
// line is let in: on the run's stdout no line is ever interleaved mid-way with another's.

const task = (token: number, key: string): ClaimedTask => ({
  id: token,
  token,
  key,
  stage: '',
  seq: token,
  attempt: 1,
  counted: 1,
  maxAttempts: 1,
  payload: { version: 1, path: key, rel: key },
  workerId: 'w1',
  inputs: {},
  busySince: null,
});

const quiet: RunObserver = { attemptEnded() {}, released() {}, note() {} };
const SUCCESS: Settlement = { token: 1, taskId: 1, outcome: 'SUCCESS', endedAt: 0, durationMs: 0, exitCode: 0, signal: null, error: null, outputTail: null, logPath: null };

describe('AttemptPrinter --line-buffer', () => {
  it('prints a 50 MB line in pieces of at most 1 MiB, and no other line inside it; the last piece gets its newline', async () => {
    const writes: { key: string; bytes: number; text: string | null }[] = [];
    const printer = new AttemptPrinter({ keepOrder: false, lineBuffer: true }, (t) => ({
      write: async (chunk) => {
        writes.push({ key: t.key, bytes: chunk.length, text: chunk.length < 100 ? chunk.toString() : null });
      },
      end: async () => {
        writes.push({ key: t.key, bytes: 0, text: '<end>' });
      },
    }));
    const observer = printer.tap(quiet);
    const big = `${printer.prefixOf(1)}.out`;
    const size = 50 * 1000 * 1000;
    const fd = openSync(big, 'w', 0o600);
    ftruncateSync(fd, size); // 50 MB of zero bytes: one line, not ended yet
    closeSync(fd);
    observer.attemptStarted?.(task(1, 'big'));
    await waitFor(() => writes.some((w) => w.key === 'big'), 10_000, 'the first piece');
    writeFileSync(`${printer.prefixOf(2)}.out`, 'small one\n');
    observer.attemptStarted?.(task(2, 'small'));
    await sleep(300);
    expect(writes.filter((w) => w.key === 'small')).toEqual([]); // held back: the big line is not ended
    await waitFor(() => writes.filter((w) => w.key === 'big').reduce((n, w) => n + w.bytes, 0) === size, 30_000, 'the whole big line');
    appendFileSync(big, 'tail\n');
    await waitFor(() => writes.some((w) => w.key === 'small'), 10_000, 'the small line');
    observer.attemptEnded(task(2, 'small'), SUCCESS, 'SUCCESS');
    observer.attemptEnded(task(1, 'big'), SUCCESS, 'SUCCESS');
    await printer.finish();
    const bigWrites = writes.filter((w) => w.key === 'big' && w.bytes > 0);
    expect(Math.max(...bigWrites.map((w) => w.bytes))).toBeLessThanOrEqual(1024 * 1024);
    expect(bigWrites.reduce((n, w) => n + w.bytes, 0)).toBe(size + 5);
    // The small line comes after the whole big line, its end included.
    const firstSmall = writes.findIndex((w) => w.key === 'small');
    const tail = writes.findIndex((w) => w.text?.endsWith('tail\n'));
    expect(tail).toBeGreaterThan(-1);
    expect(firstSmall).toBeGreaterThan(tail);
    expect(writes.filter((w) => w.key === 'small').map((w) => w.text)).toEqual(['small one\n', '<end>']);
    expect(existsSync(printer.dir)).toBe(false);
  }, 120_000);

  it('prints whole lines only while a line is unfinished, and an unended last line at the attempt end', async () => {
    const out: string[] = [];
    const printer = new AttemptPrinter({ keepOrder: false, lineBuffer: true }, () => ({
      write: async (chunk) => void out.push(chunk.toString()),
      end: async () => void out.push('<end>'),
    }));
    const observer = printer.tap(quiet);
    const file = `${printer.prefixOf(5)}.out`;
    writeFileSync(file, 'one\ntw');
    observer.attemptStarted?.(task(5, 'k'));
    await waitFor(() => out.length > 0, 10_000, 'the first line');
    await sleep(200);
    expect(out).toEqual(['one\n']);
    appendFileSync(file, 'o\nthree');
    await waitFor(() => out.length > 1, 10_000, 'the second line');
    observer.attemptEnded(task(5, 'k'), SUCCESS, 'SUCCESS');
    await printer.finish();
    expect(out).toEqual(['one\n', 'two\n', 'three', '<end>']);
  }, 60_000);
});
