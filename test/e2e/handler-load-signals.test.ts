import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

// A signal sent to the CLI process while its workers load a handler module that never settles.

describe('a handler module whose import never settles', () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
    ['SIGHUP', 143], // a shutdown like SIGTERM, named as received
  ] as const) {
    it(`${signal} while the workers load it ends start-up with ${code}, nothing written, no worker left`, async () => {
      const p = projectWithFiles(2);
      const run = startCli(['run', 'src', '--handler', handler('never-loads')], { cwd: p.dir, env: { SD_TEST_MARK: p.dir } });
      // The coordinator and its first worker, which is stuck in the import.
      await waitFor(() => processesWithEnv(p.dir).length >= 2, 20_000, 'the worker to start loading');
      run.kill(signal);
      const r = await run.result;
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toMatch(new RegExp(`${signal} before any task started; nothing ran`));
      expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
      await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'the worker to be gone');
    });
  }
});
