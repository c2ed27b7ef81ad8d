import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { allAttempts, statusCounts } from '../helpers/json-views.js';

/**
 * SIGINT while a handler's `batch` call runs, and the call answers its abort by returning an
 * Error for each task (natural code): a stopped attempt is INTERRUPTED and uncharged, item by
 * item, as a lone attempt whose handler throws on its abort is.
 */
describe("a batch call stopped by a shutdown", () => {
  it('its items end INTERRUPTED, uncharged, even though the call returned their errors; a rerun finishes them', async () => {
    const dir = tempDir('sd-group-int-');
    writeFileSync(join(dir, 'items.txt'), Array.from({ length: 8 }, (_, i) => `${i + 1}\n`).join(''));
    const started = join(dir, 'started');
    const args = ['run', '--items', 'items.txt', '--handler', handler('abort-batch'), '-j', '1', '--retries', '0', '--grace', '200ms'];
    const child = startCli(args, { cwd: dir, env: { ABORT_WAIT_MS: '60000', STARTED_FILE: started } });
    await waitFor(() => existsSync(started), 30_000, 'the batch call to start');
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code, r.stderr).toBe(130);
    const attempts = await allAttempts(dir);
    expect(attempts.length).toBeGreaterThan(0);
    expect(new Set(attempts.map((a) => a.outcome))).toEqual(new Set(['INTERRUPTED']));
    expect(await statusCounts(dir)).toEqual({ PENDING: 8 });

    const again = await runCli(args, { cwd: dir, env: { ABORT_WAIT_MS: '0' } });
    expect(again.code, again.stderr).toBe(0);
    expect(await statusCounts(dir)).toEqual({ SUCCESS: 8 });
  }, 60_000);
});
