import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, logEntries, query, type LogEntry } from '../helpers/store.js';

/**
 * What an attempt row says about how it ended, when its process did not report: a worker
 * killed by a signal names that signal, and an attempt whose owner died ends unknown (LOST,
 * no end time) rather than at the takeover.
 */

interface Row {
  key: string;
  attempt: number;
  outcome: string | null;
  signal: string | null;
  error: string | null;
  started_at: number;
  ended_at: number | null;
  duration_ms: number | null;
}

const rows = (dir: string) =>
  query<Row>(
    dbPathIn(dir),
    `SELECT t.task_key AS key, a.attempt, a.outcome, a.signal, a.error, a.started_at, a.ended_at, a.duration_ms
     FROM attempts a JOIN tasks t ON t.id = a.task_id ORDER BY a.id`,
  );

/** How many attempt rows the store holds (0 while it is being created). */
function attemptRows(dir: string): number {
  try {
    return rows(dir).length;
  } catch {
    return 0;
  }
}

/** Live child processes of `parent` (its workers, or its spawner helpers for an --exec batch). */
function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === parent && state !== 'Z') out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * Keys with two executions overlapping in time: start..end, or start..`goneAt` for one that
 * never ended (its process seen gone by then), plus any `double` the canaries caught.
 */
function overlaps(entries: LogEntry[], goneAt: number): string[] {
  const spans = new Map<string, { pid: number; from: number; to: number }[]>();
  const open = new Map<string, { key: string; pid: number; at: number }>();
  for (const e of entries) {
    if (e.type === 'start') open.set(`${e.key}:${e.pid}:${e.attempt}`, e);
    if (e.type === 'end') {
      open.delete(`${e.key}:${e.pid}:${e.attempt}`);
      spans.set(e.key, [...(spans.get(e.key) ?? []), { pid: e.pid, from: e.start, to: e.end }]);
    }
  }
  for (const s of open.values()) spans.set(s.key, [...(spans.get(s.key) ?? []), { pid: s.pid, from: s.at, to: goneAt }]);
  const found: string[] = [];
  for (const [key, list] of spans) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) if (list[i]!.from < list[i - 1]!.to) found.push(key);
  }
  for (const e of entries) if (e.type === 'double') found.push(e.key);
  return found;
}

const SPAWNER_BUILT = existsSync(join(ROOT, 'dist/native/spawner'));

// Every way an attempt runs: a module handler in a forked worker, an --exec command through the
// coordinator's spawner helper (the helper is the worker), and through a forked worker's Node spawn.
const paths = [
  { name: 'a module handler', args: (marker: string) => ['--handler', handler('slow')], env: {}, skip: false, worker: 'node' },
  { name: '--exec through the spawner helper', args: (marker: string) => ['--exec', `sleep ${marker}`], env: {}, skip: !SPAWNER_BUILT, worker: 'spawner' },
  { name: "--exec through Node's spawn", args: (marker: string) => ['--exec', `sleep ${marker}`], env: { SPLITDANCE_SPAWNER: 'node' }, skip: false, worker: 'node' },
];

describe.each(paths)('a worker SIGKILLed mid-attempt ($name)', ({ args, env, skip, worker }) => {
  it.skipIf(skip)("records signal SIGKILL in its CRASHED attempt row (and show --json says so); the retry succeeds", async () => {
    const p = projectWithFiles(1);
    const marker = `1.${process.pid}${Math.floor(Math.random() * 1000)}`;
    const run = startCli(['run', 'src', ...args(marker), '--retries', '1', '--backoff', '10ms'], {
      cwd: p.dir,
      env: { ...env, SLEEP_MS: '1000', SD_MARK: p.dir },
    });
    // The attempt is running once its row exists and its worker is up.
    await waitFor(() => attemptRows(p.dir) === 1 && childrenOf(run.pid!).length > 0, 10_000, 'the attempt running');
    const victims = childrenOf(run.pid!).filter((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === worker);
    expect(victims).toHaveLength(1);
    process.kill(victims[0]!, 'SIGKILL');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    const [crashed, retried] = rows(p.dir);
    expect(crashed).toMatchObject({ outcome: 'CRASHED', signal: 'SIGKILL' });
    expect(crashed!.error).toMatch(/killed by SIGKILL/);
    expect(retried).toMatchObject({ outcome: 'SUCCESS', signal: null });
    const shown = JSON.parse((await runCli(['show', p.keys[0]!, '--json'], { cwd: p.dir })).stdout);
    expect(shown.attempts[0]).toMatchObject({ outcome: 'CRASHED', signal: 'SIGKILL' });
  });
});

describe('a coordinator SIGKILLed mid-attempt, then resumed', () => {
  it('records the attempt LOST with no end (NULL end and duration), never the takeover time; show, show --json and the report say its end is unknown', async () => {
    const p = projectWithFiles(1);
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '800', CANARY_DIR: canaries };
    const args = ['run', 'src', '--handler', handler('record')];
    const first = startCli(args, { cwd: p.dir, env });
    await waitFor(() => logEntries(p.log).some((e) => e.type === 'start'), 10_000, 'the attempt started');
    first.kill('SIGKILL');
    await first.result;
    const killedAt = Date.now();
    await waitFor(() => processesWithEnv(p.log).length === 0, 3000, 'its worker gone with it');
    const goneAt = Date.now();

    const second = await runCli(args, { cwd: p.dir, env });
    expect(second.code, second.stderr).toBe(0);
    const [lost, rerun] = rows(p.dir);
    expect(lost).toMatchObject({ attempt: 1, outcome: 'LOST', ended_at: null, duration_ms: null, signal: null });
    expect(lost!.error).toMatch(/^LOST: its coordinator .* died while the attempt ran$/);
    expect(rerun).toMatchObject({ attempt: 2, outcome: 'SUCCESS' });
    expect(rerun!.started_at).toBeGreaterThanOrEqual(killedAt);
    // One execution at a time: the killed one (never ended) did not overlap the rerun.
    expect(overlaps(logEntries(p.log), goneAt)).toEqual([]);
    expect(logEntries(p.log).filter((e) => e.type === 'start').length).toBe(2);

    const human = await runCli(['show', p.keys[0]!], { cwd: p.dir });
    expect(human.code).toBe(0);
    const lostLine = human.stdout.split('\n').find((l) => l.startsWith('#1 '))!;
    expect(lostLine).toContain('→ (end unknown)');
    expect(lostLine).toContain('LOST');
    expect(human.stdout).not.toContain('(running)');

    const json = JSON.parse((await runCli(['show', p.keys[0]!, '--json'], { cwd: p.dir })).stdout);
    expect(json.attempts[0]).toMatchObject({ outcome: 'LOST', endedAt: null, durationMs: null });
    expect(json.attempts[1]).toMatchObject({ outcome: 'SUCCESS', endedAt: expect.any(String) });

    const html = join(p.dir, 'r.html');
    expect((await runCli(['report', '--html', html], { cwd: p.dir })).code).toBe(0);
    const bars = readFileSync(html, 'utf8').match(/<rect class="bar"[^>]*>/g) ?? [];
    expect(bars).toHaveLength(2);
    const lostBar = bars.find((b) => b.includes('data-outcome="LOST"'))!;
    expect(lostBar).toContain('data-end="unknown"');
    expect(lostBar).toMatch(/width="1\.0"/); // a marker at its start, not a bar up to the takeover
  });
});
