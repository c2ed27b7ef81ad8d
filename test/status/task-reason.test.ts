import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';

// `splitdance why KEY` (SPEC §10): whether the next run runs a task or skips it, why, and what
// would run it again; a file task's input is looked at as it is now.

function project(files: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-why-'));
  mkdirSync(join(dir, 'src'));
  for (const f of files) writeFileSync(join(dir, 'src', f), `${f}\n`);
  return dir;
}

const why = async (dir: string, key: string, ...extra: string[]) => {
  const r = await mainIn(dir, ['why', key, '--json', ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { key: string; status: string; verdict: string; reason: string; paused: boolean; rerun: string | null; note: string | null };
};

describe('why', () => {
  it('retrying, failed, succeeded, input changed, input gone: each its reason and what runs it again', async () => {
    const dir = project(['retry.log', 'answer.log', 'ok.log', 'edited.log', 'removed.log']);
    // retry.log fails with a message (retried, after an hour); answer.log exits 1 saying nothing (an answer: FAILED).
    const exec = 'case {} in *retry.log) echo boom >&2; exit 1;; *answer.log) exit 1;; esac';
    const r = await mainIn(dir, ['run', 'src', '--exec', exec, '--retries', '2', '--backoff', '1h', '--jitter', '0', '--no-wait', '--batch', 'b']);
    expect(r.code).toBe(3); // --no-wait left a retry waiting
    writeFileSync(join(dir, 'src', 'edited.log'), 'longer than before\n');
    rmSync(join(dir, 'src', 'removed.log'));
    expect(await why(dir, 'retry.log')).toMatchObject({ status: 'PENDING', verdict: 'run', rerun: null });
    expect((await why(dir, 'retry.log')).reason).toMatch(/^failed 1 time, 2 retries left: runs again due \d{4}-\d\d-\d\dT[\d:.]+Z \(its backoff\)$/);
    expect(await why(dir, 'answer.log')).toMatchObject({ status: 'FAILED', verdict: 'skip', rerun: 'splitdance retry-failed --key answer.log --run --batch b', note: 'a fresh budget of retries' });
    expect((await why(dir, 'answer.log')).reason).toMatch(/^failed after 1 attempt: exit code 1 with nothing on stderr.*; a run does not try it again$/);
    expect(await why(dir, 'ok.log')).toMatchObject({
      verdict: 'skip',
      reason: 'succeeded in this batch; `run --rerun-changed` runs it again once its input changes',
      rerun: null,
      note: 'only a new batch runs it: your run command with --batch NEW',
    });
    expect(await why(dir, 'edited.log')).toMatchObject({ reason: 'succeeded, but its input changed since (size or modification time)', rerun: `splitdance run --rerun-changed --batch b ${join(dir, 'src')}` });
    expect(await why(dir, 'removed.log')).toMatchObject({ reason: 'succeeded; its input file is not there now (gone, or on another host)', rerun: null });
    // Reset by retry-failed: attempted before, no attempt counted now.
    expect((await mainIn(dir, ['retry-failed', '--key', 'answer.log', '--batch', 'b'])).code).toBe(0);
    expect((await why(dir, 'answer.log')).reason).toBe('waiting to run again: 1 attempt recorded, its retries were reset (retry-failed, or a rerun put it back); runs due now');
    // Paused: said, with the command that resumes it.
    expect((await mainIn(dir, ['pause', '--batch', 'b'])).code).toBe(0);
    expect(await why(dir, 'answer.log')).toMatchObject({ verdict: 'run', paused: true });
    expect((await mainIn(dir, ['why', 'answer.log', '--batch', 'b'])).stdout).toContain('the batch is paused: nothing runs until `splitdance resume --batch b`');
    expect((await mainIn(dir, ['resume', '--batch', 'b'])).code).toBe(0);
    const human = await mainIn(dir, ['why', 'edited.log']);
    expect(human.stdout).toBe(`edited.log in batch b will not run: succeeded, but its input changed since (size or modification time)\nto run it again: \`splitdance run --rerun-changed --batch b ${join(dir, 'src')}\`\n`);
    const none = await mainIn(dir, ['why', 'nope.log']);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('no task "nope.log" in batch b')]);
  });

  it('new (never attempted) and output up to date', async () => {
    const dir = project(['a.log', 'b.log', 'c.log']);
    // Stopped at once: the first task claimed (and the second, queued behind it, given back), the third never tried.
    expect((await mainIn(dir, ['run', 'src', '--exec', 'sleep 0.2', '-j', '1', '--max-runtime', '1ms', '--batch', 'cut'])).code).toBe(3);
    expect(await why(dir, 'c.log', '--batch', 'cut')).toMatchObject({ verdict: 'run', reason: 'new: never attempted; the next run or worker runs it', rerun: null });
    mkdirSync(join(dir, 'out'));
    for (const f of ['a.log', 'b.log', 'c.log']) {
      writeFileSync(join(dir, 'out', f), 'done before\n');
      utimesSync(join(dir, 'out', f), new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
    }
    expect((await mainIn(dir, ['run', 'src', '--exec', 'cp {} {out}', '--output', 'out/{/}', '--batch', 'outs'])).code).toBe(0);
    expect(await why(dir, 'a.log', '--batch', 'outs')).toMatchObject({
      reason: 'output up to date: its declared output was newer than its input, so nothing ran',
      rerun: null,
      note: 'only a new batch runs it: your run command with --batch NEW --force',
    });
  });
});
