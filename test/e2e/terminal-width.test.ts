import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { runInPty } from '../helpers/pty.js';
import { emulateScreen } from '../helpers/screen.js';

// Issue 41, item 2, on a real pseudo-terminal 80 columns wide: the bar line fits (done/total,
// rate, ETA, running, queued, retrying and failed, SPEC §7), and every line printed while it is
// up reaches the terminal whole: autowrap is never turned off, so a --print line or a FAILED
// line with a long key wraps instead of piling up in the last column, and the bar's redraw
// leaves the wrapped rows alone.

const COLUMNS = 80;
/** A bar frame as written: after a move to column 1, up to the next control code. */
const frames = (output: string) => [...output.matchAll(/\x1b\[1G([^\x1b\r\n]*)/g)].map((m) => m[1]!).filter((f) => /\d+\/3\b/.test(f)); // eslint-disable-line no-control-regex

describe('run on a terminal 80 columns wide', () => {
  it('the bar fits with every count; a 317-character --print line and a FAILED line with a 150-character key arrive whole', async () => {
    const dir = tempDir();
    const src = join(dir, 'src');
    mkdirSync(src);
    const name = (n: number) => `${'n'.repeat(144)}-${n}.txt`;
    for (const n of [1, 2, 3]) writeFileSync(join(src, name(n)), `${n}\n`);
    const long = `${'x'.repeat(300)} end-of-long-line`;
    const exec = `sleep 0.6; case {} in *-1.txt) echo '${long}';; *-2.txt) echo 'failing for a reason' >&2; exit 3;; esac`;
    const r = await runInPty(['run', 'src', '--exec', exec, '--print', '--retries', '0', '-j', '1', '--no-color'], { cwd: dir, columns: COLUMNS });
    expect(r.code, r.output).toBe(1);
    expect(r.output).not.toContain('\x1b[?7l'); // autowrap stays on
    const drawn = frames(r.output);
    expect(drawn.length).toBeGreaterThan(0);
    for (const f of drawn) {
      expect(f.length, f).toBeLessThan(COLUMNS);
      expect(f).toMatch(/ETA .* run.* queue.* retry.* fail/);
    }
    const screen = emulateScreen(r.output, COLUMNS);
    expect(screen.lines).toContain(long);
    expect(screen.lines).toContain(`FAILED ${name(2)} after 1 attempt: exit code 3: failing for a reason`);
    // The bar's last frame, on its own row, says how it ended.
    expect(screen.rows.find((row) => /^\S+ 3\/3 · .*1 fail(ed)?$/.test(row))).toBeDefined();
  }, 60_000);

  it('a resized terminal (SIGWINCH) gets a bar for its new width: 40 columns, the bar shorter than 40', async () => {
    const dir = tempDir();
    const src = join(dir, 'src');
    mkdirSync(src);
    for (const n of [1, 2, 3]) writeFileSync(join(src, `${n}.txt`), `${n}\n`);
    // The second task has the terminal resized: the bar is drawn at 80 columns while the first
    // runs (1 s), and at 40 after the resize, while the second and third run (1 s each).
    const started = join(dir, 'started');
    const exec = `if [ {key} = 2.txt ]; then touch ${started}; fi; sleep 1`;
    const r = await runInPty(['run', 'src', '--exec', exec, '-j', '1', '--no-color'], { cwd: dir, columns: COLUMNS, resize: { columns: 40, once: started } });
    expect(r.code, r.output).toBe(0);
    const drawn = frames(r.output);
    expect(Math.max(...drawn.map((f) => f.length))).toBeGreaterThan(40); // before the resize: the width of 80
    const last = drawn[drawn.length - 1]!;
    expect(last.length, last).toBeLessThan(40);
    expect(last).toMatch(/^3\/3 · /);
  }, 60_000);
});
