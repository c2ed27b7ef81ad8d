import { beforeAll, describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { CONTROL } from '../helpers/pty.js';

// SPEC §7: not on a TTY no bar and no control characters. SPEC §6: `tasks` prints every task when
// piped. Called in-process with an Io that is no terminal and an environment without colour hints
// (no TERM, COLORTERM, FORCE_COLOR): a pipe. On a real terminal: test/e2e/terminal.test.ts.

/** The progress bar's own text, `{value}/{total} · {rate}/s · ETA …`. */
const barFor = (total: number) => new RegExp(`\\d+/${total} · [\\d.]+/s · ETA `);

describe('run in a pipe', () => {
  it('in a pipe: no bar and no control characters; timestamped progress lines, one line per failure, a summary', async () => {
    const p = projectWithFiles(6);
    // f001 fails for good; f002 takes long enough that at least one 100 ms progress line is due.
    const exec = 'case {key} in f001.log) echo broken >&2; exit 1;; f002.log) sleep 0.6;; esac';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--retries', '0', '-j', '2', '--progress-interval', '100ms']);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).not.toMatch(CONTROL);
    expect(r.stderr).not.toMatch(barFor(6));
    expect(r.stderr).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \d+\/6 done/m);
    expect(r.stderr.split('\n').filter((l) => l.includes('f001.log') && l.includes('FAILED'))).toHaveLength(1);
    expect(r.stderr).toMatch(/5 succeeded, 1 failed of 6/);
  });
});

describe('inspection commands in a pipe', () => {
  let dir = '';
  beforeAll(async () => {
    const p = projectWithFiles(60);
    dir = p.dir;
    const exec = 'case {key} in f007.log) echo "it broke" >&2; exit 1;; *) echo fine;; esac';
    expect((await mainIn(dir, ['run', 'src', '--exec', exec, '--retries', '0', '-j', '2'])).code).toBe(1);
  });

  it('every inspection command in a pipe writes no control characters', async () => {
    for (const args of [['status'], ['tasks'], ['show', 'f007.log'], ['logs', 'f007.log'], ['batches']]) {
      const r = await mainIn(dir, args);
      expect(r.code, args.join(' ')).toBe(args[0] === 'status' ? 1 : 0);
      expect(r.stdout.length, args.join(' ')).toBeGreaterThan(0);
      expect(r.stdout + r.stderr, args.join(' ')).not.toMatch(CONTROL);
    }
  });

  it('tasks in a pipe prints all 60, one tab-separated line each', async () => {
    const r = await mainIn(dir, ['tasks']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(60);
    expect(lines.every((l) => /^f\d{3}\.log\t/.test(l))).toBe(true);
  });
});
