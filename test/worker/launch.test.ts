import { describe, expect, it } from 'vitest';
import { Launch } from '../../src/worker/launcher.js';

describe('Launch: one launched command as one stream', () => {
  it('tells its start synchronously, to each listener in the order it subscribed', () => {
    const launch = new Launch();
    const heard: string[] = [];
    launch.onStart((pgid, at) => heard.push(`a ${pgid} ${at}`));
    launch.onStart((pgid) => heard.push(`b ${pgid}`));
    expect(heard).toEqual([]);
    launch.started(42, 1000);
    expect(heard).toEqual(['a 42 1000', 'b 42']);
  });

  it('tells a listener that subscribes after the start at once, in the same turn', () => {
    const launch = new Launch();
    launch.started(7, 5);
    const heard: number[] = [];
    launch.onStart((pgid) => heard.push(pgid));
    expect(heard).toEqual([7]);
  });

  it('a listener subscribing while the start is being told hears it at once, in the same turn', () => {
    const launch = new Launch();
    const heard: string[] = [];
    launch.onStart(() => {
      heard.push('first');
      launch.onStart(() => heard.push('late'));
    });
    launch.onStart(() => heard.push('second'));
    launch.started(1, 1);
    expect(heard).toEqual(['first', 'late', 'second']);
  });

  it('tells its start once', () => {
    const launch = new Launch();
    const heard: number[] = [];
    launch.onStart((pgid) => heard.push(pgid));
    launch.started(1, 1);
    launch.started(2, 2);
    launch.onStart((pgid) => heard.push(pgid));
    expect(heard).toEqual([1, 1]);
  });

  it('never tells the start of one that ends unstarted, and gives its end', async () => {
    const launch = new Launch();
    let heard = false;
    launch.onStart(() => (heard = true));
    launch.end({ kind: 'dropped' });
    await expect(launch.ended).resolves.toEqual({ kind: 'dropped' });
    expect(heard).toBe(false);
  });

  it('takes its end from a promise: what it resolves to, or why it failed', async () => {
    const ran = new Launch();
    ran.end(Promise.resolve({ kind: 'not-started', code: 'ENOENT', message: 'could not start x' }));
    await expect(ran.ended).resolves.toMatchObject({ kind: 'not-started', code: 'ENOENT' });
    const broke = new Launch();
    broke.end(Promise.reject(new Error('boom')));
    await expect(broke.ended).rejects.toThrow('boom');
  });
});
