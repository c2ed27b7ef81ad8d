import { describe, expect, it } from 'vitest';
import { slotWindow } from '../../src/pool/slot-window.js';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { tasksJson } from '../helpers/json-views.js';
import { dbPathIn, sideEffects, storedAttempts } from '../helpers/store.js';

// SIGKILL of the coordinator (the CLI process) at random moments, and two CLI processes on one
// store: what the store and the side-effect log hold after (SPEC §5).

describe('coordinator SIGKILL', () => {
  it('resumes at once after random kills: nothing lost, repeats only of running tasks, no orphans', async () => {
    const p = projectWithFiles(60);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '40' };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2'];
    let kills = 0;
    for (const delay of [700, 950, 1200, 1500]) {
      const child = startCli(args, { cwd: p.dir, env });
      await sleep(delay);
      child.kill('SIGKILL');
      await child.result;
      kills++;
      await waitFor(() => processesWithEnv(p.log).length === 0, 1500, 'workers to exit after their coordinator died');
    }
    const started = Date.now();
    const final = await runCli(args, { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000); // no 30 s lease wait
    const rows = await tasksJson(p.dir);
    expect(rows).toHaveLength(60);
    expect(rows.every((t) => t.status === 'SUCCESS')).toBe(true);
    const effects = sideEffects(p.log);
    expect(new Set(effects.map((e) => e.key)).size).toBe(60);
    // A kill charges at most the attempts in flight (SPEC §5): every slot's window, its running
    // attempt and those queued behind it, all claimed and so all LOST. The window follows from
    // the handler's duration (40 ms: one queued) and is the same however loaded the machine is,
    // since a slower attempt only shrinks it. A side effect repeats only for a LOST attempt.
    const window = Math.max(slotWindow({ avgMs: null, headSince: 0 }, 0, null, 0), slotWindow({ avgMs: 40, headSince: 0 }, 1, null, 0));
    const attempts = await storedAttempts(dbPathIn(p.dir));
    const lost = attempts.filter((a) => a.outcome === 'LOST').length;
    expect(lost).toBeLessThanOrEqual(kills * 2 * window);
    expect(effects.length - 60).toBeLessThanOrEqual(lost);
    // No attempt left open; a LOST one's end is unknown (NULL), never its takeover time.
    expect(attempts.filter((a) => a.outcome === null)).toEqual([]);
    expect(attempts.filter((a) => a.outcome === 'LOST' && (a.endedAt !== null || a.durationMs !== null))).toEqual([]);
  });

  it('two runs started together on one store run each task exactly once and both exit 0', async () => {
    const p = projectWithFiles(80);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '20', CANARY_DIR: p.dir };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2'];
    const [a, b] = await Promise.all([startCli(args, { cwd: p.dir, env }).result, startCli(args, { cwd: p.dir, env }).result]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(a.stderr + b.stderr).not.toMatch(/locked|busy/i);
    const effects = sideEffects(p.log);
    expect(effects).toHaveLength(80);
    expect(new Set(effects.map((e) => e.key)).size).toBe(80);
    const owners = new Set((await storedAttempts(dbPathIn(p.dir))).map((a) => a.owner));
    expect(owners.size).toBe(2);
  });
});
