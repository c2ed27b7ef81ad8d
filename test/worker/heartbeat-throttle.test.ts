import { describe, expect, it } from 'vitest';
import { HeartbeatThrottle } from '../../src/worker/heartbeat-throttle.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('HeartbeatThrottle (ctx.heartbeat())', () => {
  it('sends the first call at once, then at most one per window, the last call of a window at its end', async () => {
    const sent: number[] = [];
    const t = new HeartbeatThrottle(() => sent.push(performance.now()), 100);
    const first = performance.now();
    for (let i = 0; i < 1000; i++) t.beat();
    expect(sent).toHaveLength(1); // a tight loop costs one message
    const lastCall = performance.now();
    // The trailing send is due one window after the first; a loaded machine may run its timer
    // late, never early, so wait for it rather than for a fixed time.
    while (sent.length < 2 && performance.now() - lastCall < 10_000) await sleep(10);
    await sleep(150); // and nothing more comes in the window after it
    // The trailing send: the calls after the first are reported, never before they were made.
    expect(sent).toHaveLength(2);
    expect(sent[1]!).toBeGreaterThanOrEqual(lastCall);
    expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(99);
    expect(sent[0]!).toBeGreaterThanOrEqual(first);
    t.beat(); // a window after the last send: at once
    expect(sent).toHaveLength(3);
    t.stop();
  });

  it('sends nothing once stopped, not even a pending trailing call', async () => {
    const sent: number[] = [];
    const t = new HeartbeatThrottle(() => sent.push(1), 50);
    t.beat();
    t.beat();
    t.stop();
    t.beat();
    await sleep(120);
    expect(sent).toHaveLength(1);
  });
});
