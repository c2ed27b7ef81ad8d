import { Chalk } from 'chalk';
import { Writable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../src/cli/io.js';
import { RunReporter, type ReportMode } from '../../src/cli/run-reporter.js';
import { MAX_KINDS, MAX_LINES, PER_KIND } from '../../src/cli/failure-digest.js';
import type { ClaimedTask, Counts, Settlement } from '../../src/store/task-store.js';

// Audit item 8: `run` kept the text of every failure (17 KB each: 3.9 GB at 450,000 failures)
// and every error signature it had seen. What it keeps now is bounded whatever the number of
// failures and of distinct errors; a run with few failures shows what it always showed.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after a full collection. */
function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Lines written to a stream, counted and (up to `keep` of them) kept, so the test holds no more than the reporter. */
function lineSink(keep: number): { stream: Writable; lines: string[]; count: () => number } {
  const lines: string[] = [];
  let count = 0;
  let partial = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      const parts = (partial + String(chunk)).split('\n');
      partial = parts.pop()!;
      for (const l of parts) {
        count++;
        // A copy: a slice would keep the whole line it was cut from alive, and count against the reporter.
        if (lines.length < keep) lines.push(Buffer.from(l.slice(0, 200)).toString());
      }
      done();
    },
  });
  return { stream, lines, count: () => count };
}

function reporter(mode: ReportMode, keep: number) {
  const out = lineSink(keep);
  const err = lineSink(keep);
  const io: Io = { stdout: out.stream, stderr: err.stream, cwd: '/', env: {}, tty: false, stdoutTty: false };
  const counts: Counts = { total: 0, pending: 0, retrying: 0, running: 0, queued: 0, succeeded: 0, failed: 0, cancelled: 0 };
  const r = new RunReporter(io, mode, new Chalk({ level: 0 }), async () => counts, 3_600_000);
  r.start({ batch: 'b', source: '/src', store: 'store.db', total: 0, inserted: 0, workers: 1, jobFile: null, notes: [] });
  return { r, err, counts };
}

/** A word of letters alone for `i`: error signatures fold digits, so distinct errors differ in letters. */
function letters(i: number): string {
  let s = '';
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(97 + ((n - 1) % 26)) + s;
  return s;
}

const task = (i: number, attempt = 1): ClaimedTask => ({
  id: i + 1,
  token: i + 1,
  key: `item-${i}`,
  stage: '',
  seq: i,
  attempt,
  counted: attempt,
  maxAttempts: 2,
  payload: { version: 1, path: `/src/item-${i}`, rel: `item-${i}` },
  workerId: 'w1',
  inputs: {},
  busySince: null,
});

/** A failure whose error is 4 KiB (the most the store keeps) and unlike every other's. */
const failure = (i: number, retryAt: number | null): Settlement => ({
  token: i + 1,
  taskId: i + 1,
  outcome: 'FAILED',
  endedAt: Date.now(),
  durationMs: 1,
  exitCode: 1,
  signal: null,
  error: `E${letters(i)} ${'x'.repeat(4090)}`.slice(0, 4096),
  outputTail: null,
  logPath: null,
  retryAt,
});

const FAILURES = 20_000;
/**
 * Linear retention would be FAILURES × 4 KiB ≈ 80 MB. By design the reporter keeps at most
 * MAX_LINES lines (≤ 4.2 KB each, 0.4 MB) and MAX_KINDS digests of signatures (under 0.1 MB).
 * 4 MB leaves room for V8's own variation and none for a copy of each failure.
 */
const BOUND = 4 * 1024 * 1024;

describe('what run keeps of its failures is bounded', () => {
  it('--quiet: 20,000 distinct failures are repeated as at most MAX_LINES lines and a count of the rest; the heap does not grow with them', async () => {
    const { r, err, counts } = reporter('quiet', MAX_LINES + 10);
    const before = heapAfterGc();
    for (let i = 0; i < FAILURES; i++) r.attemptEnded(task(i, 2), failure(i, null), 'FAILED');
    const grown = heapAfterGc() - before;
    expect(grown).toBeLessThan(BOUND);
    counts.total = counts.failed = FAILURES;
    await r.finish({ batch: 'b', exitCode: 1, reason: 'finished with failures', counts, elapsedMs: 1000, retrying: [] });
    const failed = err.lines.filter((l) => l.startsWith('FAILED '));
    expect(failed).toHaveLength(MAX_LINES);
    expect(failed[0]).toMatch(/^FAILED item-0 after 2 attempts: Ea x+/);
    expect(err.lines).toContain(`… and ${FAILURES - MAX_LINES} more failed tasks: \`status\` and \`tasks --status FAILED\` show them`);
    expect(err.count()).toBeLessThanOrEqual(MAX_LINES + 3);
    expect(err.lines.find((l) => l.startsWith('… and'))!.length).toBeLessThanOrEqual(80);
  });

  it('--quiet: one error repeated is shown PER_KIND times, then counted; a handful of failures are all shown, as before', async () => {
    const many = reporter('quiet', 100);
    for (let i = 0; i < 50; i++) many.r.attemptEnded(task(i), { ...failure(0, null), error: `ENOENT: no such file '/src/item-${i}'` }, 'FAILED');
    many.r.attemptEnded(task(50), { ...failure(0, null), error: 'EACCES: denied' }, 'FAILED');
    await many.r.finish({ batch: 'b', exitCode: 1, reason: 'finished with failures', counts: many.counts, elapsedMs: 1, retrying: [] });
    const shown = many.err.lines.filter((l) => l.startsWith('FAILED '));
    expect(shown).toHaveLength(PER_KIND + 1);
    expect(shown.at(-1)).toBe('FAILED item-50 after 1 attempt: EACCES: denied');
    expect(many.err.lines).toContain(`… and ${50 - PER_KIND} more failed tasks: \`status\` and \`tasks --status FAILED\` show them`);

    const few = reporter('quiet', 100);
    for (let i = 0; i < 3; i++) few.r.attemptEnded(task(i), { ...failure(0, null), error: `boom ${i}` }, 'FAILED');
    await few.r.finish({ batch: 'b', exitCode: 1, reason: 'finished with failures', counts: few.counts, elapsedMs: 1, retrying: [] });
    expect(few.err.lines.slice(0, 3)).toEqual(['FAILED item-0 after 1 attempt: boom 0', 'FAILED item-1 after 1 attempt: boom 1', 'FAILED item-2 after 1 attempt: boom 2']);
    expect(few.err.lines.join('\n')).not.toContain('more failed task');
  });

  it('plain: 20,000 distinct errors still retrying are announced for the first MAX_KINDS kinds, then one line says the rest are not; the heap stays flat', () => {
    const { r, err } = reporter('plain', MAX_KINDS + 10);
    const before = heapAfterGc();
    for (let i = 0; i < FAILURES; i++) r.attemptEnded(task(i), failure(i, Date.now() + 60_000), 'PENDING');
    const grown = heapAfterGc() - before;
    r.close();
    expect(grown).toBeLessThan(BOUND);
    const announced = err.lines.filter((l) => /^error item-\d+ attempt 1, retrying in /.test(l));
    expect(announced).toHaveLength(MAX_KINDS);
    expect(err.lines.filter((l) => l.includes(`over ${MAX_KINDS} kinds of error`))).toEqual([`error over ${MAX_KINDS} kinds of error: new ones are not shown (see \`status\`)`]);
    expect(err.count()).toBe(1 + MAX_KINDS + 1); // the batch line, the announcements, the one overflow line
  });
});
