import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, sleep, startCli } from '../helpers/cli.js';
import { waitUntil } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';

// --on-complete / --on-failure (SPEC §10): a hook runs once when its batch reaches its end,
// across kills of the run that ends it (before, during and after the hook), reruns, and two
// hosts ending it at once. Killed while its command runs, it runs again at the next start with
// the same id: at least once, at most twice here, as docs/hooks.md says.

/** Each hook start and end, as `start ID RUN` / `end ID` lines of hooks.log in the project. */
function hookLog(dir: string): string[] {
  const path = join(dir, 'hooks.log');
  return existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n') : [];
}

/** A hook that logs its start and end; with `killFirst`, its first run SIGKILLs the run that started it, then ends. */
function hook(name: string, killFirst = false): string {
  const kill = killFirst ? 'if [ "$SPLITDANCE_HOOK_RUN" = 1 ]; then kill -9 $PPID; sleep 0.3; fi; ' : '';
  return `echo "start ${name} $SPLITDANCE_HOOK_ID $SPLITDANCE_HOOK_RUN $SPLITDANCE_VERDICT $SPLITDANCE_SUCCEEDED/$SPLITDANCE_FAILED/$SPLITDANCE_TOTAL {batch}" >> hooks.log; ${kill}echo "end ${name} $SPLITDANCE_HOOK_ID" >> hooks.log`;
}

const args = (extra: string[] = []) => ['run', 'src', '--exec', 'cat {} > /dev/null', '--batch', 'nightly', '--on-complete', hook('complete'), ...extra];

describe('batch hooks across kills of the run that ends the batch', () => {
  it('killed before the hook is recorded: the next run runs it, once', async () => {
    const p = projectWithFiles(3);
    const killed = await runCli(args(), { cwd: p.dir, env: { SPLITDANCE_FAILPOINT: 'hookbefore:1' } });
    expect(killed.signal).toBe('SIGKILL');
    expect(hookLog(p.dir)).toEqual([]);
    const again = await runCli(args(), { cwd: p.dir });
    expect(again.code, again.stderr).toBe(0);
    const log = hookLog(p.dir);
    expect(log).toHaveLength(2);
    expect(log[0]).toMatch(/^start complete \S+-complete-1 1 succeeded 3\/0\/3 nightly$/);
    expect((await runCli(args(), { cwd: p.dir })).code).toBe(0);
    expect(hookLog(p.dir)).toEqual(log);
  });

  it('killed while the hook runs: the next run runs it again with the same id, and no run after that', async () => {
    const p = projectWithFiles(3);
    const hooked = ['run', 'src', '--exec', 'cat {} > /dev/null', '--on-complete', hook('complete', true)];
    const killed = await runCli(hooked, { cwd: p.dir });
    expect(killed.signal).toBe('SIGKILL');
    // The orphaned first run of the command ends on its own.
    await sleep(600);
    const again = await runCli(hooked, { cwd: p.dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/--on-complete: running \S+-complete-1 \(start 2: the one before died\): echo /);
    expect((await runCli(hooked, { cwd: p.dir })).code).toBe(0);
    const log = hookLog(p.dir);
    const starts = log.filter((l) => l.startsWith('start'));
    expect(starts.map((l) => l.split(' ')[3])).toEqual(['1', '2']);
    expect(new Set(log.map((l) => l.split(' ')[2])).size).toBe(1);
    const status = await runCli(['status'], { cwd: p.dir });
    expect(status.stdout).toMatch(/--on-complete \S+-complete-1: exited 0, 2 starts/);
  });

  it('killed right after the hook is recorded done: no run runs it again', async () => {
    const p = projectWithFiles(3);
    const killed = await runCli(args(), { cwd: p.dir, env: { SPLITDANCE_FAILPOINT: 'hookafter:1' } });
    expect(killed.signal).toBe('SIGKILL');
    const log = hookLog(p.dir);
    expect(log).toHaveLength(2);
    expect((await runCli(args(), { cwd: p.dir })).code).toBe(0);
    expect(hookLog(p.dir)).toEqual(log);
  });

  it('SIGTERM while the hook runs: the hook is stopped, the run exits 143, and the next run runs it again with the same id', async () => {
    const p = projectWithFiles(2);
    const slowFirst = `echo "start $SPLITDANCE_HOOK_ID $SPLITDANCE_HOOK_RUN" >> hooks.log; if [ "$SPLITDANCE_HOOK_RUN" = 1 ]; then sleep 30; fi; echo "end $SPLITDANCE_HOOK_ID" >> hooks.log`;
    const hooked = ['run', 'src', '--exec', 'true {}', '--on-complete', slowFirst];
    const run = startCli(hooked, { cwd: p.dir });
    for (let i = 0; i < 400 && hookLog(p.dir).length === 0; i++) await sleep(50);
    run.kill('SIGTERM');
    const r = await run.result;
    expect(r.code).toBe(143);
    expect(r.stderr).toMatch(/--on-complete \S+-complete-1 stopped by SIGTERM: the next start reruns it/);
    const again = await runCli(hooked, { cwd: p.dir });
    expect(again.code, again.stderr).toBe(0);
    const log = hookLog(p.dir);
    // The first run's sleep was stopped with it: no `end` of its own.
    expect(log.map((l) => l.split(' ')[0])).toEqual(['start', 'start', 'end']);
    expect(log.map((l) => l.split(' ')[2] ?? '')).toEqual(['1', '2', '']);
    expect(new Set(log.map((l) => l.split(' ')[1])).size).toBe(1);
  });
});

describe('batch hooks owed when the run that ended the batch died', () => {
  it('a worker runs them (the batch has no work left, but its hook is owed), once', async () => {
    const p = projectWithFiles(3);
    const killed = await runCli(args(), { cwd: p.dir, env: { SPLITDANCE_FAILPOINT: 'hookbefore:1' } });
    expect(killed.signal).toBe('SIGKILL');
    const worker = await runCli(['worker'], { cwd: p.dir });
    expect(worker.code, worker.stderr).toBe(0);
    expect(hookLog(p.dir).filter((l) => l.startsWith('start'))).toHaveLength(1);
    expect((await runCli(['worker'], { cwd: p.dir })).code).toBe(0);
    expect(hookLog(p.dir).filter((l) => l.startsWith('start'))).toHaveLength(1);
  });
});

describe('batch hooks: what a stop leaves', () => {
  it('SIGTERM to a hook whose child ignores it: once the shell is gone the rest of its group is killed, nothing left running', async () => {
    const p = projectWithFiles(1);
    const marker = `${20 + (process.pid % 1000) / 1000}`;
    const stubborn = `echo started >> hooks.log; sh -c 'trap "" TERM; exec sleep ${marker}'; echo after >> hooks.log`;
    const run = startCli(['run', 'src', '--exec', 'true {}', '--on-complete', stubborn], { cwd: p.dir });
    for (let i = 0; i < 400 && hookLog(p.dir).length === 0; i++) await sleep(50);
    await sleep(200);
    run.kill('SIGTERM');
    expect((await run.result).code).toBe(143);
    await sleep(300);
    const left = spawnSync('pgrep', ['-f', `sleep ${marker}`], { encoding: 'utf8' });
    expect(left.stdout.trim(), 'a sleep the hook started is still running').toBe('');
    expect(hookLog(p.dir)).toEqual(['started']);
  });

  it('worker --follow takes over a hook whose run died while another start said it runs elsewhere', async () => {
    const p = projectWithFiles(1);
    const marker = `${30 + (process.pid % 1000) / 1000}`;
    const hookCmd = `echo "start $SPLITDANCE_HOOK_RUN" >> hooks.log; if [ "$SPLITDANCE_HOOK_RUN" = 1 ]; then sleep ${marker}; fi; echo end >> hooks.log`;
    const run = startCli(['run', 'src', '--exec', 'true {}', '--on-complete', hookCmd], { cwd: p.dir });
    for (let i = 0; i < 400 && hookLog(p.dir).length === 0; i++) await sleep(50);
    const worker = startCli(['worker', '--follow'], { cwd: p.dir });
    try {
      for (let i = 0; i < 200 && !worker.stderr; i++) await sleep(50);
      await sleep(1500);
      run.kill('SIGKILL');
      await run.result;
      // The worker looks again at its next poll (2 s, doubling while idle, 10 s at most).
      for (let i = 0; i < 300 && !hookLog(p.dir).includes('start 2'); i++) await sleep(100);
      expect(hookLog(p.dir).slice(0, 2)).toEqual(['start 1', 'start 2']);
    } finally {
      worker.kill('SIGTERM');
      await worker.result;
      spawnSync('pkill', ['-f', `sleep ${marker}`]);
    }
  }, 60_000);
});

describe("a hook's command and its output", () => {
  it('what it leaves running in the background does not hold the run; stdout and stderr are said apart, split characters whole', async () => {
    const p = projectWithFiles(1);
    // A character of three bytes written in two pieces, a line on stdout without its end, one on stderr.
    const hookCmd = `sleep 8 & printf 'caf\\342\\202'; sleep 0.2; printf '\\254 out'; echo err >&2`;
    const started = Date.now();
    const r = await runCli(['run', 'src', '--exec', 'true {}', '--on-complete', hookCmd], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    // The shell exits at once; the run waits a second at most for what holds its output (not 8 s).
    expect(Date.now() - started).toBeLessThan(6000);
    expect(r.stderr).toContain('--on-complete: caf€ out\n');
    expect(r.stderr).toContain('--on-complete: err\n');
  });
});

describe('batch hooks: which run, and when again', () => {
  it('--on-failure runs when a task failed (and --on-complete too), not when all succeeded; its exit code and output are in status; the exit code stays the batch verdict', async () => {
    const p = projectWithFiles(3);
    const failing = ['run', 'src', '--exec', 'test {/} != f001.log', '--retries', '0', '--on-complete', hook('complete'), '--on-failure', `${hook('failure')}; echo "paged the on-call" >&2; exit 4`];
    const r = await runCli(failing, { cwd: p.dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--on-failure \S+-failure-1 failed: exit 4; status shows its output/);
    expect(hookLog(p.dir).filter((l) => l.startsWith('start')).map((l) => l.split(' ').slice(1, 2).concat(l.split(' ').slice(4, 6)))).toEqual([
      ['failure', 'failed', '2/1/3'],
      ['complete', 'failed', '2/1/3'],
    ]);
    const status = await runCli(['status'], { cwd: p.dir });
    expect(status.stdout).toMatch(/--on-failure \S+-failure-1: failed: exit 4\n {2}paged the on-call/);
    expect(status.stdout).toMatch(/--on-complete \S+-complete-1: exited 0/);
    const json = JSON.parse((await runCli(['status', '--json'], { cwd: p.dir })).stdout);
    expect(json.hooks.map((h: { hook: string; exitCode: number }) => [h.hook, h.exitCode]).sort()).toEqual([
      ['complete', 0],
      ['failure', 4],
    ]);
    // retry-failed, and the task fails again: a new end, the hooks run again with new ids.
    const retried = await runCli(['retry-failed', '--run'], { cwd: p.dir });
    expect(retried.code).toBe(1);
    const ids = hookLog(p.dir).filter((l) => l.startsWith('start')).map((l) => l.split(' ')[2]!.replace(/^\S+?-\d+-/, ''));
    expect(ids).toEqual(['failure-1', 'complete-1', 'failure-2', 'complete-2']);
  });

  it('a batch that succeeds runs --on-complete only; a hook with another placeholder than {batch} is exit 2, nothing stored', async () => {
    const p = projectWithFiles(2);
    const r = await runCli(['run', 'src', '--exec', 'true {}', '--on-complete', hook('complete'), '--on-failure', hook('failure')], { cwd: p.dir });
    expect(r.code).toBe(0);
    expect(hookLog(p.dir).filter((l) => l.startsWith('start')).map((l) => l.split(' ')[1])).toEqual(['complete']);
    const q = projectWithFiles(2);
    const bad = await runCli(['run', 'src', '--exec', 'true {}', '--on-complete', 'echo {} done'], { cwd: q.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("{} is a task's, and a hook runs once for the whole batch: use {batch}");
    expect(existsSync(join(q.dir, '.splitdance'))).toBe(false);
  });
});

const newSchema = pgSchemas('sd_hooks');

describe.skipIf(!PG_URL)('batch hooks on PostgreSQL: two hosts ending the batch at once', () => {
  it('a run and a worker on two simulated hosts, each batch of three: the hook runs once per batch', async () => {
    for (let round = 0; round < 3; round++) {
      const p = projectWithFiles(12);
      const { db } = newSchema();
      const run = startCli(['run', 'src', '--exec', 'sleep 0.05; true {}', '-j', '2', '--on-complete', hook('complete'), '--db', db], { cwd: p.dir, env: { SPLITDANCE_HOST_ID: 'host-a' } });
      await sleep(300);
      // A worker without --follow on a schema the run has not made yet is exit 4 (no store):
      // on a loaded machine 300 ms was not always enough for the run's start.
      await waitUntil(async () => (await runCli(['status', '--db', db], { cwd: p.dir })).code !== 4, 30_000, 'the run to make the store');
      const worker = startCli(['worker', '-j', '2', '--db', db], { cwd: p.dir, env: { SPLITDANCE_HOST_ID: 'host-b' } });
      const [a, b] = await Promise.all([run.result, worker.result]);
      expect(a.code, a.stderr).toBe(0);
      expect([0, 1], b.stderr).toContain(b.code);
      expect(hookLog(p.dir).filter((l) => l.startsWith('start')), `round ${round}`).toHaveLength(1);
    }
  }, 120_000);
});
