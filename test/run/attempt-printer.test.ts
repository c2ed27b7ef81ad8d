import { closeSync, existsSync, ftruncateSync, openSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AttemptPrinter } from '../../src/run/attempt-printer.js';
import type { RunObserver } from '../../src/coordinator/run-types.js';
import type { ClaimedTask, Settlement } from '../../src/store/task-store.js';

// `--print` copies an attempt's output from its spool file in TMPDIR to the run's stdout. Node
// cannot read a file over 2 GiB into one Buffer (ERR_FS_FILE_TOO_LARGE): an attempt that
// printed more used to print nothing at all, the run exited 0, and the copy stayed in TMPDIR.

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

describe('AttemptPrinter', () => {
  it('prints a copy over 2 GiB whole, a bounded chunk at a time, then removes it and its folder', async () => {
    const written = new Map<string, { bytes: number; biggest: number; nonZero: number; ended: boolean }>();
    const printer = new AttemptPrinter({ keepOrder: true, lineBuffer: false }, (t, stream) => {
      const seen = { bytes: 0, biggest: 0, nonZero: 0, ended: false };
      written.set(`${t.key}.${stream}`, seen);
      return {
        write: async (chunk) => {
          seen.bytes += chunk.length;
          seen.biggest = Math.max(seen.biggest, chunk.length);
          for (const b of [chunk[0], chunk[chunk.length - 1]]) if (b !== 0) seen.nonZero++;
        },
        end: async () => {
          seen.ended = true;
        },
      };
    });
    const size = 2 * 1024 ** 3 + 100 * 1024 ** 2; // 2.1 GiB, sparse: reading it costs no disk
    const big = `${printer.prefixOf(7)}.out`;
    const fd = openSync(big, 'w', 0o600);
    ftruncateSync(fd, size);
    closeSync(fd);
    writeFileSync(`${printer.prefixOf(8)}.err`, 'small\n');
    const observer = printer.tap(quiet);
    observer.attemptStarted?.(task(7, 'big'));
    observer.attemptStarted?.(task(8, 'small'));
    observer.attemptEnded(task(8, 'small'), { outcome: 'SUCCESS' } as Settlement, 'SUCCESS');
    observer.attemptEnded(task(7, 'big'), { outcome: 'SUCCESS' } as Settlement, 'SUCCESS');
    await printer.finish();
    expect(written.get('big.out')).toMatchObject({ bytes: size, nonZero: 0, ended: true });
    expect(written.get('big.out')!.biggest).toBeLessThanOrEqual(1024 * 1024);
    expect(written.get('small.err')).toMatchObject({ bytes: 6, ended: true });
    expect([...written.keys()]).toEqual(['big.out', 'small.err']); // keep-order; no stream opened for nothing
    expect(printer.lost).toBe(0);
    expect(existsSync(big)).toBe(false);
    expect(existsSync(printer.dir)).toBe(false);
  }, 120_000);

  it('prints only the attempt that ends its task; with keep-order a retried task keeps its place', async () => {
    const printed: string[] = [];
    const printer = new AttemptPrinter({ keepOrder: true, lineBuffer: false }, () => ({
      write: async (chunk) => void printed.push(chunk.toString()),
      end: async () => {},
    }));
    const observer = printer.tap(quiet);
    const attempt = (token: number, id: number, text: string) => {
      writeFileSync(`${printer.prefixOf(token)}.out`, text);
      return { ...task(token, `k${id}`), id };
    };
    const first = attempt(1, 1, 'first try of k1\n');
    const other = attempt(2, 2, 'k2\n');
    observer.attemptStarted?.(first);
    observer.attemptStarted?.(other);
    observer.attemptEnded(first, { outcome: 'FAILED' } as Settlement, 'PENDING'); // to be retried
    observer.attemptEnded(other, { outcome: 'SUCCESS' } as Settlement, 'SUCCESS');
    const again = attempt(3, 1, 'second try of k1\n');
    observer.attemptStarted?.(again);
    observer.attemptEnded(again, { outcome: 'SUCCESS' } as Settlement, 'SUCCESS');
    await printer.finish();
    expect(printed).toEqual(['second try of k1\n', 'k2\n']);
  });

  it("removes the folder with a copy left by an attempt that never reported (a killed worker's)", async () => {
    const printer = new AttemptPrinter({ keepOrder: false, lineBuffer: false }, () => ({ write: async () => {}, end: async () => {} }));
    writeFileSync(`${printer.prefixOf(3)}.out`, 'half a line');
    await printer.finish();
    expect(existsSync(printer.dir)).toBe(false);
  });
});
