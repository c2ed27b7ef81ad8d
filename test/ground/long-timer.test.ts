import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { longInterval, longTimeout, MAX_TIMER_MS } from '../../src/long-timer.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Keeps the loop busy, so a timer set right after starts from a stale loop time (as in a busy coordinator). */
const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('longTimeout', () => {
  it('a delay above 2^31-1 ms does not fire at once and raises no TimeoutOverflowWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    let fired = false;
    const t = longTimeout(() => (fired = true), MAX_TIMER_MS + 1000);
    try {
      await sleep(150);
      expect(fired).toBe(false);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    } finally {
      t.cancel();
      process.off('warning', onWarning);
    }
  });

  it('chained in chunks shorter than the delay, it fires once, not before the delay and soon after it', async () => {
    const t0 = performance.now();
    const firedAt: number[] = [];
    longTimeout(() => firedAt.push(performance.now() - t0), 150, { chunkMs: 20 });
    await sleep(400);
    expect(firedAt).toHaveLength(1);
    expect(firedAt[0]!).toBeGreaterThanOrEqual(150);
    expect(firedAt[0]!).toBeLessThan(300);
  });

  it('never fires before its delay, even set from a busy loop turn', async () => {
    const early: string[] = [];
    for (let i = 0; i < 150; i++) {
      await new Promise((r) => setImmediate(r));
      busy((i % 4) * 0.8);
      const delay = 1 + (i % 9);
      const t0 = performance.now();
      await new Promise<void>((done) =>
        longTimeout(() => {
          const waited = performance.now() - t0;
          if (waited < delay) early.push(`${delay} ms fired after ${waited.toFixed(3)} ms`);
          done();
        }, delay),
      );
    }
    expect(early).toEqual([]);
  });

  it('cancelled between chunks, it never fires', async () => {
    let fired = false;
    const t = longTimeout(() => (fired = true), 120, { chunkMs: 20 });
    await sleep(50);
    t.cancel();
    await sleep(150);
    expect(fired).toBe(false);
  });

  it('unref lets the process exit while a long timer waits; a ref one holds it until it fires', () => {
    const run = (script: string) => {
      const started = Date.now();
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: resolve(import.meta.dirname, '../..'),
        encoding: 'utf8',
        timeout: 20_000,
      });
      return { ...r, took: Date.now() - started };
    };
    const imp = "import { longTimeout } from './src/long-timer.ts';";
    const unrefd = run(`${imp} longTimeout(() => console.log('fired'), ${MAX_TIMER_MS * 3}).unref(); console.log('armed');`);
    expect(unrefd.status, unrefd.stderr).toBe(0);
    expect(unrefd.stdout.trim()).toBe('armed');
    // Chained in 50 ms chunks, a timer far longer than the 20 s the process is given: only an
    // exit that did not wait for it ends the process in time, however slowly it starts.
    const unrefdChained = run(`${imp} longTimeout(() => console.log('fired'), 600_000, { chunkMs: 50 }).unref(); console.log('armed');`);
    expect(unrefdChained.status, unrefdChained.stderr).toBe(0);
    expect(unrefdChained.stdout.trim()).toBe('armed');
    const held = run(`${imp} const t0 = performance.now(); longTimeout(() => console.log('fired', performance.now() - t0 >= 300), 300, { chunkMs: 50 });`);
    expect(held.status, held.stderr).toBe(0);
    expect(held.stdout.trim()).toBe('fired true');
  });
});

describe('longInterval', () => {
  it('chained in chunks, it repeats with every period at least as long as asked', async () => {
    const runs: number[] = [];
    const t0 = performance.now();
    const t = longInterval(() => runs.push(performance.now()), 50, { chunkMs: 15 });
    await sleep(330);
    t.cancel();
    const gaps = [runs[0]! - t0, ...runs.slice(1).map((at, i) => at - runs[i]!)];
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.length).toBeLessThanOrEqual(6);
    expect(gaps.filter((g) => g < 50)).toEqual([]);
  });

  it('cancelled from its own callback, it runs no more', async () => {
    let runs = 0;
    const t = longInterval(() => {
      runs++;
      t.cancel();
    }, 20, { chunkMs: 7 });
    await sleep(150);
    expect(runs).toBe(1);
  });
});
