import { afterEach, describe, expect, it, vi } from 'vitest';
import { installSignals, pause, signalOf, unlessAborted, type CommandSignals } from '../../src/run/signals.js';

// A command's signals, in this process: process.emit calls the handlers as a real signal would,
// without delivering one (with no handler left, a real SIGINT would end the test run).

const NAMES = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const counts = () => NAMES.map((n) => process.listenerCount(n));
const installed: CommandSignals[] = [];
const install = (...args: Parameters<typeof installSignals>) => {
  const s = installSignals(...args);
  installed.push(s);
  return s;
};

afterEach(() => {
  installed.splice(0).forEach((s) => s.dispose());
  vi.useRealTimers();
});

describe('installSignals: one install per command', () => {
  it('aborts at the first signal with its name; later ones do not change it', () => {
    const s = install();
    expect(s.seen()).toBe(null);
    process.emit('SIGHUP');
    process.emit('SIGINT');
    expect(s.signal.aborted).toBe(true);
    expect(s.seen()).toBe('SIGHUP');
    expect(signalOf(s.signal)).toBe('SIGHUP');
  });

  it('passes every signal, the first included, to the listeners of `each` until they are removed', () => {
    const s = install();
    const heard: string[] = [];
    const stop = s.each((name) => heard.push(name));
    process.emit('SIGINT');
    process.emit('SIGTERM');
    stop();
    process.emit('SIGINT');
    expect(heard).toEqual(['SIGINT', 'SIGTERM']);
  });

  it('installs only the signals it is given (watch leaves SIGHUP alone)', () => {
    const before = counts();
    const s = install(['SIGINT', 'SIGTERM']);
    expect(counts()).toEqual([before[0]! + 1, before[1]! + 1, before[2]]);
    process.emit('SIGHUP');
    expect(s.signal.aborted).toBe(false);
  });

  it('dispose removes every handler it installed: nothing leaks into the process that called the command', () => {
    const before = counts();
    const s = installSignals();
    expect(counts()).toEqual(before.map((n) => n + 1));
    s.dispose();
    expect(counts()).toEqual(before);
  });
});

describe('pause: a wait that takes the signal', () => {
  it('waits its time when nothing aborts it: false', async () => {
    vi.useFakeTimers();
    const c = new AbortController();
    let ended: boolean | undefined;
    void pause(2000, c.signal).then((v) => (ended = v));
    await vi.advanceTimersByTimeAsync(1999);
    expect(ended).toBe(undefined);
    await vi.advanceTimersByTimeAsync(1);
    expect(ended).toBe(false);
  });

  it('ends at once when the signal aborts, its timer cleared: true', async () => {
    vi.useFakeTimers();
    const c = new AbortController();
    const waiting = pause(10_000, c.signal);
    c.abort('SIGINT');
    expect(await waiting).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(await pause(10_000, c.signal)).toBe(true); // already aborted: no wait at all
  });
});

describe('unlessAborted', () => {
  it("gives the work's value, or null when the signal aborts first, and leaves no listener behind", async () => {
    const c = new AbortController();
    const add = vi.spyOn(c.signal, 'addEventListener');
    const remove = vi.spyOn(c.signal, 'removeEventListener');
    expect(await unlessAborted(Promise.resolve(7), c.signal)).toBe(7);
    const never = new Promise<number>(() => {});
    const raced = unlessAborted(never, c.signal);
    c.abort('SIGTERM');
    expect(await raced).toBe(null);
    expect(remove).toHaveBeenCalledTimes(add.mock.calls.length);
  });

  it('passes on the rejection of the work', async () => {
    await expect(unlessAborted(Promise.reject(new Error('does not load')), new AbortController().signal)).rejects.toThrow('does not load');
  });
});
