import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { processesWithEnv } from '../helpers/procs.js';
import { dbPathIn } from '../helpers/store.js';
import { checkInvariants } from './invariants.js';
import { LONG, prng, seedFor } from './prng.js';


describe('R1/R4: coordinator SIGKILLed at random moments', () => {
  const kills = LONG ? 200 : 50;
  const seed = seedFor(20261202);

  it(`${kills} kills of a 300-task run (seed ${seed}): zero violations, no orphans, resumes at once`, async () => {
    const rand = prng(seed);
    const p = projectWithFiles(300);
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS_RANGE: '5-50', CANARY_DIR: canaries };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2', '--retries', '1000', '--backoff', '10ms', '--quiet'];
    const db = dbPathIn(p.dir);
    let done = 0;
    for (let k = 0; k < kills; k++) {
      const child = startCli(args, { cwd: p.dir, env });
      const delay = 10 + Math.floor(rand() * 390);
      const r = await Promise.race([child.result, sleep(delay).then(() => null)]);
      if (r) {
        expect(r.code, r.stderr).toBe(0);
        done++;
        break;
      }
      child.kill('SIGKILL');
      await child.result;
      // R4: workers notice the closed channel and exit (their process groups with them) within 1 s.
      try {
        await waitFor(() => processesWithEnv(canaries).length === 0, 1000, 'workers to exit');
      } catch {
        throw new Error(`kill ${k + 1} (after ${delay} ms): still alive 1 s later: ${processesWithEnv(canaries)}`);
      }
    }
    const started = Date.now();
    const final = await runCli(args, { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);
    // I8: a dead local owner is reclaimed at once, so the rest runs without waiting for a lease.
    expect(Date.now() - started).toBeLessThan(30_000);
    const violations = checkInvariants({ dbPath: db, keys: p.keys, retries: 1000, logPath: p.log, kills, concurrency: 2 });
    expect(violations, `seed ${seed}`).toEqual([]);
    expect(done).toBeLessThanOrEqual(1);
  });
});
