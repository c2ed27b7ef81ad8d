import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sleep } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §6: a rate shown anywhere is over time spent running. Two runs are two processes, two
// lease owners: the time between them is not running time. (In one process the two commands
// share an owner, and a gap up to --max-backoff reads as a retry waited on: hence the binary.)

/** f003–f005 fail (exit 1) until `marker` exists. */
const failUntil = (marker: string) =>
  `case {key} in f003.log|f004.log|f005.log) [ -e '${marker}' ] || { echo not yet >&2; exit 1; };; esac; sleep 0.02`;

describe('status --json mid-batch and after an idle gap', () => {
  // Time the batch sat idle between two runs (a nightly --max-runtime window, a pause, failures
  // waiting for retry-failed) must not dilute it (it was finished / (last finish − first start)).
  it('tasksPerSecond counts time spent running, not an idle gap between two runs', async () => {
    const p = projectWithFiles(6);
    const marker = join(p.dir, 'fixed');
    let t0 = Date.now();
    expect((await runCli(['run', 'src', '--exec', failUntil(marker), '--retries', '0', '-j', '1'], { cwd: p.dir })).code).toBe(1);
    const firstWallMs = Date.now() - t0;
    await sleep(3000); // nothing runs: the failures wait for someone to look at them
    writeFileSync(marker, '');
    t0 = Date.now();
    expect((await runCli(['retry-failed', '--run', '-j', '1'], { cwd: p.dir })).code).toBe(0);
    const secondWallMs = Date.now() - t0;
    const r = await runCli(['status', '--json'], { cwd: p.dir });
    expect(r.code).toBe(0); // the verdict: all SUCCESS
    const s = JSON.parse(r.stdout) as { done: boolean; succeeded: number; tasksPerSecond: number | null };
    expect(s).toMatchObject({ done: true, succeeded: 6 });
    // The two commands' wall times bound the time spent running from above.
    expect(s.tasksPerSecond!).toBeGreaterThanOrEqual(6 / ((firstWallMs + secondWallMs) / 1000));
  });
});
