import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Handler } from '../../src/worker/handler-types.js';
import type { TaskMessage } from '../../src/worker/protocol.js';
import { runModule } from '../../src/worker/run-module.js';
import { tempDir } from '../helpers/cli.js';

const dir = tempDir('sd-run-module-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function message(key: string): TaskMessage {
  return {
    ...{ token: 1, key, batch: 'b', stage: '', seq: 1, attempt: 1, inputs: {} },
    payload: { version: 1, path: join(dir, 'in.txt'), rel: 'in.txt' },
    logFile: join(dir, `${key}.log`),
    output: null,
  };
}

/** A handler that waits until `go()`, then runs `then` with its context. */
function gated(then: (ctx: Parameters<Handler>[1]) => unknown): { handler: Handler; go: () => void } {
  let go!: () => void;
  const gate = new Promise<void>((r) => (go = r));
  return { handler: async (_task, ctx) => (await gate, then(ctx)), go };
}

describe('runModule: ctx.signal', () => {
  it('is already aborted, with the first reason, when a handler first reads it after the attempt was stopped', async () => {
    const { handler, go } = gated((ctx) => ({ aborted: ctx.signal.aborted, reason: (ctx.signal.reason as Error).message }));
    const running = runModule(handler, message('late'), () => {});
    running.abort('timeout');
    running.abort('shutdown'); // a second stop changes nothing
    go();
    const done = await running.done;
    expect(done.ok).toBe(true);
    expect(JSON.parse(done.result!)).toEqual({ aborted: true, reason: 'aborted: timeout' });
  });

  it('fires once for a handler that listened before the stop, and is the same signal on every read', async () => {
    const seen: string[] = [];
    let same = false;
    const handler: Handler = (_task, ctx) =>
      new Promise((_resolve, reject) => {
        same = ctx.signal === ctx.signal;
        ctx.signal.addEventListener('abort', () => {
          seen.push((ctx.signal.reason as Error).message);
          reject(ctx.signal.reason);
        });
      });
    const running = runModule(handler, message('early'), () => {});
    running.abort('shutdown');
    running.abort('timeout');
    const done = await running.done;
    expect(same).toBe(true);
    expect(seen).toEqual(['aborted: shutdown']);
    expect(done.ok).toBe(false);
    expect(done.error?.message).toBe('aborted: shutdown');
  });

  it('is not aborted while the attempt runs on', async () => {
    const { handler, go } = gated((ctx) => ctx.signal.aborted);
    const running = runModule(handler, message('calm'), () => {});
    go();
    expect((await running.done).result).toBe('false');
  });
});
