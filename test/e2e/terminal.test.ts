import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { CONTROL, SGR, runInPty } from '../helpers/pty.js';

// SPEC §7: on a TTY a progress bar and colours; not on a TTY no bar and no control characters.
// SPEC §6: `tasks` prints every task when piped, the first 50 on a TTY unless --limit says otherwise.
// The terminal is a real pseudo-terminal (util-linux `script`), not an isTTY override; the store
// the commands there read is made in-process. In a pipe: test/cli/piped-output.test.ts.

/** The progress bar's own text, `{value}/{total} · {rate}/s · ETA …`. */
const barFor = (total: number) => new RegExp(`\\d+/${total} · [\\d.]+/s · ETA `);
const dataLines = (text: string) => text.split(/\r?\n/).filter((l) => /^f\d{3}\.log\b/.test(l));

describe('run on a terminal and in a pipe', () => {
  it('on a terminal: a progress bar and colours', async () => {
    const p = projectWithFiles(12);
    const r = await runInPty(['run', 'src', '--exec', 'true', '-j', '2'], { cwd: p.dir });
    expect(r.code).toBe(0);
    expect(r.output).toMatch(barFor(12));
    expect(r.output).toMatch(SGR);
  });

  it('on a terminal with --no-color or NO_COLOR=1: the bar, but not one colour', async () => {
    const p = projectWithFiles(12);
    const flag = await runInPty(['run', 'src', '--exec', 'true', '-j', '2', '--no-color', '--batch', 'flag'], { cwd: p.dir });
    const env = await runInPty(['run', 'src', '--exec', 'true', '-j', '2', '--batch', 'env'], { cwd: p.dir, env: { NO_COLOR: '1' } });
    for (const r of [flag, env]) {
      expect(r.code).toBe(0);
      expect(r.output).toMatch(barFor(12));
      expect(r.output).not.toMatch(SGR);
    }
  });

  it('on a terminal with --quiet: nothing at all on full success', async () => {
    const p = projectWithFiles(12);
    const r = await runInPty(['run', 'src', '--exec', 'true', '-j', '2', '--quiet'], { cwd: p.dir });
    expect(r.code).toBe(0);
    expect(r.output).toBe('');
  });

  it('on a terminal with --json: NDJSON only, no bar and no colours', async () => {
    const p = projectWithFiles(12);
    const r = await runInPty(['run', 'src', '--exec', 'true', '-j', '2', '--json'], { cwd: p.dir });
    expect(r.code).toBe(0);
    const lines = r.output.split('\r\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(12);
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(r.output).not.toContain('\x1b');
  });
});

describe('inspection commands on a terminal and in a pipe', () => {
  let dir = '';
  beforeAll(async () => {
    const p = projectWithFiles(60);
    dir = p.dir;
    const exec = 'case {key} in f007.log) echo "it broke" >&2; exit 1;; *) echo fine;; esac';
    expect((await mainIn(dir, ['run', 'src', '--exec', exec, '--retries', '0', '-j', '2'])).code).toBe(1);
  });

  it('status is coloured on a terminal, and not with --no-color or NO_COLOR=1', async () => {
    const tty = await runInPty(['status'], { cwd: dir });
    expect(tty.code).toBe(1); // the batch's verdict: one task FAILED
    expect(tty.output).toContain('59 succeeded');
    expect(tty.output).toMatch(SGR);
    for (const r of [await runInPty(['status', '--no-color'], { cwd: dir }), await runInPty(['status'], { cwd: dir, env: { NO_COLOR: '1' } })]) {
      expect(r.code).toBe(1);
      expect(r.output).toContain('59 succeeded');
      expect(r.output).not.toMatch(SGR);
    }
  });

  // Colours follow the stream they are written to: `status > status.txt` typed at a terminal
  // writes no SGR escapes into the file, though stderr is a terminal.
  it('status redirected to a file from a terminal writes no control characters to the file', async () => {
    const r = await runInPty(['status'], { cwd: dir, shellSuffix: '> status.txt' });
    expect(r.code).toBe(1);
    const text = readFileSync(join(dir, 'status.txt'), 'utf8');
    expect(text).toContain('59 succeeded');
    expect(text).not.toMatch(CONTROL);
  });

  it('tasks on a terminal shows the first 50 and says so, unless --limit says otherwise', async () => {
    const first = await runInPty(['tasks'], { cwd: dir });
    expect(first.code).toBe(0);
    expect(dataLines(first.output)).toHaveLength(50);
    expect(dataLines(first.output)[0]).toMatch(/^f000\.log\s+SUCCESS/);
    expect(first.output).toContain('(first 50; --limit N shows more)');
    const more = await runInPty(['tasks', '--limit', '55'], { cwd: dir });
    expect(dataLines(more.output)).toHaveLength(55);
    const fewer = await runInPty(['tasks', '--limit', '7'], { cwd: dir });
    expect(dataLines(fewer.output)).toHaveLength(7);
  });

  it('tasks --json on a terminal prints all 60', async () => {
    const r = await runInPty(['tasks', '--json'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.output)).toHaveLength(60);
  });

  // `tasks` decides "terminal" from stdout, not stderr: piped on from a terminal, it prints data.
  it('tasks piped on from a terminal (`splitdance tasks | cat`) prints all 60 tab-separated', async () => {
    const r = await runInPty(['tasks'], { cwd: dir, shellSuffix: '| cat' });
    expect(r.code).toBe(0);
    // stderr (the terminal) names the batch it defaulted to; the rest is the piped data.
    const lines = r.output.split(/\r?\n/).filter((l) => l && !/^batch .* \(the most recent/.test(l));
    expect(lines).toHaveLength(60);
    expect(lines.every((l) => /^f\d{3}\.log\t/.test(l))).toBe(true);
  });
});
