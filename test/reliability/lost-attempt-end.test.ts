import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { logEntries, type LogEntry } from '../helpers/store.js';

/**
 * What an attempt row says about how it ended when its process did not report: an attempt
 * whose owner (the CLI process, SIGKILLed) died ends unknown (LOST, no end time) rather than at
 * the takeover. (A worker killed by a signal: test/coordinator/attempt-ends.test.ts.)
 */

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
    const json = JSON.parse((await mainIn(p.dir, ['show', p.keys[0]!, '--json'])).stdout);
    const [lost, rerun] = json.attempts;
    expect(lost).toMatchObject({ attempt: 1, outcome: 'LOST', endedAt: null, durationMs: null, signal: null });
    expect(lost!.error).toMatch(/^LOST: its coordinator .* died while the attempt ran$/);
    expect(rerun).toMatchObject({ attempt: 2, outcome: 'SUCCESS', endedAt: expect.any(String) });
    expect(Date.parse(rerun!.startedAt)).toBeGreaterThanOrEqual(killedAt);
    // One execution at a time: the killed one (never ended) did not overlap the rerun.
    expect(overlaps(logEntries(p.log), goneAt)).toEqual([]);
    expect(logEntries(p.log).filter((e) => e.type === 'start').length).toBe(2);

    const human = await mainIn(p.dir, ['show', p.keys[0]!]);
    expect(human.code).toBe(0);
    const lostLine = human.stdout.split('\n').find((l) => l.startsWith('#1 '))!;
    expect(lostLine).toContain('→ (end unknown)');
    expect(lostLine).toContain('LOST');
    expect(human.stdout).not.toContain('(running)');

    const html = join(p.dir, 'r.html');
    expect((await mainIn(p.dir, ['report', '--html', html])).code).toBe(0);
    const bars = readFileSync(html, 'utf8').match(/<rect class="bar"[^>]*>/g) ?? [];
    expect(bars).toHaveLength(2);
    const lostBar = bars.find((b) => b.includes('data-outcome="LOST"'))!;
    expect(lostBar).toContain('data-end="unknown"');
    expect(lostBar).toMatch(/width="1\.0"/); // a marker at its start, not a bar up to the takeover
  });
});
